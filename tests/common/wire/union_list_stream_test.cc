// The union list made and read a row at a time (common/wire/released_union.h): the same bytes as
// the protobuf serialization, read back from pieces of every size, and malformed lists named.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/wire/released_union.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::wire {
namespace {

std::vector<std::string> SomeRows() {
  std::vector<std::string> rows;
  std::mt19937 rng(7);
  // Lengths around the varint's one- and two-byte boundary, an empty row and a long one.
  for (size_t n : {0, 1, 126, 127, 128, 129, 300, 16383, 16384, 70000}) {
    std::string row(n, '\0');
    for (char& c : row) c = static_cast<char>(rng());
    rows.push_back(row);
  }
  return rows;
}

absl::StatusOr<std::vector<std::string>> ReadInPieces(std::string_view bytes, size_t piece,
                                                      uint64_t max_row = 1 << 20) {
  std::vector<std::string> out;
  UnionListReader reader(
      [&](std::string_view row) {
        out.emplace_back(row);
        return absl::OkStatus();
      },
      max_row);
  for (size_t at = 0; at < bytes.size(); at += piece) {
    absl::Status st = reader.Feed(bytes.substr(at, piece));
    if (!st.ok()) return st;
  }
  absl::Status st = reader.Finish();
  if (!st.ok()) return st;
  return out;
}

TEST(UnionListStreamTest, EntriesAreTheProtobufSerializationAndReadBackFromAnyPieces) {
  const std::vector<std::string> rows = SomeRows();
  fedanon::v1::UnionList list;
  std::string encoded;
  for (const std::string& r : rows) {
    *list.add_rows() = r;
    encoded += EncodeUnionListEntry(r);
  }
  EXPECT_EQ(encoded, list.SerializeAsString());
  for (size_t piece :
       {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{128}, size_t{4096}, encoded.size()}) {
    SCOPED_TRACE(piece);
    absl::StatusOr<std::vector<std::string>> back = ReadInPieces(encoded, piece);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, rows);
  }
  absl::StatusOr<std::vector<std::string>> none = ReadInPieces("", 1);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(UnionListStreamTest, MalformedListsAreNamed) {
  const std::string one = EncodeUnionListEntry("abc");
  // Another field where a row belongs.
  fedanon::v1::UnionList other;
  other.add_rows("x");
  std::string wrong_field = other.SerializeAsString();
  wrong_field[0] = 0x12;
  EXPECT_EQ(ReadInPieces(wrong_field, 5).status().code(), absl::StatusCode::kInvalidArgument);
  // Cut short, inside the row and inside the length.
  EXPECT_NE(
      ReadInPieces(one.substr(0, one.size() - 1), 2).status().message().find("ends inside row 1"),
      std::string::npos);
  const std::string long_row = EncodeUnionListEntry(std::string(300, 'x'));
  EXPECT_EQ(ReadInPieces(long_row.substr(0, 2), 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A row over the bound, and a length varint of more than ten bytes.
  EXPECT_NE(ReadInPieces(long_row, 64, /*max_row=*/299).status().message().find("over the 299"),
            std::string::npos);
  const std::string endless = std::string(1, '\x0a') + std::string(12, '\xff');
  EXPECT_EQ(ReadInPieces(endless, 3).status().code(), absl::StatusCode::kInvalidArgument);
  // A sink's error stops the reading.
  UnionListReader reader([](std::string_view) { return absl::CancelledError("enough"); }, 100);
  EXPECT_EQ(reader.Feed(one).code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace fedanon::wire
