// The leader's certificate revocation check: with `crl:` in leader.yaml (a CRL file written by
// `fedanonctl revoke`), every party stream and every admin call is refused when the peer's TLS
// certificate (or a party's sealing certificate) is on the list. The file is read at each check,
// so a new list takes effect without a restart; a list that is missing, not signed by the
// federation CA or past its nextUpdate refuses everyone (fails closed). Without `crl:` nothing is
// checked. Thread-safe.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace fedanon::server {

class RevocationCheck {
 public:
  RevocationCheck(std::string crl_path, std::string ca_pem)
      : crl_path_(std::move(crl_path)), ca_pem_(std::move(ca_pem)) {}

  bool enabled() const { return !crl_path_.empty(); }
  // OK, or PermissionDenied naming the reason (revoked, list unreadable / invalid / expired).
  absl::Status Check(const std::string& cert_pem) const;

 private:
  std::string crl_path_;
  std::string ca_pem_;
};

}  // namespace fedanon::server
