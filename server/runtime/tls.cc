#include "server/runtime/tls.h"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/base/file_io.h"
#include "common/base/status_macros.h"

namespace fedanon::server {
namespace {

// PEM files are small: anything beyond this is not one (and is never read whole).
constexpr uint64_t kMaxPemBytes = uint64_t{1} << 20;

absl::StatusOr<std::string> ReadFile(const std::string& path, std::string_view what) {
  absl::StatusOr<std::string> text =
      base::ReadFile(path, base::ReadFileOptions{.max_bytes = kMaxPemBytes, .what = "PEM file"});
  if (!text.ok() && text.status().code() != absl::StatusCode::kInvalidArgument) {
    // NotFound whatever the reason, as tls.h promises: "cannot read <what> '<path>': <errno>".
    absl::string_view detail = text.status().message();
    if (!absl::ConsumePrefix(&detail, "cannot open ")) absl::ConsumePrefix(&detail, "cannot read ");
    return absl::NotFoundError(absl::StrCat("cannot read ", std::string(what), " ", detail));
  }
  return text;
}

// A private key must be readable by its owner only: a key that group or others can read may
// have leaked, and using it would hide that.
absl::Status CheckPrivateMode(const std::string& path, std::string_view what) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(
        base::ErrnoStatus(errno, absl::StrCat("cannot read ", std::string(what)), path).message());
  }
  if ((st.st_mode & 0077) != 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "%s '%s' is readable by group or others (mode %04o); it must be private to its owner: "
        "chmod 600 '%s'",
        std::string(what), path, st.st_mode & 07777, path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadPem(const std::string& path, std::string_view what,
                                    std::string_view label) {
  ASSIGN_OR_RETURN(std::string pem, ReadFile(path, what));
  if (pem.find("-----BEGIN ") == std::string::npos || pem.find(label) == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(what), " '", path, "' is not a PEM file holding a ", std::string(label)));
  }
  return pem;
}

absl::StatusOr<crypto::Identity> IdentityOfPeerCertificate(const grpc::AuthContext* auth) {
  if (auth == nullptr) return absl::UnauthenticatedError("connection carries no certificate");
  const std::vector<grpc::string_ref> certs =
      auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  if (certs.empty()) return absl::UnauthenticatedError("connection carries no certificate");
  const std::string pem(certs.front().data(), certs.front().size());
  return crypto::IdentityOfCertificate(pem);
}

}  // namespace

absl::StatusOr<std::string> ReadCertificateFile(const std::string& path, std::string_view what) {
  return ReadPem(path, what, "CERTIFICATE");
}

absl::StatusOr<std::string> ReadPrivateKeyFile(const std::string& path, std::string_view what) {
  RETURN_IF_ERROR(CheckPrivateMode(path, what));
  return ReadPem(path, what, "PRIVATE KEY");
}

absl::StatusOr<TlsMaterial> LoadTlsMaterial(const TlsPaths& paths) {
  TlsMaterial tls;
  ASSIGN_OR_RETURN(tls.ca_pem, ReadCertificateFile(paths.ca, "CA certificate"));
  ASSIGN_OR_RETURN(tls.cert_pem, ReadCertificateFile(paths.cert, "TLS certificate"));
  ASSIGN_OR_RETURN(tls.key_pem, ReadPrivateKeyFile(paths.key, "TLS key"));
  return tls;
}

absl::Status CheckOwnCertificate(const TlsMaterial& tls, const crypto::Identity& expected) {
  absl::StatusOr<crypto::Identity> identity = crypto::VerifiedTlsIdentity(tls.cert_pem, tls.ca_pem);
  if (!identity.ok()) {
    return absl::Status(identity.status().code(),
                        absl::StrCat("our TLS certificate does not verify against the CA: ",
                                     identity.status().message()));
  }
  if (!(*identity == expected)) {
    return absl::InvalidArgumentError(
        absl::StrCat("our TLS certificate is for ", IdentityString(*identity),
                     ", but the config says ", IdentityString(expected)));
  }
  return crypto::CheckKeyBelongsToCertificate(tls.cert_pem, tls.key_pem, "our TLS certificate",
                                              "our TLS key");
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TlsMaterial& tls) {
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = tls.ca_pem;
  options.pem_key_cert_pairs.push_back({tls.key_pem, tls.cert_pem});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ServerCredentials> MakeReloadingServerCredentials(const TlsPaths& paths,
                                                                        int refresh_seconds) {
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      paths.key, paths.cert, paths.ca, static_cast<unsigned int>(refresh_seconds));
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  return grpc::experimental::TlsServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsMaterial& tls) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls.ca_pem;
  options.pem_private_key = tls.key_pem;
  options.pem_cert_chain = tls.cert_pem;
  return grpc::SslCredentials(options);
}

absl::StatusOr<crypto::Identity> PeerIdentity(const grpc::ServerContext& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  return IdentityOfPeerCertificate(auth.get());
}

std::string PeerCertificatePem(const grpc::ServerContext& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr) return "";
  const std::vector<grpc::string_ref> certs =
      auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  return certs.empty() ? "" : std::string(certs.front().data(), certs.front().size());
}

absl::StatusOr<crypto::Identity> ServerIdentity(const grpc::ClientContext& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  return IdentityOfPeerCertificate(auth.get());
}

std::string ServerCertificatePem(const grpc::ClientContext& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr) return "";
  const std::vector<grpc::string_ref> certs =
      auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  return certs.empty() ? "" : std::string(certs.front().data(), certs.front().size());
}

std::string IdentityString(const crypto::Identity& identity) {
  return absl::StrCat(std::string(crypto::RoleName(identity.role)), "/", identity.name);
}

}  // namespace fedanon::server
