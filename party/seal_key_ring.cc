#include "party/seal_key_ring.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "crypto/certificates.h"

namespace fedanon::party {

absl::StatusOr<std::shared_ptr<const SealKeyRing::Entry>> SealKeyRing::MakeEntry(
    std::string cert_pem, std::string key_pem, std::string sign_cert_pem,
    std::string sign_key_pem) {
  RETURN_IF_ERROR(crypto::CheckKeyBelongsToCertificate(cert_pem, key_pem, "the seal certificate",
                                                       "the seal key"));
  ASSIGN_OR_RETURN(std::unique_ptr<crypto::SealKeyPair> keys, crypto::SealKeyPairFromPem(key_pem));
  auto entry = std::make_shared<Entry>();
  if (sign_cert_pem.empty() != sign_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "the statement-signing certificate and key go together: one of them is missing");
  }
  if (!sign_cert_pem.empty()) {
    RETURN_IF_ERROR(crypto::CheckKeyBelongsToCertificate(sign_cert_pem, sign_key_pem,
                                                         "the statement-signing certificate",
                                                         "the statement-signing key"));
    // A P-256 key like the sealing one: parsed the same way for its public point.
    ASSIGN_OR_RETURN(std::unique_ptr<crypto::SealKeyPair> sign,
                     crypto::SealKeyPairFromPem(sign_key_pem));
    entry->sign_point = sign->public_key().UncompressedPoint();
  }
  entry->cert_pem = std::move(cert_pem);
  entry->key_pem = std::move(key_pem);
  entry->keys = std::move(keys);
  entry->sign_cert_pem = std::move(sign_cert_pem);
  entry->sign_key_pem = std::move(sign_key_pem);
  return std::shared_ptr<const Entry>(std::move(entry));
}

SealKeyRing::SealKeyRing(std::shared_ptr<const Entry> current, absl::Duration retired_grace)
    : retired_grace_(retired_grace), current_(std::move(current)) {}

std::shared_ptr<const SealKeyRing::Entry> SealKeyRing::current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

bool SealKeyRing::Rotate(std::shared_ptr<const Entry> next, absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (next->point() == current_->point() && next->cert_pem == current_->cert_pem &&
      next->sign_cert_pem == current_->sign_cert_pem) {
    return false;
  }
  // A pair that comes back (rotated away, then reinstalled) is current again, not retired too.
  std::erase_if(retired_, [&](const Retired& r) { return r.entry->point() == next->point(); });
  if (next->point() != current_->point()) retired_.push_back({std::move(current_), now});
  if (retired_.size() > kMaxRetired) retired_.erase(retired_.begin());
  current_ = std::move(next);
  return true;
}

absl::StatusOr<std::shared_ptr<const SealKeyRing::Entry>> SealKeyRing::ForNewJob(
    std::string_view point, absl::Time now) const {
  absl::MutexLock lock(&mu_);
  if (current_->point() == point) return current_;
  for (const Retired& r : retired_) {
    if (r.entry->point() != point) continue;
    if (now - r.retired_at <= retired_grace_) return r.entry;
    return absl::FailedPreconditionError(absl::StrCat(
        "the Prepare names this party's sealing certificate that was replaced at ",
        absl::FormatTime(r.retired_at, absl::UTCTimeZone()), " (more than ",
        absl::FormatDuration(retired_grace_),
        " ago); the leader has not learned the new one (it refused the announcement, naming why "
        "in its log, or never received it: restart the party while it is idle so that its hello "
        "carries the new certificate)"));
  }
  return absl::FailedPreconditionError(
      "the Prepare names a sealing certificate for this party that it does not hold");
}

std::shared_ptr<const SealKeyRing::Entry> SealKeyRing::Find(std::string_view point) const {
  absl::MutexLock lock(&mu_);
  if (current_->point() == point) return current_;
  for (const Retired& r : retired_) {
    if (r.entry->point() == point) return r.entry;
  }
  return nullptr;
}

}  // namespace fedanon::party
