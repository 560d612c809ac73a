#include "leader/vertical_session.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/base/process_usage.h"
#include "common/base/status_macros.h"
#include "common/engine/tds_engine.h"
#include "common/spec/proto_json.h"
#include "common/wire/federation_wire.h"
#include "common/wire/id_digests.h"
#include "common/wire/payload_chunks.h"
#include "common/wire/released_union.h"
#include "crypto/certificates.h"
#include "crypto/hash.h"
#include "crypto/sealed_box.h"
#include "leader/payload_relay.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using fedanon::v1::VerticalStepResult;

double VerticalSession::Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

VerticalSession::VerticalSession(wire::PartyChannel* channel, const VerticalJobOptions& options)
    : channel_(channel),
      options_(options),
      relay_(channel, options.job_id, options.check_cancelled) {
  for (const auto& p : options_.ring) participation_[p].set_party(p);
  // The ring was connected a moment ago (a new job's Prepare, a resumed job's wait for every
  // party): a party that left since is looked up again when it comes back.
  absl::MutexLock lock(&seal_certs_mu_);
  for (const auto& p : channel_->Parties()) {
    if (std::find(options_.ring.begin(), options_.ring.end(), p.name) != options_.ring.end()) {
      seal_certs_[p.name] = p.seal_cert_pem;
    }
  }
}

absl::StatusOr<VerticalStepResult> VerticalSession::Call(const std::string& party, uint32_t round,
                                                         fedanon::v1::VerticalStep step) {
  // Round 0 is the ID matching.
  const absl::Duration timeout = round == 0 ? options_.id_matching_timeout : options_.timeout;
  if (options_.check_cancelled) RETURN_IF_ERROR(options_.check_cancelled());
  LeaderMessage msg;
  msg.set_job_id(options_.job_id);
  msg.set_round(round);
  *msg.mutable_vertical() = std::move(step);
  ASSIGN_OR_RETURN(PartyMessage reply, channel_->Call(party, msg, timeout));
  if (!reply.has_vertical()) {
    return absl::InternalError(absl::StrCat("party '", party, "' sent no vertical reply"));
  }
  return reply.vertical();
}

// The same step to several parties at once (their replicas work in parallel).
absl::StatusOr<std::vector<VerticalStepResult>> VerticalSession::CallAll(
    const std::vector<std::string>& parties, uint32_t round,
    const std::function<fedanon::v1::VerticalStep(size_t)>& make) {
  std::vector<absl::StatusOr<VerticalStepResult>> replies(parties.size(),
                                                          absl::UnknownError("not called"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < parties.size(); ++i) {
    threads.emplace_back([&, i] { replies[i] = Call(parties[i], round, make(i)); });
  }
  for (auto& t : threads) t.join();
  std::vector<VerticalStepResult> out;
  for (auto& r : replies) {
    RETURN_IF_ERROR(r.status());
    out.push_back(*std::move(r));
  }
  return out;
}

// `run(i)` for every party of `parties` at once, one thread each (each party's calls keep
// their order, which a restarted leader replays); the first error.
absl::Status VerticalSession::PerParty(const std::vector<std::string>& parties,
                                       const std::function<absl::Status(size_t)>& run) {
  std::vector<absl::Status> done(parties.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < parties.size(); ++i) {
    threads.emplace_back([&, i] { done[i] = run(i); });
  }
  for (auto& t : threads) t.join();
  for (const auto& st : done) RETURN_IF_ERROR(st);
  return absl::OkStatus();
}

// Appends to the view log, if any.
absl::Status VerticalSession::Log(const ViewEntry& e) {
  if (options_.view_log == nullptr) return absl::OkStatus();
  // A resumed job logs again what it replays: the lines written before the restart are a
  // prefix of it, and are not written twice.
  if (logged_ < options_.logged_before.size() &&
      options_.logged_before[logged_] == ViewEntryToJson(e)) {
    ++logged_;
    return absl::OkStatus();
  }
  logged_ = options_.logged_before.size();  // past the prefix: every line is new
  return options_.view_log->Append(e);
}

std::string VerticalSession::AttributeName(uint32_t attr) const {
  return attr < options_.qid_names.size() ? options_.qid_names[attr] : absl::StrCat("#", attr);
}

// A replica's report: its group counts and the records of every step it applied, with the
// whole report as JSON in `detail`.
absl::Status VerticalSession::LogReport(uint32_t round, const std::string& party,
                                        const fedanon::v1::Report& report) {
  ViewEntry e;
  e.round = round;
  e.kind = kViewVerticalReport;
  e.party = party;
  e.counts = {report.groups(), report.smallest_group()};
  for (const auto& step : report.steps()) e.counts.push_back(step.records());
  ASSIGN_OR_RETURN(e.detail, spec::ProtoToJson(report, /*pretty=*/false));
  return Log(e);
}

// Every proposal as the leader reads it: participation, or Not-participate and why.
absl::Status VerticalSession::LogProposals(uint32_t round,
                                           const std::vector<VerticalStepResult>& proposals) {
  for (size_t i = 0; i < proposals.size(); ++i) {
    const auto& p = proposals[i].proposal();
    ViewEntry e;
    e.round = round;
    e.party = options_.ring[i];
    if (p.participate()) {
      e.kind = kViewVerticalParticipate;
      if (p.misbehaving()) e.detail = "misbehaving";
    } else {
      e.kind = kViewVerticalDecline;
      e.detail = p.misbehaving() ? absl::StrCat(p.reason(), " (misbehaving)") : p.reason();
    }
    RETURN_IF_ERROR(Log(e));
  }
  return absl::OkStatus();
}

absl::Status VerticalSession::LogWinner(uint32_t round, const std::string& owner,
                                        const fedanon::v1::VerticalProposal& won) {
  ViewEntry e;
  e.round = round;
  e.party = owner;
  e.kind = kViewVerticalScore;
  e.attribute = AttributeName(won.candidate().attribute());
  e.counts = {static_cast<uint64_t>(won.candidate().node()),
              static_cast<uint64_t>(won.candidate().candidate())};
  e.score = won.candidate().score();
  if (won.misbehaving()) e.detail = "misbehaving";
  return Log(e);
}

// Runs `fn(0)`, ..., `fn(n - 1)` on a thread each and waits for all; the error of the lowest
// index wins.
absl::Status VerticalSession::ForEachList(size_t n, const std::function<absl::Status(size_t)>& fn) {
  std::vector<absl::Status> status(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t i = 0; i < n; ++i) threads.emplace_back([&, i] { status[i] = fn(i); });
  for (auto& t : threads) t.join();
  for (auto& st : status) RETURN_IF_ERROR(st);
  return absl::OkStatus();
}

// Hands `carried` to its receiver as the next element of a step's repeated field: whole, or
// its chunks ahead and the ref in the step.
absl::Status VerticalSession::HandInto(
    const CarriedPayload& carried, uint32_t round, absl::Duration timeout,
    google::protobuf::RepeatedPtrField<fedanon::v1::SealedPayload>* wholes,
    google::protobuf::RepeatedPtrField<fedanon::v1::ChunkRef>* refs) {
  fedanon::v1::SealedPayload whole;
  fedanon::v1::ChunkRef ref;
  RETURN_IF_ERROR(relay_.Hand(carried, round, timeout, &whole, &ref));
  if (carried.chunked()) {
    *refs->Add() = std::move(ref);
  } else {
    *wholes->Add() = std::move(whole);
  }
  return absl::OkStatus();
}

// A data party's sealing key, verified against the CA (released columns are sealed by it).
absl::StatusOr<std::unique_ptr<crypto::SealPublicKey>> VerticalSession::SenderKey(
    const std::string& party) const {
  if (std::find(options_.ring.begin(), options_.ring.end(), party) == options_.ring.end()) {
    return absl::PermissionDeniedError(
        absl::StrCat("released columns name '", party, "', not a data party, as sender"));
  }
  std::string cert_pem;
  {
    absl::MutexLock lock(&seal_certs_mu_);
    auto it = seal_certs_.find(party);
    if (it == seal_certs_.end()) {
      for (const auto& p : channel_->Parties()) {
        if (p.name == party) it = seal_certs_.emplace(party, p.seal_cert_pem).first;
      }
    }
    if (it == seal_certs_.end()) {
      return absl::UnavailableError(absl::StrCat(
          "party '", party, "' is not connected, and was not since this run of the job started"));
    }
    cert_pem = it->second;
  }
  return crypto::VerifiedSealKey(cert_pem, options_.ca_pem, {crypto::Role::kParty, party});
}

}  // namespace fedanon::leader
