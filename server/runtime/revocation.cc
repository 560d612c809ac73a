#include "server/runtime/revocation.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "crypto/certificates.h"

namespace fedanon::server {

void RevocationCheck::SetCaPem(std::string ca_pem) {
  absl::MutexLock lock(&mu_);
  ca_pem_ = std::move(ca_pem);
}

absl::Status RevocationCheck::Check(const std::string& cert_pem) const {
  if (crl_path_.empty()) return absl::OkStatus();
  std::string ca_pem;
  {
    absl::MutexLock lock(&mu_);
    ca_pem = ca_pem_;
  }
  absl::StatusOr<std::string> crl = base::ReadFile(
      crl_path_, base::ReadFileOptions{.max_bytes = 16 << 20, .what = "revocation list"});
  if (!crl.ok()) {
    spdlog::error("cannot read the revocation list {}: {}", crl_path_,
                  std::string(crl.status().message()));
    return absl::PermissionDeniedError(absl::StrCat(
        holder_, " cannot read its certificate revocation list; it refuses everyone until it can"));
  }
  absl::Status st = crypto::CheckNotRevoked(cert_pem, *crl, ca_pem);
  if (st.ok() || st.message() == "certificate revoked") return st;
  spdlog::error("revocation list {}: {}", crl_path_, std::string(st.message()));
  return absl::PermissionDeniedError(
      absl::StrCat(holder_, "'s certificate revocation list is unusable (", st.message(),
                   "); it refuses everyone until it is replaced"));
}

}  // namespace fedanon::server
