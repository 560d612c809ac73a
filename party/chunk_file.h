// A chunk stream kept on disk (a spill file of the party's job), so that a secure union's list
// larger than memory can be received, or served to the leader, one chunk at a time: the stream's
// ChunkRef first, then each sealed chunk, length-framed, appended. Received chunks are synced as
// they arrive (the chunk is durable before its acknowledgement leaves); a produced stream is
// synced once, whole, before the reply that names it. Reopened after a restart, it holds every
// chunk that was completely written (a record cut short by a crash is cut off). Mode 0600, never
// through a symbolic link. Not thread-safe: the job's lock serializes its use.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/wire/payload_chunks.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::party {

class ChunkFile final : public wire::ChunkStore {
 public:
  // A new file at `path` (one there before is replaced) for the stream `ref`. `sync_each`: every
  // Append is synced to disk before it returns.
  static absl::StatusOr<std::unique_ptr<ChunkFile>> Create(const std::string& path,
                                                           const fedanon::v1::ChunkRef& ref,
                                                           bool sync_each);
  // The file at `path` as a crash left it; NotFound when there is none, DataLoss when its
  // header does not parse.
  static absl::StatusOr<std::unique_ptr<ChunkFile>> Open(const std::string& path, bool sync_each);
  ~ChunkFile() override;
  ChunkFile(const ChunkFile&) = delete;
  ChunkFile& operator=(const ChunkFile&) = delete;

  absl::Status Append(const fedanon::v1::SealedPayload& chunk) override;
  absl::StatusOr<fedanon::v1::SealedPayload> Get(uint32_t index) const override;
  uint32_t size() const override { return static_cast<uint32_t>(records_.size()); }
  // Everything appended, on stable storage.
  absl::Status Sync();
  const fedanon::v1::ChunkRef& ref() const { return ref_; }
  const std::string& path() const { return path_; }

 private:
  ChunkFile() = default;
  struct Record {
    uint64_t offset = 0;  // of the chunk's bytes (after its frame)
    uint32_t bytes = 0;
  };
  std::string path_;
  int fd_ = -1;
  bool sync_each_ = false;
  fedanon::v1::ChunkRef ref_;
  std::vector<Record> records_;
  uint64_t end_ = 0;
};

}  // namespace fedanon::party
