#include "crypto/spilling_shuffle.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"
#include "crypto/hash.h"
#include "crypto/shuffle.h"

namespace fedanon::crypto {
namespace {

// A bucket's file is written in pieces of this size.
constexpr size_t kWriteBufferBytes = size_t{64} << 10;
// Records are framed u32le(length) || bytes in a bucket.
constexpr size_t kFrameBytes = 4;

}  // namespace

// Uniform draws below a bound by rejection sampling on 64-bit CSPRNG draws, in batches.
class SpillingShuffle::Draws {
 public:
  absl::StatusOr<uint64_t> Below(uint64_t bound) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    while (true) {
      if (pos_ == buf_.size()) {
        if (RAND_bytes(reinterpret_cast<unsigned char*>(buf_.data()),
                       static_cast<int>(buf_.size() * sizeof(uint64_t))) != 1) {
          return absl::InternalError("the random generator failed");
        }
        pos_ = 0;
      }
      const uint64_t x = buf_[pos_++];
      if (x < limit) return x % bound;
    }
  }

 private:
  std::vector<uint64_t> buf_ = std::vector<uint64_t>(1024);
  size_t pos_ = 1024;
};

absl::StatusOr<std::unique_ptr<SpillingShuffle>> SpillingShuffle::Create(const std::string& dir,
                                                                         uint64_t expected_bytes,
                                                                         Options options) {
  const uint64_t bucket_bytes = std::max<uint64_t>(options.bucket_bytes, 1);
  const uint64_t count =
      std::clamp<uint64_t>((expected_bytes + bucket_bytes - 1) / bucket_bytes, 1, kMaxBuckets);
  std::unique_ptr<SpillingShuffle> s(new SpillingShuffle());
  s->dir_ = dir;
  s->draws_ = std::make_unique<Draws>();
  s->buckets_.resize(count);
  if (options.refuse_duplicates) {
    s->duplicate_key_.resize(32);
    if (RAND_bytes(reinterpret_cast<unsigned char*>(s->duplicate_key_.data()), 32) != 1) {
      return absl::InternalError("the random generator failed");
    }
  }
  if (count == 1) return s;
  for (Bucket& b : s->buckets_) {
    std::string path = absl::StrCat(dir, "/shuffle-XXXXXX");
    const int fd = mkostemp(path.data(), O_CLOEXEC);
    if (fd < 0) return base::ErrnoStatus(errno, "cannot create a shuffle bucket in", dir);
    ::unlink(path.c_str());  // anonymous from now on: gone with the descriptor
    b.fd = fd;
  }
  return s;
}

SpillingShuffle::~SpillingShuffle() {
  for (Bucket& b : buckets_) {
    if (b.fd >= 0) ::close(b.fd);
  }
}

absl::Status SpillingShuffle::Flush(Bucket& bucket) {
  if (bucket.buffer.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(base::WriteAll(bucket.fd, bucket.buffer, absl::StrCat(dir_, "/shuffle-*")));
  bucket.file_bytes += bucket.buffer.size();
  bucket.buffer.clear();
  return absl::OkStatus();
}

absl::Status SpillingShuffle::Add(std::string_view record) {
  if (finished_) return absl::FailedPreconditionError("the shuffle was finished");
  if (record.size() > UINT32_MAX) return absl::InvalidArgumentError("a record over 4 GiB");
  uint64_t i = 0;
  if (duplicate_key_.empty()) {
    ASSIGN_OR_RETURN(i, draws_->Below(buckets_.size()));
  } else if (buckets_.size() > 1) {
    std::string keyed = duplicate_key_;
    keyed.append(record);
    const std::string h = Sha256(keyed);
    uint64_t x = 0;
    for (size_t k = 0; k < 8; ++k) x = x << 8 | static_cast<unsigned char>(h[k]);
    i = x % buckets_.size();  // a bias below 2^-56 for at most 128 buckets
  }
  Bucket& b = buckets_[i];
  const auto n = static_cast<uint32_t>(record.size());
  char frame[kFrameBytes];
  for (size_t k = 0; k < kFrameBytes; ++k) frame[k] = static_cast<char>((n >> (8 * k)) & 0xff);
  b.buffer.append(frame, kFrameBytes);
  b.buffer.append(record);
  ++records_;
  bytes_ += record.size();
  if (b.fd >= 0 && b.buffer.size() >= kWriteBufferBytes) RETURN_IF_ERROR(Flush(b));
  return absl::OkStatus();
}

absl::Status SpillingShuffle::Finish(const std::function<absl::Status(std::string_view)>& emit) {
  if (finished_) return absl::FailedPreconditionError("the shuffle was finished");
  finished_ = true;
  for (Bucket& b : buckets_) {
    std::string data;
    if (b.fd < 0) {
      data = std::move(b.buffer);
    } else {
      RETURN_IF_ERROR(Flush(b));
      data.resize(b.file_bytes);
      size_t at = 0;
      while (at < data.size()) {
        const ssize_t got =
            ::pread(b.fd, data.data() + at, data.size() - at, static_cast<off_t>(at));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          return base::ErrnoStatus(got < 0 ? errno : EIO, "cannot read a shuffle bucket in", dir_);
        }
        at += static_cast<size_t>(got);
      }
      ::close(b.fd);
      b.fd = -1;
    }
    std::vector<std::string_view> records;
    for (size_t at = 0; at < data.size();) {
      uint32_t n = 0;
      for (size_t k = 0; k < kFrameBytes; ++k) {
        n |= static_cast<uint32_t>(static_cast<unsigned char>(data[at + k])) << (8 * k);
      }
      records.emplace_back(data.data() + at + kFrameBytes, n);
      at += kFrameBytes + n;
    }
    if (!duplicate_key_.empty()) {
      absl::flat_hash_set<std::string_view> seen;
      seen.reserve(records.size());
      for (std::string_view r : records) {
        if (!seen.insert(r).second) return absl::DataLossError("a record appears twice");
      }
    }
    ASSIGN_OR_RETURN(const std::vector<size_t> order, SecurePermutation(records.size()));
    for (size_t i : order) RETURN_IF_ERROR(emit(records[i]));
  }
  return absl::OkStatus();
}

}  // namespace fedanon::crypto
