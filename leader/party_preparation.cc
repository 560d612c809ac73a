#include "leader/party_preparation.h"

#include <algorithm>
#include <map>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "crypto/hash.h"

namespace fedanon::leader {

absl::StatusOr<fedanon::v1::PrepareJob> MakePrepare(const JobHost& host, const JobRun& job) {
  // Announce the participants with their sealing and statement-signing certificates (each party
  // verifies them).
  std::map<std::string, std::string> seal_certs;
  std::map<std::string, std::string> sign_certs;
  for (const auto& p : host.channel->Parties()) {
    seal_certs[p.name] = p.seal_cert_pem;
    sign_certs[p.name] = p.sign_cert_pem;
  }
  const bool vertical = job.request.spec().partitioning() == fedanon::v1::PARTITIONING_VERTICAL;
  fedanon::v1::PrepareJob prepare;
  *prepare.mutable_spec() = job.request.spec();
  for (size_t i = 0; i < job.ring.size(); ++i) {
    auto it = seal_certs.find(job.ring[i]);
    if (it == seal_certs.end()) {
      return absl::UnavailableError(absl::StrCat("party '", job.ring[i], "' is not connected"));
    }
    auto* p = prepare.add_participants();
    p->set_name(job.ring[i]);
    p->set_index(static_cast<uint32_t>(i));
    p->set_seal_certificate(it->second);
    const std::string& sign = sign_certs[job.ring[i]];
    if (vertical && sign.empty()) {
      // The parties would refuse the Prepare; say why here, where the operator looks first.
      return absl::FailedPreconditionError(absl::StrCat(
          "party '", job.ring[i],
          "' has no statement-signing certificate (party.yaml `sign:`), which a vertical job "
          "needs: its kit predates them; issue it one from the federation CA "
          "(docs/operations.md, Upgrades)"));
    }
    p->set_sign_certificate(sign);
  }
  // The leader always: the secure sum's last hop is sealed for it (and the result when it is the
  // recipient).
  auto* leader = prepare.add_participants();
  leader->set_name(host.options->name);
  leader->set_index(UINT32_MAX);
  leader->set_seal_certificate(host.options->seal_cert_pem);
  for (const auto& p : job.ring) prepare.add_ring(p);
  prepare.set_data_holding_leader(!job.request.leader_party().empty());
  prepare.set_leader_party(job.request.leader_party());
  prepare.set_recipient(job.recipient);
  // Per-record payloads travel in chunks under the leader's message limit
  // (common/wire/payload_chunks.h); a limit of 0 (LeaderOptions, never leader.yaml) lets them
  // travel whole.
  prepare.set_max_message_bytes(host.options->max_message_bytes);
  // The admin's signature, unchanged: each party checks it against what this Prepare names.
  *prepare.mutable_authorization() = job.request.authorization();
  return prepare;
}

absl::Status PrepareParties(const JobHost& host, const JobRun& job,
                            const std::string& expected_digest) {
  ASSIGN_OR_RETURN(const fedanon::v1::PrepareJob prepare, MakePrepare(host, job));
  RETURN_IF_ERROR(host.check_cancelled(job.job_id));
  // Each party loads its table on Prepare; they do so at the same time (one request each, as
  // before, on one thread per party). The first failure in ring order is the job's. Loading tens
  // of millions of records takes longer than a round: Prepare waits 10 round timeouts, at least
  // 10 minutes (like the ID matching's longer wait, a step that follows the table's size).
  const absl::Duration prepare_timeout = std::max(job.timeout * 10, absl::Minutes(10));
  auto prepare_one = [&](const std::string& party) -> absl::Status {
    fedanon::v1::LeaderMessage msg;
    msg.set_job_id(job.job_id);
    *msg.mutable_prepare() = prepare;
    auto path = job.request.data_paths().find(party);
    msg.mutable_prepare()->set_data_path(path == job.request.data_paths().end() ? ""
                                                                                : path->second);
    ASSIGN_OR_RETURN(fedanon::v1::PartyMessage reply,
                     host.channel->Call(party, msg, prepare_timeout));
    if (!reply.has_prepared()) {
      return absl::InternalError(absl::StrCat("party '", party, "' did not prepare the job"));
    }
    if (reply.prepared().digest() != expected_digest) {
      return absl::FailedPreconditionError(
          absl::StrCat("party '", party,
                       "' loaded a different job (its schema or taxonomies differ from the "
                       "submitted ones; digest ",
                       crypto::ToHex(reply.prepared().digest()).substr(0, 16), " vs ",
                       crypto::ToHex(expected_digest).substr(0, 16), ")"));
    }
    return absl::OkStatus();
  };
  std::vector<absl::Status> prepared(job.ring.size());
  {
    std::vector<std::thread> threads;
    for (size_t i = 1; i < job.ring.size(); ++i) {
      threads.emplace_back([&, i] { prepared[i] = prepare_one(job.ring[i]); });
    }
    if (!job.ring.empty()) prepared[0] = prepare_one(job.ring[0]);
    for (std::thread& t : threads) t.join();
  }
  for (const absl::Status& st : prepared) RETURN_IF_ERROR(st);
  return absl::OkStatus();
}

}  // namespace fedanon::leader
