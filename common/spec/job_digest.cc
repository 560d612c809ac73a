#include "common/spec/job_digest.h"

#include "absl/strings/str_cat.h"

namespace fedanon::common {

std::string CanonicalJobBytes(const fedanon::v1::JobSpec& spec,
                              const std::map<std::string, std::string>& taxonomy_texts) {
  fedanon::v1::JobSpec canonical = spec;
  canonical.clear_name();
  for (auto& a : *canonical.mutable_attributes()) a.clear_taxonomy();  // file names are local
  std::string bytes;
  canonical.SerializePartialToString(&bytes);  // deterministic for these message types
  std::string out = absl::StrCat("fedanon-job-v1\n", bytes.size(), "\n", bytes);
  for (const auto& [attr, text] : taxonomy_texts) {  // std::map: sorted by attribute name
    absl::StrAppend(&out, attr.size(), ":", attr, text.size(), ":", text);
  }
  return out;
}

}  // namespace fedanon::common
