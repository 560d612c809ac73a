#include "tests/support/durable_federation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/base/status_macros.h"

namespace fedanon::testing {

namespace fs = std::filesystem;

std::string CallKind(const fedanon::v1::LeaderMessage& request) {
  const auto* body = request.GetDescriptor()->FindFieldByNumber(request.body_case());
  if (body == nullptr) return "none";
  if (request.has_sum_step()) return absl::StrCat(body->name(), " ", request.sum_step().collect());
  if (request.has_vertical()) {
    const auto* step =
        request.vertical().GetDescriptor()->FindFieldByNumber(request.vertical().step_case());
    return absl::StrCat(body->name(), "/", step == nullptr ? "none" : step->name());
  }
  return body->name();
}

absl::StatusOr<fedanon::v1::PartyMessage> AnswerLedger::Call(
    const std::string& party, const fedanon::v1::LeaderMessage& request, absl::Duration timeout) {
  absl::StatusOr<fedanon::v1::PartyMessage> reply = inner_->Call(party, request, timeout);
  if (!reply.ok()) return reply;
  fedanon::v1::LeaderMessage asked = request;
  asked.clear_request_id();
  fedanon::v1::PartyMessage answered = *reply;
  answered.clear_request_id();
  std::string key = absl::StrCat(party, std::string(1, '\0'));
  if (!asked.AppendToString(&key)) return reply;
  std::string bytes;
  if (!answered.SerializeToString(&bytes)) return reply;
  absl::MutexLock lock(&mu_);
  const auto [it, first] = answers_.emplace(std::move(key), bytes);
  if (!first) {
    ++repeated_;
    if (it->second != bytes) {
      differing_.push_back(
          absl::StrCat(party, ": ", CallKind(request), " (round ", request.round(), ")"));
    }
  }
  return reply;
}

int AnswerLedger::repeated() const {
  absl::MutexLock lock(&mu_);
  return repeated_;
}

std::vector<std::string> AnswerLedger::differing() const {
  absl::MutexLock lock(&mu_);
  return differing_;
}

void CrashingChannel::CrashAt(int call, Crash crash) {
  absl::MutexLock lock(&mu_);
  crash_at_ = call;
  crash_ = std::move(crash);
}

void CrashingChannel::CrashWhen(Match match, Crash crash) {
  absl::MutexLock lock(&mu_);
  match_ = std::move(match);
  crash_ = std::move(crash);
}

bool CrashingChannel::crashed() const {
  absl::MutexLock lock(&mu_);
  return fired_;
}

void CrashingChannel::SetAway(const std::string& party, absl::Time until) {
  absl::MutexLock lock(&mu_);
  away_until_[party] = until;
}

int CrashingChannel::calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

std::vector<std::string> CrashingChannel::kinds() const {
  absl::MutexLock lock(&mu_);
  return kinds_;
}

absl::StatusOr<fedanon::v1::PartyMessage> CrashingChannel::Call(
    const std::string& party, const fedanon::v1::LeaderMessage& request, absl::Duration timeout) {
  if (dead_) return absl::UnavailableError(absl::StrCat("party '", party, "' is not connected"));
  Crash crash;
  {
    absl::MutexLock lock(&mu_);
    kinds_.push_back(CallKind(request));
    ++calls_;
    if (auto it = away_until_.find(party); it != away_until_.end() && absl::Now() < it->second) {
      return absl::UnavailableError(absl::StrCat("party '", party, "' is not connected"));
    }
    if (!fired_ && (calls_ == crash_at_ || (match_ && match_(party, request)))) {
      fired_ = true;
      crash = std::move(crash_);
    }
  }
  if (crash) return crash(party, request);
  return inner_->Call(party, request, timeout);
}

std::vector<wire::ConnectedParty> CrashingChannel::Parties() const {
  if (dead_) return {};
  std::vector<wire::ConnectedParty> parties = inner_->Parties();
  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  parties.erase(std::remove_if(parties.begin(), parties.end(),
                               [&](const wire::ConnectedParty& p) {
                                 auto it = away_until_.find(p.name);
                                 return it != away_until_.end() && now < it->second;
                               }),
                parties.end());
  return parties;
}

DurableFederation::~DurableFederation() {
  if (fed) fed->leader.reset();
}

std::unique_ptr<DurableFederation> DurableFederation::Create(
    const std::string& name, const std::vector<std::map<std::string, std::string>>& party_files,
    MakeRequest make_request, const std::function<void(leader::LeaderOptions&)>& customize_leader) {
  auto d = std::make_unique<DurableFederation>();
  d->make_request = std::move(make_request);
  auto fed = InProcessFederation::Create(
      name, party_files, [&](party::PartyAgentOptions& o) { d->party_options[o.name] = o; },
      [&](leader::LeaderOptions& o) {
        o.resume_timeout = absl::Seconds(10);
        if (customize_leader) customize_leader(o);
        d->leader_options = o;
      });
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (!fed.ok()) return nullptr;
  d->fed = *std::move(fed);
  // The leader the tests use talks through the crashing channel (its own data directory).
  d->fed->leader.reset();
  d->answers = std::make_unique<AnswerLedger>(&d->fed->channel);
  d->crashing = std::make_unique<CrashingChannel>(d->answers.get());
  d->leader_options.data_dir = d->fed->dir + "/leader-1";
  auto leader = leader::Leader::Create(d->leader_options, d->crashing.get());
  EXPECT_TRUE(leader.ok()) << leader.status();
  if (!leader.ok()) return nullptr;
  d->fed->leader = *std::move(leader);
  return d;
}

absl::Status DurableFederation::RestartParty(const std::string& party) {
  ASSIGN_OR_RETURN(std::unique_ptr<party::PartyAgent> agent,
                   party::PartyAgent::Create(party_options.at(party)));
  fed->channel.Add(agent.get());
  restarted.push_back(std::move(agent));
  return absl::OkStatus();
}

absl::Status DurableFederation::StartLeaderOn(const std::string& data_dir) {
  leader::LeaderOptions options = leader_options;
  options.data_dir = data_dir;
  ASSIGN_OR_RETURN(fed->leader, leader::Leader::Create(options, answers.get()));
  return absl::OkStatus();
}

absl::StatusOr<std::string> DurableFederation::Submit() {
  ASSIGN_OR_RETURN(fedanon::v1::SubmitJobRequest req, make_request(fed->names));
  ASSIGN_OR_RETURN(fedanon::v1::JobInfo info, fed->Submit(req));
  return info.job_id();
}

absl::StatusOr<fedanon::v1::JobInfo> DurableFederation::RunWithCrash(int call,
                                                                     CrashingChannel::Crash crash) {
  crashing->CrashAt(call, std::move(crash));
  ASSIGN_OR_RETURN(const std::string job_id, Submit());
  fedanon::v1::JobInfo info = fed->Wait(job_id);
  if (!crashing->crashed()) return absl::FailedPreconditionError("the crash point was not reached");
  return info;
}

CrashingChannel::Crash DurableFederation::LeaderDiesAfterTheReply(const std::string& snapshot,
                                                                  absl::Notification* crashed,
                                                                  std::string* at) {
  return
      [this, snapshot, crashed, at](
          const std::string& party,
          const fedanon::v1::LeaderMessage& request) -> absl::StatusOr<fedanon::v1::PartyMessage> {
        answers->Call(party, request, absl::Seconds(20)).IgnoreError();
        if (at != nullptr)
          *at = absl::StrCat(party, " round ", request.round(), " ", CallKind(request));
        fs::copy(leader_options.data_dir, snapshot, fs::copy_options::recursive);
        crashing->Die();
        crashed->Notify();
        return absl::UnavailableError(absl::StrCat("party '", party, "' disconnected"));
      };
}

CrashingChannel::Crash DurableFederation::PartyRestarts(bool after_answering, std::string* victim) {
  return
      [this, after_answering, victim](
          const std::string& party,
          const fedanon::v1::LeaderMessage& request) -> absl::StatusOr<fedanon::v1::PartyMessage> {
        if (after_answering) answers->Call(party, request, absl::Seconds(20)).IgnoreError();
        if (victim != nullptr) *victim = party;
        RETURN_IF_ERROR(RestartParty(party));
        return absl::UnavailableError(absl::StrCat("party '", party, "' disconnected"));
      };
}

CrashingChannel::Crash DurableFederation::PartyLeavesAfterAnswering(absl::Duration away,
                                                                    std::string* victim) {
  return [this, away, victim](const std::string& party, const fedanon::v1::LeaderMessage& request)
             -> absl::StatusOr<fedanon::v1::PartyMessage> {
    absl::StatusOr<fedanon::v1::PartyMessage> reply =
        answers->Call(party, request, absl::Seconds(20));
    if (victim != nullptr) *victim = party;
    crashing->SetAway(party, absl::Now() + away);
    RETURN_IF_ERROR(RestartParty(party));
    return reply;
  };
}

CrashingChannel::Crash DurableFederation::PartyLosesItsState(std::string* victim) {
  return [this, victim](
             const std::string& party,
             const fedanon::v1::LeaderMessage&) -> absl::StatusOr<fedanon::v1::PartyMessage> {
    if (victim != nullptr) *victim = party;
    const party::PartyAgentOptions& o = party_options.at(party);
    for (const auto& entry : fs::directory_iterator(o.output_dir)) {
      if (entry.path().extension() == ".state") fs::remove(entry.path());
    }
    RETURN_IF_ERROR(RestartParty(party));
    return absl::UnavailableError(absl::StrCat("party '", party, "' disconnected"));
  };
}

void ExpectDurableStateGone(const DurableFederation& d, const std::string& job_id) {
  for (const auto& [name, o] : d.party_options) {
    const std::string state = o.output_dir + "/" + job_id + ".state";
    for (int i = 0; i < 1000 && fs::exists(state); ++i) absl::SleepFor(absl::Milliseconds(10));
    EXPECT_FALSE(fs::exists(state)) << name;
  }
}

}  // namespace fedanon::testing
