// Private ID matching for vertical jobs (commutative encryption round the ring; see
// docs/crypto.md): each party's list is sent in a secret random order, encrypted by every party,
// and the fully encrypted lists give the common records and their canonical order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "crypto/ec_commutative_cipher.h"

namespace fedanon::party {

struct IdAlignment {
  std::vector<int64_t> canonical;  // per own record: canonical position or -1
  uint64_t common = 0;
};

class IdMatcher {
 public:
  // `threads`: how many threads EncryptOwn and ReEncrypt split their lists over (<= 0: one per
  // hardware thread); the results do not depend on it.
  static absl::StatusOr<std::unique_ptr<IdMatcher>> Create(const std::vector<std::string>& ids,
                                                           int threads = 0);
  void set_threads(int threads) { threads_ = threads; }
  // This party's ids under its key, in a secret random order drawn at Create (OpenSSL CSPRNG);
  // later hops keep the order, so `full[own_index]` of Align comes back in the same order.
  absl::StatusOr<std::vector<std::string>> EncryptOwn() const;
  absl::StatusOr<std::vector<std::string>> ReEncrypt(const std::vector<std::string>& points) const;
  // `full[i]`: party i's list with every party's layer on, as FinalDigests (one per record of
  // party i, in the order of its EncryptOwn). Records whose digest is in every list are common;
  // their sorted digests give the canonical order.
  absl::StatusOr<IdAlignment> Align(size_t own_index,
                                    const std::vector<std::vector<std::string>>& full) const;

  // The fully encrypted points as the last hop sends them: a 16-byte SHA-256 prefix each,
  // concatenated (collisions among 2^32 ids have probability below 2^-64).
  static std::string FinalDigests(const std::vector<std::string>& points);
  // Splits FinalDigests output back into digests; fails unless a multiple of 16 bytes.
  static absl::StatusOr<std::vector<std::string>> SplitDigests(std::string_view packed);

 private:
  std::vector<std::string> ids_;
  std::vector<size_t> order_;  // item j of EncryptOwn's list is ids_[order_[j]]
  std::unique_ptr<crypto::EcCommutativeCipher> cipher_;
  int threads_ = 0;
};

}  // namespace fedanon::party
