// What a recipient opens at the end of a federated job, shared by the party agent and the leader
// (either may be the recipient): the secure set union's sealed list and rows (horizontal jobs),
// and the join of the parties' released columns (vertical jobs).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "crypto/sealed_box.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::wire {

// A union row's plaintext is padded before it is sealed, so that the leader, which relays the
// sealed rows, cannot tell rows (and so their origin party) apart by length: u32be(length of the
// CSV line) || the line || zeros, to kUnionRowFloorBytes, or beyond that to the next multiple of
// kUnionRowStepBytes. Rows up to the floor (most generalized rows) all have one length; a longer
// row shows only its 64-byte bucket.
inline constexpr size_t kUnionRowFloorBytes = 256;
inline constexpr size_t kUnionRowStepBytes = 64;
std::string PadUnionRow(std::string_view line);
// The CSV line of a padded row; InvalidArgument for a length prefix past the end or padding that
// is not zero.
absl::StatusOr<std::string> UnpadUnionRow(std::string_view padded);

// Union rows are sealed ANONYMOUSLY (crypto::Seal, no sender name): the recipient must not learn
// their origin (mohammed2010 §5.4).
crypto::SealContext UnionRowContext(const std::string& job_id, const std::string& run_id,
                                    uint64_t round, const std::string& recipient);
// The union list is sealed hop to hop, sender-authenticated (crypto::SealFrom), from `sender` to
// `receiver`.
crypto::SealContext UnionListContext(const std::string& job_id, const std::string& run_id,
                                     uint64_t round, const std::string& sender,
                                     const std::string& receiver);

// The secure union's wire format: opens the set sealed for `receiver` by `sender` (whose
// certified key is `sender_key`; PermissionDenied when the payload names or was sealed by anyone
// else), then the rows sealed anonymously for `recipient` (one padded CSV line each, returned
// without its padding).
absl::StatusOr<fedanon::v1::UnionList> OpenUnionList(
    const crypto::SealKeyPair& keys, const std::string& job_id, const std::string& run_id,
    uint64_t round, const std::string& receiver, const std::string& sender,
    const crypto::SealPublicKey& sender_key, const fedanon::v1::SealedPayload& sealed);
absl::StatusOr<std::vector<std::string>> OpenUnionRows(
    const crypto::SealKeyPair& keys, const std::string& job_id, const std::string& run_id,
    uint64_t round, const std::string& recipient,
    const google::protobuf::RepeatedPtrField<std::string>& rows);

// The union list (a serialized UnionList: one length-delimited field-1 entry per sealed row) made
// and read a row at a time, so that no one holds a list whole: EncodeUnionListEntry(row) appended
// for each row is the list's serialization; a UnionListReader fed the serialization in pieces of
// any size hands on each row as soon as it is complete.
std::string EncodeUnionListEntry(std::string_view sealed_row);
// The longest sealed row a reader accepts (a released CSV line of 16 MiB, padded and sealed).
inline constexpr uint64_t kMaxSealedUnionRowBytes = uint64_t{16} << 20;
class UnionListReader {
 public:
  using RowSink = std::function<absl::Status(std::string_view sealed_row)>;
  // Rows longer than `max_row_bytes` are refused (InvalidArgument).
  UnionListReader(RowSink sink, uint64_t max_row_bytes)
      : sink_(std::move(sink)), max_row_bytes_(max_row_bytes) {}
  // InvalidArgument "the union list does not parse: ..." for anything but field-1 entries.
  absl::Status Feed(std::string_view piece);
  // InvalidArgument when the list ends inside an entry.
  absl::Status Finish() const;
  uint64_t rows() const { return rows_; }

 private:
  RowSink sink_;
  uint64_t max_row_bytes_;
  std::string pending_;  // the start of an entry that a later piece completes
  uint64_t rows_ = 0;
};

// A serialized VerticalColumns read in place (so that a 1M-record release fits bounded
// memory): the names, and where each row's cells start in the bytes, with no string per cell.
// Accepts exactly what VerticalColumns::ParseFromString accepts (any other field layout is parsed
// as a message once and read back in the canonical one); strings must be valid UTF-8.
class VerticalColumnsView {
 public:
  static absl::StatusOr<VerticalColumnsView> Parse(std::string bytes);
  const std::vector<std::string>& names() const { return names_; }
  uint64_t cells() const { return cells_; }  // every cell, of every row
  // Whole rows (cells() / names().size(); 0 without names).
  size_t rows() const { return row_start_.size(); }
  // Row r's cells, names().size() of them, as views into the bytes.
  void Row(size_t r, std::vector<std::string_view>* out) const;
  // Asks the CPU to load row r's offset (`level` 0) or its first bytes (`level` 1; the offset
  // should be loaded by then) ahead of a Row(r) in a random order of rows.
  void Prefetch(size_t r, int level) const {
    if (level == 0) {
      __builtin_prefetch(&row_start_[r]);
    } else {
      __builtin_prefetch(bytes_.data() + row_start_[r]);
    }
  }

 private:
  std::string bytes_;
  std::vector<std::string> names_;
  uint64_t cells_ = 0;
  std::vector<uint64_t> row_start_;  // offset of each row's first cell (its tag byte)
};

// Where a joined table goes, piece by piece (e.g. the job store's result file).
using CsvSink = std::function<absl::Status(std::string_view)>;

// The joined table from every party's released columns: the columns in `header` order, one row
// per common record, rows in a random order (OpenSSL CSPRNG). Fails when a column is missing or
// the parts disagree on the number of records. JoinReleasedColumnsTo writes it to `sink` in
// pieces of 16,384 rows (never the whole table in memory), formatted on every core (at most
// four pieces at once).
absl::StatusOr<std::string> JoinReleasedColumns(
    const std::vector<fedanon::v1::VerticalColumns>& parts, const std::vector<std::string>& header);
absl::Status JoinReleasedColumnsTo(const std::vector<VerticalColumnsView>& parts,
                                   const std::vector<std::string>& header, const CsvSink& sink);

}  // namespace fedanon::wire
