#include "server/tls.h"

#include <grpc/grpc_security_constants.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace fedanon::server {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

absl::StatusOr<std::string> ReadFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", std::string(what), " '", path, "': ", std::strerror(errno)));
  }
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
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
  std::unique_ptr<BIO, BioFree> cert_bio(
      BIO_new_mem_buf(tls.cert_pem.data(), static_cast<int>(tls.cert_pem.size())));
  std::unique_ptr<BIO, BioFree> key_bio(
      BIO_new_mem_buf(tls.key_pem.data(), static_cast<int>(tls.key_pem.size())));
  if (cert_bio == nullptr || key_bio == nullptr) return absl::InternalError("out of memory");
  std::unique_ptr<X509, X509Free> cert(
      PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  std::unique_ptr<EVP_PKEY, PkeyFree> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) return absl::InvalidArgumentError("our TLS certificate cannot be parsed");
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        "our TLS key cannot be parsed (expected an unencrypted PEM key)");
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return absl::InvalidArgumentError("our TLS key does not belong to our TLS certificate");
  }
  return absl::OkStatus();
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TlsMaterial& tls) {
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = tls.ca_pem;
  options.pem_key_cert_pairs.push_back({tls.key_pem, tls.cert_pem});
  return grpc::SslServerCredentials(options);
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

absl::StatusOr<crypto::Identity> ServerIdentity(const grpc::ClientContext& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  return IdentityOfPeerCertificate(auth.get());
}

std::string IdentityString(const crypto::Identity& identity) {
  return absl::StrCat(std::string(crypto::RoleName(identity.role)), "/", identity.name);
}

}  // namespace fedanon::server
