// A party's sealing keys across rotations (docs/operations.md "Rotating keys and certificates"):
// the current key pair, which jobs prepared from now on use, and the pairs it replaced, kept for
// a grace period so that a Prepare the leader sent before it learned the new certificate still
// finds its key. A job holds the pair it was prepared with (shared) until it ends, whatever is
// rotated meanwhile, so a running job always opens what was sealed to its certificate. Entries
// are matched by public key (the certificate a Prepare names for this party), never by PEM text.
// Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "crypto/sealed_box.h"

namespace fedanon::party {

class SealKeyRing {
 public:
  // One sealing key pair with its certificate, and the statement-signing pair that goes with it
  // (rotated together; empty when the party has none: it then takes no part in vertical jobs).
  struct Entry {
    std::string cert_pem;
    std::string key_pem;  // PEM of the private key: never logged
    std::shared_ptr<const crypto::SealKeyPair> keys;
    std::string sign_cert_pem;
    std::string sign_key_pem;  // never logged
    std::string sign_point;    // the statement-signing public key as an uncompressed point
    // The public key as an uncompressed point (what entries are matched by).
    const std::string& point() const { return keys->public_key().UncompressedPoint(); }
  };
  // Parses the pairs; InvalidArgument when a key is not a P-256 key or does not belong to its
  // certificate, or only one of the statement-signing pair is given (the certificates' CA and
  // identity are the caller's to check).
  static absl::StatusOr<std::shared_ptr<const Entry>> MakeEntry(std::string cert_pem,
                                                                std::string key_pem,
                                                                std::string sign_cert_pem = "",
                                                                std::string sign_key_pem = "");

  // How long a replaced pair still serves new jobs whose Prepare names it.
  static constexpr absl::Duration kDefaultRetiredGrace = absl::Minutes(2);
  // Retired pairs kept at most (the oldest goes first).
  static constexpr size_t kMaxRetired = 4;

  explicit SealKeyRing(std::shared_ptr<const Entry> current,
                       absl::Duration retired_grace = kDefaultRetiredGrace);

  std::shared_ptr<const Entry> current() const ABSL_LOCKS_EXCLUDED(mu_);
  // Makes `next` the current pair and retires the previous one at `now`. False (and nothing
  // changes) when `next` has the current public key and certificates.
  bool Rotate(std::shared_ptr<const Entry> next, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // The pair for a job being prepared whose Prepare names the public key `point` for this party:
  // the current pair, or a retired one within its grace period. FailedPrecondition naming the
  // reason otherwise (a retired key past its grace, or a key this party never held).
  absl::StatusOr<std::shared_ptr<const Entry>> ForNewJob(std::string_view point,
                                                         absl::Time now) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Any pair held with that public key, whatever its age (a job reloaded after a restart of this
  // party was prepared before); null when none.
  std::shared_ptr<const Entry> Find(std::string_view point) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Retired {
    std::shared_ptr<const Entry> entry;
    absl::Time retired_at;
  };
  const absl::Duration retired_grace_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const Entry> current_ ABSL_GUARDED_BY(mu_);
  std::vector<Retired> retired_ ABSL_GUARDED_BY(mu_);  // oldest first
};

}  // namespace fedanon::party
