// Small encodings shared by the leader and the parties of a federated job: count vectors as
// little-endian 64-bit words, StatsRequest <-> proto (checked against the public hierarchies),
// the purpose strings that bind sealed payloads to one secure sum and chunk, and CSV lines.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/table/csv.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::wire {

std::string EncodeWords(const std::vector<uint64_t>& words);
// InvalidArgument if the length is not a multiple of 8.
absl::StatusOr<std::vector<uint64_t>> DecodeWords(std::string_view bytes);

fedanon::v1::StatsRequest ToProto(const engine::StatsRequest& request);
// InvalidArgument for attributes or nodes that do not exist in `hier`; for a sensitive histogram
// query, also for a candidate that is not one of a node of the current cut, and for histograms
// of more than kMaxHistogramWords words in all.
absl::StatusOr<engine::StatsRequest> FromProto(const fedanon::v1::StatsRequest& proto,
                                               const std::vector<engine::AttributeHierarchy>& hier);

// Where a StatsRequest carries its sensitive histogram queries (fedanon.v1.
// SensitiveHistogramRequest, job.proto): field 90 of federation.proto's StatsRequest, which does
// not name it yet, so the bytes travel (and are bound into the request digest) as that unknown
// field. Once federation.proto declares `SensitiveHistogramRequest sensitive_histograms = 90;`
// the wire bytes are the same and these two functions become its accessors.
inline constexpr int kSensitiveHistogramsField = 90;
void SetSensitiveHistograms(const fedanon::v1::SensitiveHistogramRequest& histograms,
                            fedanon::v1::StatsRequest* proto);
// The queries, if any (InvalidArgument if the field does not parse or appears twice).
absl::StatusOr<std::optional<fedanon::v1::SensitiveHistogramRequest>> SensitiveHistograms(
    const fedanon::v1::StatsRequest& proto);

// "secure-sum/<collect>/<chunk>"
std::string SumPurpose(const fedanon::v1::SumStep& step);
inline constexpr char kUnionPurpose[] = "union";
// "columns for <recipient>": a vertical release's columns are sealed under the recipient the
// admin signed, and only that recipient opens them under its own name.
std::string ReleasePurpose(const std::string& recipient);

// Binding of a secure-sum hop to the request it carries (docs/threat-model.md): parties handed
// different requests or different state updates fail to open each other's hops.
// The running digest of the state updates applied so far: SHA-256(chain || update bytes).
std::string ChainStateUpdate(const std::string& chain, const fedanon::v1::StateUpdate& update);
// SHA-256 over the request (deterministic proto bytes) and the update chain after applying it.
std::string SumRequestDigest(const fedanon::v1::StatsRequest& request,
                             const std::string& update_chain);
// "secure-sum/<collect>/<chunk>/<hex SHA-256 of (round, collect, chunk, chunks, chunk_offset,
// total_words, request_digest)>": the purpose both ends of every sealed hop bind.
// "secure-sum-mask/<collect>/<hex SHA-256 of (round, collect, request_digest)>": the ring's first
// party's mask seed of one collect, sealed for the leader.
std::string SumMaskPurpose(uint64_t collect, uint64_t round, const std::string& request_digest);
// "secure-sum-bins/<collect>/<step>/<hex SHA-256 of (round, collect, step, request_digest)>": the
// message of step `step` of a collect's bin check (SumBinCheck), sealed for the other party.
std::string SumBinCheckPurpose(uint64_t collect, uint32_t step, uint64_t round,
                               const std::string& request_digest);
// The words of `step`'s chunk, once its chunking is checked: chunks = ceil(total_words /
// chunk_words), chunk < chunks, chunk_offset = chunk * chunk_words (nothing else is the leader's
// choice). InvalidArgument naming the chunk otherwise.
absl::StatusOr<uint64_t> SumChunkLength(const fedanon::v1::SumStep& step);
std::string SumHopPurpose(const fedanon::v1::SumStep& step, uint64_t round,
                          const std::string& request_digest);

// "final-check/<kind>/<chunk>/<hex SHA-256 of (round, chunk, chunks, chunk_words, total_words,
// update_chain)>": the purpose of a final-check box (`kind` "hop" for a ring hop, "total" for the
// first party's total). It binds the cut (the update chain), so parties that applied different
// instructions fail to open each other's boxes.
std::string FinalCheckPurpose(const std::string& kind, const fedanon::v1::FinalCheckStep& step,
                              uint64_t round, const std::string& update_chain);

// One CSV record of a proto's repeated field: CsvLine of common/table/csv.h (comma-separated,
// quoted where needed, with its trailing newline), which this header brings along.
std::string CsvLine(const google::protobuf::RepeatedPtrField<std::string>& fields);

}  // namespace fedanon::wire
