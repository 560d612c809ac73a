// Private ID matching for vertical jobs (commutative encryption round the ring; see
// docs/crypto.md "ID matching"): each party's list is sent in a secret random order, in batches,
// encrypted by every party; with three or more parties the owner blinds its list first and
// removes the blinding last, so that the fully encrypted list exists only at its owner. The
// leader intersects the lists' digests; a party aligns its records on the common digests it is
// handed. A matcher's secrets (its commutative-encryption key, the seed of its secret order and
// its blinding key) can be kept durably (DurableSecret) and restored after a restart of the
// party (Restore): same key, same order, same blinding.
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
using base::CurrentProcessUsage;
using base::ProcessUsage;

class IdMatcher {
 public:
  // `threads`: how many threads the batch methods split their lists over (<= 0: one per hardware
  // thread); the results do not depend on it.
  static absl::StatusOr<std::unique_ptr<IdMatcher>> Create(const std::vector<std::string>& ids,
                                                           int threads = 0);
  // The matcher whose DurableSecret() is `secret`, over the same ids (a party reloading a
  // vertical job from its durable state): the same keys and the same secret order, so that its
  // lists are the ones it sent before. InvalidArgument for a secret of another form.
  static absl::StatusOr<std::unique_ptr<IdMatcher>> Restore(const std::vector<std::string>& ids,
                                                            std::string_view secret,
                                                            int threads = 0);
  // kDurableSecretBytes: the 32-byte key, the 32-byte seed of the secret order
  // (crypto::SeededPermutation), then the 32-byte blinding key. Keep it like a key (0600), and
  // delete it with the job.
  crypto::SecretBytes DurableSecret() const;
  static constexpr size_t kDurableSecretBytes = 96;
  void set_threads(int threads) { threads_ = threads; }
  // How the points of a batch that is not the last hop's are encoded on the hops between parties
  // (docs/crypto.md, "Point encoding on the hops"): uncompressed by default (measured cheaper: 32
  // more bytes per id against a 4.5 us decompression at the receiver). Either is accepted on
  // input, so parties may differ.
  void set_hop_encoding(crypto::PointEncoding encoding) { hop_encoding_ = encoding; }
  // Items [first, first + count) of this party's ids in the secret random order drawn at Create
  // (OpenSSL CSPRNG), under its key or, `blinded`, under its blinding key only (a list that will
  // come back to it: Unblind). InvalidArgument past the list's end.
  absl::StatusOr<std::vector<std::string>> EncryptOwnRange(size_t first, size_t count,
                                                           bool blinded) const;
  size_t size() const { return ids_.size(); }
  // Another party's points under this party's key. `last_hop`: the output is compressed whatever
  // the hop encoding, so that FinalDigests hash one canonical form.
  absl::StatusOr<std::vector<std::string>> ReEncrypt(const std::vector<std::string>& points,
                                                     bool last_hop = false) const;
  // This party's own blinded points, back from every other party: the blinding removed and this
  // party's key applied in one multiplication, compressed (the last hop of its own list).
  absl::StatusOr<std::vector<std::string>> Unblind(const std::vector<std::string>& points) const;
  // Where each of this party's records stands in the sorted common digests (-1: not common):
  // `own` is this party's list as FinalDigests in the order of EncryptOwnRange, `common` the
  // digests every list holds (wire::PositionsInCommon's checks).
  absl::StatusOr<IdAlignment> AlignToCommon(std::string_view own, std::string_view common) const;

  // The fully encrypted points as the last hop sends them: a 16-byte SHA-256 prefix each,
  // concatenated (collisions among 2^32 ids have probability below 2^-64).
  static std::string FinalDigests(const std::vector<std::string>& points);

 private:
  std::vector<std::string> ids_;
  // Validates the ids; the keys and order come from `secret` (kDurableSecretBytes).
  static absl::StatusOr<std::unique_ptr<IdMatcher>> Build(const std::vector<std::string>& ids,
                                                          const crypto::SecretBytes& secret,
                                                          int threads);
  std::vector<size_t> order_;  // item j of this party's list is ids_[order_[j]]
  crypto::SecretBytes order_seed_;
  std::unique_ptr<crypto::EcCommutativeCipher> cipher_;
  std::unique_ptr<crypto::EcCommutativeCipher> blind_;
  std::unique_ptr<crypto::EcCommutativeCipher> unblind_;  // key * blind^-1
  int threads_ = 0;
  crypto::PointEncoding hop_encoding_ = crypto::PointEncoding::kUncompressed;
};

}  // namespace fedanon::party
