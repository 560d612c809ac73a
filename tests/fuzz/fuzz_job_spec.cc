// Fuzz target: the job-spec loader (common/spec/job_spec_loader.h) over arbitrary YAML text, then
// validation and, for a spec that validates, the round trip through JobSpecToYaml: the YAML it
// writes must load again into the same message (compared by deterministic serialization), with
// the same digest bytes.
#include <string>
#include <string_view>
#include <vector>

#include "common/spec/job_digest.h"
#include "common/spec/job_spec_loader.h"
#include "fedanon/v1/job.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "tests/fuzz/fuzz_support.h"

namespace fedanon::fuzz {
namespace {

std::string Deterministic(const fedanon::v1::JobSpec& spec) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!spec.SerializeToCodedStream(&coded)) FuzzFail("a spec does not serialize");
  }
  return out;
}

void FuzzJobSpec(std::string_view yaml) {
  static const bool quiet = [] {
    QuietProtobuf();
    return true;
  }();
  if (!quiet) return;
  absl::StatusOr<fedanon::v1::JobSpec> spec = spec::ParseJobSpecYaml(yaml, "fuzz.yaml");
  if (!spec.ok()) {
    if (spec.status().message().empty()) FuzzFail("an error without a message");
    return;
  }
  const absl::Status valid = spec::ValidateJobSpec(*spec);
  const std::string written = spec::JobSpecToYaml(*spec);
  if (!valid.ok()) return;
  absl::StatusOr<fedanon::v1::JobSpec> again = spec::ParseJobSpecYaml(written, "written.yaml");
  if (!again.ok()) {
    std::fprintf(stderr, "written spec:\n%s\nerror: %s\n", written.c_str(),
                 std::string(again.status().message()).c_str());
    FuzzFail("the YAML JobSpecToYaml wrote does not load");
  }
  if (Deterministic(*again) != Deterministic(*spec)) {
    std::fprintf(stderr, "written spec:\n%s\n", written.c_str());
    FuzzFail("the YAML JobSpecToYaml wrote loads into another spec");
  }
  if (!spec::ValidateJobSpec(*again).ok()) FuzzFail("the written spec no longer validates");
  if (spec::CanonicalJobBytes(*again, {}) != spec::CanonicalJobBytes(*spec, {})) {
    FuzzFail("the written spec has other digest bytes");
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> FuzzSeeds() { return {}; }

}  // namespace fedanon::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fedanon::fuzz::FuzzJobSpec(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
