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

absl::StatusOr<std::vector<std::string>> IdMatcher::ReEncrypt(
    const std::vector<std::string>& points, bool last_hop) const {
  return cipher_->ReEncryptBatch(points, threads_,
                                 last_hop ? crypto::PointEncoding::kCompressed : hop_encoding_);
}

absl::StatusOr<IdAlignment> IdMatcher::Align(
    size_t own_index, const std::vector<std::vector<std::string>>& full) const {
  if (own_index >= full.size() || full[own_index].size() != ids_.size()) {
    return absl::InvalidArgumentError("our fully encrypted list does not match our ids");
  }
  // Sorted views instead of hash maps of strings: 16 bytes per digest besides the lists
  // themselves (a hash map of 2M strings took several hundred MB at 1M x 1M ids), and sorting
  // gives the canonical order directly. A digest repeated within one list counts once.
  auto sorted_unique = [](const std::vector<std::string>& list) {
    std::vector<std::string_view> v(list.begin(), list.end());
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  std::vector<std::string_view> common = sorted_unique(full[0]);
  for (size_t i = 1; i < full.size(); ++i) {
    const std::vector<std::string_view> other = sorted_unique(full[i]);
    std::vector<std::string_view> both;
    std::set_intersection(common.begin(), common.end(), other.begin(), other.end(),
                          std::back_inserter(both));
    common = std::move(both);
  }
  IdAlignment out;
  out.common = common.size();
  out.canonical.resize(ids_.size(), -1);
  for (size_t j = 0; j < ids_.size(); ++j) {  // item j of our list is record order_[j]
    const std::string_view d = full[own_index][j];
    const auto it = std::lower_bound(common.begin(), common.end(), d);
    if (it != common.end() && *it == d) out.canonical[order_[j]] = it - common.begin();
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
