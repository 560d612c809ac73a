#include "party/id_matching.h"

#include <algorithm>
#include <iterator>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "crypto/hash.h"
#include "crypto/shuffle.h"

namespace fedanon::party {
namespace {
constexpr size_t kDigestBytes = 16;
}  // namespace

absl::StatusOr<std::unique_ptr<IdMatcher>> IdMatcher::Create(const std::vector<std::string>& ids,
                                                             int threads) {
  // A fresh key uniform in [1, n-1] and a fresh 32-byte seed of the secret order (OpenSSL
  // CSPRNG), kept together as the matcher's durable secret.
  ASSIGN_OR_RETURN(auto cipher, crypto::EcCommutativeCipher::CreateWithNewKey());
  ASSIGN_OR_RETURN(crypto::SecretBytes seed, crypto::RandomBytes(crypto::kPermutationSeedBytes));
  crypto::SecretBytes secret(kDurableSecretBytes);
  const crypto::SecretBytes key = cipher->GetPrivateKeyBytes();
  if (key.size() != crypto::kP256ScalarSize || seed.size() != kDurableSecretBytes - key.size()) {
    return absl::InternalError("unexpected ID matching key or seed size");
  }
  std::copy(key.data(), key.data() + key.size(), secret.data());
  std::copy(seed.data(), seed.data() + seed.size(), secret.data() + key.size());
  return Build(ids, secret, threads);
}

absl::StatusOr<std::unique_ptr<IdMatcher>> IdMatcher::Restore(const std::vector<std::string>& ids,
                                                              std::string_view secret,
                                                              int threads) {
  if (secret.size() != kDurableSecretBytes) {
    return absl::InvalidArgumentError(absl::StrCat("an ID matching secret has ", secret.size(),
                                                   " bytes, not ", kDurableSecretBytes));
  }
  return Build(ids, crypto::SecretBytes::CopyFrom(secret), threads);
}

absl::StatusOr<std::unique_ptr<IdMatcher>> IdMatcher::Build(const std::vector<std::string>& ids,
                                                            const crypto::SecretBytes& secret,
                                                            int threads) {
  absl::flat_hash_set<std::string_view> seen;  // views of `ids`: no copy of every id
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i].empty())
      return absl::InvalidArgumentError(absl::StrCat("record ", i + 1, " has an empty id"));
    if (!seen.insert(ids[i]).second) {
      return absl::InvalidArgumentError(absl::StrCat("record ", i + 1, " repeats an id"));
    }
  }
  auto m = std::unique_ptr<IdMatcher>(new IdMatcher());
  m->ids_ = ids;
  m->threads_ = threads;
  const std::string_view all = secret.AsStringView();
  ASSIGN_OR_RETURN(m->cipher_,
                   crypto::EcCommutativeCipher::CreateFromKey(
                       crypto::SecretBytes::CopyFrom(all.substr(0, crypto::kP256ScalarSize))));
  m->order_seed_ = crypto::SecretBytes::CopyFrom(all.substr(crypto::kP256ScalarSize));
  ASSIGN_OR_RETURN(m->order_, crypto::SeededPermutation(m->order_seed_.AsStringView(), ids.size()));
  return m;
}

crypto::SecretBytes IdMatcher::DurableSecret() const {
  const crypto::SecretBytes key = cipher_->GetPrivateKeyBytes();
  crypto::SecretBytes secret(kDurableSecretBytes);
  std::copy(key.data(), key.data() + key.size(), secret.data());
  std::copy(order_seed_.data(), order_seed_.data() + order_seed_.size(),
            secret.data() + key.size());
  return secret;
}

absl::StatusOr<std::vector<std::string>> IdMatcher::EncryptOwn() const {
  // In the secret order: the list's order says nothing about the table's (file) order.
  std::vector<std::string> shuffled;
  shuffled.reserve(ids_.size());
  for (size_t i : order_) shuffled.push_back(ids_[i]);
  return cipher_->EncryptBatch(shuffled, threads_, hop_encoding_);
}

absl::StatusOr<std::vector<std::string>> IdMatcher::EncryptOwnRange(size_t first,
                                                                    size_t count) const {
  if (first > ids_.size() || count > ids_.size() - first) {
    return absl::InvalidArgumentError(absl::StrCat("items ", first, "..", first + count,
                                                   " are past the end of a list of ", ids_.size(),
                                                   " ids"));
  }
  std::vector<std::string> shuffled;
  shuffled.reserve(count);
  for (size_t j = first; j < first + count; ++j) shuffled.push_back(ids_[order_[j]]);
  return cipher_->EncryptBatch(shuffled, threads_, hop_encoding_);
}

absl::StatusOr<std::vector<std::string>> IdMatcher::ReEncrypt(
    const std::vector<std::string>& points, bool last_hop) const {
  return cipher_->ReEncryptBatch(points, threads_,
                                 last_hop ? crypto::PointEncoding::kCompressed : hop_encoding_);
}

namespace {

// A 16-byte digest as two big-endian words: the pairs order as the digests' bytes do, and
// sorting them moves 16-byte values instead of comparing strings through pointers.
struct Digest128 {
  uint64_t hi = 0;
  uint64_t lo = 0;
  friend bool operator<(const Digest128& a, const Digest128& b) {
    return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo;
  }
  friend bool operator==(const Digest128& a, const Digest128& b) = default;
};

uint64_t LoadBigEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

absl::StatusOr<Digest128> LoadDigest(std::string_view d) {
  if (d.size() != kDigestBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("an ID digest of ", d.size(), " bytes, not ", kDigestBytes));
  }
  return Digest128{LoadBigEndian64(d.data()), LoadBigEndian64(d.data() + 8)};
}

// The list's digests sorted, each once (a digest repeated within one list counts once).
absl::StatusOr<std::vector<Digest128>> SortedUniqueDigests(const std::vector<std::string>& list) {
  std::vector<Digest128> v;
  v.reserve(list.size());
  for (const auto& d : list) {
    ASSIGN_OR_RETURN(v.emplace_back(), LoadDigest(d));
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

absl::StatusOr<IdAlignment> IdMatcher::Align(
    size_t own_index, const std::vector<std::vector<std::string>>& full) const {
  if (own_index >= full.size() || full[own_index].size() != ids_.size()) {
    return absl::InvalidArgumentError("our fully encrypted list does not match our ids");
  }
  // Sorted 16-byte values instead of hash maps of strings: 16 bytes per digest besides the lists
  // themselves (a hash map of 2M strings took several hundred MB at 1M x 1M ids), and sorting
  // gives the canonical order directly.
  ASSIGN_OR_RETURN(std::vector<Digest128> common, SortedUniqueDigests(full[0]));
  for (size_t i = 1; i < full.size(); ++i) {
    ASSIGN_OR_RETURN(const std::vector<Digest128> other, SortedUniqueDigests(full[i]));
    std::vector<Digest128> both;
    std::set_intersection(common.begin(), common.end(), other.begin(), other.end(),
                          std::back_inserter(both));
    common = std::move(both);
  }
  IdAlignment out;
  out.common = common.size();
  out.canonical.resize(ids_.size(), -1);
  // Our list sorted by digest (with each item's place in our list), then one merge with the
  // common digests: item j of our list is record order_[j].
  struct Own {
    Digest128 digest;
    size_t item;
  };
  std::vector<Own> own;
  own.reserve(ids_.size());
  for (size_t j = 0; j < ids_.size(); ++j) {
    ASSIGN_OR_RETURN(const Digest128 d, LoadDigest(full[own_index][j]));
    own.push_back({d, j});
  }
  std::sort(own.begin(), own.end(), [](const Own& a, const Own& b) { return a.digest < b.digest; });
  size_t c = 0;
  for (const Own& o : own) {
    while (c < common.size() && common[c] < o.digest) ++c;
    if (c == common.size()) break;
    if (common[c] == o.digest) out.canonical[order_[o.item]] = static_cast<int64_t>(c);
  }
  return out;
}

std::string IdMatcher::FinalDigests(const std::vector<std::string>& points) {
  std::string out;
  out.reserve(points.size() * kDigestBytes);
  for (const auto& p : points) out.append(crypto::Sha256(p), 0, kDigestBytes);
  return out;
}

absl::StatusOr<std::vector<std::string>> IdMatcher::SplitDigests(std::string_view packed) {
  if (packed.size() % kDigestBytes != 0) {
    return absl::InvalidArgumentError(absl::StrCat("an ID digest list of ", packed.size(),
                                                   " bytes is not a multiple of ", kDigestBytes));
  }
  std::vector<std::string> out;
  out.reserve(packed.size() / kDigestBytes);
  for (size_t i = 0; i < packed.size(); i += kDigestBytes) {
    out.emplace_back(packed.substr(i, kDigestBytes));
  }
  return out;
}

}  // namespace fedanon::party
