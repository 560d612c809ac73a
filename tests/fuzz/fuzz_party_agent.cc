// Fuzz target: the party's handler of the leader's requests, PartyAgent::Handle
// (party/party_agent.h), fed fedanon.v1.LeaderMessages parsed from the input, as a malicious or
// broken leader could send them.
//
// Input: one byte choosing the state the party is put in first, then up to 8 LeaderMessages, each
// prefixed with its 2-byte little-endian length (FuzzInput::Piece). The states:
//   0: no job;  1: a horizontal job prepared (secure sums and the secure union reachable);
//   2: a vertical job prepared;  3: the vertical job after ID matching with a second party, run
//   here with the real messages (proposals, instructions, commit and release reachable).
// The party under test is "hospital-a"; the job id is kJob, the round any. Every input starts from
// a fresh agent, so inputs do not depend on each other.
//
// So that the fuzzer reaches what lies behind the cryptography, the harness rewrites two things in
// each message before the party sees it (a real leader could not do either):
//   - a Participant with an empty seal_certificate gets the certificate of the party it names
//     (hospital-a, hospital-b or the leader: all issued by this process's CA);
//   - a SealedPayload whose ciphertext starts with "plain:" is sealed for hospital-a, bound to the
//     message's job id and round, the run of the job prepared in the chosen state, and the
//     payload's own sender, receiver and purpose fields (union rows: to the union's recipient, no
//     sender, purpose "union"), the rest being the plaintext.
// Messages that name a taxonomy or table by an absolute path or through ".." are skipped: they
// would make the fuzzer read the machine's files (the party reads what its leader names).
//
// Checked besides the sanitizers: every reply carries its request's id; a reply never contains a
// record ID of the party's tables (IDs leave a party only encrypted) unless the request did; and a
// job is prepared only under an id that is a plain file name (the recipient writes
// <output_dir>/<job id>.csv).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/spec/job_spec_loader.h"
#include "common/wire/federation_wire.h"
#include "common/wire/id_digests.h"
#include "common/wire/job_authorization.h"
#include "common/wire/released_union.h"
#include "crypto/certificates.h"
#include "crypto/sealed_box.h"
#include "fedanon/v1/federation.pb.h"
#include "party/party_agent.h"
#include "spdlog/spdlog.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/support/job_authorization_util.h"

namespace fedanon::fuzz {
namespace {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using fedanon::v1::SealedPayload;

constexpr char kPlain[] = "plain:";
constexpr size_t kPlainSize = sizeof(kPlain) - 1;
constexpr char kJob[] = "job-00000000f022";
constexpr char kA[] = "hospital-a";
constexpr char kB[] = "hospital-b";
constexpr char kLeader[] = "leader";
constexpr uint32_t kLeaderIndex = UINT32_MAX;
constexpr size_t kMaxMessages = 8;

constexpr char kEducation[] =
    "Bachelors;Undergraduate;Higher;ANY\nMasters;Graduate;Higher;ANY\n"
    "Doctorate;Graduate;Higher;ANY\n11th;Secondary;ANY\n";
constexpr char kSex[] = "Male;ANY_Sex\nFemale;ANY_Sex\n";
constexpr char kJobs[] =
    "Janitor;Non-Technical;Blue-collar;ANY_Job\nMover;Non-Technical;Blue-collar;ANY_Job\n"
    "Carpenter;Technical;Blue-collar;ANY_Job\nManager;White-collar;ANY_Job\n"
    "Lawyer;Professional;White-collar;ANY_Job\n";

constexpr char kHorizontalSpec[] = R"(name: fuzz-horizontal
attributes:
  - {name: edu, role: qid, taxonomy: edu.csv}
  - {name: g, role: qid, values: [ga, gb, gc]}
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: other, role: other, values: [x, y]}
  - {name: cls, role: class, values: [yes, no]}
partitioning: horizontal
privacy: {model: lkc, L: 2, K: 2}
numeric_split: exact  # the per-rank requests stay reachable (binned ones are a subset)
)";
constexpr char kHorizontalTable[] =
    "edu,g,age,other,cls\nBachelors,ga,23,x,yes\nMasters,gb,37,y,no\nDoctorate,ga,51,x,yes\n"
    "11th,gc,17,y,no\nMasters,ga,44,x,no\nBachelors,gb,30,y,yes\nDoctorate,gc,62,x,no\n"
    "11th,ga,19,x,yes\n";

constexpr char kVerticalSpec[] = R"(name: fuzz-vertical
attributes:
  - {name: ID, role: id}
  - {name: Sex, role: qid, taxonomy: sex.csv, party: hospital-a}
  - {name: Job, role: qid, taxonomy: job.csv, party: hospital-b}
  - {name: Salary, role: qid, type: continuous, range: [1, 99], precision: 1, party: hospital-b}
  - {name: Class, role: class, values: [Y, N]}
privacy: {model: lkc, L: 2, K: 2}
score: infogain
partitioning: vertical
)";

// Record IDs: the privacy check looks for these in replies.
std::string Id(int i) { return absl::StrCat("id-secret-", 1000 + i); }

std::string VerticalTableA() {
  std::string t = "ID,Class,Sex\n";
  for (int i = 0; i < 12; ++i) {
    absl::StrAppend(&t, Id(i), ",", i % 3 ? "Y" : "N", ",", i % 2 ? "Male" : "Female", "\n");
  }
  return t;
}

std::string VerticalTableB() {
  const char* jobs[] = {"Janitor", "Mover", "Carpenter", "Manager", "Lawyer"};
  std::string t = "ID,Class,Job,Salary\n";
  for (int i = 1; i < 13; ++i) {
    absl::StrAppend(&t, Id(i), ",", i % 3 ? "Y" : "N", ",", jobs[i % 5], ",", 20 + 5 * i, "\n");
  }
  return t;
}

// What every input shares: the CA, the parties' options and the prepare messages.
struct World {
  std::unique_ptr<crypto::CertificateAuthority> ca;
  std::map<std::string, std::string> seal_certs;          // by name
  std::map<std::string, crypto::IssuedCertificate> sign;  // the data parties' statement signers
  party::PartyAgentOptions a, b;
  std::unique_ptr<crypto::SealKeyPair> a_keys;  // to seal test payloads for hospital-a
  // Every participant's sealing keys: hop payloads are sealed sender-authenticated by the sender
  // they name (crypto::SealFrom), as the party checks.
  std::map<std::string, std::unique_ptr<crypto::SealKeyPair>> keys;
  LeaderMessage horizontal, vertical;        // prepare
  std::string horizontal_run, vertical_run;  // the run ids their authorizations name
  wire::AdminSigner admin;  // authorizes the prepares (and every fuzzed one that carries none)
};

party::PartyAgentOptions PartyOptions(const World& w, const std::string& name,
                                      const crypto::IssuedCertificate& seal) {
  party::PartyAgentOptions o;
  o.name = name;
  o.data_dir = ScratchDir() + "/" + name;
  o.default_data_path = "table.csv";
  o.output_dir = o.data_dir + "/output";
  o.ca_pem = w.ca->cert_pem();
  o.seal_cert_pem = seal.cert_pem;
  o.seal_key_pem = seal.key_pem;
  o.sign_cert_pem = w.sign.at(name).cert_pem;
  o.sign_key_pem = w.sign.at(name).key_pem;
  return o;
}

LeaderMessage Prepare(const World& w, std::string_view spec_yaml, const std::string& data_path) {
  LeaderMessage msg;
  msg.set_job_id(kJob);
  msg.set_round(1);
  absl::StatusOr<fedanon::v1::JobSpec> spec = spec::ParseJobSpecYaml(spec_yaml, "fuzz-spec.yaml");
  if (!spec.ok()) FuzzFail("a fixed spec does not load");
  *msg.mutable_prepare()->mutable_spec() = *spec;
  msg.mutable_prepare()->set_data_path(data_path);
  uint32_t index = 0;
  for (const char* name : {kA, kB, kLeader}) {
    auto* p = msg.mutable_prepare()->add_participants();
    p->set_name(name);
    p->set_index(std::string_view(name) == kLeader ? kLeaderIndex : index++);
    p->set_seal_certificate(w.seal_certs.at(name));
    if (auto it = w.sign.find(name); it != w.sign.end()) {
      p->set_sign_certificate(it->second.cert_pem);
    }
  }
  // The ring fixed at Prepare: hospital-a first, so it masks every secure sum itself.
  msg.mutable_prepare()->add_ring(kA);
  msg.mutable_prepare()->add_ring(kB);
  if (!fedanon::testing::AuthorizePrepare(&msg, w.admin,
                                          fedanon::testing::TaxonomyTexts(*spec, w.a.data_dir))
           .ok()) {
    FuzzFail("cannot sign a fixed prepare");
  }
  return msg;
}

const World& TheWorld() {
  static const World* world = [] {
    spdlog::set_level(spdlog::level::off);
    QuietProtobuf();
    auto* w = new World;
    absl::StatusOr<std::unique_ptr<crypto::CertificateAuthority>> ca =
        crypto::CertificateAuthority::Create("fuzz", absl::Hours(24 * 365));
    if (!ca.ok()) FuzzFail("no CA");
    w->ca = *std::move(ca);
    std::map<std::string, crypto::IssuedCertificate> issued;
    for (const char* name : {kA, kB, kLeader}) {
      const crypto::Role role =
          std::string_view(name) == kLeader ? crypto::Role::kLeader : crypto::Role::kParty;
      absl::StatusOr<crypto::IssuedCertificate> seal =
          w->ca->IssueSeal({role, name}, absl::Hours(24 * 365));
      if (!seal.ok()) FuzzFail("no seal certificate");
      w->seal_certs[name] = seal->cert_pem;
      issued[name] = *seal;
      absl::StatusOr<std::unique_ptr<crypto::SealKeyPair>> keys =
          crypto::SealKeyPairFromPem(seal->key_pem);
      if (!keys.ok()) FuzzFail("no key pair");
      w->keys[name] = *std::move(keys);
      if (role == crypto::Role::kParty) {
        absl::StatusOr<crypto::IssuedCertificate> sign =
            w->ca->IssueStatementSigner({role, name}, absl::Hours(24 * 365));
        if (!sign.ok()) FuzzFail("no statement-signing certificate");
        w->sign[name] = *std::move(sign);
      }
    }
    w->a = PartyOptions(*w, kA, issued[kA]);
    w->b = PartyOptions(*w, kB, issued[kB]);
    absl::StatusOr<std::unique_ptr<crypto::SealKeyPair>> keys =
        crypto::SealKeyPairFromPem(issued[kA].key_pem);
    if (!keys.ok()) FuzzFail("no key pair");
    w->a_keys = *std::move(keys);
    for (const party::PartyAgentOptions* o : {&w->a, &w->b}) {
      WriteTextFile(o->data_dir + "/edu.csv", kEducation);
      WriteTextFile(o->data_dir + "/sex.csv", kSex);
      WriteTextFile(o->data_dir + "/job.csv", kJobs);
      WriteTextFile(o->data_dir + "/table.csv", kHorizontalTable);
    }
    WriteTextFile(w->a.data_dir + "/vtable.csv", VerticalTableA());
    WriteTextFile(w->b.data_dir + "/vtable.csv", VerticalTableB());
    absl::StatusOr<wire::AdminSigner> admin = fedanon::testing::IssueTestAdmin(*w->ca);
    if (!admin.ok()) FuzzFail("no admin certificate");
    w->admin = *std::move(admin);
    w->horizontal = Prepare(*w, kHorizontalSpec, "table.csv");
    w->vertical = Prepare(*w, kVerticalSpec, "vtable.csv");
    w->horizontal_run = wire::RunIdOf(w->horizontal.prepare().authorization()).value_or("");
    w->vertical_run = wire::RunIdOf(w->vertical.prepare().authorization()).value_or("");
    return w;
  }();
  return *world;
}

// ---------------------------------------------------------------------------------------------
// Rewriting a fuzzed message (see the top of the file)

void SealIfPlain(std::string* ciphertext, const crypto::SealContext& context) {
  if (!std::string_view(*ciphertext).starts_with(kPlain)) return;
  absl::StatusOr<std::string> sealed =
      crypto::Seal(TheWorld().a_keys->public_key(), context, ciphertext->substr(kPlainSize));
  if (!sealed.ok()) FuzzFail("Seal failed");
  *ciphertext = *std::move(sealed);
}

// Hop payloads: sealed by the participant the payload names as its sender (sender-authenticated,
// as the party requires); a payload naming no known participant is sealed anonymously.
void SealPayload(const LeaderMessage& msg, const std::string& run, SealedPayload* payload) {
  std::string* ciphertext = payload->mutable_ciphertext();
  if (!std::string_view(*ciphertext).starts_with(kPlain)) return;
  const crypto::SealContext context{
      msg.job_id(), run, msg.round(), payload->sender(), payload->receiver(), payload->purpose()};
  const auto sender = TheWorld().keys.find(payload->sender());
  if (sender == TheWorld().keys.end()) {
    SealIfPlain(ciphertext, context);
    return;
  }
  absl::StatusOr<std::string> sealed = crypto::SealFrom(
      *sender->second, TheWorld().a_keys->public_key(), context, ciphertext->substr(kPlainSize));
  if (!sealed.ok()) FuzzFail("SealFrom failed");
  *ciphertext = *std::move(sealed);
}

bool UnsafePath(const std::string& path) {
  return path.starts_with("/") || path.find("..") != std::string::npos;
}

// False: skip the message. `run`: the run of the job the chosen state prepared.
bool Rewrite(LeaderMessage* msg, const std::string& run) {
  if (msg->has_prepare()) {
    auto* prepare = msg->mutable_prepare();
    if (UnsafePath(prepare->data_path())) return false;
    for (const auto& a : prepare->spec().attributes()) {
      if (UnsafePath(a.taxonomy())) return false;
    }
    for (auto& p : *prepare->mutable_participants()) {
      auto it = TheWorld().seal_certs.find(p.name());
      if (p.seal_certificate().empty() && it != TheWorld().seal_certs.end()) {
        p.set_seal_certificate(it->second);
      }
      auto sign = TheWorld().sign.find(p.name());
      if (p.sign_certificate().empty() && sign != TheWorld().sign.end()) {
        p.set_sign_certificate(sign->second.cert_pem);
      }
    }
    // No authorization: the harness plays an admin who signed exactly this job, so that the
    // fuzzer reaches the rest of the prepare step (a signed one is left as the fuzzer made it).
    if (prepare->authorization().body().empty() &&
        !fedanon::testing::AuthorizePrepare(
             msg, TheWorld().admin,
             fedanon::testing::TaxonomyTexts(prepare->spec(), TheWorld().a.data_dir))
             .ok()) {
      return false;
    }
  }
  if (msg->has_sum_step() && msg->sum_step().has_sealed()) {
    // "auto": the purpose the party expects for this hop before any update (the request digest
    // over an empty update chain), so that the fuzzer gets past the binding.
    auto* step = msg->mutable_sum_step();
    if (step->sealed().purpose() == "auto") {
      step->mutable_sealed()->set_purpose(
          wire::SumHopPurpose(*step, msg->round(), wire::SumRequestDigest(step->request(), "")));
    }
    SealPayload(*msg, run, msg->mutable_sum_step()->mutable_sealed());
  }
  if (msg->has_sum_bin_check() && msg->sum_bin_check().has_input()) {
    SealPayload(*msg, run, msg->mutable_sum_bin_check()->mutable_input());
  }
  if (msg->has_union_step()) {
    auto* step = msg->mutable_union_step();
    std::string* ciphertext = step->mutable_list()->mutable_ciphertext();
    fedanon::v1::UnionList list;
    if (std::string_view(*ciphertext).starts_with(kPlain) &&
        list.ParseFromString(ciphertext->substr(kPlainSize))) {
      for (std::string& row : *list.mutable_rows()) {
        SealIfPlain(&row,
                    wire::UnionRowContext(msg->job_id(), run, msg->round(), step->recipient()));
      }
      *ciphertext = absl::StrCat(kPlain, list.SerializeAsString());
    }
    SealPayload(*msg, run, step->mutable_list());
  }
  if (msg->has_vertical()) {
    auto* step = msg->mutable_vertical();
    if (step->has_id_reencrypt()) {
      SealPayload(*msg, run, step->mutable_id_reencrypt()->mutable_list());
    }
    if (step->has_id_digests()) {
      SealPayload(*msg, run, step->mutable_id_digests()->mutable_digests());
    }
    if (step->has_deliver()) SealPayload(*msg, run, step->mutable_deliver()->mutable_instruction());
    for (auto& p : *step->mutable_assemble()->mutable_columns()) SealPayload(*msg, run, &p);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Checks

bool PlainFileName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string_view("/\0", 2)) == std::string_view::npos;
}

void CheckReply(const LeaderMessage& request, const PartyMessage& reply) {
  if (reply.request_id() != request.request_id()) FuzzFail("a reply to another request id");
  if (request.has_prepare() && reply.has_prepared() && !PlainFileName(request.job_id())) {
    FuzzFail("a job was prepared under an id that is not a plain file name");
  }
  const std::string request_bytes = request.SerializeAsString();
  const std::string reply_bytes = reply.SerializeAsString();
  for (int i = 0; i < 13; ++i) {
    const std::string id = Id(i);
    if (reply_bytes.find(id) != std::string::npos && request_bytes.find(id) == std::string::npos) {
      FuzzFail("a reply carries a record ID in the clear");
    }
  }
}

PartyMessage Expect(party::PartyAgent& agent, const LeaderMessage& msg, const char* what) {
  PartyMessage reply = agent.Handle(msg);
  if (reply.has_error()) {
    std::fprintf(stderr, "%s: %s\n", what, reply.error().message().c_str());
    FuzzFail("a setup step of the harness failed");
  }
  return reply;
}

std::unique_ptr<party::PartyAgent> NewAgent(const party::PartyAgentOptions& options) {
  // A fresh party: no run ids used, no releases counted (the run ledger lives in output_dir),
  // and an empty audit file (party/audit_log.h; it would grow with every input).
  std::error_code ec;
  std::filesystem::remove(options.output_dir + "/runs.ledger", ec);
  std::filesystem::remove(options.output_dir + "/" + kJob + ".audit.jsonl", ec);
  absl::StatusOr<std::unique_ptr<party::PartyAgent>> agent = party::PartyAgent::Create(options);
  if (!agent.ok()) FuzzFail("PartyAgent::Create failed");
  return *std::move(agent);
}

LeaderMessage Vertical(const fedanon::v1::VerticalStep& step) {
  LeaderMessage msg;
  msg.set_job_id(kJob);
  msg.set_round(1);
  *msg.mutable_vertical() = step;
  return msg;
}

constexpr uint32_t kBatchIds = 100;

// Private ID matching between a and b, driven as the leader drives it (leader/vertical_job.cc):
// each list in one batch, re-encrypted by the other party (the last hop: digests for the leader
// and the owner), the leader's intersection, every party's signed statement on it.
void MatchIds(party::PartyAgent& a, party::PartyAgent& b) {
  const World& w = TheWorld();
  party::PartyAgent* agents[] = {&a, &b};
  const char* names[] = {kA, kB};
  std::vector<std::string> lists(2);
  // Each party encrypts its own list before it re-encrypts another's (its key is drawn then).
  std::vector<SealedPayload> sent(2);
  for (int o = 0; o < 2; ++o) {
    fedanon::v1::VerticalStep step;
    step.mutable_id_encrypt()->set_next(names[1 - o]);
    step.mutable_id_encrypt()->set_batch_ids(kBatchIds);
    sent[o] = Expect(*agents[o], Vertical(step), "encrypts").vertical().ids().list();
  }
  for (int o = 0; o < 2; ++o) {
    fedanon::v1::VerticalStep step;
    auto* re = step.mutable_id_reencrypt();
    *re->mutable_list() = sent[o];
    re->set_origin(names[o]);
    re->set_batches(1);
    re->set_batch_ids(kBatchIds);
    const auto full =
        Expect(*agents[1 - o], Vertical(step), "re-encrypts").vertical().ids().for_parties();
    if (full.size() != 2) FuzzFail("digests for the leader and the owner");
    absl::StatusOr<std::string> bytes = crypto::OpenFrom(
        *w.keys.at(kLeader), w.keys.at(names[1 - o])->public_key(),
        crypto::SealContext{kJob, w.vertical_run, 1, names[1 - o], kLeader,
                            wire::IdDigestsPurpose(w.vertical_run, names[o], 0, 1)},
        full[0].ciphertext());
    fedanon::v1::IdList list;
    if (!bytes.ok() || !list.ParseFromString(*bytes)) FuzzFail("the leader's digests");
    lists[o] = list.digests();
    step.Clear();
    auto* d = step.mutable_id_digests();
    d->set_origin(names[o]);
    d->set_batches(1);
    d->set_batch_ids(kBatchIds);
    *d->mutable_digests() = full[1];
    Expect(*agents[o], Vertical(step), "own digests");
  }
  absl::StatusOr<std::string> common_digests = wire::CommonDigests(lists);
  if (!common_digests.ok()) FuzzFail("the intersection");
  fedanon::v1::VerticalStep align;
  for (int k = 0; k < 2; ++k) {
    fedanon::v1::VerticalStep step;
    step.mutable_id_common()->set_batches(1);
    step.mutable_id_common()->set_batch_ids(kBatchIds);
    step.mutable_id_common()->set_digests(*common_digests);
    auto* s = align.mutable_id_align()->add_statements();
    s->set_party(names[k]);
    *s->mutable_statement() =
        Expect(*agents[k], Vertical(step), "common ids").vertical().ids().common();
  }
  for (int k = 0; k < 2; ++k) Expect(*agents[k], Vertical(align), "alignment");
}

// The agent under test, in the chosen state; `peer` is hospital-b's agent in state 3.
struct Setup {
  std::unique_ptr<party::PartyAgent> agent;
  std::unique_ptr<party::PartyAgent> peer;
};

Setup MakeSetup(int state) {
  const World& w = TheWorld();
  Setup s;
  s.agent = NewAgent(w.a);
  if (state == 1) Expect(*s.agent, w.horizontal, "horizontal prepare");
  if (state >= 2) Expect(*s.agent, w.vertical, "vertical prepare");
  if (state == 3) {
    s.peer = NewAgent(w.b);
    Expect(*s.peer, w.vertical, "vertical prepare (b)");
    MatchIds(*s.agent, *s.peer);
  }
  return s;
}

// FEDANON_FUZZ_VERBOSE=1: print what each request got (to see how far a seed gets).
bool Verbose() {
  static const bool verbose = std::getenv("FEDANON_FUZZ_VERBOSE") != nullptr;
  return verbose;
}

void FuzzPartyAgent(FuzzInput in) {
  const int state = in.Byte() % 4;
  const Setup setup = MakeSetup(state);
  const std::string& run = state == 1 ? TheWorld().horizontal_run : TheWorld().vertical_run;
  for (size_t i = 0; i < kMaxMessages && !in.empty(); ++i) {
    const std::string_view piece = in.Piece();
    LeaderMessage msg;
    if (!msg.ParseFromArray(piece.data(), static_cast<int>(piece.size()))) continue;
    if (!Rewrite(&msg, run)) continue;
    const PartyMessage reply = setup.agent->Handle(msg);
    if (Verbose()) {
      std::fprintf(stderr, "request %d -> reply %d %s\n", static_cast<int>(msg.body_case()),
                   static_cast<int>(reply.body_case()), reply.error().message().c_str());
    }
    CheckReply(msg, reply);
  }
}

// ---------------------------------------------------------------------------------------------
// Seeds

// Appends `nodes` to a group key (protobuf 3.21's Add takes one value at a time).
void AddNodes(fedanon::v1::StatsRequest::GroupKey* key, std::initializer_list<int32_t> nodes) {
  for (int32_t n : nodes) key->add_nodes(n);
}

std::string Input(int state, const std::vector<LeaderMessage>& messages) {
  std::string out(1, static_cast<char>(state));
  for (const auto& m : messages) AppendPiece(&out, m.SerializeAsString());
  return out;
}

LeaderMessage Message(uint64_t request_id) {
  LeaderMessage msg;
  msg.set_request_id(request_id);
  msg.set_job_id(kJob);
  msg.set_round(1);
  return msg;
}

// The first hop of a secure sum over the root cut (with `updates` applied first), its length
// found by asking the party.
LeaderMessage FirstHop(const std::vector<fedanon::v1::StateUpdate>& updates) {
  LeaderMessage msg = Message(2);
  auto* step = msg.mutable_sum_step();
  for (const auto& u : updates) *step->add_updates() = u;
  AddNodes(step->mutable_request()->add_groups(), {0, 0, 0});
  step->mutable_request()->add_node_class_counts()->set_attribute(0);
  auto* hist = step->mutable_request()->add_rank_histograms();
  hist->set_attribute(2);
  step->set_chunks(1);
  step->set_next(kB);
  for (uint64_t words = 1; words < 2000; ++words) {
    step->set_total_words(words);
    step->set_chunk_words(words);
    if (MakeSetup(1).agent->Handle(msg).has_sum_step()) return msg;
  }
  FuzzFail("no length of the secure sum fits");
}

std::vector<std::pair<std::string, std::string>> HorizontalSeeds() {
  std::vector<std::pair<std::string, std::string>> seeds;
  LeaderMessage ping = Message(1);
  ping.mutable_ping()->set_sent_unix_nanos(42);
  seeds.emplace_back("ping", Input(0, {ping}));

  // A prepare as the leader sends it, certificates left for the harness to fill in.
  LeaderMessage prepare = TheWorld().horizontal;
  prepare.set_request_id(1);
  for (auto& p : *prepare.mutable_prepare()->mutable_participants()) p.clear_seal_certificate();
  seeds.emplace_back("prepare-horizontal", Input(0, {prepare}));
  LeaderMessage vprepare = TheWorld().vertical;
  for (auto& p : *vprepare.mutable_prepare()->mutable_participants()) p.clear_seal_certificate();
  seeds.emplace_back("prepare-vertical", Input(0, {vprepare}));

  const LeaderMessage first = FirstHop({});
  seeds.emplace_back("sum-first-hop", Input(1, {first}));
  // Then the next hop of the same sum arriving sealed from b, and the last hop (to the leader).
  LeaderMessage second = first;
  second.set_request_id(3);
  auto* step = second.mutable_sum_step();
  step->clear_updates();
  auto* sealed = step->mutable_sealed();
  sealed->set_sender(kB);
  sealed->set_receiver(kA);
  sealed->set_purpose("auto");  // see Rewrite
  sealed->set_ciphertext(absl::StrCat(
      kPlain, wire::EncodeWords(std::vector<uint64_t>(first.sum_step().total_words(), 7))));
  step->set_next("");
  seeds.emplace_back("sum-sealed-hop", Input(1, {first, second}));
  // The mask of the sum, once its one chunk went round.
  LeaderMessage unmask = Message(7);
  unmask.mutable_sum_unmask()->set_collect(0);
  seeds.emplace_back("sum-unmask", Input(1, {first, unmask}));
  // A step of a bin check (numeric_split: binned; this world's job is exact, so it is refused
  // by name after the parsing and the routing checks), with an input sealed by b.
  LeaderMessage bin_check = Message(8);
  bin_check.mutable_sum_bin_check()->set_collect(0);
  bin_check.mutable_sum_bin_check()->set_step(2);
  auto* bin_input = bin_check.mutable_sum_bin_check()->mutable_input();
  bin_input->set_sender(kB);
  bin_input->set_receiver(kA);
  bin_input->set_purpose(wire::SumBinCheckPurpose(0, 1, 1, "digest"));
  bin_input->set_ciphertext(absl::StrCat(kPlain, "FSC1"));
  seeds.emplace_back("sum-bin-check", Input(1, {first, bin_check}));

  // Specializations before the sum: the root of edu, then a split of age's root interval.
  fedanon::v1::StateUpdate specialize;
  specialize.set_sequence(0);
  specialize.mutable_instruction()->set_attribute(0);
  fedanon::v1::StateUpdate split;
  split.set_sequence(1);
  split.mutable_split()->set_attribute(2);
  split.mutable_split()->set_split(40);
  seeds.emplace_back("sum-after-updates", Input(1, {FirstHop({specialize, split})}));

  // The secure union: this party adds its rows for b; then, as recipient, opens a list of rows.
  LeaderMessage add = Message(4);
  add.mutable_union_step()->set_recipient(kB);
  add.mutable_union_step()->set_next(kB);
  seeds.emplace_back("union-add", Input(1, {add}));
  fedanon::v1::UnionList list;
  list.add_rows(absl::StrCat(kPlain, "Masters,ga,[30-40),x,no\n"));
  list.add_rows(absl::StrCat(kPlain, "ANY,*,[0-100),y,yes\n"));
  LeaderMessage deliver = Message(5);
  auto* u = deliver.mutable_union_step();
  u->set_recipient(kA);
  u->set_deliver(true);
  for (const char* h : {"edu", "g", "age", "other", "cls"}) u->add_header(h);
  u->mutable_list()->set_sender(kB);
  u->mutable_list()->set_receiver(kA);
  u->mutable_list()->set_purpose("union-list");
  u->mutable_list()->set_ciphertext(absl::StrCat(kPlain, list.SerializeAsString()));
  seeds.emplace_back("union-deliver", Input(1, {deliver}));

  LeaderMessage end = Message(6);
  end.mutable_end_job()->set_reason("done");
  seeds.emplace_back("end-job", Input(1, {end, first}));
  return seeds;
}

std::vector<std::pair<std::string, std::string>> VerticalSeeds() {
  std::vector<std::pair<std::string, std::string>> seeds;
  const std::string& run = TheWorld().vertical_run;
  fedanon::v1::VerticalStep step;
  step.mutable_id_encrypt()->set_next(kB);
  step.mutable_id_encrypt()->set_batch_ids(kBatchIds);
  const fedanon::v1::VerticalStep encrypt = step;
  seeds.emplace_back("vertical-id-encrypt", Input(2, {Vertical(step)}));

  // A re-encryption and the owner's digests whose payloads come as plaintext for the harness to
  // seal; the common ids and an alignment.
  fedanon::v1::IdList ids;
  ids.add_points(std::string(33, '\x02'));
  step.Clear();
  auto* re = step.mutable_id_reencrypt();
  re->mutable_list()->set_sender(kB);
  re->mutable_list()->set_receiver(kA);
  re->mutable_list()->set_purpose(wire::IdBatchPurpose(run, kB, 0, 0, 1));
  re->mutable_list()->set_ciphertext(absl::StrCat(kPlain, ids.SerializeAsString()));
  re->set_origin(kB);
  re->set_batches(1);
  re->set_batch_ids(kBatchIds);
  seeds.emplace_back("vertical-id-reencrypt", Input(2, {Vertical(encrypt), Vertical(step)}));
  fedanon::v1::IdList digests;
  digests.set_digests(std::string(32, '\x11'));
  step.Clear();
  auto* d = step.mutable_id_digests();
  d->set_origin(kA);
  d->set_batches(1);
  d->set_batch_ids(kBatchIds);
  d->mutable_digests()->set_sender(kB);
  d->mutable_digests()->set_receiver(kA);
  d->mutable_digests()->set_purpose(wire::IdDigestsPurpose(run, kA, 0, 1));
  d->mutable_digests()->set_ciphertext(absl::StrCat(kPlain, digests.SerializeAsString()));
  fedanon::v1::VerticalStep common_ids;
  common_ids.mutable_id_common()->set_batches(1);
  common_ids.mutable_id_common()->set_batch_ids(kBatchIds);
  common_ids.mutable_id_common()->set_digests(std::string(16, '\x11'));
  fedanon::v1::VerticalStep align;
  auto* statement = align.mutable_id_align()->add_statements();
  statement->set_party(kB);
  statement->mutable_statement()->set_count(1);
  seeds.emplace_back("vertical-id-common", Input(2, {Vertical(encrypt), Vertical(step),
                                                     Vertical(common_ids), Vertical(align)}));

  // After ID matching: a round where a proposes and wins, commits; and one where b's winner's
  // instruction is delivered (made by b here, opened with a's key and given as plaintext).
  step.Clear();
  step.mutable_propose();
  const LeaderMessage propose = Vertical(step);
  Setup s = MakeSetup(3);
  const PartyMessage proposal = s.agent->Handle(propose);
  const PartyMessage b_proposal = s.peer->Handle(propose);
  std::vector<fedanon::v1::SignedProposal> proposals(2);
  proposals[0].set_party(kA);
  *proposals[0].mutable_proposal() = proposal.vertical().proposal();
  proposals[1].set_party(kB);
  *proposals[1].mutable_proposal() = b_proposal.vertical().proposal();
  // The round's secure comparison, relayed as the leader relays it (a garbles, b evaluates); its
  // steps are seeds too.
  std::vector<fedanon::v1::SignedWinnerChoice> choices;
  std::vector<LeaderMessage> compare_steps;
  fedanon::v1::SealedPayload carried;
  for (uint32_t c = 1; c <= 6; ++c) {
    step.Clear();
    step.mutable_compare()->set_step(c);
    if (c <= 2) {
      for (const auto& p : proposals) *step.mutable_compare()->add_proposals() = p;
    }
    if (c > 1) *step.mutable_compare()->mutable_input() = carried;
    compare_steps.push_back(Vertical(step));
    const PartyMessage reply = (c % 2 == 1 ? *s.peer : *s.agent).Handle(compare_steps.back());
    if (!reply.has_vertical() || !reply.vertical().has_compared()) {
      FuzzFail("the winner's comparison did not run");
    }
    if (reply.vertical().compared().has_choice()) {
      choices.push_back(reply.vertical().compared().choice());
    }
    carried = reply.vertical().compared().sealed();
  }
  if (choices.size() != 2) FuzzFail("the winner's comparison named no winner");
  seeds.emplace_back("vertical-compare",
                     Input(3, {propose, compare_steps[1], compare_steps[3], compare_steps[5]}));
  fedanon::v1::VerticalStep winner;
  for (const auto& p : proposals) *winner.mutable_winner()->add_proposals() = p;
  for (const auto& c : choices) *winner.mutable_winner()->add_choices() = c;
  const bool a_won = choices[0].winner() == kA;
  const PartyMessage won = (a_won ? *s.agent : *s.peer).Handle(Vertical(winner));
  if (!won.has_vertical() || !won.vertical().instructions().has_won()) {
    FuzzFail("the round's winner revealed no candidate");
  }
  fedanon::v1::VerticalStep commit;
  *commit.mutable_commit()->mutable_candidate() = won.vertical().instructions().won().candidate();
  commit.mutable_commit()->set_accept(true);
  commit.mutable_commit()->mutable_winner()->set_party(a_won ? kA : kB);
  *commit.mutable_commit()->mutable_winner()->mutable_proposal() =
      won.vertical().instructions().won();
  for (const auto& c : choices) *commit.mutable_commit()->add_choices() = c;
  fedanon::v1::VerticalStep release;
  release.mutable_release()->set_recipient(kLeader);
  seeds.emplace_back("vertical-round-a",
                     Input(3, {propose, Vertical(winner), Vertical(commit), Vertical(release)}));

  // b's instruction, opened with a's key and given as plaintext (a judges nothing in this spec:
  // the delivery is a seed of a's refusal path, as before).
  if (!a_won) {
    for (const SealedPayload& p : won.vertical().instructions().for_parties()) {
      if (p.receiver() != kA) continue;
      absl::StatusOr<std::string> plain = crypto::OpenFrom(
          *TheWorld().a_keys, TheWorld().keys.at(kB)->public_key(),
          crypto::SealContext{kJob, run, 1, p.sender(), kA, p.purpose()}, p.ciphertext());
      if (!plain.ok()) FuzzFail("cannot open b's instruction");
      step.Clear();
      *step.mutable_deliver()->mutable_instruction() = p;
      step.mutable_deliver()->mutable_instruction()->set_ciphertext(absl::StrCat(kPlain, *plain));
      seeds.emplace_back("vertical-deliver", Input(3, {propose, Vertical(step), Vertical(commit)}));
    }
  }

  // Assembling the joined table from released columns (as plaintext for the harness to seal).
  fedanon::v1::VerticalColumns columns;
  columns.add_names("Sex");
  columns.add_names("Class");
  for (const char* cell : {"Male", "Y", "ANY_Sex", "N"}) columns.add_cells(cell);
  step.Clear();
  auto* assemble = step.mutable_assemble();
  auto* sealed = assemble->add_columns();
  sealed->set_sender(kB);
  sealed->set_receiver(kA);
  sealed->set_purpose(wire::ReleasePurpose(kA));
  sealed->set_ciphertext(absl::StrCat(kPlain, columns.SerializeAsString()));
  assemble->add_header("Class");
  assemble->add_header("Sex");
  seeds.emplace_back("vertical-assemble", Input(3, {Vertical(step)}));
  return seeds;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> FuzzSeeds() {
  std::vector<std::pair<std::string, std::string>> seeds = HorizontalSeeds();
  for (auto& seed : VerticalSeeds()) seeds.push_back(std::move(seed));
  return seeds;
}

}  // namespace fedanon::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fedanon::fuzz::FuzzPartyAgent(fedanon::fuzz::FuzzInput(data, size));
  return 0;
}
