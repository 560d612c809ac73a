// A chunk stream on disk (party/chunk_file.h) and the streaming halves of chunked payloads
// (common/wire/payload_chunks.h): ChunkSealer cuts what SealChunks cuts, a ChunkFile reopened
// after a crash holds every whole chunk, and a receiver resumed over it goes on where it stopped.
#include "party/chunk_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/wire/payload_chunks.h"
#include "crypto/sealed_box.h"
#include "tests/support/status_matchers.h"

namespace fedanon::party {
namespace {

using ::fedanon::testing::StatusIs;

fedanon::v1::ChunkRef Ref() {
  fedanon::v1::ChunkRef ref;
  ref.set_stream("union/hospital-b");
  ref.set_sender("hospital-a");
  ref.set_receiver("hospital-b");
  ref.set_purpose("union-list");
  ref.set_request_digest(std::string(32, '\x05'));
  return ref;
}

// A fake box: the purpose's length, the purpose, then the piece behind the sealed box's overhead.
absl::StatusOr<fedanon::v1::SealedPayload> FakeSeal(std::string_view piece,
                                                    const std::string& purpose) {
  fedanon::v1::SealedPayload c;
  c.set_sender("hospital-a");
  c.set_receiver("hospital-b");
  c.set_purpose("union-list");
  c.set_ciphertext(std::string(crypto::kSealOverhead - 1, 'x') +
                   static_cast<char>(purpose.size() % 251) + std::string(piece));
  return c;
}

absl::StatusOr<std::string> FakeOpen(const fedanon::v1::SealedPayload& c, const std::string&) {
  return c.ciphertext().substr(crypto::kSealOverhead);
}

std::string Bytes(size_t n) {
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>('a' + i % 23);
  return out;
}

TEST(ChunkSealerTest, CutsAndSealsWhatSealChunksDoesFromPiecesOfAnySize) {
  constexpr uint64_t kChunk = 100;
  for (size_t total : {size_t{0}, size_t{1}, size_t{100}, size_t{101}, size_t{350}}) {
    SCOPED_TRACE(total);
    const std::string bytes = Bytes(total);
    fedanon::v1::ChunkRef whole_ref = Ref();
    ASSERT_OK_AND_ASSIGN(const std::vector<fedanon::v1::SealedPayload> whole,
                         wire::SealChunks(bytes, kChunk, &whole_ref, FakeSeal));
    for (size_t piece : {size_t{1}, size_t{7}, size_t{100}, size_t{1000}}) {
      fedanon::v1::ChunkRef ref = Ref();
      std::vector<fedanon::v1::SealedPayload> streamed;
      wire::ChunkSealer sealer(&ref, total, kChunk, FakeSeal,
                               [&](uint32_t index, fedanon::v1::SealedPayload c) {
                                 EXPECT_EQ(index, streamed.size());
                                 streamed.push_back(std::move(c));
                                 return absl::OkStatus();
                               });
      for (size_t at = 0; at < total; at += piece) {
        ASSERT_OK(sealer.Append(std::string_view(bytes).substr(at, piece)));
      }
      ASSERT_OK(sealer.Finish());
      EXPECT_TRUE(wire::SameChunkRef(ref, whole_ref));
      ASSERT_EQ(streamed.size(), whole.size());
      for (size_t i = 0; i < whole.size(); ++i) {
        EXPECT_EQ(streamed[i].SerializeAsString(), whole[i].SerializeAsString()) << i;
      }
    }
  }
  // Fewer or more bytes than announced.
  fedanon::v1::ChunkRef ref = Ref();
  const auto keep = [](uint32_t, fedanon::v1::SealedPayload) { return absl::OkStatus(); };
  wire::ChunkSealer short_one(&ref, 10, kChunk, FakeSeal, keep);
  ASSERT_OK(short_one.Append("abc"));
  EXPECT_THAT(short_one.Finish(), StatusIs(absl::StatusCode::kInvalidArgument, "announced 10"));
  wire::ChunkSealer long_one(&ref, 2, kChunk, FakeSeal, keep);
  EXPECT_THAT(long_one.Append("abc"),
              StatusIs(absl::StatusCode::kInvalidArgument, "more bytes than the announced 2"));
}

// Chunk i's plaintext under a 4 KiB limit (2 KiB chunks, the last one 500 bytes), each its own.
std::string Piece(int i) {
  std::string out = Bytes(i == 3 ? 500 : 2048);
  out[0] = static_cast<char>('A' + i);
  return out;
}

class ChunkFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("chunk_file_", ::testing::UnitTest::GetInstance()->random_seed(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path() const { return (dir_ / "in-x.chunks").string(); }

  std::filesystem::path dir_;
};

TEST_F(ChunkFileTest, AReopenedFileHoldsEveryWholeChunkAndCutsATornOne) {
  fedanon::v1::ChunkRef ref = Ref();
  ref.set_chunks(4);
  ref.set_total_bytes(3 * 2048 + 500);  // as an honest sender cuts under a 4 KiB limit
  std::vector<fedanon::v1::SealedPayload> chunks;
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK_AND_ASSIGN(chunks.emplace_back(), FakeSeal(Piece(i), "p"));
  }
  {
    ASSERT_OK_AND_ASSIGN(auto file, ChunkFile::Create(Path(), ref, /*sync_each=*/true));
    for (int i = 0; i < 2; ++i) ASSERT_OK(file->Append(chunks[static_cast<size_t>(i)]));
    EXPECT_EQ(file->size(), 2u);
    ASSERT_OK_AND_ASSIGN(const auto back, file->Get(1));
    EXPECT_EQ(back.SerializeAsString(), chunks[1].SerializeAsString());
    EXPECT_THAT(file->Get(2), StatusIs(absl::StatusCode::kOutOfRange, "holds no chunk 2"));
  }
  EXPECT_EQ(std::filesystem::status(Path()).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  // A crash in the middle of the third chunk's record: its frame and part of its bytes.
  {
    const int fd = ::open(Path().c_str(), O_WRONLY | O_APPEND);
    ASSERT_GE(fd, 0);
    const std::string torn = std::string("\x40\x00\x00\x00", 4) + "partial";
    ASSERT_EQ(::write(fd, torn.data(), torn.size()), static_cast<ssize_t>(torn.size()));
    ::close(fd);
  }
  ASSERT_OK_AND_ASSIGN(auto reopened, ChunkFile::Open(Path(), /*sync_each=*/true));
  EXPECT_TRUE(wire::SameChunkRef(reopened->ref(), ref));
  ASSERT_EQ(reopened->size(), 2u);
  // A receiver goes on over it: the two held chunks counted, the rest added, opened in pieces.
  ASSERT_OK_AND_ASSIGN(wire::ChunkReceiver receiver,
                       wire::ChunkReceiver::Resume(ref, uint64_t{1} << 20, std::move(reopened)));
  EXPECT_EQ(receiver.received(), 2u);
  ASSERT_OK(receiver.Add(ref, 1, chunks[1]));  // a repeat changes nothing
  EXPECT_THAT(receiver.Add(ref, 1, chunks[2]),
              StatusIs(absl::StatusCode::kInvalidArgument, "duplicate chunk 1 with other content"));
  ASSERT_OK(receiver.Add(ref, 2, chunks[2]));
  ASSERT_OK(receiver.Add(ref, 3, chunks[3]));
  std::string opened;
  ASSERT_OK(receiver.OpenTo(FakeOpen, [&](std::string_view piece) {
    opened.append(piece);
    return absl::OkStatus();
  }));
  EXPECT_EQ(opened, Piece(0) + Piece(1) + Piece(2) + Piece(3));
  // And the file holds all four, read once more from disk.
  ASSERT_OK_AND_ASSIGN(auto again, ChunkFile::Open(Path(), /*sync_each=*/false));
  EXPECT_EQ(again->size(), 4u);
}

TEST_F(ChunkFileTest, AFileThatIsNotAChunkFileIsRefusedByName) {
  {
    const int fd = ::open(Path().c_str(), O_WRONLY | O_CREAT, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "not a chunk file", 16), 16);
    ::close(fd);
  }
  EXPECT_THAT(ChunkFile::Open(Path(), false),
              StatusIs(absl::StatusCode::kDataLoss, "is not a chunk file"));
  EXPECT_THAT(ChunkFile::Open((dir_ / "missing").string(), false),
              StatusIs(absl::StatusCode::kNotFound, "cannot open"));
}

}  // namespace
}  // namespace fedanon::party
