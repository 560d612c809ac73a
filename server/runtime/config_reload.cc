#include "server/runtime/config_reload.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "crypto/certificates.h"
#include "server/runtime/tls.h"

namespace fedanon::server {
namespace {

void Changed(bool differs, const char* key, std::vector<std::string>* out) {
  if (differs) out->push_back(key);
}

}  // namespace

absl::Status ReadStatementSigner(const PartyConfig& config, const std::string& ca_pem,
                                 std::string* cert_pem, std::string* key_pem) {
  cert_pem->clear();
  key_pem->clear();
  if (config.sign.cert.empty()) return absl::OkStatus();  // no `sign:`: horizontal jobs only
  ASSIGN_OR_RETURN(*cert_pem, ReadCertificateFile(config.sign.cert, "sign certificate"));
  ASSIGN_OR_RETURN(*key_pem, ReadPrivateKeyFile(config.sign.key, "sign key"));
  if (absl::Status st =
          crypto::VerifiedStatementKey(*cert_pem, ca_pem, {crypto::Role::kParty, config.name})
              .status();
      !st.ok()) {
    return absl::Status(st.code(),
                        absl::StrCat("sign certificate '", config.sign.cert,
                                     "' is not this party's under the CA bundle: ", st.message()));
  }
  return crypto::CheckKeyBelongsToCertificate(
      *cert_pem, *key_pem, absl::StrCat("sign certificate '", config.sign.cert, "'"),
      absl::StrCat("sign key '", config.sign.key, "'"));
}

absl::StatusOr<PartyReload> ReloadPartySettings(const PartyConfig& at_start) {
  ASSIGN_OR_RETURN(const PartyConfig now, LoadPartyConfig(at_start.path));
  if (now.name != at_start.name) {
    return absl::InvalidArgumentError(
        absl::StrCat(now.path, ": name changed from '", at_start.name, "' to '", now.name,
                     "'; a party's name is its identity and changes only with a restart"));
  }
  PartyReload reload;
  party::PartyLiveSettings& s = reload.settings;
  ASSIGN_OR_RETURN(s.ca_pem, ReadCertificateFile(now.tls.ca, "CA certificate"));
  ASSIGN_OR_RETURN(s.seal_cert_pem, ReadCertificateFile(now.seal.cert, "seal certificate"));
  ASSIGN_OR_RETURN(s.seal_key_pem, ReadPrivateKeyFile(now.seal.key, "seal key"));
  if (absl::Status st =
          crypto::VerifiedSealKey(s.seal_cert_pem, s.ca_pem, {crypto::Role::kParty, now.name})
              .status();
      !st.ok()) {
    return absl::Status(st.code(), absl::StrCat("seal certificate '", now.seal.cert,
                                                "' is not this party's under the CA bundle '",
                                                now.tls.ca, "': ", st.message()));
  }
  RETURN_IF_ERROR(crypto::CheckKeyBelongsToCertificate(
      s.seal_cert_pem, s.seal_key_pem, absl::StrCat("seal certificate '", now.seal.cert, "'"),
      absl::StrCat("seal key '", now.seal.key, "'")));
  RETURN_IF_ERROR(ReadStatementSigner(now, s.ca_pem, &s.sign_cert_pem, &s.sign_key_pem));
  s.admins = now.admins;
  std::vector<std::string>& r = reload.restart_needed;
  Changed(now.leader != at_start.leader, "leader", &r);
  Changed(now.data_dir != at_start.data_dir, "data_dir", &r);
  Changed(now.data != at_start.data, "data", &r);
  Changed(now.output_dir != at_start.output_dir, "output_dir", &r);
  Changed(now.max_input_bytes != at_start.max_input_bytes, "max_input_bytes", &r);
  Changed(now.tls.cert != at_start.tls.cert || now.tls.key != at_start.tls.key, "tls", &r);
  Changed(now.crl != at_start.crl, "crl", &r);
  Changed(now.metrics_listen != at_start.metrics_listen, "metrics_listen", &r);
  Changed(now.log_format != at_start.log_format, "log_format", &r);
  Changed(now.reload_seconds != at_start.reload_seconds, "reload_seconds", &r);
  return reload;
}

absl::StatusOr<LeaderReload> ReloadLeaderSettings(const LeaderConfig& at_start) {
  ASSIGN_OR_RETURN(const LeaderConfig now, LoadLeaderConfig(at_start.path));
  if (now.name != at_start.name) {
    return absl::InvalidArgumentError(
        absl::StrCat(now.path, ": name changed from '", at_start.name, "' to '", now.name,
                     "'; the leader's name is its identity and changes only with a restart"));
  }
  LeaderReload reload;
  ASSIGN_OR_RETURN(reload.ca_pem, ReadCertificateFile(now.tls.ca, "CA certificate"));
  reload.all_jobs_admins = now.all_jobs_admins;
  std::vector<std::string>& r = reload.restart_needed;
  Changed(now.listen != at_start.listen, "listen", &r);
  Changed(now.data_dir != at_start.data_dir, "data_dir", &r);
  Changed(now.seal.cert != at_start.seal.cert || now.seal.key != at_start.seal.key, "seal", &r);
  Changed(now.crl != at_start.crl, "crl", &r);
  Changed(now.round_timeout_seconds != at_start.round_timeout_seconds, "round_timeout_seconds", &r);
  Changed(now.max_concurrent_jobs != at_start.max_concurrent_jobs, "max_concurrent_jobs", &r);
  Changed(now.max_queued_jobs != at_start.max_queued_jobs, "max_queued_jobs", &r);
  Changed(now.metrics_listen != at_start.metrics_listen, "metrics_listen", &r);
  Changed(now.retention_seconds != at_start.retention_seconds, "retention", &r);
  Changed(now.tls_reload_seconds != at_start.tls_reload_seconds, "tls_reload_seconds", &r);
  Changed(now.reload_seconds != at_start.reload_seconds, "reload_seconds", &r);
  Changed(now.id_batch_ids != at_start.id_batch_ids, "id_batch_ids", &r);
  return reload;
}

}  // namespace fedanon::server
