#include "party/protocol_util.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/base/process_usage.h"
#include "common/base/status_macros.h"
#include "crypto/hash.h"
#include "crypto/shuffle.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {

absl::Status ShuffleRows(google::protobuf::RepeatedPtrField<std::string>* rows) {
  ASSIGN_OR_RETURN(std::vector<size_t> perm, crypto::SecurePermutation(rows->size()));
  std::vector<std::string> shuffled(rows->size());
  for (size_t i = 0; i < perm.size(); ++i) shuffled[i] = std::move((*rows)[perm[i]]);
  rows->Clear();
  for (auto& r : shuffled) *rows->Add() = std::move(r);
  return absl::OkStatus();
}

// The points of an ID list as the ID-matching steps carry them (serialized IdList).
// Parses an ID list and frees `bytes`; the points are moved out of the message, not copied
// (bounded memory: at 1M ids each copy of a list is about 100 MB).
absl::StatusOr<std::vector<std::string>> ParseIdList(std::string& bytes) {
  fedanon::v1::IdList list;
  const bool parsed = list.ParseFromString(bytes);
  std::string().swap(bytes);
  if (!parsed) return absl::InvalidArgumentError("an ID list does not parse");
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(list.points_size()));
  for (std::string& p : *list.mutable_points()) out.push_back(std::move(p));
  return out;
}

std::string SerializeIdList(const std::vector<std::string>& points) {
  fedanon::v1::IdList list;
  for (const auto& p : points) list.add_points(p);
  return list.SerializeAsString();
}

// For the audit file: who the payloads are sealed for, and a candidate's coordinates.
std::vector<std::string> Receivers(
    const google::protobuf::RepeatedPtrField<fedanon::v1::SealedPayload>& payloads) {
  std::vector<std::string> out;
  for (const auto& p : payloads) out.push_back(p.receiver());
  return out;
}

std::vector<std::pair<std::string, uint64_t>> CandidateNumbers(
    const fedanon::v1::VerticalCandidate& c, std::vector<std::pair<std::string, uint64_t>> more) {
  more.insert(more.begin(), {{"attribute", c.attribute()},
                             {"node", static_cast<uint64_t>(c.node())},
                             {"candidate", static_cast<uint64_t>(c.candidate())}});
  return more;
}

// The number of records a serialized VerticalInstruction refines (0 when it does not parse).
uint64_t InstructionRecords(const std::string& bytes) {
  fedanon::v1::VerticalInstruction instruction;
  return instruction.ParseFromString(bytes) ? instruction.records() : 0;
}

// The steps whose answers carry per-record payloads, by a key unique in the job (it names their
// chunk streams): "" for the others.
std::string ProducingStepKey(const fedanon::v1::VerticalStep& step, uint64_t round) {
  auto candidate = [](const fedanon::v1::VerticalCandidate& c) {
    return absl::StrCat(c.attribute(), ".", c.node(), ".", c.candidate());
  };
  switch (step.step_case()) {
    case fedanon::v1::VerticalStep::kWinner:
      // The candidate is the owner's to reveal; the signed choices name the round and decision.
      return absl::StrCat(
          "instruction/r", round, "/",
          absl::BytesToHexString(crypto::Sha256(step.winner().SerializeAsString()).substr(0, 8)),
          "/judges");
    case fedanon::v1::VerticalStep::kCompare:
      // Each step's message for the other computing party (chunked jobs: a stream of its own).
      return absl::StrCat(
          "winner-compare/r", round, "/",
          absl::BytesToHexString(crypto::Sha256(step.compare().SerializeAsString()).substr(0, 8)));
    case fedanon::v1::VerticalStep::kPublish:
      return absl::StrCat("instruction/r", round, "/", candidate(step.publish().candidate()),
                          "/others");
    case fedanon::v1::VerticalStep::kRelease:
      return "columns";
    case fedanon::v1::VerticalStep::kLocalWinners:
      return absl::StrCat("local-instruction/r", round);
    case fedanon::v1::VerticalStep::kLocalPublish:
      return absl::StrCat("local-instruction/r", round, "/others");
    default:
      return "";
  }
}

// This process's memory at a phase boundary of a vertical job (bench/vertical_daemons.sh prints
// these lines: where each party peaks).
void LogUsage(const std::string& job_id, std::string_view phase) {
  const base::ProcessUsage usage = base::CurrentProcessUsage();
  spdlog::info("job={} memory at {}: RSS {:.0f} MB, peak RSS {:.0f} MB, process CPU {:.2f} s",
               job_id, phase, usage.rss_mb, usage.peak_rss_mb, usage.cpu_seconds);
}

// Wall seconds since `t`, for the ID-matching steps' timing log lines.
double WallSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace fedanon::party
