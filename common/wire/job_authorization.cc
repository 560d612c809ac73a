#include "common/wire/job_authorization.h"

#include <algorithm>

#include "common/base/status_macros.h"
#include "crypto/hash.h"
#include "crypto/secret_bytes.h"
#include "crypto/signature.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace fedanon::wire {

std::vector<std::string> RingOrder(const std::vector<std::string>& parties,
                                   const std::string& leader_party) {
  std::vector<std::string> ring = parties;
  if (auto lp = std::find(ring.begin(), ring.end(), leader_party);
      !leader_party.empty() && lp != ring.end()) {
    std::rotate(ring.begin(), lp, lp + 1);
  }
  return ring;
}

absl::StatusOr<std::string> NewRunId() {
  ASSIGN_OR_RETURN(crypto::SecretBytes bytes, crypto::RandomBytes(16));
  return crypto::ToHex(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

absl::StatusOr<std::string> RunIdOf(const fedanon::v1::JobAuthorization& authorization) {
  fedanon::v1::AuthorizedJob job;
  if (!job.ParseFromString(authorization.body()) || job.run_id().empty()) {
    return absl::InvalidArgumentError("the job's authorization names no run id");
  }
  return job.run_id();
}

std::map<std::string, std::string> TaxonomyPathsOf(const fedanon::v1::JobSpec& spec) {
  std::map<std::string, std::string> paths;
  for (const auto& a : spec.attributes()) {
    if (!a.taxonomy().empty()) paths[a.name()] = a.taxonomy();
  }
  return paths;
}

absl::StatusOr<fedanon::v1::JobAuthorization> SignAuthorizedJob(
    const fedanon::v1::AuthorizedJob& body, const AdminSigner& signer) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);  // the map in a stable order
    if (!body.SerializeToCodedStream(&out)) {
      return absl::InternalError("cannot serialize the authorized job");
    }
  }
  fedanon::v1::JobAuthorization authorization;
  ASSIGN_OR_RETURN(*authorization.mutable_signature(), crypto::Sign(signer.key_pem, bytes));
  authorization.set_body(std::move(bytes));
  authorization.set_admin_certificate(signer.cert_pem);
  return authorization;
}

absl::StatusOr<fedanon::v1::JobAuthorization> AuthorizeSubmission(
    const fedanon::v1::SubmitJobRequest& request, std::string_view canonical_job_bytes,
    const AdminSigner& signer, absl::Time now, absl::Duration validity) {
  fedanon::v1::AuthorizedJob body;
  ASSIGN_OR_RETURN(*body.mutable_run_id(), NewRunId());
  body.set_job_digest(crypto::Sha256(canonical_job_bytes));
  const std::vector<std::string> parties(request.parties().begin(), request.parties().end());
  for (const auto& p : RingOrder(parties, request.leader_party())) body.add_ring(p);
  body.set_recipient(request.recipient());
  body.set_leader_party(request.leader_party());
  for (const auto& [party, path] : request.data_paths()) (*body.mutable_data_paths())[party] = path;
  for (const auto& [attribute, path] : TaxonomyPathsOf(request.spec())) {
    (*body.mutable_taxonomy_paths())[attribute] = path;
  }
  body.set_issued_unix(absl::ToUnixSeconds(now));
  body.set_expires_unix(absl::ToUnixSeconds(now + validity));
  return SignAuthorizedJob(body, signer);
}

}  // namespace fedanon::wire
