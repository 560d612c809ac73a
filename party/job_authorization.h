// The party's check of an admin's job authorization (docs/threat-model.md, "Job authorization"):
// a Prepare is accepted only when it carries an AuthorizedJob signed by an admin certificate of
// the federation CA that this party's config allows (party.yaml `admins:`; absent: every admin
// the CA certified), not expired, whose ring, recipient, leader_party and this party's data path
// are the ones the Prepare names, and whose job digest is the one the party computes from what it
// loaded. So the leader cannot start, alter or redirect a job. Refusals are PermissionDenied
// "job not authorized: <what differs>". Run ids are remembered by party/run_ledger.h. Thread-safe
// (const after construction).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::party {

struct AuthorizationOptions {
  std::string party;   // this party's name
  std::string ca_pem;  // the federation CA
  // The admins (certificate names) whose signatures this party accepts; nullopt: every admin
  // certified by the CA.
  std::optional<std::vector<std::string>> admins;
};

class JobAuthorizer {
 public:
  explicit JobAuthorizer(AuthorizationOptions options) : options_(std::move(options)) {}

  // Verifies the signature and the admin's certificate and compares everything the Prepare names
  // except the spec (ring, recipient, leader_party, this party's data path) with the signed job,
  // at time `now`. `leader` is the name of the participant announced as leader (whose sealing
  // certificate has the leader role): the recipient when the admin signed none. Returns the
  // signed job (its run_id and job_digest are for the caller).
  absl::StatusOr<fedanon::v1::AuthorizedJob> Verify(const fedanon::v1::PrepareJob& prepare,
                                                    const std::string& leader,
                                                    absl::Time now) const;

  // The digest the party computed from the spec and taxonomies it loaded against the signed one.
  static absl::Status CheckDigest(const fedanon::v1::AuthorizedJob& job, std::string_view digest);

 private:
  const AuthorizationOptions options_;
};

}  // namespace fedanon::party
