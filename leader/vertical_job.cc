#include "leader/vertical_job.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/engine/tds_engine.h"
#include "common/wire/released_union.h"
#include "crypto/certificates.h"
#include "crypto/sealed_box.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {
namespace {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using fedanon::v1::VerticalStepResult;

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class Driver {
 public:
  Driver(common::PartyChannel* channel, const VerticalJobOptions& options)
      : channel_(channel), options_(options) {}

  absl::StatusOr<VerticalStepResult> Call(const std::string& party, uint32_t round,
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
  absl::StatusOr<std::vector<VerticalStepResult>> CallAll(
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

 private:
  common::PartyChannel* channel_;
  const VerticalJobOptions& options_;
};

}  // namespace

absl::StatusOr<VerticalJobResult> RunVerticalJob(common::PartyChannel* channel,
                                                 const VerticalJobOptions& options) {
  Driver driver(channel, options);
  const auto& ring = options.ring;
  const size_t n = ring.size();
  if (n < 2) return absl::InvalidArgumentError("a vertical job needs at least 2 data parties");
  VerticalJobResult result;

  // 1. Private ID matching. List i starts at party i, gets every other party's layer on its way
  //    round the ring (i+1, ..., i+n-1), and the last hop seals the full list for every party.
  auto start = std::chrono::steady_clock::now();
  std::vector<fedanon::v1::SealedPayload> carried(n);
  {
    ASSIGN_OR_RETURN(auto replies, driver.CallAll(ring, 0, [&](size_t i) {
      fedanon::v1::VerticalStep step;
      step.mutable_id_encrypt()->set_next(ring[(i + 1) % n]);
      return step;
    }));
    for (size_t i = 0; i < n; ++i) carried[i] = replies[i].ids().list();
  }
  std::vector<std::vector<fedanon::v1::SealedPayload>> full(n);  // [receiver][origin]
  for (size_t hop = 1; hop < n; ++hop) {
    // In hop h, party (i + h) % n re-encrypts list i: every party works on one list at once.
    std::vector<std::string> workers(n);
    for (size_t i = 0; i < n; ++i) workers[i] = ring[(i + hop) % n];
    ASSIGN_OR_RETURN(auto replies, driver.CallAll(workers, 0, [&](size_t i) {
      fedanon::v1::VerticalStep step;
      auto* re = step.mutable_id_reencrypt();
      *re->mutable_list() = carried[i];
      re->set_origin(ring[i]);
      if (hop + 1 < n) re->set_next(ring[(i + hop + 1) % n]);
      return step;
    }));
    for (size_t i = 0; i < n; ++i) {
      if (hop + 1 < n) {
        carried[i] = replies[i].ids().list();
        continue;
      }
      if (static_cast<size_t>(replies[i].ids().for_parties_size()) != n) {
        return absl::InternalError(
            absl::StrCat("party '", workers[i], "' did not seal the full list for every party"));
      }
      for (size_t r = 0; r < n; ++r) full[r].push_back(replies[i].ids().for_parties(r));
    }
  }
  {
    ASSIGN_OR_RETURN(auto replies, driver.CallAll(ring, 0, [&](size_t r) {
      fedanon::v1::VerticalStep step;
      for (const auto& list : full[r]) *step.mutable_id_align()->add_lists() = list;
      return step;
    }));
    result.common_records = replies[0].ids().common_records();
    for (size_t r = 1; r < n; ++r) {
      if (replies[r].ids().common_records() != result.common_records) {
        return absl::InternalError(absl::StrCat("parties disagree on the ID intersection ('",
                                                ring[0], "' vs '", ring[r], "')"));
      }
    }
  }
  result.id_matching_seconds = Since(start);
  spdlog::info("job={} ID matching done: {} common records ({:.2f} s)", options.job_id,
               result.common_records, result.id_matching_seconds);

  // 2. Rounds.
  start = std::chrono::steady_clock::now();
  uint32_t round = 1;
  std::string stop_reason;
  std::map<std::string, fedanon::v1::PartyParticipation> participation;
  for (const auto& p : ring) participation[p].set_party(p);
  while (true) {
    ASSIGN_OR_RETURN(auto proposals, driver.CallAll(ring, round, [](size_t) {
      fedanon::v1::VerticalStep step;
      step.mutable_propose();
      return step;
    }));
    int owner = -1;
    common::TopDownSpecializer::Choice best;
    fedanon::v1::VerticalCandidate winner;
    std::vector<std::string> reasons;
    for (size_t i = 0; i < n; ++i) {
      const auto& p = proposals[i].proposal();
      auto& record = participation[ring[i]];
      if (p.misbehaving()) record.set_misbehaving(true);
      if (!p.participate()) {
        record.set_rounds_declined(record.rounds_declined() + 1);
        ++(*record.mutable_declined_because())[p.reason()];
        reasons.push_back(absl::StrCat(ring[i], ": ", p.reason()));
        continue;
      }
      common::TopDownSpecializer::Choice c{static_cast<int>(p.candidate().attribute()),
                                           p.candidate().node(), p.candidate().candidate(),
                                           p.candidate().score(), p.candidate().order_key()};
      if (owner < 0 || common::TopDownSpecializer::Beats(c, best)) {
        owner = static_cast<int>(i);
        best = c;
        winner = p.candidate();
      }
    }
    if (owner < 0) {
      stop_reason =
          absl::StrCat("every party sent Not-participate (", absl::StrJoin(reasons, "; "), ")");
      break;
    }
    fedanon::v1::VerticalStep win;
    *win.mutable_winner()->mutable_candidate() = winner;
    ASSIGN_OR_RETURN(VerticalStepResult instructions, driver.Call(ring[owner], round, win));
    std::vector<std::string> others;
    for (size_t i = 0; i < n; ++i) {
      if (static_cast<int>(i) != owner) others.push_back(ring[i]);
    }
    const auto& sealed = instructions.instructions().for_parties();
    if (static_cast<size_t>(sealed.size()) != others.size()) {
      return absl::InternalError(
          absl::StrCat("party '", ring[owner], "' sent instructions for the wrong parties"));
    }
    ASSIGN_OR_RETURN(auto verdicts, driver.CallAll(others, round, [&](size_t i) {
      fedanon::v1::VerticalStep step;
      *step.mutable_deliver()->mutable_instruction() = sealed[static_cast<int>(i)];
      return step;
    }));
    bool accept = true;
    for (const auto& v : verdicts) accept = accept && v.verdict().accept();
    ASSIGN_OR_RETURN(auto commits, driver.CallAll(ring, round, [&](size_t) {
      fedanon::v1::VerticalStep step;
      *step.mutable_commit()->mutable_candidate() = winner;
      step.mutable_commit()->set_accept(accept);
      return step;
    }));
    (void)commits;
    if (!accept) {
      ++result.vetoes;
      spdlog::info("job={} round={} the winner of '{}' was vetoed by a holder of sensitive values",
                   options.job_id, round, ring[owner]);
      continue;
    }
    auto& won = participation[ring[owner]];
    won.set_rounds_won(won.rounds_won() + 1);
    if (options.on_step) options.on_step(round, ring[owner], winner.attribute());
    ++round;
  }
  result.rounds = round - 1;
  result.rounds_seconds = Since(start);

  // 3. Release: every party's columns sealed for the recipient, joined there.
  start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(auto released, driver.CallAll(ring, round, [&](size_t) {
    fedanon::v1::VerticalStep step;
    step.mutable_release()->set_recipient(options.recipient);
    return step;
  }));
  // The report: the replica of a party that holds sensitive values knows the confidences too;
  // any replica knows the steps, the cut and the group sizes. Take the most informative one.
  result.report = released[0].released().report();
  for (const auto& r : released) {
    if (r.released().report().largest_confidence() > result.report.largest_confidence()) {
      result.report = r.released().report();
    }
  }
  result.report.set_stop_reason(stop_reason);
  // Contributions (mu): the scores of the applied specializations, summed per owner.
  for (const auto& step : result.report.steps()) {
    auto it = options.attribute_party.find(step.attribute());
    if (it == options.attribute_party.end()) continue;
    auto& p = participation[it->second];
    p.set_contribution(p.contribution() + step.score());
  }
  for (const auto& party : ring) *result.report.add_participation() = participation[party];
  if (options.recipient == options.leader_name) {
    ASSIGN_OR_RETURN(auto keys, crypto::SealKeyPairFromPem(options.leader_seal_key_pem));
    std::vector<fedanon::v1::VerticalColumns> parts;
    for (const auto& r : released) {
      const auto& payload = r.released().columns();
      const crypto::SealContext context{options.job_id, round, payload.sender(),
                                        options.leader_name, "columns"};
      ASSIGN_OR_RETURN(std::string bytes, crypto::Open(*keys, context, payload.ciphertext()));
      if (!parts.emplace_back().ParseFromString(bytes)) {
        return absl::InvalidArgumentError("released columns do not parse");
      }
    }
    ASSIGN_OR_RETURN(result.csv, common::JoinReleasedColumns(parts, options.header));
  } else {
    fedanon::v1::VerticalStep step;
    for (const auto& r : released) *step.mutable_assemble()->add_columns() = r.released().columns();
    for (const auto& h : options.header) step.mutable_assemble()->add_header(h);
    RETURN_IF_ERROR(driver.Call(options.recipient, round, step).status());
  }
  result.release_seconds = Since(start);
  return result;
}

}  // namespace fedanon::leader
