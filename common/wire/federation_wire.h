// Small encodings shared by the leader and the parties of a federated job: count vectors as
// little-endian 64-bit words, StatsRequest <-> proto (checked against the public hierarchies),
// the purpose strings that bind sealed payloads to one secure sum and chunk, and CSV lines.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/table/csv.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::common {

std::string EncodeWords(const std::vector<uint64_t>& words);
// InvalidArgument if the length is not a multiple of 8.
absl::StatusOr<std::vector<uint64_t>> DecodeWords(std::string_view bytes);

fedanon::v1::StatsRequest ToProto(const StatsRequest& request);
// InvalidArgument for attributes or nodes that do not exist in `hier`.
absl::StatusOr<StatsRequest> FromProto(const fedanon::v1::StatsRequest& proto,
                                       const std::vector<AttributeHierarchy>& hier);

// "secure-sum/<collect>/<chunk>"
std::string SumPurpose(const fedanon::v1::SumStep& step);
inline constexpr char kUnionPurpose[] = "union";

// One CSV record of a proto's repeated field: CsvLine of common/table/csv.h (comma-separated,
// quoted where needed, with its trailing newline), which this header brings along.
std::string CsvLine(const google::protobuf::RepeatedPtrField<std::string>& fields);

}  // namespace fedanon::common
