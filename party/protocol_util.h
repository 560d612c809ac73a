// Small helpers the party's protocol classes share: shuffling and ID-list (de)serialization,
// audit-file numbers, the key naming the chunk streams of a producing vertical step, and the
// memory and time figures of the log.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::party {

absl::Status ShuffleRows(google::protobuf::RepeatedPtrField<std::string>* rows);

// The points of an ID list as the ID-matching steps carry them (serialized IdList).
// Parses an ID list and frees `bytes`; the points are moved out of the message, not copied
// (bounded memory: at 1M ids each copy of a list is about 100 MB).
absl::StatusOr<std::vector<std::string>> ParseIdList(std::string& bytes);

std::string SerializeIdList(const std::vector<std::string>& points);

// For the audit file: who the payloads are sealed for, and a candidate's coordinates.
std::vector<std::string> Receivers(
    const google::protobuf::RepeatedPtrField<fedanon::v1::SealedPayload>& payloads);

std::vector<std::pair<std::string, uint64_t>> CandidateNumbers(
    const fedanon::v1::VerticalCandidate& c, std::vector<std::pair<std::string, uint64_t>> more);

// The number of records a serialized VerticalInstruction refines (0 when it does not parse).
uint64_t InstructionRecords(const std::string& bytes);

// The steps whose answers carry per-record payloads, by a key unique in the job (it names their
// chunk streams): "" for the others.
std::string ProducingStepKey(const fedanon::v1::VerticalStep& step, uint64_t round);

// This process's memory at a phase boundary of a vertical job (bench/vertical_daemons.sh prints
// these lines: where each party peaks).
void LogUsage(const std::string& job_id, std::string_view phase);

// Wall seconds since `t`, for the ID-matching steps' timing log lines.
double WallSince(std::chrono::steady_clock::time_point t);

}  // namespace fedanon::party
