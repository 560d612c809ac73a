#include "common/spec/job_digest.h"

#include "absl/strings/str_cat.h"
#include "common/spec/job_spec_loader.h"

namespace fedanon::spec {

std::string CanonicalJobBytes(const fedanon::v1::JobSpec& spec,
                              const std::map<std::string, std::string>& taxonomy_texts) {
  fedanon::v1::JobSpec canonical = spec;
  canonical.clear_name();
  // Spelled-out defaults hash like omitted ones: what counts is the search the job runs.
  if (canonical.numeric_split() == fedanon::v1::NUMERIC_SPLIT_UNSPECIFIED) {
    canonical.set_numeric_split(canonical.has_sequential() ? fedanon::v1::NUMERIC_SPLIT_EXACT
                                                           : fedanon::v1::NUMERIC_SPLIT_BINNED);
  }
  if (canonical.numeric_split() == fedanon::v1::NUMERIC_SPLIT_BINNED &&
      canonical.numeric_cells() == 0) {
    canonical.set_numeric_cells(32);  // kDefaultNumericCells (common/engine/numeric_split.h)
  }
  if (canonical.max_records_per_party() == 0) {
    canonical.set_max_records_per_party(kDefaultMaxRecordsPerParty);
  }
  // ldiversity / tcloseness: the default variant and ground distance, spelled out or not.
  auto* privacy = canonical.mutable_privacy();
  if (privacy->model() == fedanon::v1::PRIVACY_MODEL_LDIVERSITY &&
      privacy->variant() == fedanon::v1::DIVERSITY_VARIANT_UNSPECIFIED) {
    privacy->set_variant(fedanon::v1::DIVERSITY_VARIANT_DISTINCT);
  }
  if (privacy->model() == fedanon::v1::PRIVACY_MODEL_TCLOSENESS &&
      privacy->distance() == fedanon::v1::GROUND_DISTANCE_UNSPECIFIED) {
    privacy->set_distance(fedanon::v1::GROUND_DISTANCE_EQUAL);
  }
  for (auto& a : *canonical.mutable_attributes()) a.clear_taxonomy();  // file names are local
  std::string bytes;
  canonical.SerializePartialToString(&bytes);  // deterministic for these message types
  std::string out = absl::StrCat("fedanon-job-v1\n", bytes.size(), "\n", bytes);
  for (const auto& [attr, text] : taxonomy_texts) {  // std::map: sorted by attribute name
    absl::StrAppend(&out, attr.size(), ":", attr, text.size(), ":", text);
  }
  return out;
}

}  // namespace fedanon::spec
