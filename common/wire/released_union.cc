#include "common/wire/released_union.h"

#include "absl/strings/str_cat.h"
#include "common/base/parallel_for.h"
#include "common/base/status_macros.h"
#include "common/table/csv.h"
#include "common/wire/federation_wire.h"
#include "crypto/shuffle.h"

namespace fedanon::common {

crypto::SealContext UnionRowContext(const std::string& job_id, uint64_t round,
                                    const std::string& recipient) {
  return crypto::SealContext{job_id, round, "", recipient, kUnionPurpose};
}

crypto::SealContext UnionListContext(const std::string& job_id, uint64_t round,
                                     const std::string& sender, const std::string& receiver) {
  return crypto::SealContext{job_id, round, sender, receiver, "union-list"};
}

absl::StatusOr<std::vector<std::string>> OpenUnionRows(
    const crypto::SealKeyPair& keys, const std::string& job_id, uint64_t round,
    const std::string& recipient, const google::protobuf::RepeatedPtrField<std::string>& rows) {
  std::vector<std::string> out(rows.size());
  const crypto::SealContext context = UnionRowContext(job_id, round, recipient);
  RETURN_IF_ERROR(ParallelFor(out.size(), [&](size_t i) -> absl::Status {
    ASSIGN_OR_RETURN(out[i], crypto::Open(keys, context, rows[static_cast<int>(i)]));
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<fedanon::v1::UnionList> OpenUnionList(const crypto::SealKeyPair& keys,
                                                     const std::string& job_id, uint64_t round,
                                                     const std::string& receiver,
                                                     const std::string& sender,
                                                     const crypto::SealPublicKey& sender_key,
                                                     const fedanon::v1::SealedPayload& sealed) {
  if (sealed.sender() != sender || sealed.receiver() != receiver) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the union list must come from '", sender, "' (the agreed predecessor) for '", receiver,
        "', not from '", sealed.sender(), "' for '", sealed.receiver(), "'"));
  }
  fedanon::v1::UnionList list;
  ASSIGN_OR_RETURN(
      std::string bytes,
      crypto::OpenFrom(keys, sender_key, UnionListContext(job_id, round, sender, receiver),
                       sealed.ciphertext()));
  if (!list.ParseFromString(bytes)) {
    return absl::InvalidArgumentError("the union list does not parse");
  }
  return list;
}

absl::StatusOr<std::string> JoinReleasedColumns(
    const std::vector<fedanon::v1::VerticalColumns>& parts,
    const std::vector<std::string>& header) {
  struct Source {
    const fedanon::v1::VerticalColumns* part;
    size_t column;
    size_t width;
  };
  std::vector<Source> sources;
  size_t rows = 0;
  bool first = true;
  for (const auto& part : parts) {
    const size_t width = static_cast<size_t>(part.names_size());
    if (width == 0) continue;
    if (static_cast<size_t>(part.cells_size()) % width != 0) {
      return absl::InvalidArgumentError("released columns are ragged");
    }
    const size_t n = static_cast<size_t>(part.cells_size()) / width;
    if (!first && n != rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the parties released different numbers of records (", rows, " vs ", n, ")"));
    }
    rows = n;
    first = false;
  }
  for (const auto& name : header) {
    bool found = false;
    for (const auto& part : parts) {
      for (int i = 0; i < part.names_size(); ++i) {
        if (part.names(i) != name) continue;
        if (found) {
          return absl::InvalidArgumentError(absl::StrCat("column '", name, "' released twice"));
        }
        sources.push_back({&part, static_cast<size_t>(i), static_cast<size_t>(part.names_size())});
        found = true;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat("no party released column '", name, "'"));
    }
  }
  std::vector<std::string_view> views(header.begin(), header.end());
  std::string csv = CsvLine(views);
  ASSIGN_OR_RETURN(std::vector<size_t> perm, crypto::SecurePermutation(rows));
  std::vector<std::string_view> row(sources.size());
  for (size_t r : perm) {
    for (size_t i = 0; i < sources.size(); ++i) {
      row[i] = sources[i].part->cells(static_cast<int>(r * sources[i].width + sources[i].column));
    }
    csv += CsvLine(row);
  }
  return csv;
}

}  // namespace fedanon::common
