#include "party/id_matching.h"

#include <algorithm>
#include <iterator>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/wire/id_digests.h"
#include "crypto/hash.h"
#include "crypto/shuffle.h"

namespace fedanon::party {

absl::StatusOr<std::unique_ptr<IdMatcher>> IdMatcher::Create(const std::vector<std::string>& ids,
                                                             int threads) {
  // A fresh key and blinding key uniform in [1, n-1] and a fresh 32-byte seed of the secret order
  // (OpenSSL CSPRNG), kept together as the matcher's durable secret.
  ASSIGN_OR_RETURN(auto cipher, crypto::EcCommutativeCipher::CreateWithNewKey());
  ASSIGN_OR_RETURN(auto blind, crypto::EcCommutativeCipher::CreateWithNewKey());
  ASSIGN_OR_RETURN(crypto::SecretBytes seed, crypto::RandomBytes(crypto::kPermutationSeedBytes));
  const crypto::SecretBytes key = cipher->GetPrivateKeyBytes();
  const crypto::SecretBytes blinding = blind->GetPrivateKeyBytes();
  if (key.size() != crypto::kP256ScalarSize || blinding.size() != crypto::kP256ScalarSize ||
      seed.size() != kDurableSecretBytes - 2 * crypto::kP256ScalarSize) {
    return absl::InternalError("unexpected ID matching key or seed size");
  }
  crypto::SecretBytes secret(kDurableSecretBytes);
  std::copy(key.data(), key.data() + key.size(), secret.data());
  std::copy(seed.data(), seed.data() + seed.size(), secret.data() + key.size());
  std::copy(blinding.data(), blinding.data() + blinding.size(),
            secret.data() + key.size() + seed.size());
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
  constexpr size_t kKey = crypto::kP256ScalarSize;
  ASSIGN_OR_RETURN(m->cipher_, crypto::EcCommutativeCipher::CreateFromKey(
                                   crypto::SecretBytes::CopyFrom(all.substr(0, kKey))));
  m->order_seed_ = crypto::SecretBytes::CopyFrom(all.substr(kKey, kDurableSecretBytes - 2 * kKey));
  ASSIGN_OR_RETURN(m->blind_, crypto::EcCommutativeCipher::CreateFromKey(
                                  crypto::SecretBytes::CopyFrom(all.substr(all.size() - kKey))));
  ASSIGN_OR_RETURN(m->unblind_, crypto::EcCommutativeCipher::Unblinding(*m->cipher_, *m->blind_));
  ASSIGN_OR_RETURN(m->order_, crypto::SeededPermutation(m->order_seed_.AsStringView(), ids.size()));
  return m;
}

crypto::SecretBytes IdMatcher::DurableSecret() const {
  const crypto::SecretBytes key = cipher_->GetPrivateKeyBytes();
  const crypto::SecretBytes blinding = blind_->GetPrivateKeyBytes();
  crypto::SecretBytes secret(kDurableSecretBytes);
  std::copy(key.data(), key.data() + key.size(), secret.data());
  std::copy(order_seed_.data(), order_seed_.data() + order_seed_.size(),
            secret.data() + key.size());
  std::copy(blinding.data(), blinding.data() + blinding.size(),
            secret.data() + key.size() + order_seed_.size());
  return secret;
}

absl::StatusOr<std::vector<std::string>> IdMatcher::EncryptOwnRange(size_t first, size_t count,
                                                                    bool blinded) const {
  if (first > ids_.size() || count > ids_.size() - first) {
    return absl::InvalidArgumentError(absl::StrCat("items ", first, "..", first + count,
                                                   " are past the end of a list of ", ids_.size(),
                                                   " ids"));
  }
  // In the secret order: the list's order says nothing about the table's (file) order.
  std::vector<std::string> shuffled;
  shuffled.reserve(count);
  for (size_t j = first; j < first + count; ++j) shuffled.push_back(ids_[order_[j]]);
  return (blinded ? blind_ : cipher_)->EncryptBatch(shuffled, threads_, hop_encoding_);
}

absl::StatusOr<std::vector<std::string>> IdMatcher::ReEncrypt(
    const std::vector<std::string>& points, bool last_hop) const {
  return cipher_->ReEncryptBatch(points, threads_,
                                 last_hop ? crypto::PointEncoding::kCompressed : hop_encoding_);
}

absl::StatusOr<std::vector<std::string>> IdMatcher::Unblind(
    const std::vector<std::string>& points) const {
  return unblind_->ReEncryptBatch(points, threads_, crypto::PointEncoding::kCompressed);
}

absl::StatusOr<IdAlignment> IdMatcher::AlignToCommon(std::string_view own,
                                                     std::string_view common) const {
  if (own.size() != ids_.size() * wire::kIdDigestBytes) {
    return absl::InvalidArgumentError(absl::StrCat("this party's fully encrypted list holds ",
                                                   own.size() / wire::kIdDigestBytes,
                                                   " digests for ", ids_.size(), " ids"));
  }
  ASSIGN_OR_RETURN(const std::vector<int64_t> positions, wire::PositionsInCommon(own, common));
  IdAlignment out;
  out.common = common.size() / wire::kIdDigestBytes;
  out.canonical.assign(ids_.size(), -1);
  // Item j of this party's list is record order_[j].
  for (size_t j = 0; j < positions.size(); ++j) out.canonical[order_[j]] = positions[j];
  return out;
}

std::string IdMatcher::FinalDigests(const std::vector<std::string>& points) {
  std::string out;
  out.reserve(points.size() * wire::kIdDigestBytes);
  for (const auto& p : points) out.append(crypto::Sha256(p), 0, wire::kIdDigestBytes);
  return out;
}

}  // namespace fedanon::party
