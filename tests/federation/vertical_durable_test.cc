// Durable vertical jobs (docs/operations.md "Durable jobs") in one process: the leader and three
// PartyAgents of a generated vertical job (ID matching, rounds with a judge, the release), with a
// channel in front of the parties that "crashes" at a chosen call — the leader (its data directory
// copied at that instant, as kill -9 would leave it, then a new Leader on the copy) or one party
// (a new PartyAgent over the same directories, its reply lost or not). The job runs with payloads
// whole and in chunks (a 4 KiB message limit: every ID list, instruction and column set travels as
// ChunkGet / ChunkPut calls, so crashes land between chunks too). Each job must end DONE with the
// table and specializations of an uninterrupted run, stored once, and every party's state file
// gone. The crash points are fractions of the calls an uninterrupted run makes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/base/status_macros.h"
#include "common/datagen/datagen.h"
#include "common/spec/job_spec_loader.h"
#include "tests/federation/adult_vertical_util.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/status_matchers.h"

namespace fedanon::testing {
namespace {

namespace fs = std::filesystem;
using fedanon::v1::JobInfo;

constexpr uint64_t kSmallLimit = 4096;

// Forwards to the in-process parties; at call number `crash_at` (1-based) runs `crash` instead.
class CrashingChannel : public common::PartyChannel {
 public:
  explicit CrashingChannel(common::PartyChannel* inner) : inner_(inner) {}
  using Crash = std::function<absl::StatusOr<fedanon::v1::PartyMessage>(
      const std::string& party, const fedanon::v1::LeaderMessage& request)>;
  void CrashAt(int call, Crash crash) {
    absl::MutexLock lock(&mu_);
    crash_at_ = call;
    crash_ = std::move(crash);
  }
  void Die() { dead_ = true; }
  int calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& request,
                                                 absl::Duration timeout) override {
    if (dead_) return absl::UnavailableError(absl::StrCat("party '", party, "' is not connected"));
    Crash crash;
    {
      absl::MutexLock lock(&mu_);
      if (++calls_ == crash_at_) crash = std::move(crash_);
    }
    if (crash) return crash(party, request);
    return inner_->Call(party, request, timeout);
  }
  std::vector<common::ConnectedParty> Parties() const override {
    if (dead_) return {};
    return inner_->Parties();
  }

 private:
  common::PartyChannel* inner_;
  std::atomic<bool> dead_{false};
  mutable absl::Mutex mu_;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  int crash_at_ ABSL_GUARDED_BY(mu_) = -1;
  Crash crash_ ABSL_GUARDED_BY(mu_);
};

// Generated vertical data over hospital-a, -b, -c (party2 = hospital-b holds the sensitive
// column: it judges the others' candidates).
struct Generated {
  std::string spec;
  std::map<std::string, std::string> taxonomies;  // "tax/<attr>.csv" -> content
  std::vector<std::map<std::string, std::string>> files;
};

const Generated& Data() {
  static const Generated* g = [] {
    auto* out = new Generated;
    const std::string dir = FreshDir("vdurable_data");
    common::DatagenOptions o;
    o.rows = 200;
    o.seed = 11;
    o.out_dir = dir;
    o.parties = 3;
    o.partition = common::DatagenOptions::Partition::kVertical;
    EXPECT_OK(common::GenerateDataset(o).status());
    out->spec = SlurpFile(dir + "/vertical.yaml");
    for (int p = 2; p >= 0; --p) {
      out->spec =
          std::regex_replace(out->spec, std::regex(absl::StrCat("party: party", p + 1, "\\b")),
                             std::string("party: hospital-") + static_cast<char>('a' + p));
    }
    for (const auto& e : fs::directory_iterator(dir + "/tax")) {
      out->taxonomies["tax/" + e.path().filename().string()] = SlurpFile(e.path().string());
    }
    for (int p = 0; p < 3; ++p) {
      auto f = out->taxonomies;
      f["table.csv"] = SlurpFile(absl::StrCat(dir, "/party", p + 1, ".csv"));
      out->files.push_back(std::move(f));
    }
    return out;
  }();
  return *g;
}

fedanon::v1::SubmitJobRequest Request(const std::vector<std::string>& parties) {
  const Generated& g = Data();
  fedanon::v1::SubmitJobRequest req;
  auto spec = common::ParseJobSpecYaml(g.spec, "job.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return req;
  *req.mutable_spec() = *spec;
  for (const auto& p : parties) req.add_parties(p);
  for (const auto& a : spec->attributes()) {
    if (!a.taxonomy().empty())
      (*req.mutable_taxonomies())[a.name()] = g.taxonomies.at(a.taxonomy());
  }
  return req;
}

struct DurableFederation {
  std::unique_ptr<InProcessFederation> fed;
  std::map<std::string, party::PartyAgentOptions> party_options;
  leader::LeaderOptions leader_options;
  std::unique_ptr<CrashingChannel> crashing;
  std::vector<std::unique_ptr<party::PartyAgent>> restarted;

  ~DurableFederation() {
    if (fed) fed->leader.reset();
  }

  static std::unique_ptr<DurableFederation> Create(const std::string& name, bool chunked) {
    auto d = std::make_unique<DurableFederation>();
    auto fed = InProcessFederation::Create(
        name, Data().files, [&](party::PartyAgentOptions& o) { d->party_options[o.name] = o; },
        [&](leader::LeaderOptions& o) {
          o.resume_timeout = absl::Seconds(10);
          if (chunked) o.max_message_bytes = kSmallLimit;
          d->leader_options = o;
        });
    EXPECT_TRUE(fed.ok()) << fed.status();
    if (!fed.ok()) return nullptr;
    d->fed = *std::move(fed);
    d->fed->leader.reset();
    d->crashing = std::make_unique<CrashingChannel>(&d->fed->channel);
    d->leader_options.data_dir = d->fed->dir + "/leader-1";
    auto leader = leader::Leader::Create(d->leader_options, d->crashing.get());
    EXPECT_TRUE(leader.ok()) << leader.status();
    if (!leader.ok()) return nullptr;
    d->fed->leader = *std::move(leader);
    return d;
  }

  absl::Status RestartParty(const std::string& party) {
    ASSIGN_OR_RETURN(std::unique_ptr<party::PartyAgent> agent,
                     party::PartyAgent::Create(party_options.at(party)));
    fed->channel.Add(agent.get());
    restarted.push_back(std::move(agent));
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Submit() {
    ASSIGN_OR_RETURN(JobInfo info, fed->Submit(Request(fed->names)));
    return info.job_id();
  }
};

struct Reference {
  int calls = 0;
  std::vector<std::string> steps;
  std::vector<std::string> rows;  // sorted, header first
  long view_lines = 0;            // lines of the leader's view log
};

std::vector<std::string> Steps(const fedanon::v1::Report& report) {
  std::vector<std::string> out;
  for (const auto& s : report.steps()) {
    out.push_back(absl::StrCat(s.attribute(), " ", s.value(), " ", s.records()));
  }
  return out;
}

std::vector<std::string> SortedRows(const std::string& csv) {
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  if (!lines.empty()) std::sort(lines.begin() + 1, lines.end());
  return lines;
}

Reference RunClean(bool chunked) {
  Reference r;
  auto d =
      DurableFederation::Create(chunked ? "vdurable_clean_chunked" : "vdurable_clean", chunked);
  if (d == nullptr) return r;
  auto id = d->Submit();
  EXPECT_TRUE(id.ok()) << id.status();
  if (!id.ok()) return r;
  const JobInfo info = d->fed->Wait(*id);
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  r.calls = d->crashing->calls();
  r.steps = Steps(info.report());
  auto csv = d->fed->leader->Result(*id);
  EXPECT_TRUE(csv.ok()) << csv.status();
  if (csv.ok()) r.rows = SortedRows(*csv);
  auto view = d->fed->leader->ViewLogText(*id);
  EXPECT_TRUE(view.ok()) << view.status();
  if (view.ok()) r.view_lines = static_cast<long>(std::count(view->begin(), view->end(), '\n'));
  return r;
}

// The job ended DONE with the uninterrupted run's steps and table (stored once), and every
// party's state file is gone (waited for, at most 10 s).
void ExpectSameAsClean(DurableFederation& d, const JobInfo& info, const Reference& clean) {
  ASSERT_EQ(info.state(), fedanon::v1::JOB_STATE_DONE) << info.failure_reason();
  EXPECT_EQ(Steps(info.report()), clean.steps);
  ASSERT_OK_AND_ASSIGN(const std::string csv, d.fed->leader->Result(info.job_id()));
  EXPECT_EQ(SortedRows(csv), clean.rows);
  for (const auto& [name, o] : d.party_options) {
    const std::string state = o.output_dir + "/" + info.job_id() + ".state";
    for (int i = 0; i < 1000 && fs::exists(state); ++i) absl::SleepFor(absl::Milliseconds(10));
    EXPECT_FALSE(fs::exists(state)) << name;
  }
}

// The crash point as a fraction of the calls of an uninterrupted run. Payloads travel in chunks
// (the default limit's whole payloads are what the fault suite's real daemons exercise:
// tests/fault/vertical_resume_test.cc), which puts most calls — and so most crash points —
// between the chunks of an ID list, an instruction or the columns.
class VerticalDurable : public ::testing::TestWithParam<double> {
 protected:
  static const Reference& Clean(bool chunked) {
    static Reference* whole = nullptr;
    static Reference* chunks = nullptr;
    Reference*& r = chunked ? chunks : whole;
    if (r == nullptr) r = new Reference(RunClean(chunked));
    return *r;
  }
  bool chunked() const { return true; }
  int CrashCall() const {
    // After the three Prepares; a party crash before the three EndJob calls (after DONE).
    return std::max(4, static_cast<int>(GetParam() * static_cast<double>(Clean(chunked()).calls)));
  }
  int PartyCrashCall() const { return std::min(CrashCall(), Clean(chunked()).calls - 3); }
  std::string Name(const std::string& what) const {
    return absl::StrCat("vdurable_", what, chunked() ? "_chunked_" : "_", CrashCall());
  }
};

class VerticalDurableLeader : public VerticalDurable {};
class VerticalDurablePartyAfter : public VerticalDurable {};
class VerticalDurablePartyBefore : public VerticalDurable {};

TEST_P(VerticalDurableLeader, KilledMidJobResumesAfterItsRestart) {
  const Reference& clean = Clean(chunked());
  ASSERT_GT(clean.calls, 20);
  auto d = DurableFederation::Create(Name("leader"), chunked());
  ASSERT_NE(d, nullptr);
  const std::string snapshot = d->fed->dir + "/leader-2";
  absl::Notification crashed;
  std::string at;
  d->crashing->CrashAt(
      CrashCall(),
      [&](const std::string& party,
          const fedanon::v1::LeaderMessage& request) -> absl::StatusOr<fedanon::v1::PartyMessage> {
        // The party answers (and keeps its answer); the leader dies before it reads the reply.
        d->fed->channel.Call(party, request, absl::Seconds(20)).IgnoreError();
        at = absl::StrCat(party, " round ", request.round(), " ", request.body_case());
        fs::copy(d->leader_options.data_dir, snapshot, fs::copy_options::recursive);
        d->crashing->Die();
        crashed.Notify();
        return absl::UnavailableError(absl::StrCat("party '", party, "' disconnected"));
      });
  ASSERT_OK_AND_ASSIGN(const std::string job_id, d->Submit());
  ASSERT_TRUE(crashed.WaitForNotificationWithTimeout(absl::Seconds(120)));
  d->fed->leader.reset();
  const absl::Time restart = absl::Now();
  leader::LeaderOptions options = d->leader_options;
  options.data_dir = snapshot;
  ASSERT_OK_AND_ASSIGN(d->fed->leader, leader::Leader::Create(options, &d->fed->channel));
  ASSERT_OK_AND_ASSIGN(const JobInfo at_restart, d->fed->leader->Get(job_id));
  const JobInfo info = d->fed->Wait(job_id);
  const double resume_s = absl::ToDoubleSeconds(absl::Now() - restart);
  ExpectSameAsClean(*d, info, clean);
  if (at_restart.state() != fedanon::v1::JOB_STATE_DONE) {
    EXPECT_THAT(info.report().warnings(),
                ::testing::Contains(::testing::HasSubstr("resumed 1 time(s) after a leader "
                                                         "restart")));
  }
  // The view log: the replay wrote no line twice (as many lines as an uninterrupted run).
  ASSERT_OK_AND_ASSIGN(const std::string view, d->fed->leader->ViewLogText(job_id));
  const auto lines = static_cast<long>(std::count(view.begin(), view.end(), '\n'));
  EXPECT_EQ(lines, clean.view_lines);
  std::printf(
      "[ durable ] vertical%s leader crash at call %d of %d (%s; job %s at the restart): "
      "restart to done %.3f s, view log %ld lines\n",
      chunked() ? " chunked" : "", CrashCall(), clean.calls, at.c_str(),
      fedanon::v1::JobState_Name(at_restart.state()).c_str(), resume_s, lines);
}

TEST_P(VerticalDurablePartyAfter, KilledAfterAnsweringResumesFromItsDurableState) {
  const Reference& clean = Clean(chunked());
  ASSERT_GT(clean.calls, 20);
  auto d = DurableFederation::Create(Name("party_after"), chunked());
  ASSERT_NE(d, nullptr);
  std::string victim;
  d->crashing->CrashAt(
      PartyCrashCall(),
      [&](const std::string& party,
          const fedanon::v1::LeaderMessage& request) -> absl::StatusOr<fedanon::v1::PartyMessage> {
        d->fed->channel.Call(party, request, absl::Seconds(20)).IgnoreError();
        victim = party;
        RETURN_IF_ERROR(d->RestartParty(party));
        return absl::UnavailableError(absl::StrCat("party '", party, "' disconnected"));
      });
  ASSERT_OK_AND_ASSIGN(const std::string job_id, d->Submit());
  const JobInfo info = d->fed->Wait(job_id);
  ASSERT_FALSE(victim.empty()) << "the crash point was not reached";
  ExpectSameAsClean(*d, info, clean);
}

TEST_P(VerticalDurablePartyBefore, KilledBeforeAnsweringResumesFromItsDurableState) {
  const Reference& clean = Clean(chunked());
  ASSERT_GT(clean.calls, 20);
  auto d = DurableFederation::Create(Name("party_before"), chunked());
  ASSERT_NE(d, nullptr);
  std::string victim;
  d->crashing->CrashAt(
      PartyCrashCall(),
      [&](const std::string& party,
          const fedanon::v1::LeaderMessage&) -> absl::StatusOr<fedanon::v1::PartyMessage> {
        victim = party;
        RETURN_IF_ERROR(d->RestartParty(party));
        return absl::UnavailableError(absl::StrCat("party '", party, "' disconnected"));
      });
  ASSERT_OK_AND_ASSIGN(const std::string job_id, d->Submit());
  const JobInfo info = d->fed->Wait(job_id);
  ASSERT_FALSE(victim.empty()) << "the crash point was not reached";
  ExpectSameAsClean(*d, info, clean);
}

// A party that lost its state file mid vertical job cannot resume: the job fails naming it and
// why, and nothing is released.
TEST(VerticalDurableLimits, APartyWithoutItsStateFailsTheJobByName) {
  auto d = DurableFederation::Create("vdurable_lost_state", /*chunked=*/false);
  ASSERT_NE(d, nullptr);
  std::string victim;
  d->crashing->CrashAt(
      30,
      [&](const std::string& party,
          const fedanon::v1::LeaderMessage&) -> absl::StatusOr<fedanon::v1::PartyMessage> {
        victim = party;
        const party::PartyAgentOptions& o = d->party_options.at(party);
        for (const auto& entry : fs::directory_iterator(o.output_dir)) {
          if (entry.path().extension() == ".state") fs::remove(entry.path());
        }
        RETURN_IF_ERROR(d->RestartParty(party));
        return absl::UnavailableError(absl::StrCat("party '", party, "' disconnected"));
      });
  ASSERT_OK_AND_ASSIGN(const std::string job_id, d->Submit());
  const JobInfo info = d->fed->Wait(job_id);
  ASSERT_FALSE(victim.empty());
  EXPECT_EQ(info.state(), fedanon::v1::JOB_STATE_FAILED);
  EXPECT_THAT(info.failure_reason(), ::testing::HasSubstr("without its durable state"));
  EXPECT_THAT(info.failure_reason(), ::testing::HasSubstr(victim));
  EXPECT_FALSE(d->fed->leader->Result(job_id).ok());
}

// Spread over the ID matching (about the first half of the calls), the rounds and the release.
INSTANTIATE_TEST_SUITE_P(CrashPoints, VerticalDurableLeader, ::testing::Values(0.3, 0.85));
INSTANTIATE_TEST_SUITE_P(CrashPoints, VerticalDurablePartyAfter, ::testing::Values(0.15, 0.6));
INSTANTIATE_TEST_SUITE_P(CrashPoints, VerticalDurablePartyBefore, ::testing::Values(0.45));

}  // namespace
}  // namespace fedanon::testing
