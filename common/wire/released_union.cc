#include "common/wire/released_union.h"

#include <algorithm>
#include <string_view>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/base/parallel_for.h"
#include "common/base/status_macros.h"
#include "common/table/csv.h"
#include "common/wire/federation_wire.h"
#include "crypto/shuffle.h"
#include "google/protobuf/stubs/common.h"

namespace fedanon::wire {

crypto::SealContext UnionRowContext(const std::string& job_id, const std::string& run_id,
                                    uint64_t round, const std::string& recipient) {
  return crypto::SealContext{job_id, run_id, round, "", recipient, kUnionPurpose};
}

crypto::SealContext UnionListContext(const std::string& job_id, const std::string& run_id,
                                     uint64_t round, const std::string& sender,
                                     const std::string& receiver) {
  return crypto::SealContext{job_id, run_id, round, sender, receiver, "union-list"};
}

std::string PadUnionRow(std::string_view line) {
  const size_t used = 4 + line.size();
  const size_t size = used <= kUnionRowFloorBytes ? kUnionRowFloorBytes
                                                  : (used + kUnionRowStepBytes - 1) /
                                                        kUnionRowStepBytes * kUnionRowStepBytes;
  std::string out(size, '\0');
  const auto n = static_cast<uint32_t>(line.size());
  out[0] = static_cast<char>(n >> 24);
  out[1] = static_cast<char>(n >> 16);
  out[2] = static_cast<char>(n >> 8);
  out[3] = static_cast<char>(n);
  line.copy(out.data() + 4, line.size());
  return out;
}

absl::StatusOr<std::string> UnpadUnionRow(std::string_view padded) {
  if (padded.size() < 4)
    return absl::InvalidArgumentError("a union row is shorter than its length");
  const uint64_t n = (uint64_t{static_cast<uint8_t>(padded[0])} << 24) |
                     (uint64_t{static_cast<uint8_t>(padded[1])} << 16) |
                     (uint64_t{static_cast<uint8_t>(padded[2])} << 8) |
                     uint64_t{static_cast<uint8_t>(padded[3])};
  if (n > padded.size() - 4) {
    return absl::InvalidArgumentError("a union row's length runs past its end");
  }
  const std::string_view rest = padded.substr(4 + n);
  if (rest.find_first_not_of('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError("a union row's padding is not zero");
  }
  return std::string(padded.substr(4, n));
}

absl::StatusOr<std::vector<std::string>> OpenUnionRows(
    const crypto::SealKeyPair& keys, const std::string& job_id, const std::string& run_id,
    uint64_t round, const std::string& recipient,
    const google::protobuf::RepeatedPtrField<std::string>& rows) {
  // An honest party seals each row under a fresh ephemeral key, so no two boxes are alike: a
  // repeated box is a row a later party replayed (it cannot read it, but can count it twice).
  absl::flat_hash_set<std::string_view> seen;
  seen.reserve(static_cast<size_t>(rows.size()));
  for (int i = 0; i < rows.size(); ++i) {
    if (!seen.insert(rows[i]).second) {
      return absl::DataLossError(absl::StrCat("the secure union holds sealed row ", i + 1,
                                              " twice (of ", rows.size(),
                                              "): a party repeated another's row on its way"));
    }
  }
  std::vector<std::string> out(rows.size());
  const crypto::SealContext context = UnionRowContext(job_id, run_id, round, recipient);
  RETURN_IF_ERROR(base::ParallelFor(out.size(), [&](size_t i) -> absl::Status {
    ASSIGN_OR_RETURN(const std::string padded,
                     crypto::Open(keys, context, rows[static_cast<int>(i)]));
    ASSIGN_OR_RETURN(out[i], UnpadUnionRow(padded));
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<fedanon::v1::UnionList> OpenUnionList(
    const crypto::SealKeyPair& keys, const std::string& job_id, const std::string& run_id,
    uint64_t round, const std::string& receiver, const std::string& sender,
    const crypto::SealPublicKey& sender_key, const fedanon::v1::SealedPayload& sealed) {
  if (sealed.sender() != sender || sealed.receiver() != receiver) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the union list must come from '", sender, "' (the agreed predecessor) for '", receiver,
        "', not from '", sealed.sender(), "' for '", sealed.receiver(), "'"));
  }
  fedanon::v1::UnionList list;
  ASSIGN_OR_RETURN(
      std::string bytes,
      crypto::OpenFrom(keys, sender_key, UnionListContext(job_id, run_id, round, sender, receiver),
                       sealed.ciphertext()));
  if (!list.ParseFromString(bytes)) {
    return absl::InvalidArgumentError("the union list does not parse");
  }
  return list;
}

namespace {

constexpr char kNamesTag = 0x0a;  // VerticalColumns.names: field 1, length-delimited
constexpr char kCellsTag = 0x12;  // VerticalColumns.cells: field 2, length-delimited

// A varint at bytes[*pos] (advancing *pos); false past the end or beyond 10 bytes.
bool ReadVarint(std::string_view bytes, size_t* pos, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 70 && *pos < bytes.size(); shift += 7) {
    const auto b = static_cast<uint8_t>(bytes[(*pos)++]);
    *value |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace

constexpr char kUnionRowTag = 0x0a;  // UnionList.rows: field 1, length-delimited

std::string EncodeUnionListEntry(std::string_view sealed_row) {
  std::string out(1, kUnionRowTag);
  uint64_t n = sealed_row.size();
  while (n >= 0x80) {
    out += static_cast<char>((n & 0x7f) | 0x80);
    n >>= 7;
  }
  out += static_cast<char>(n);
  out.append(sealed_row);
  return out;
}

absl::Status UnionListReader::Feed(std::string_view piece) {
  // Whole entries are read from the piece in place; only an entry cut by the piece's end is
  // copied (into pending_), and completed from the next pieces.
  std::string joined;
  std::string_view in = piece;
  if (!pending_.empty()) {
    joined = std::move(pending_);
    pending_.clear();
    joined.append(piece);
    in = joined;
  }
  size_t pos = 0;
  while (pos < in.size()) {
    if (in[pos] != kUnionRowTag) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the union list does not parse: byte ", static_cast<int>(static_cast<uint8_t>(in[pos])),
          " where a row's tag belongs (row ", rows_ + 1, ")"));
    }
    size_t at = pos + 1;
    uint64_t n = 0;
    if (!ReadVarint(in, &at, &n)) {
      if (in.size() - pos > 11) {
        return absl::InvalidArgumentError(
            absl::StrCat("the union list does not parse: row ", rows_ + 1, "'s length"));
      }
      break;  // the length goes on in the next piece
    }
    if (n > max_row_bytes_) {
      return absl::InvalidArgumentError(
          absl::StrCat("the union list does not parse: row ", rows_ + 1, " declares ", n,
                       " bytes, over the ", max_row_bytes_, " a sealed row may have"));
    }
    if (n > in.size() - at) break;  // the row goes on in the next piece
    RETURN_IF_ERROR(sink_(in.substr(at, n)));
    ++rows_;
    pos = at + n;
  }
  pending_.assign(in.substr(pos));
  return absl::OkStatus();
}

absl::Status UnionListReader::Finish() const {
  if (!pending_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the union list does not parse: it ends inside row ", rows_ + 1));
  }
  return absl::OkStatus();
}

absl::StatusOr<VerticalColumnsView> VerticalColumnsView::Parse(std::string bytes) {
  VerticalColumnsView view;
  const std::string_view in(bytes);
  size_t pos = 0;
  bool canonical = true;
  while (pos < in.size()) {
    const char tag = in[pos];
    if (tag != kNamesTag && tag != kCellsTag) {
      canonical = false;  // another field or encoding: read as a message below
      break;
    }
    if (tag == kNamesTag && view.cells_ > 0) {
      canonical = false;  // a name after the cells
      break;
    }
    const size_t tag_pos = pos++;
    uint64_t n = 0;
    if (!ReadVarint(in, &pos, &n) || n > in.size() - pos) {
      return absl::InvalidArgumentError("released columns do not parse");
    }
    const std::string_view text = in.substr(pos, n);
    pos += n;
    if (!google::protobuf::internal::IsStructurallyValidUTF8(text.data(),
                                                             static_cast<int>(text.size()))) {
      return absl::InvalidArgumentError("released columns do not parse (a string is not UTF-8)");
    }
    if (tag == kNamesTag) {
      view.names_.emplace_back(text);
      continue;
    }
    if (!view.names_.empty() && view.cells_ % view.names_.size() == 0) {
      view.row_start_.push_back(tag_pos);
    }
    ++view.cells_;
  }
  if (!canonical) {
    fedanon::v1::VerticalColumns message;
    if (!message.ParseFromString(bytes)) {
      return absl::InvalidArgumentError("released columns do not parse");
    }
    message.DiscardUnknownFields();
    std::string again = message.SerializeAsString();
    std::string().swap(bytes);
    return Parse(std::move(again));  // the serializer writes the names, then the cells
  }
  // A last, incomplete row is no row (the join calls the columns ragged).
  if (!view.names_.empty() && view.cells_ % view.names_.size() != 0) view.row_start_.pop_back();
  view.bytes_ = std::move(bytes);
  return view;
}

void VerticalColumnsView::Row(size_t r, std::vector<std::string_view>* out) const {
  out->resize(names_.size());
  const std::string_view in(bytes_);
  size_t pos = row_start_[r];
  for (auto& cell : *out) {
    ++pos;  // the tag (checked by Parse)
    uint64_t n = 0;
    ReadVarint(in, &pos, &n);
    cell = in.substr(pos, n);
    pos += n;
  }
}

absl::Status JoinReleasedColumnsTo(const std::vector<VerticalColumnsView>& parts,
                                   const std::vector<std::string>& header, const CsvSink& sink) {
  struct Source {
    size_t part;
    size_t column;
  };
  std::vector<Source> sources;
  size_t rows = 0;
  bool first = true;
  for (const auto& part : parts) {
    const size_t width = part.names().size();
    if (width == 0) continue;
    if (part.cells() % width != 0) {
      return absl::InvalidArgumentError("released columns are ragged");
    }
    const size_t n = part.rows();
    if (!first && n != rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the parties released different numbers of records (", rows, " vs ", n, ")"));
    }
    rows = n;
    first = false;
  }
  for (const auto& name : header) {
    bool found = false;
    for (size_t p = 0; p < parts.size(); ++p) {
      const auto& names = parts[p].names();
      for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] != name) continue;
        if (found) {
          return absl::InvalidArgumentError(absl::StrCat("column '", name, "' released twice"));
        }
        sources.push_back({p, i});
        found = true;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat("no party released column '", name, "'"));
    }
  }
  std::vector<std::string_view> views(header.begin(), header.end());
  RETURN_IF_ERROR(sink(table::CsvLine(views)));
  ASSIGN_OR_RETURN(const std::vector<size_t> perm, crypto::SecurePermutation(rows));
  // Output rows [begin, end) into `csv`. The rows are read in a random order, so each is a cache
  // miss for its offset and another for its bytes: both are asked for some rows ahead.
  constexpr size_t kOffsetsAhead = 16;
  constexpr size_t kBytesAhead = 8;
  auto format = [&](size_t begin, size_t end, std::string* csv) {
    std::vector<std::vector<std::string_view>> part_row(parts.size());
    std::vector<std::string_view> row(sources.size());
    csv->clear();
    for (size_t k = begin; k < end; ++k) {
      for (const auto& part : parts) {
        if (part.names().empty()) continue;
        if (k + kOffsetsAhead < end) part.Prefetch(perm[k + kOffsetsAhead], 0);
        if (k + kBytesAhead < end) part.Prefetch(perm[k + kBytesAhead], 1);
      }
      const size_t r = perm[k];
      for (size_t p = 0; p < parts.size(); ++p) {
        if (!parts[p].names().empty()) parts[p].Row(r, &part_row[p]);
      }
      for (size_t i = 0; i < sources.size(); ++i) {
        row[i] = part_row[sources[i].part][sources[i].column];
      }
      table::AppendCsvRecord(row, ',', csv);
    }
  };
  // Pieces formatted on up to four threads at a time, handed to the sink in order.
  constexpr size_t kPieceRows = size_t{1} << 14;
  const size_t pieces = (rows + kPieceRows - 1) / kPieceRows;
  const size_t threads =
      std::clamp<size_t>(std::thread::hardware_concurrency(), 1, std::max<size_t>(pieces, 1));
  const size_t at_once = std::min<size_t>(threads, 4);
  std::vector<std::string> formatted(at_once);
  for (size_t first = 0; first < pieces; first += at_once) {
    const size_t count = std::min(at_once, pieces - first);
    auto piece = [&](size_t w) {
      const size_t begin = (first + w) * kPieceRows;
      format(begin, std::min(rows, begin + kPieceRows), &formatted[w]);
    };
    std::vector<std::thread> pool;
    for (size_t w = 1; w < count; ++w) pool.emplace_back(piece, w);
    piece(0);
    for (std::thread& t : pool) t.join();
    for (size_t w = 0; w < count; ++w) RETURN_IF_ERROR(sink(formatted[w]));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> JoinReleasedColumns(
    const std::vector<fedanon::v1::VerticalColumns>& parts,
    const std::vector<std::string>& header) {
  std::vector<VerticalColumnsView> views;
  for (const auto& part : parts) {
    ASSIGN_OR_RETURN(views.emplace_back(), VerticalColumnsView::Parse(part.SerializeAsString()));
  }
  std::string csv;
  RETURN_IF_ERROR(JoinReleasedColumnsTo(views, header, [&csv](std::string_view piece) {
    csv.append(piece);
    return absl::OkStatus();
  }));
  return csv;
}

}  // namespace fedanon::wire
