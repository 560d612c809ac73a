// A uniformly random permutation of more records than memory should hold (the secure union's
// list of sealed rows, the recipient's released rows): each record goes to one of B buckets drawn
// uniformly at random from the OpenSSL CSPRNG; then, bucket by bucket, the records of a bucket
// are permuted uniformly in memory (SecurePermutation) and handed on. Independent uniform bucket
// choices followed by uniform permutations within buckets give every order of the records the
// same probability (the records are exchangeable within and across buckets), so the result is a
// uniform permutation, as one in-memory shuffle would be. Memory: one bucket (about
// `bucket_bytes`) and a small write buffer per bucket. Buckets beyond the first live in unlinked
// temporary files in `dir` (nothing is left behind, even after a crash); with one bucket nothing
// touches the disk.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fedanon::crypto {

class SpillingShuffle {
 public:
  // The bucket size aimed at.
  static constexpr uint64_t kDefaultBucketBytes = uint64_t{32} << 20;
  // At most this many buckets (each a descriptor): beyond 128 x `bucket_bytes` the buckets grow
  // instead (10 GiB of records: buckets of 80 MiB).
  static constexpr uint64_t kMaxBuckets = 128;
  struct Options {
    uint64_t bucket_bytes = kDefaultBucketBytes;
    // Equal records are refused (DataLoss "a record appears twice", from Finish): the bucket of
    // a record is then drawn from its content under a fresh secret key (SHA-256 of key and
    // record), so that equal records meet in one bucket, and distinct ones spread as uniformly
    // random draws would.
    bool refuse_duplicates = false;
  };
  // Records up to `expected_bytes` in all (more are accepted; the buckets only grow) in buckets
  // of about `options.bucket_bytes`. Bucket files go to `dir`.
  static absl::StatusOr<std::unique_ptr<SpillingShuffle>> Create(const std::string& dir,
                                                                 uint64_t expected_bytes,
                                                                 Options options);
  static absl::StatusOr<std::unique_ptr<SpillingShuffle>> Create(
      const std::string& dir, uint64_t expected_bytes,
      uint64_t bucket_bytes = kDefaultBucketBytes) {
    return Create(dir, expected_bytes, Options{.bucket_bytes = bucket_bytes});
  }
  ~SpillingShuffle();
  SpillingShuffle(const SpillingShuffle&) = delete;
  SpillingShuffle& operator=(const SpillingShuffle&) = delete;

  absl::Status Add(std::string_view record);
  // Hands every record to `emit` once, in a uniformly random order; stops at emit's first error.
  // Once only.
  absl::Status Finish(const std::function<absl::Status(std::string_view)>& emit);

  uint64_t records() const { return records_; }
  uint64_t bytes() const { return bytes_; }  // the records' bytes
  size_t buckets() const { return buckets_.size(); }

 private:
  struct Bucket {
    int fd = -1;  // -1: held in `buffer` alone (the one-bucket case)
    std::string buffer;
    uint64_t file_bytes = 0;
  };
  SpillingShuffle() = default;
  absl::Status Flush(Bucket& bucket);

  std::string dir_;
  std::string duplicate_key_;  // set: buckets by content (refuse_duplicates)
  std::vector<Bucket> buckets_;
  class Draws;
  std::unique_ptr<Draws> draws_;
  uint64_t records_ = 0;
  uint64_t bytes_ = 0;
  bool finished_ = false;
};

}  // namespace fedanon::crypto
