// The certificate revocation check of the leader and of the parties. With `crl:` in leader.yaml
// (a CRL file written by `fedanonctl revoke`), every party stream and every admin call is refused
// when the peer's TLS certificate (or a party's sealing certificate) is on the list; with `crl:`
// in party.yaml, the party refuses a leader whose TLS certificate is on it and any participant
// of a job whose sealing certificate is. The file is read at each check,
// so a new list takes effect without a restart; a list that is missing, not signed by the
// federation CA or past its nextUpdate refuses everyone (fails closed). Without `crl:` nothing is
// checked. Thread-safe.
#pragma once

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace fedanon::server {

class RevocationCheck {
 public:
  // `holder` names whose list it is in the errors ("the leader", "the party").
  RevocationCheck(std::string crl_path, std::string ca_pem, std::string holder = "the leader")
      : crl_path_(std::move(crl_path)), ca_pem_(std::move(ca_pem)), holder_(std::move(holder)) {}

  bool enabled() const { return !crl_path_.empty(); }
  // OK, or PermissionDenied naming the reason (revoked, list unreadable / invalid / expired).
  absl::Status Check(const std::string& cert_pem) const ABSL_LOCKS_EXCLUDED(mu_);
  // The CA bundle that must have signed the list, replaced when the daemon re-reads its CA file
  // (a CA rotation: docs/operations.md "Rotating keys and certificates").
  void SetCaPem(std::string ca_pem) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string crl_path_;
  mutable absl::Mutex mu_;
  std::string ca_pem_ ABSL_GUARDED_BY(mu_);
  const std::string holder_;
};

}  // namespace fedanon::server
