// Tests only: an admin of a test CA and the signatures it puts on jobs (docs/threat-model.md,
// "Job authorization"), so that tests playing the leader's part send Prepares the parties accept.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "common/spec/job_digest.h"
#include "common/wire/job_authorization.h"
#include "crypto/certificates.h"
#include "crypto/hash.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::testing {

// A TLS certificate with the admin role, issued by `ca`, as the admin's signing material.
inline absl::StatusOr<wire::AdminSigner> IssueTestAdmin(const crypto::CertificateAuthority& ca,
                                                        const std::string& name = "admin") {
  auto tls = ca.IssueTls({crypto::Role::kAdmin, name}, {}, absl::Hours(24));
  if (!tls.ok()) return tls.status();
  return wire::AdminSigner{tls->cert_pem, tls->key_pem};
}

// The taxonomy files `spec` names, read from `data_dir` (missing ones are left out).
inline std::map<std::string, std::string> TaxonomyTexts(const fedanon::v1::JobSpec& spec,
                                                        const std::string& data_dir) {
  std::map<std::string, std::string> texts;
  for (const auto& a : spec.attributes()) {
    if (a.taxonomy().empty()) continue;
    const std::filesystem::path p = std::filesystem::path(a.taxonomy()).is_absolute()
                                        ? std::filesystem::path(a.taxonomy())
                                        : std::filesystem::path(data_dir) / a.taxonomy();
    std::ifstream in(p, std::ios::binary);
    if (!in) continue;
    texts[a.name()] = std::string(std::istreambuf_iterator<char>(in), {});
  }
  return texts;
}

// The AuthorizedJob for exactly what the Prepare in `msg` names (an admin who signed this job):
// its ring, recipient, leader_party, data path (for every ring party), taxonomy paths, and the
// digest of its spec with `taxonomy_texts`. Tests that play a deviating leader change `msg`
// afterwards.
inline fedanon::v1::AuthorizedJob AuthorizedJobOf(
    const fedanon::v1::LeaderMessage& msg,
    const std::map<std::string, std::string>& taxonomy_texts = {}) {
  const auto& prepare = msg.prepare();
  fedanon::v1::AuthorizedJob job;
  job.set_run_id(*wire::NewRunId());
  job.set_job_digest(crypto::Sha256(spec::CanonicalJobBytes(prepare.spec(), taxonomy_texts)));
  for (const auto& p : prepare.ring()) job.add_ring(p);
  job.set_recipient(prepare.recipient());
  job.set_leader_party(prepare.leader_party());
  if (!prepare.data_path().empty()) {
    for (const auto& p : prepare.ring()) (*job.mutable_data_paths())[p] = prepare.data_path();
  }
  for (const auto& [attribute, path] : wire::TaxonomyPathsOf(prepare.spec())) {
    (*job.mutable_taxonomy_paths())[attribute] = path;
  }
  const absl::Time now = absl::Now();
  job.set_issued_unix(absl::ToUnixSeconds(now));
  job.set_expires_unix(absl::ToUnixSeconds(now + absl::Hours(1)));
  return job;
}

// Signs `job` into the Prepare of `msg`.
inline absl::Status SignInto(fedanon::v1::LeaderMessage* msg, const fedanon::v1::AuthorizedJob& job,
                             const wire::AdminSigner& admin) {
  auto auth = wire::SignAuthorizedJob(job, admin);
  if (!auth.ok()) return auth.status();
  *msg->mutable_prepare()->mutable_authorization() = *std::move(auth);
  return absl::OkStatus();
}

// Signs what the Prepare in `msg` names. One job is one run, as when a leader forwards one admin
// authorization to every party: the same job (job id, Prepare and taxonomies) signed again in
// this process gets the same authorization, so parties prepared one by one share the run id
// bound into every sealed box. A test that wants a new run signs AuthorizedJobOf itself.
inline absl::Status AuthorizePrepare(
    fedanon::v1::LeaderMessage* msg, const wire::AdminSigner& admin,
    const std::map<std::string, std::string>& taxonomy_texts = {}) {
  static std::mutex mu;
  static std::map<std::string, fedanon::v1::JobAuthorization> signed_jobs;
  fedanon::v1::PrepareJob bare = msg->prepare();
  bare.clear_authorization();
  bare.clear_participants();  // the seal certificates the leader announces are not signed
  std::string key = msg->job_id() + "\n" + bare.SerializeAsString() + "\n" + admin.cert_pem;
  for (const auto& [attr, text] : taxonomy_texts) key += "\n" + attr + "=" + text;
  std::lock_guard<std::mutex> lock(mu);
  auto it = signed_jobs.find(key);
  if (it == signed_jobs.end()) {
    fedanon::v1::LeaderMessage signed_msg = *msg;
    const absl::Status st = SignInto(&signed_msg, AuthorizedJobOf(*msg, taxonomy_texts), admin);
    if (!st.ok()) return st;
    it = signed_jobs.emplace(key, signed_msg.prepare().authorization()).first;
  }
  *msg->mutable_prepare()->mutable_authorization() = it->second;
  return absl::OkStatus();
}

}  // namespace fedanon::testing
