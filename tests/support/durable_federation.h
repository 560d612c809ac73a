// Tests only: an in-process federation whose leader calls the parties through a channel that
// "crashes" at a chosen call (the leader or a party killed, the reply lost or not), with the
// restarts a durable-job test needs, and a ledger of every answer the parties gave (a request
// asked again after a restart must get the same bytes); shared by
// tests/federation/durable_job_test.cc (horizontal), vertical_durable_test.cc (vertical) and
// local_durable_test.cc (local recoding).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "tests/federation/federation_test_util.h"

namespace fedanon::testing {

// What a leader's request is, for choosing crash points: the body's field name ("sum_step",
// "union_step", "final_check", "chunk_get", ...; a vertical step as "vertical/<step>", e.g.
// "vertical/local_propose"), a secure-sum hop with its collect number ("sum_step 3").
std::string CallKind(const fedanon::v1::LeaderMessage& request);

// Between the leaders and the parties: keeps each party's answer to every distinct request
// (request_id aside). A request asked again — the replay of a restarted leader, the repeat after a
// lost reply — is counted, and an answer that differs from the first one is named.
class AnswerLedger : public wire::PartyChannel {
 public:
  explicit AnswerLedger(wire::PartyChannel* inner) : inner_(inner) {}

  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& request,
                                                 absl::Duration timeout) override;
  std::vector<wire::ConnectedParty> Parties() const override { return inner_->Parties(); }

  // Requests a party answered again after answering them once.
  int repeated() const;
  // "party: kind (round R)" of each repeated request whose answer differed from the first.
  std::vector<std::string> differing() const;

 private:
  wire::PartyChannel* inner_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::string> answers_ ABSL_GUARDED_BY(mu_);  // party + request -> reply
  int repeated_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> differing_ ABSL_GUARDED_BY(mu_);
};

// Forwards to the in-process parties; at call number `crash_at` (1-based) runs `crash` instead,
// which decides what the caller gets. Counts every call.
class CrashingChannel : public wire::PartyChannel {
 public:
  using Crash = std::function<absl::StatusOr<fedanon::v1::PartyMessage>(
      const std::string& party, const fedanon::v1::LeaderMessage& request)>;

  // Whether a call is the one to crash at.
  using Match =
      std::function<bool(const std::string& party, const fedanon::v1::LeaderMessage& request)>;

  explicit CrashingChannel(wire::PartyChannel* inner) : inner_(inner) {}
  void CrashAt(int call, Crash crash);
  // Runs `crash` at the first call `match` accepts instead.
  void CrashWhen(Match match, Crash crash);
  // Whether the crash set by CrashAt or CrashWhen has run.
  bool crashed() const;
  // `party` is away until `until`: not among Parties(), and a call to it fails as one to a
  // party that is not connected (Unavailable).
  void SetAway(const std::string& party, absl::Time until);
  // From now on nobody is connected and every call fails (a leader that was killed).
  void Die() { dead_ = true; }
  int calls() const;
  // CallKind of every call so far, in call order (call n at index n - 1).
  std::vector<std::string> kinds() const;

  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& request,
                                                 absl::Duration timeout) override;
  std::vector<wire::ConnectedParty> Parties() const override;

 private:
  wire::PartyChannel* inner_;
  std::atomic<bool> dead_{false};
  mutable absl::Mutex mu_;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  int crash_at_ ABSL_GUARDED_BY(mu_) = -1;
  Match match_ ABSL_GUARDED_BY(mu_);
  bool fired_ ABSL_GUARDED_BY(mu_) = false;
  Crash crash_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Time> away_until_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> kinds_ ABSL_GUARDED_BY(mu_);
};

// The federation with the leader behind a CrashingChannel, and every leader (the first and a
// restarted one) behind the AnswerLedger; the parties' options are kept (to restart one) and the
// leader's (to restart it on a copy of its directory).
struct DurableFederation {
  // The job the federation runs, for the parties `names`.
  using MakeRequest = std::function<absl::StatusOr<fedanon::v1::SubmitJobRequest>(
      const std::vector<std::string>& names)>;

  std::unique_ptr<InProcessFederation> fed;
  std::map<std::string, party::PartyAgentOptions> party_options;
  leader::LeaderOptions leader_options;
  std::unique_ptr<AnswerLedger> answers;      // in front of fed->channel
  std::unique_ptr<CrashingChannel> crashing;  // in front of `answers` (the first leader's)
  std::vector<std::unique_ptr<party::PartyAgent>> restarted;  // replacements (old ones stay alive)
  MakeRequest make_request;

  // The leader first: it calls through `crashing` into the parties.
  ~DurableFederation();

  // Parties holding `party_files` (as InProcessFederation::Create), a leader with a 10 s resume
  // timeout, then `customize_leader`. nullptr (and a test failure) when it cannot start.
  static std::unique_ptr<DurableFederation> Create(
      const std::string& name, const std::vector<std::map<std::string, std::string>>& party_files,
      MakeRequest make_request,
      const std::function<void(leader::LeaderOptions&)>& customize_leader = nullptr);

  // A new process of `party` over the same directories (nothing in memory), now the connected one.
  absl::Status RestartParty(const std::string& party);
  // A new leader process on `data_dir` (the old one must be gone), talking to the parties through
  // `answers` only.
  absl::Status StartLeaderOn(const std::string& data_dir);
  // Submits the job; its id.
  absl::StatusOr<std::string> Submit();
  // Submits the job with `crash` at call `call` (CrashingChannel::CrashAt) and waits for its end;
  // an error if the job could not be submitted or ended before that call.
  absl::StatusOr<fedanon::v1::JobInfo> RunWithCrash(int call, CrashingChannel::Crash crash);

  // Crashes for CrashingChannel::CrashAt. All return "disconnected" to the leader.
  // The party answers (and keeps its answer), the leader dies before it reads the reply: its
  // directory as of now is copied to `snapshot`, `crashed` notified; `at` (if given) gets the
  // party, round and request kind.
  CrashingChannel::Crash LeaderDiesAfterTheReply(const std::string& snapshot,
                                                 absl::Notification* crashed,
                                                 std::string* at = nullptr);
  // The party is killed (after answering, its reply lost, or before reading the request) and
  // restarted at once; `victim` (if given) gets its name.
  CrashingChannel::Crash PartyRestarts(bool after_answering, std::string* victim = nullptr);
  // The party answers, and the leader gets its reply; then the party is away for `away` (killed
  // and restarted, reconnecting), while the leader goes on with what the reply carried.
  // `victim` (if given) gets its name.
  CrashingChannel::Crash PartyLeavesAfterAnswering(absl::Duration away,
                                                   std::string* victim = nullptr);
  // The party loses its state files and is restarted; `victim` (if given) gets its name.
  CrashingChannel::Crash PartyLosesItsState(std::string* victim = nullptr);
};

// Every party's durable state goes with the job (once the leader told it, after recording the
// job as done: waited for, at most 10 s).
void ExpectDurableStateGone(const DurableFederation& d, const std::string& job_id);

}  // namespace fedanon::testing
