// The admin's side of job authorization (docs/threat-model.md, "Job authorization"): the
// AuthorizedJob an admin signs for a submission, the ring order it fixes, a fresh run id, and the
// signature itself (crypto/signature). Used by `fedanonctl submit`, `fedanon federation up` and
// the tests; the party's checks are in party/job_authorization.h. Thread-safe (no state).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::wire {

// How long an authorization stays usable when the admin does not say.
inline constexpr absl::Duration kDefaultAuthorizationValidity = absl::Hours(24);

// The admin's signing material: its CA-issued TLS certificate (role admin) and private key.
struct AdminSigner {
  std::string cert_pem;
  std::string key_pem;
};

// The data parties in the order the leader runs the secure sum: `parties` as listed, with
// `leader_party` (when it is one of them) moved to the front.
std::vector<std::string> RingOrder(const std::vector<std::string>& parties,
                                   const std::string& leader_party);

// 32 lower-case hex digits from the CSPRNG.
absl::StatusOr<std::string> NewRunId();

// The run id an authorization's body names (the leader binds it into every box it seals or
// opens for the job); InvalidArgument when the body does not parse or names none. The body's
// signature is checked by the parties, not here.
absl::StatusOr<std::string> RunIdOf(const fedanon::v1::JobAuthorization& authorization);

// Attribute -> `taxonomy` path for every attribute of `spec` that names one: what an admin signs
// as AuthorizedJob.taxonomy_paths and what a party compares with it before it reads a file.
std::map<std::string, std::string> TaxonomyPathsOf(const fedanon::v1::JobSpec& spec);

// Signs `body` (serialized deterministically) with the admin's key.
absl::StatusOr<fedanon::v1::JobAuthorization> SignAuthorizedJob(
    const fedanon::v1::AuthorizedJob& body, const AdminSigner& signer);

// The authorization of `request` as it stands (parties, recipient, leader_party, data_paths, the
// spec's taxonomy paths) for
// the job whose spec::CanonicalJobBytes are `canonical_job_bytes` (the request's spec and
// taxonomies), under a fresh run id, valid from `now` for `validity`.
absl::StatusOr<fedanon::v1::JobAuthorization> AuthorizeSubmission(
    const fedanon::v1::SubmitJobRequest& request, std::string_view canonical_job_bytes,
    const AdminSigner& signer, absl::Time now = absl::Now(),
    absl::Duration validity = kDefaultAuthorizationValidity);

}  // namespace fedanon::wire
