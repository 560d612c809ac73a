#include "party/job_authorization.h"

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/wire/job_authorization.h"
#include "crypto/certificates.h"
#include "crypto/signature.h"

namespace fedanon::party {
namespace {

constexpr int64_t kClockSkewSeconds = int64_t{5} * 60;

absl::Status NotAuthorized(const std::string& why) {
  return absl::PermissionDeniedError(absl::StrCat("job not authorized: ", why));
}

bool IsRunId(std::string_view id) {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char c) {
           return absl::ascii_isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

void JobAuthorizer::Update(std::string ca_pem, std::optional<std::vector<std::string>> admins) {
  absl::MutexLock lock(&mu_);
  auto next = std::make_shared<AuthorizationOptions>(*options_);
  next->ca_pem = std::move(ca_pem);
  next->admins = std::move(admins);
  options_ = std::move(next);
}

std::string JobAuthorizer::ca_pem() const { return Snapshot()->ca_pem; }

std::shared_ptr<const AuthorizationOptions> JobAuthorizer::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return options_;
}

absl::StatusOr<fedanon::v1::AuthorizedJob> JobAuthorizer::Verify(
    const fedanon::v1::PrepareJob& prepare, const std::string& leader, absl::Time now) const {
  if (!prepare.has_authorization() || prepare.authorization().body().empty()) {
    return NotAuthorized("the Prepare carries no admin authorization");
  }
  const std::shared_ptr<const AuthorizationOptions> options = Snapshot();
  const fedanon::v1::JobAuthorization& auth = prepare.authorization();
  absl::StatusOr<crypto::Identity> admin =
      crypto::VerifySignature(auth.admin_certificate(), options->ca_pem, crypto::Role::kAdmin,
                              auth.body(), auth.signature());
  if (!admin.ok()) return NotAuthorized(std::string(admin.status().message()));
  if (options->admins && std::find(options->admins->begin(), options->admins->end(), admin->name) ==
                             options->admins->end()) {
    return NotAuthorized(
        absl::StrCat("admin '", admin->name, "' is not one this party accepts (admins)"));
  }
  if (options->revocation_check) {
    if (absl::Status st = options->revocation_check(auth.admin_certificate()); !st.ok()) {
      return NotAuthorized(
          absl::StrCat("the certificate of admin '", admin->name,
                       "' is refused by this party's revocation list: ", st.message()));
    }
  }
  fedanon::v1::AuthorizedJob job;
  if (!job.ParseFromString(auth.body()) || !IsRunId(job.run_id()) ||
      job.job_digest().size() != 32) {
    return NotAuthorized("the signed job does not parse");
  }
  const int64_t t = absl::ToUnixSeconds(now);
  if (t > job.expires_unix()) {
    return NotAuthorized(absl::StrCat("the admin's authorization expired at ",
                                      absl::FormatTime(absl::FromUnixSeconds(job.expires_unix()))));
  }
  if (job.issued_unix() > t + kClockSkewSeconds) {
    return NotAuthorized("the admin's authorization is issued in the future");
  }
  if (!std::equal(prepare.ring().begin(), prepare.ring().end(), job.ring().begin(),
                  job.ring().end())) {
    return NotAuthorized("ring differs from the admin's signed job");
  }
  const std::string& signed_recipient = job.recipient().empty() ? leader : job.recipient();
  const std::string& recipient = prepare.recipient().empty() ? leader : prepare.recipient();
  if (signed_recipient.empty() || recipient != signed_recipient) {
    return NotAuthorized("recipient differs from the admin's signed job");
  }
  if (prepare.leader_party() != job.leader_party()) {
    return NotAuthorized("leader_party differs from the admin's signed job");
  }
  auto path = job.data_paths().find(options->party);
  const std::string signed_path = path == job.data_paths().end() ? "" : path->second;
  if (prepare.data_path() != signed_path) {
    return NotAuthorized("this party's data path differs from the admin's signed job");
  }
  RETURN_IF_ERROR(CheckTaxonomyPaths(prepare.spec(), job));
  return job;
}

absl::Status JobAuthorizer::CheckTaxonomyPaths(const fedanon::v1::JobSpec& spec,
                                               const fedanon::v1::AuthorizedJob& job) {
  const std::map<std::string, std::string> named = wire::TaxonomyPathsOf(spec);
  for (const auto& [attribute, path] : named) {
    auto signed_path = job.taxonomy_paths().find(attribute);
    if (signed_path == job.taxonomy_paths().end() || signed_path->second != path) {
      return NotAuthorized(absl::StrCat("the taxonomy path of attribute '", attribute,
                                        "' differs from the admin's signed job"));
    }
  }
  for (const auto& [attribute, path] : job.taxonomy_paths()) {
    if (!named.contains(attribute)) {
      return NotAuthorized(absl::StrCat("the admin signed a taxonomy path for attribute '",
                                        attribute, "', which the Prepare's spec does not name"));
    }
  }
  return absl::OkStatus();
}

absl::Status JobAuthorizer::CheckDigest(const fedanon::v1::AuthorizedJob& job,
                                        std::string_view digest) {
  if (job.job_digest() != digest) {
    return NotAuthorized(
        "the job (spec or taxonomies, as this party loaded them) differs from the admin's signed "
        "job");
  }
  return absl::OkStatus();
}

}  // namespace fedanon::party
