// Fuzz target: the leader's handling of what parties send it (leader/leader.cc,
// leader/secure_sum_source.cc, leader/vertical_job.cc), as a malicious or broken party could
// send it. A whole job runs per input: a fresh Leader drives real PartyAgents over an in-process
// channel, and the fuzz input decides, reply by reply, whether the leader gets the party's real
// reply, a fuzzed PartyMessage instead, the real reply with fuzzed fields merged over it, or a
// transport error.
//
// Input: one byte choosing the job (even: horizontal, 3 parties; odd: vertical, 2 parties), then
// for each call the leader makes, one byte choosing what it gets (byte % 4):
//   0: the party's real reply;  1: the next piece (FuzzInput::Piece) parsed as a PartyMessage;
//   2: the real reply with the next piece merged over it (MergeFromString: fields replaced,
//      repeated fields appended);  3: Unavailable ("party 'x' disconnected").
// When the input is used up every further call gets the real reply, so a short input is an honest
// run with a few faults early on. A fuzzed reply keeps the request's id, so that it reaches the
// handler behind the id check.
//
// Checked besides the sanitizers: every job ends (done or failed) within a bound; a failed job's
// reason has no control characters (peer strings are sanitized, common/base/printable), is
// bounded in length and holds no record ID; and a run in which every call got its real reply
// ends done, releasing every record of the union.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/spec/job_digest.h"
#include "common/spec/job_spec_loader.h"
#include "common/wire/job_authorization.h"
#include "crypto/certificates.h"
#include "fedanon/v1/federation.pb.h"
#include "leader/leader.h"
#include "party/party_agent.h"
#include "party/testing/in_process_channel.h"
#include "spdlog/spdlog.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/support/job_authorization_util.h"

namespace fedanon::fuzz {
namespace {

using fedanon::v1::JobInfo;
using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

constexpr char kEducation[] =
    "Bachelors;Undergraduate;Higher;ANY\nMasters;Graduate;Higher;ANY\n"
    "Doctorate;Graduate;Higher;ANY\n11th;Secondary;ANY\n";
constexpr char kSex[] = "Male;ANY_Sex\nFemale;ANY_Sex\n";

constexpr char kHorizontalSpec[] = R"(name: fuzz-leader-horizontal
attributes:
  - {name: edu, role: qid, taxonomy: edu.csv}
  - {name: sex, role: qid, taxonomy: sex.csv}
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: cls, role: class, values: [yes, no]}
partitioning: horizontal
privacy: {model: lkc, L: 2, K: 2}
)";

constexpr char kVerticalSpec[] = R"(name: fuzz-leader-vertical
attributes:
  - {name: ID, role: id}
  - {name: sex, role: qid, taxonomy: sex.csv, party: hospital-a}
  - {name: edu, role: qid, taxonomy: edu.csv, party: hospital-b}
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1, party: hospital-b}
  - {name: cls, role: class, values: [yes, no]}
privacy: {model: lkc, L: 2, K: 2}
score: infogain
partitioning: vertical
)";

const char* const kEdu[] = {"Bachelors", "Masters", "Doctorate", "11th"};

std::string Id(int i) { return absl::StrCat("id-secret-", 2000 + i); }

std::string HorizontalTable(int party) {
  std::string t = "edu,sex,age,cls\n";
  for (int i = 0; i < 8; ++i) {
    const int r = 8 * party + i;
    absl::StrAppend(&t, kEdu[r % 4], ",", r % 3 ? "Male" : "Female", ",", 18 + 7 * (r % 9), ",",
                    r % 2 ? "yes" : "no", "\n");
  }
  return t;
}

std::string VerticalTable(int party) {
  std::string t = party == 0 ? "ID,cls,sex\n" : "ID,cls,edu,age\n";
  for (int i = party; i < 12 + party; ++i) {
    absl::StrAppend(&t, Id(i), ",", i % 3 ? "yes" : "no");
    if (party == 0) {
      absl::StrAppend(&t, ",", i % 2 ? "Male" : "Female", "\n");
    } else {
      absl::StrAppend(&t, ",", kEdu[i % 4], ",", 20 + 5 * i, "\n");
    }
  }
  return t;
}

// The CA, the parties' options and the leader's, shared by every input.
struct World {
  std::unique_ptr<crypto::CertificateAuthority> ca;
  std::vector<party::PartyAgentOptions> parties;
  leader::LeaderOptions leader;
  wire::AdminSigner admin;
};

const World& TheWorld() {
  static const World* world = [] {
    spdlog::set_level(spdlog::level::off);
    QuietProtobuf();
    auto* w = new World;
    absl::StatusOr<std::unique_ptr<crypto::CertificateAuthority>> ca =
        crypto::CertificateAuthority::Create("fuzz-leader", absl::Hours(24 * 365));
    if (!ca.ok()) FuzzFail("no CA");
    w->ca = *std::move(ca);
    for (int i = 0; i < 3; ++i) {
      const std::string name = std::string("hospital-") + static_cast<char>('a' + i);
      absl::StatusOr<crypto::IssuedCertificate> seal =
          w->ca->IssueSeal({crypto::Role::kParty, name}, absl::Hours(24 * 365));
      if (!seal.ok()) FuzzFail("no seal certificate");
      party::PartyAgentOptions o;
      o.name = name;
      o.data_dir = ScratchDir() + "/" + name;
      o.default_data_path = "table.csv";
      o.output_dir = o.data_dir + "/output";
      o.ca_pem = w->ca->cert_pem();
      o.seal_cert_pem = seal->cert_pem;
      o.seal_key_pem = seal->key_pem;
      absl::StatusOr<crypto::IssuedCertificate> sign =
          w->ca->IssueStatementSigner({crypto::Role::kParty, name}, absl::Hours(24 * 365));
      if (!sign.ok()) FuzzFail("no statement-signing certificate");
      o.sign_cert_pem = sign->cert_pem;
      o.sign_key_pem = sign->key_pem;
      WriteTextFile(o.data_dir + "/edu.csv", kEducation);
      WriteTextFile(o.data_dir + "/sex.csv", kSex);
      WriteTextFile(o.data_dir + "/table.csv", HorizontalTable(i));
      if (i < 2) WriteTextFile(o.data_dir + "/vtable.csv", VerticalTable(i));
      w->parties.push_back(std::move(o));
    }
    absl::StatusOr<crypto::IssuedCertificate> seal =
        w->ca->IssueSeal({crypto::Role::kLeader, "leader"}, absl::Hours(24 * 365));
    if (!seal.ok()) FuzzFail("no leader seal certificate");
    w->leader.name = "leader";
    w->leader.data_dir = ScratchDir() + "/leader";
    w->leader.round_timeout = absl::Seconds(5);
    w->leader.ca_pem = w->ca->cert_pem();
    w->leader.seal_cert_pem = seal->cert_pem;
    w->leader.seal_key_pem = seal->key_pem;
    absl::StatusOr<wire::AdminSigner> admin = fedanon::testing::IssueTestAdmin(*w->ca);
    if (!admin.ok()) FuzzFail("no admin certificate");
    w->admin = *std::move(admin);
    return w;
  }();
  return *world;
}

// The parties' channel with the fuzz input in the middle. The leader may call parties from
// several threads: the input is consumed under a lock, in the order the calls arrive.
class FuzzedChannel : public wire::PartyChannel {
 public:
  explicit FuzzedChannel(FuzzInput input) : input_(input) {}
  void Add(party::PartyAgent* agent) { real_.Add(agent); }

  absl::StatusOr<PartyMessage> Call(const std::string& party, const LeaderMessage& request,
                                    absl::Duration timeout) override {
    int op = 0;
    std::string piece;
    {
      absl::MutexLock lock(&mu_);
      op = input_.Byte() % 4;
      if (op == 1 || op == 2) piece = std::string(input_.Piece());
    }
    if (op != 0) tampered_ = true;
    if (op == 3) return absl::UnavailableError(absl::StrCat("party '", party, "' disconnected"));
    if (op == 1) {
      PartyMessage fuzzed;
      if (!fuzzed.ParseFromString(piece)) fuzzed.Clear();
      fuzzed.set_request_id(request.request_id());
      return fuzzed;
    }
    absl::StatusOr<PartyMessage> reply = real_.Call(party, request, timeout);
    if (op == 2 && reply.ok()) {
      PartyMessage merged = *reply;
      if (merged.MergeFromString(piece)) {
        merged.set_request_id(request.request_id());
        return merged;
      }
    }
    return reply;
  }

  std::vector<wire::ConnectedParty> Parties() const override { return real_.Parties(); }
  bool tampered() const { return tampered_; }

 private:
  std::atomic<bool> tampered_{false};
  party_testing::InProcessPartyChannel real_;
  absl::Mutex mu_;
  FuzzInput input_ ABSL_GUARDED_BY(mu_);
};

std::unique_ptr<party::PartyAgent> NewAgent(const party::PartyAgentOptions& options) {
  // A fresh party: no run ids used, no releases counted (the run ledger lives in output_dir).
  std::error_code ec;
  std::filesystem::remove_all(options.output_dir, ec);
  absl::StatusOr<std::unique_ptr<party::PartyAgent>> agent = party::PartyAgent::Create(options);
  if (!agent.ok()) FuzzFail("PartyAgent::Create failed");
  return *std::move(agent);
}

fedanon::v1::SubmitJobRequest Request(bool vertical, int parties) {
  absl::StatusOr<fedanon::v1::JobSpec> spec =
      spec::ParseJobSpecYaml(vertical ? kVerticalSpec : kHorizontalSpec, "fuzz-leader-spec.yaml");
  if (!spec.ok()) FuzzFail("a fixed spec does not load");
  fedanon::v1::SubmitJobRequest req;
  *req.mutable_spec() = *spec;
  for (int i = 0; i < parties; ++i) req.add_parties(TheWorld().parties[i].name);
  if (vertical) {
    for (int i = 0; i < parties; ++i) (*req.mutable_data_paths())[req.parties(i)] = "vtable.csv";
  }
  (*req.mutable_taxonomies())["edu"] = kEducation;
  (*req.mutable_taxonomies())["sex"] = kSex;
  std::map<std::string, std::string> texts(req.taxonomies().begin(), req.taxonomies().end());
  absl::StatusOr<fedanon::v1::JobAuthorization> auth =
      wire::AuthorizeSubmission(req, spec::CanonicalJobBytes(req.spec(), texts), TheWorld().admin);
  if (!auth.ok()) FuzzFail("cannot sign a fixed job");
  *req.mutable_authorization() = *std::move(auth);
  return req;
}

bool Final(const JobInfo& info) {
  return info.state() == fedanon::v1::JOB_STATE_DONE ||
         info.state() == fedanon::v1::JOB_STATE_FAILED ||
         info.state() == fedanon::v1::JOB_STATE_CANCELLED;
}

bool Verbose() {
  static const bool verbose = std::getenv("FEDANON_FUZZ_VERBOSE") != nullptr;
  return verbose;
}

void CheckOutcome(const JobInfo& info, bool vertical, bool tampered) {
  if (!Final(info)) FuzzFail("a job did not end");
  const std::string& reason = info.failure_reason();
  if (reason.size() > 64 * 1024) FuzzFail("an unbounded failure reason");
  for (const char c : reason) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\n' && c != '\t') FuzzFail("a control character in a failure reason");
  }
  for (int i = 0; i < 13; ++i) {
    if (reason.find(Id(i)) != std::string::npos) FuzzFail("a record ID in a failure reason");
  }
  if (!tampered) {
    if (info.state() != fedanon::v1::JOB_STATE_DONE) {
      std::fprintf(stderr, "honest run failed: %s\n", reason.c_str());
      FuzzFail("a run with only real replies did not end done");
    }
    // Horizontal: 3 x 8 records; vertical: the 11 IDs both tables hold.
    if (info.report().records_out() != (vertical ? 11u : 24u)) {
      FuzzFail("an honest run released a record count other than the union's");
    }
  }
}

void FuzzLeader(FuzzInput in) {
  const World& w = TheWorld();
  const bool vertical = in.Byte() % 2 == 1;
  const int parties = vertical ? 2 : 3;
  FuzzedChannel channel(in);
  std::vector<std::unique_ptr<party::PartyAgent>> agents;
  for (int i = 0; i < parties; ++i) {
    agents.push_back(NewAgent(w.parties[i]));
    channel.Add(agents.back().get());
  }
  std::error_code ec;
  std::filesystem::remove_all(w.leader.data_dir, ec);
  absl::StatusOr<std::unique_ptr<leader::Leader>> leader =
      leader::Leader::Create(w.leader, &channel);
  if (!leader.ok()) FuzzFail("Leader::Create failed");
  absl::StatusOr<JobInfo> submitted = (*leader)->Submit(Request(vertical, parties), "admin");
  if (!submitted.ok()) FuzzFail("a fixed job was refused");
  JobInfo info;
  // Bounded: the leader's own round timeout (5 s) is the longest a call can take here.
  for (int i = 0; i < 1200 && !Final(info); ++i) {
    absl::StatusOr<JobInfo> got =
        (*leader)->WaitForChange(submitted->job_id(), info, absl::Milliseconds(50));
    if (got.ok()) info = *got;
  }
  if (Verbose()) {
    std::fprintf(stderr, "job %s: state %d, %s\n", vertical ? "vertical" : "horizontal",
                 static_cast<int>(info.state()), info.failure_reason().c_str());
  }
  CheckOutcome(info, vertical, channel.tampered());
}

std::string Seed(int job, std::string_view ops) {
  std::string out(1, static_cast<char>(job));
  out.append(ops);
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> FuzzSeeds() {
  std::vector<std::pair<std::string, std::string>> seeds;
  seeds.emplace_back("horizontal-honest", Seed(0, ""));
  seeds.emplace_back("vertical-honest", Seed(1, ""));
  // A disconnect at the third call, then honest.
  seeds.emplace_back("horizontal-disconnect", Seed(0, std::string("\0\0\3", 3)));
  seeds.emplace_back("vertical-disconnect", Seed(1, std::string("\0\0\0\0\3", 5)));
  // An empty reply where a prepare result is due, and an error reply merged over a real one.
  std::string empty_reply = std::string(1, '\1');
  AppendPiece(&empty_reply, "");
  seeds.emplace_back("horizontal-empty-reply", Seed(0, empty_reply));
  PartyMessage error;
  error.mutable_error()->set_message("refused\n\x1b[31mforged log line");
  std::string merged(6, '\0');
  merged.push_back('\2');
  AppendPiece(&merged, error.SerializeAsString());
  seeds.emplace_back("horizontal-error-merged", Seed(0, merged));
  seeds.emplace_back("vertical-error-merged", Seed(1, merged));
  return seeds;
}

}  // namespace fedanon::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fedanon::fuzz::FuzzLeader(fedanon::fuzz::FuzzInput(data, size));
  return 0;
}
