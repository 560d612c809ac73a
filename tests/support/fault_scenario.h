// Tests only: the fixture shared by the fault suite's scenarios on real daemons
// (tests/fault/fault_test.cc, vertical_resume_test.cc): the federation, the seed that draws its
// rounds and victims, and the steps and checks those scenarios repeat (a job hit at a seeded round,
// the leader killed and restarted, a party killed for good, the parties' durable state gone).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "fedanon/v1/federation.pb.h"
#include "tests/fault/fault_federation.h"

namespace fedanon::testing {

class FaultScenarioTest : public ::testing::Test {
 protected:
  // Every wait for a job's round or end is bounded by this.
  static constexpr absl::Duration kJobBound = absl::Seconds(60);
  // How long a running job waits for a party (or, after a leader restart, every party) to come
  // back (leader.yaml resume_timeout_seconds; the default is 120 s).
  static constexpr uint32_t kResumeTimeoutSeconds = 4;
  // How long a new job waits for the parties of its ring to connect (leader.yaml
  // party_wait_seconds; the default is 60 s), unless a test's options set it.
  static constexpr uint32_t kPartyWaitSeconds = 4;

  // A job hit mid-way: its id and its state when it reached the round asked for.
  struct RunningJob {
    std::string id;
    fedanon::v1::JobInfo reached;
    fedanon::v1::JobInfo end;  // when a helper waited for its end
  };

  static std::string Name();
  static double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }
  // Header first, then the data lines sorted (the release order is secret and random).
  static std::vector<std::string> SortedLines(const std::string& text);

  // Skips the test unless `programs` are built (in bin/); otherwise draws the seed and prints it.
  void SkipUnlessBuiltThenDrawSeed(const std::vector<std::string>& programs);
  // Starts the federation with kResumeTimeoutSeconds and kPartyWaitSeconds (unless
  // `options.leader_yaml_extra` sets party_wait_seconds); a fatal failure when it does not start.
  void StartFederation(FaultFederationOptions options = {});

  int SeededParty() { return static_cast<int>(rng_() % fed_->parties().size()); }
  // Every proxy adds `d` per chunk (so that a round lasts long enough to be hit).
  void DelayAll(absl::Duration d);

  // With every proxy 15 ms per chunk, submits a job over every party and waits until it is
  // RUNNING at round `at_round` (fatal failures otherwise).
  void StartJobAtRound(uint32_t round_timeout_seconds, uint32_t at_round, RunningJob* job);
  // kill -9 of the leader, the proxies' delay off, the leader started again at `*restart`; returns
  // once every party is connected again, `*reconnect_s` after the restart (fatal failures
  // otherwise). Either output may be null.
  void KillAndRestartLeader(absl::Time* restart = nullptr, double* reconnect_s = nullptr);
  // A job started as StartJobAtRound, then kill -9 of party `victim` (not restarted): the job
  // fails naming it as away past the rejoin deadline, no sooner than that deadline after the kill
  // (`*detect_s`), and nothing of it is released. The proxies' delay is off again.
  void KillAPartyForGood(uint32_t round_timeout_seconds, uint32_t at_round, int victim,
                         RunningJob* job, double* detect_s);
  // The job ended DONE after one leader restart: it says so, every party started it once and was
  // told that it is done, and let its durable state go.
  void ExpectDoneAfterOneLeaderRestart(const std::string& job_id, const fedanon::v1::JobInfo& end);

  // Polls party `i`'s audit file for the job (every 2 ms, at most `timeout`) until it holds more
  // than `more_than` entries of `kind`; false when the job ended first or the time ran out.
  bool WaitForAudit(int i, const std::string& job_id, const std::string& kind,
                    absl::Duration timeout = absl::Seconds(10), int more_than = 0);

  // The leader stored the released table of the job exactly once.
  void ExpectStoredOnceAtTheLeader(const std::string& job_id);
  // The centralized engine's release on the parties' tables together (gen-data's table.csv: the
  // union, or the joined table of a vertical job) with the spec at `spec_path` less its
  // `partitioning:` line, as SortedLines; computed once per `name` (capture/<name>.csv).
  void CentralizedLines(const std::string& spec_path, const std::string& name,
                        std::vector<std::string>* lines);
  // The released table of a done job equals the centralized engine's on the union of the
  // parties' tables (`fedanon anonymize` of gen-data's table.csv with the job's own spec, minus
  // `partitioning:`, as a multiset of rows), and it exists once: one file at the leader, none at
  // any party.
  void ExpectReleasedOnceAsCentralized(const std::string& job_id);
  // Every party (but `except`) was told the job's end and deleted its state file and its spill
  // directory (waited for, at most 10 s).
  void ExpectNoDurableStateLeft(const std::string& job_id, int except = -1);

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::unique_ptr<FaultFederation> fed_;
};

}  // namespace fedanon::testing
