// Private ID matching for vertical jobs (commutative encryption round the ring; see
// docs/crypto.md): each party's list is sent in a secret random order, encrypted by every party,
// and the fully encrypted lists give the common records and their canonical order. A matcher's
// secrets (its commutative-encryption key and the seed of its secret order) can be kept durably
// (DurableSecret) and restored after a restart of the party (Restore): same key, same order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/process_usage.h"
#include "crypto/ec_commutative_cipher.h"
#include "crypto/secret_bytes.h"

namespace fedanon::party {

struct IdAlignment {
  std::vector<int64_t> canonical;  // per own record: canonical position or -1
  uint64_t common = 0;
};

// The party's log line at the end of ID matching reports these (bench/vertical_daemons.sh reads
// it): the parties are separate processes, so each reports its own.
using common::CurrentProcessUsage;
using common::ProcessUsage;

class IdMatcher {
 public:
  // `threads`: how many threads EncryptOwn and ReEncrypt split their lists over (<= 0: one per
  // hardware thread); the results do not depend on it.
  static absl::StatusOr<std::unique_ptr<IdMatcher>> Create(const std::vector<std::string>& ids,
                                                           int threads = 0);
  // The matcher whose DurableSecret() is `secret`, over the same ids (a party reloading a
  // vertical job from its durable state): the same key and the same secret order, so that its
  // lists are the ones it sent before. InvalidArgument for a secret of another form.
  static absl::StatusOr<std::unique_ptr<IdMatcher>> Restore(const std::vector<std::string>& ids,
                                                            std::string_view secret,
                                                            int threads = 0);
  // kDurableSecretBytes: the 32-byte key, then the 32-byte seed of the secret order
  // (crypto::SeededPermutation). Keep it like a key (0600), and delete it with the job.
  crypto::SecretBytes DurableSecret() const;
  static constexpr size_t kDurableSecretBytes = 64;
  void set_threads(int threads) { threads_ = threads; }
  // How the points of EncryptOwn and of a ReEncrypt that is not the last hop are encoded on the
  // hops between parties (docs/crypto.md, "Point encoding on the hops"): uncompressed by default
  // (measured cheaper: 32 more bytes per id against a 4.5 us decompression at the receiver).
  // Either is accepted on input, so parties may differ.
  void set_hop_encoding(crypto::PointEncoding encoding) { hop_encoding_ = encoding; }
  // This party's ids under its key, in a secret random order drawn at Create (OpenSSL CSPRNG);
  // later hops keep the order, so `full[own_index]` of Align comes back in the same order.
  absl::StatusOr<std::vector<std::string>> EncryptOwn() const;
  // Items [first, first + count) of EncryptOwn's list (the same points): one batch of the list
  // (protocol 1.3, docs/crypto.md "ID matching in batches"). InvalidArgument past the list's end.
  absl::StatusOr<std::vector<std::string>> EncryptOwnRange(size_t first, size_t count) const;
  size_t size() const { return ids_.size(); }
  // `last_hop`: the output is compressed whatever the hop encoding, so that FinalDigests hash one
  // canonical form.
  absl::StatusOr<std::vector<std::string>> ReEncrypt(const std::vector<std::string>& points,
                                                     bool last_hop = false) const;
  // `full[i]`: party i's list with every party's layer on, as FinalDigests (one per record of
  // party i, in the order of its EncryptOwn). Records whose digest is in every list are common;
  // their sorted digests give the canonical order. InvalidArgument for a digest that is not 16
  // bytes (FinalDigests' form).
  absl::StatusOr<IdAlignment> Align(size_t own_index,
                                    const std::vector<std::vector<std::string>>& full) const;

  // The fully encrypted points as the last hop sends them: a 16-byte SHA-256 prefix each,
  // concatenated (collisions among 2^32 ids have probability below 2^-64).
  static std::string FinalDigests(const std::vector<std::string>& points);
  // Splits FinalDigests output back into digests; fails unless a multiple of 16 bytes.
  static absl::StatusOr<std::vector<std::string>> SplitDigests(std::string_view packed);

 private:
  std::vector<std::string> ids_;
  // Validates the ids; the key and order come from `secret` (kDurableSecretBytes).
  static absl::StatusOr<std::unique_ptr<IdMatcher>> Build(const std::vector<std::string>& ids,
                                                          const crypto::SecretBytes& secret,
                                                          int threads);
  std::vector<size_t> order_;  // item j of EncryptOwn's list is ids_[order_[j]]
  crypto::SecretBytes order_seed_;
  std::unique_ptr<crypto::EcCommutativeCipher> cipher_;
  int threads_ = 0;
  crypto::PointEncoding hop_encoding_ = crypto::PointEncoding::kUncompressed;
};

}  // namespace fedanon::party
