// The party's check of an admin's job authorization (docs/threat-model.md, "Job authorization"):
// a Prepare is accepted only when it carries an AuthorizedJob signed by an admin certificate of
// the federation CA that this party's config allows (party.yaml `admins:`; absent: every admin
// the CA certified), not expired, whose ring, recipient, leader_party and this party's data path
// are the ones the Prepare names, and whose job digest is the one the party computes from what it
// loaded. So the leader cannot start, alter or redirect a job. Refusals are PermissionDenied
// "job not authorized: <what differs>". Run ids are remembered by party/run_ledger.h. The CA
// bundle and the admins list can be replaced while the party runs (Update: a reloaded party.yaml
// or ca.crt, docs/operations.md "Rotating keys and certificates"); each Verify uses the settings
// of one moment. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::party {

struct AuthorizationOptions {
  std::string party;   // this party's name
  std::string ca_pem;  // the federation CA
  // The admins (certificate names) whose signatures this party accepts; nullopt: every admin
  // certified by the CA.
  std::optional<std::vector<std::string>> admins;
  // The party's revocation list (party.yaml `crl:`), asked about the admin's certificate: a job
  // signed with a revoked admin certificate is refused. Unset: no revocation check.
  std::function<absl::Status(const std::string& cert_pem)> revocation_check;
};

class JobAuthorizer {
 public:
  explicit JobAuthorizer(AuthorizationOptions options)
      : options_(std::make_shared<const AuthorizationOptions>(std::move(options))) {}

  // Replaces the CA bundle and the admins list (the party and the revocation check stay): jobs
  // verified from now on use them; a Verify already running finishes with the previous ones.
  void Update(std::string ca_pem, std::optional<std::vector<std::string>> admins)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The CA bundle now (also verifies the participants' sealing certificates).
  std::string ca_pem() const ABSL_LOCKS_EXCLUDED(mu_);

  // Verifies the signature and the admin's certificate and compares everything the Prepare names
  // except the spec's content (ring, recipient, leader_party, this party's data path, the spec's
  // taxonomy paths) with the signed job, at time `now`. Nothing is read from disk here: a path
  // the admin did not sign is refused before any file is opened. `leader` is the name of the
  // participant announced as leader (whose sealing certificate has the leader role): the recipient
  // when the admin signed none. Returns the signed job (its run_id and job_digest are for the
  // caller).
  absl::StatusOr<fedanon::v1::AuthorizedJob> Verify(const fedanon::v1::PrepareJob& prepare,
                                                    const std::string& leader, absl::Time now) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Every taxonomy path `spec` names is the one the admin signed for that attribute, and the
  // admin signed no other ("job not authorized: the taxonomy path of attribute 'a' differs ...").
  static absl::Status CheckTaxonomyPaths(const fedanon::v1::JobSpec& spec,
                                         const fedanon::v1::AuthorizedJob& job);

  // The digest the party computed from the spec and taxonomies it loaded against the signed one.
  static absl::Status CheckDigest(const fedanon::v1::AuthorizedJob& job, std::string_view digest);

 private:
  std::shared_ptr<const AuthorizationOptions> Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  std::shared_ptr<const AuthorizationOptions> options_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fedanon::party
