// A leader that mutates every field (issue "Every field a party acts on is bound to the signed
// job"): the real Leader drives each job kind against honest in-process parties, and between the
// leader and the parties one field of one message is changed per run — to another party's name,
// the leader's name, the empty string, a number one higher or zero, a flipped byte, a negated
// flag, another enum value, a dropped repeated element or a cleared sub-message. The message
// mutated is the first of its kind to each party (the leader calls parties in parallel; the order
// per party is the same in every run) and, for a kind sent to a party more than once, also the
// last one, in every field whose value differs from the first instance's (rounds, collects,
// chunks, updates, instructions, ciphertexts: what a later round carries that the first does
// not; a field equal in both is checked by the same code with the same value). Every mutated run
// must end in one of two ways:
//   - refused by name: a party answers with a named error (not Internal/Unknown) and the job fails;
//   - unchanged: the job ends as the honest run did, with the same release and every role's view
//     the honest run's (or, counted apart, a view reduced: a party opened less, nothing else).
// The third way the issue allows (accepted as a choice the protocol table gives the leader, with
// views the table allows) is not accepted here: no single-field mutation needs it.
// In every case no party may open anything the honest run did not show it (same sender, purpose
// and content), and the recipient's release is the honest one or none. Payloads are keyed by
// purpose with the run and job ids taken out. Every run of a kind uses the same identities and
// restarts the parties' randomness from the kind's seed (tests/support/deterministic_random.h),
// and the test asserts that two honest runs show every party the same bytes; only if they did
// not would a payload be compared by size (and the test fail on that assertion).
// The test prints, per message kind, how the mutations ended (FEDANON_MUTATION_VERBOSE=1: each
// mutation with its outcome and the first refusal).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/base/file_io.h"
#include "crypto/hash.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/reflection.h"
#include "google/protobuf/util/message_differencer.h"
#include "party/testing/observing_party.h"
#include "tests/federation/example_a.h"
#include "tests/federation/federation_test_util.h"
#include "tests/support/deterministic_random.h"

namespace fedanon::testing {
namespace {

using fedanon::v1::LeaderMessage;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::util::MessageDifferencer;

// ---------------------------------------------------------------------------------------------
// Job kinds

struct JobKind {
  std::string name;
  std::string spec_yaml;
  std::map<std::string, std::string> taxonomies;          // file -> content
  std::vector<std::map<std::string, std::string>> files;  // per party
  std::string recipient;                                  // "" = the leader
};

JobKind Horizontal(const std::string& name, int parties, bool local, const std::string& recipient,
                   Scenario s = ExampleA()) {
  if (local) s.spec_yaml += "recoding: local\n";
  if (parties == 2) s.split = {{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}};
  return {name, s.spec_yaml, s.taxonomies, PartyFiles(s), recipient};
}

// A vertical table over `parties` parties: every party holds id and cls, and its own QIDs.
JobKind Vertical(const std::string& name, int parties, const std::string& extra_spec,
                 bool sensitive_at_last) {
  JobKind k;
  k.name = name;
  std::string attrs = "  - {name: id, role: id}\n  - {name: cls, role: class, values: [yes, no]}\n";
  std::vector<std::vector<std::string>> columns(parties);
  std::string tax;
  for (int v = 0; v < 6; ++v) absl::StrAppend(&tax, "v", v, ";m", v / 2, ";ANY\n");
  k.taxonomies["q0.csv"] = tax;
  for (int p = 0; p < parties; ++p) {
    const std::string party = absl::StrCat("hospital-", std::string(1, 'a' + p));
    const std::string q = absl::StrCat("q", p);
    columns[p].push_back(q);
    if (p == 0) {
      absl::StrAppend(&attrs, "  - {name: q0, role: qid, taxonomy: q0.csv, party: ", party, "}\n");
    } else {
      absl::StrAppend(&attrs, "  - {name: ", q, ", role: qid, values: [", q, "a, ", q, "b, ", q,
                      "c], party: ", party, "}\n");
    }
  }
  if (sensitive_at_last) {
    absl::StrAppend(&attrs, "  - {name: s, role: sensitive, values: [d0, d1, d2], party: ",
                    absl::StrCat("hospital-", std::string(1, 'a' + parties - 1)), "}\n");
    columns[parties - 1].push_back("s");
  }
  k.spec_yaml = absl::StrCat("name: ", name, "\nattributes:\n", attrs, extra_spec,
                             "partitioning: vertical\n");
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&state](uint64_t n) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state % n;
  };
  std::vector<std::vector<std::string>> rows;  // id, cls, q0..q(p-1)[, s]
  for (int r = 0; r < 48; ++r) {
    std::vector<std::string> row = {absl::StrCat("person-", r), ""};
    const uint64_t v0 = next(6);
    row.push_back(absl::StrCat("v", v0));
    for (int p = 1; p < parties; ++p) {
      row.push_back(absl::StrCat("q", p, std::string(1, static_cast<char>('a' + next(3)))));
    }
    if (sensitive_at_last) row.push_back(absl::StrCat("d", v0 < 2 ? 0 : next(3)));
    row[1] = (v0 >= 3) != (next(5) == 0) ? "yes" : "no";
    rows.push_back(row);
  }
  for (int p = 0; p < parties; ++p) {
    std::string csv = "id,cls";
    for (const auto& c : columns[p]) absl::StrAppend(&csv, ",", c);
    csv += "\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& row = rows[(i * 7 + static_cast<size_t>(p) * 5) % rows.size()];  // own order
      csv += row[0] + "," + row[1] + "," + row[2 + p];
      if (sensitive_at_last && p == parties - 1) csv += "," + row.back();
      csv += "\n";
    }
    // Records only this party has: outside the all-party intersection.
    for (int e = 0; e < 3; ++e) {
      const auto& row = rows[static_cast<size_t>(e + p)];
      absl::StrAppend(&csv, "person-only-", p, "-", e, ",", row[1], ",", row[2 + p]);
      if (sensitive_at_last && p == parties - 1) csv += "," + row.back();
      csv += "\n";
    }
    std::map<std::string, std::string> f = k.taxonomies;
    f["table.csv"] = csv;
    k.files.push_back(std::move(f));
  }
  return k;
}

// ---------------------------------------------------------------------------------------------
// Mutations

// A field of a message instance, as a path from the LeaderMessage: (field, index in a repeated
// field or -1) per level.
struct PathStep {
  const FieldDescriptor* field;
  int index;
};

struct Mutation {
  std::string kind;   // the message kind (LeaderMessage body, with the vertical step's name)
  std::string party;  // the `instance`-th message of that kind to this party is mutated
  std::vector<PathStep> path;
  enum class Op { kSetString, kFlipByte, kPlusOne, kZero, kNegate, kNextEnum, kDrop, kClear } op;
  std::string value;  // for kSetString
  int instance = 0;   // 0: the first message of the kind to the party; n: the (n+1)-th

  std::string Describe() const {
    std::string p;
    for (const PathStep& s : path) {
      if (!p.empty()) p += ".";
      p += s.field->name();
      if (s.index >= 0) absl::StrAppend(&p, "[", s.index, "]");
    }
    static const char* kOps[] = {"=",      "flip byte", "+1",   "=0",
                                 "negate", "next enum", "drop", "clear"};
    return absl::StrCat(kind, instance == 0 ? "" : absl::StrCat(" #", instance + 1), " to ", party,
                        ": ", p, " ", kOps[static_cast<int>(op)],
                        op == Op::kSetString ? absl::StrCat(" '", value, "'") : "");
  }
};

std::string KindOf(const LeaderMessage& m) {
  const auto* body = m.GetDescriptor()->FindOneofByName("body");
  const FieldDescriptor* set = m.GetReflection()->GetOneofFieldDescriptor(m, body);
  if (set == nullptr) return "none";
  std::string kind = set->name();
  if (m.has_vertical()) {
    const Message& v = m.vertical();
    const auto* oneof = v.GetDescriptor()->oneof_decl(0);
    if (const FieldDescriptor* step = v.GetReflection()->GetOneofFieldDescriptor(v, oneof)) {
      kind += "." + step->name();
    }
  }
  if (m.has_final_check()) {
    absl::StrAppend(&kind, ".phase", static_cast<int>(m.final_check().phase()));
  }
  return kind;
}

// Applies `mu` to `m` (below); false when the path does not exist in this instance.
bool Apply(const Mutation& mu, Message* m);

// Every mutation of every set field of `m` (an instance of `kind`), depth first.
void Enumerate(const Message& m, std::vector<PathStep>& path, const std::string& kind,
               const std::string& party, const std::vector<std::string>& names,
               std::vector<Mutation>* out) {
  const Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    const int count = f->is_repeated() ? r->FieldSize(m, f) : 1;
    if (f->is_map()) continue;  // maps: mutated through the repeated entries' drop below
    auto add = [&](int index, Mutation::Op op, std::string value = "") {
      Mutation mu{kind, party, path, op, std::move(value), 0};
      mu.path.push_back({f, index});
      out->push_back(std::move(mu));
    };
    if (f->is_repeated() && count > 0) add(count - 1, Mutation::Op::kDrop);
    const int index = f->is_repeated() ? 0 : -1;
    if (f->is_repeated() && count == 0) continue;
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING: {
        const std::string v = f->is_repeated() ? r->GetRepeatedString(m, f, 0) : r->GetString(m, f);
        if (f->type() == FieldDescriptor::TYPE_BYTES && !v.empty() &&
            std::find(names.begin(), names.end(), v) == names.end()) {
          add(index, Mutation::Op::kFlipByte);
          break;
        }
        // Another party's name (the next one after this value), the leader's name, nothing.
        auto it = std::find(names.begin(), names.end(), v);
        const std::string other =
            it == names.end() || std::next(it) == names.end() ? names.front() : *std::next(it);
        if (other != v) add(index, Mutation::Op::kSetString, other);
        if (v != "leader") add(index, Mutation::Op::kSetString, "leader");
        if (!v.empty()) add(index, Mutation::Op::kSetString, "");
        break;
      }
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_INT64:
      case FieldDescriptor::CPPTYPE_UINT32:
      case FieldDescriptor::CPPTYPE_UINT64:
      case FieldDescriptor::CPPTYPE_DOUBLE:
      case FieldDescriptor::CPPTYPE_FLOAT:
        add(index, Mutation::Op::kPlusOne);
        {  // "=0" only where it changes something (a repeated element or a field with presence)
          std::unique_ptr<Message> zeroed(m.New());
          zeroed->CopyFrom(m);
          Apply({kind, party, {{f, index}}, Mutation::Op::kZero, "", 0}, zeroed.get());
          if (!MessageDifferencer::Equals(*zeroed, m)) add(index, Mutation::Op::kZero);
        }
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        add(index, Mutation::Op::kNegate);
        break;
      case FieldDescriptor::CPPTYPE_ENUM:
        add(index, Mutation::Op::kNextEnum);
        break;
      case FieldDescriptor::CPPTYPE_MESSAGE: {
        if (!f->is_repeated()) add(-1, Mutation::Op::kClear);
        const Message& sub =
            f->is_repeated() ? r->GetRepeatedMessage(m, f, 0) : r->GetMessage(m, f);
        // The spec is bound by its digest as a whole: a few of its fields suffice.
        if (sub.GetDescriptor()->name() == "JobSpec") break;
        path.push_back({f, index});
        Enumerate(sub, path, kind, party, names, out);
        path.pop_back();
        break;
      }
    }
  }
}

// One value of field `f` of `m` (element `index` of a repeated field, or the field), as text.
std::string FieldText(const Message& m, const FieldDescriptor* f, int index) {
  const Reflection* r = m.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      return rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return absl::StrCat(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return absl::StrCat(rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? "true" : "false";
    case FieldDescriptor::CPPTYPE_ENUM:
      return absl::StrCat(rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f));
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return (rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f)).SerializeAsString();
  }
  return "";
}

// The value at `path` in `root` (for a repeated field: its size and the element at the last
// step's index), as text; nullopt when the path does not exist in `root`.
std::optional<std::string> ValueAt(const Message& root, const std::vector<PathStep>& path) {
  const Message* m = &root;
  for (size_t i = 0; i < path.size(); ++i) {
    const PathStep& s = path[i];
    const Reflection* r = m->GetReflection();
    if (s.field->is_repeated() ? r->FieldSize(*m, s.field) <= std::max(s.index, 0)
                               : !r->HasField(*m, s.field)) {
      return std::nullopt;
    }
    if (i + 1 == path.size()) {
      if (!s.field->is_repeated()) return FieldText(*m, s.field, -1);
      return absl::StrCat(r->FieldSize(*m, s.field), ":", FieldText(*m, s.field, s.index));
    }
    m = s.index >= 0 ? &r->GetRepeatedMessage(*m, s.field, s.index) : &r->GetMessage(*m, s.field);
  }
  return std::nullopt;
}

// Applies `mu` to `m`; false when the path does not exist in this instance.
bool Apply(const Mutation& mu, Message* m) {
  for (size_t i = 0; i + 1 < mu.path.size(); ++i) {
    const PathStep& s = mu.path[i];
    const Reflection* r = m->GetReflection();
    if (s.index >= 0) {
      if (r->FieldSize(*m, s.field) <= s.index) return false;
      m = r->MutableRepeatedMessage(m, s.field, s.index);
    } else {
      if (!r->HasField(*m, s.field)) return false;
      m = r->MutableMessage(m, s.field);
    }
  }
  const PathStep& s = mu.path.back();
  const FieldDescriptor* f = s.field;
  const Reflection* r = m->GetReflection();
  if (f->is_repeated() ? r->FieldSize(*m, f) <= std::max(s.index, 0) : !r->HasField(*m, f)) {
    return false;
  }
  const bool rep = f->is_repeated();
  const int i = s.index;
  switch (mu.op) {
    case Mutation::Op::kDrop:
      r->RemoveLast(m, f);
      return true;
    case Mutation::Op::kClear:
      r->ClearField(m, f);
      return true;
    case Mutation::Op::kSetString:
      rep ? r->SetRepeatedString(m, f, i, mu.value) : r->SetString(m, f, mu.value);
      return true;
    case Mutation::Op::kFlipByte: {
      std::string v = rep ? r->GetRepeatedString(*m, f, i) : r->GetString(*m, f);
      if (v.empty()) return false;
      v.back() = static_cast<char>(v.back() ^ 0x01);
      rep ? r->SetRepeatedString(m, f, i, v) : r->SetString(m, f, v);
      return true;
    }
    case Mutation::Op::kNegate:
      rep ? r->SetRepeatedBool(m, f, i, !r->GetRepeatedBool(*m, f, i))
          : r->SetBool(m, f, !r->GetBool(*m, f));
      return true;
    case Mutation::Op::kNextEnum: {
      const auto* e = rep ? r->GetRepeatedEnum(*m, f, i) : r->GetEnum(*m, f);
      const auto* type = e->type();
      const auto* next = type->value((e->index() + 1) % type->value_count());
      rep ? r->SetRepeatedEnum(m, f, i, next) : r->SetEnum(m, f, next);
      return true;
    }
    case Mutation::Op::kPlusOne:
    case Mutation::Op::kZero: {
      const bool zero = mu.op == Mutation::Op::kZero;
#define FEDANON_NUMERIC(CPP, Get, Set, GetRep, SetRep)           \
  case FieldDescriptor::CPP:                                     \
    rep ? r->SetRep(m, f, i, zero ? 0 : r->GetRep(*m, f, i) + 1) \
        : r->Set(m, f, zero ? 0 : r->Get(*m, f) + 1);            \
    return true;
      switch (f->cpp_type()) {
        FEDANON_NUMERIC(CPPTYPE_INT32, GetInt32, SetInt32, GetRepeatedInt32, SetRepeatedInt32)
        FEDANON_NUMERIC(CPPTYPE_INT64, GetInt64, SetInt64, GetRepeatedInt64, SetRepeatedInt64)
        FEDANON_NUMERIC(CPPTYPE_UINT32, GetUInt32, SetUInt32, GetRepeatedUInt32, SetRepeatedUInt32)
        FEDANON_NUMERIC(CPPTYPE_UINT64, GetUInt64, SetUInt64, GetRepeatedUInt64, SetRepeatedUInt64)
        FEDANON_NUMERIC(CPPTYPE_DOUBLE, GetDouble, SetDouble, GetRepeatedDouble, SetRepeatedDouble)
        FEDANON_NUMERIC(CPPTYPE_FLOAT, GetFloat, SetFloat, GetRepeatedFloat, SetRepeatedFloat)
        default:
          return false;
      }
#undef FEDANON_NUMERIC
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// One run of a job kind, with or without a mutation

struct PartyRefusal {
  std::string party;
  int code = 0;
  std::string message;
};

struct RunResult {
  fedanon::v1::JobState state = fedanon::v1::JOB_STATE_UNSPECIFIED;
  std::string failure;
  bool applied = false;  // the mutation's path existed in the instance and was changed
  std::vector<PartyRefusal> refusals;  // party error replies, in order
  // Receiver -> (sender, purpose) -> the contents opened (SHA-256), in order.
  std::map<std::string, std::map<std::string, std::multiset<std::string>>> opened;
  // Receiver -> (sender, purpose) -> sizes opened.
  std::map<std::string, std::map<std::string, std::multiset<size_t>>> opened_sizes;
  std::vector<std::string> release;        // the recipient's released rows, sorted
  std::vector<std::string> release_lines;  // the same, as the CSV lines the recipient wrote
  // Honest runs only: receiver -> (sender|purpose, plaintext) of everything it opened.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> plaintexts;
  // The first message of every kind to every party (for enumerating the mutations): the leader
  // calls parties in parallel, so only the order per party is the same in every run.
  std::map<std::pair<std::string, std::string>, LeaderMessage> first;
  // The last message of every kind to every party and how many of that kind it received.
  std::map<std::pair<std::string, std::string>, LeaderMessage> last;
  std::map<std::pair<std::string, std::string>, int> count;
};

// A purpose with the run id (32 hex digits) and job id in it names the same payload in every run.
std::string WithoutRunAndJob(std::string purpose) {
  static const std::regex kRun("[0-9a-f]{32}");
  static const std::regex kJob("job-[0-9a-f]{12}");
  return std::regex_replace(std::regex_replace(purpose, kRun, "<run>"), kJob, "<job>");
}

// One run of `kind` with `identities` (the same in every run of a kind) and the parties'
// randomness restarted from the kind's seed, so that an unmutated run repeats the last one byte
// for byte at every party.
RunResult RunJob(const JobKind& kind, const FederationIdentities& identities,
                 const Mutation* mutation, const std::string& dir_name) {
  RunResult out;
  ResetDeterministicRandom(kind.name);
  auto mu = std::make_shared<absl::Mutex>();
  auto fed = InProcessFederation::Create(
      dir_name, kind.files,
      [&out, mu, keep_plaintexts = mutation == nullptr](party::PartyAgentOptions& o) {
        o.observer = party_testing::ObservingParty(
            [&out, mu, keep_plaintexts, receiver = o.name](
                const std::string& sender, const std::string& purpose, const std::string& plain) {
              absl::MutexLock lock(mu.get());
              const std::string key = sender + "|" + WithoutRunAndJob(purpose);
              out.opened[receiver][key].insert(crypto::ToHex(crypto::Sha256(plain)));
              out.opened_sizes[receiver][key].insert(plain.size());
              if (keep_plaintexts) out.plaintexts[receiver].emplace_back(key, plain);
            });
      },
      [](leader::LeaderOptions& lo) { lo.round_timeout = absl::Seconds(10); }, &identities);
  EXPECT_TRUE(fed.ok()) << fed.status();
  if (!fed.ok()) return out;
  std::map<std::pair<std::string, std::string>, int> sent;  // (kind, party) -> sent so far
  (*fed)->channel.set_tamper([&](const std::string& party, LeaderMessage* m) {
    // The party handles the request on this thread, right after this hook: its draws come
    // from its own stream until the observer below (after its reply) clears it.
    SetRandomParty(party);
    const std::string k = KindOf(*m);
    const int instance = sent[{k, party}]++;
    if (mutation == nullptr) {
      if (instance == 0) out.first[{k, party}] = *m;
      out.last[{k, party}] = *m;
      out.count[{k, party}] = instance + 1;
      return;
    }
    if (k == mutation->kind && party == mutation->party && instance == mutation->instance) {
      out.applied = Apply(*mutation, m);
    }
  });
  (*fed)->channel.set_observer([&out, mu](const std::string& party, const std::string& bytes) {
    SetRandomParty("");
    fedanon::v1::PartyMessage reply;
    if (!reply.ParseFromString(bytes) || !reply.has_error()) return;
    absl::MutexLock lock(mu.get());
    out.refusals.push_back({party, reply.error().code(), reply.error().message()});
  });
  Scenario scenario;
  scenario.spec_yaml = kind.spec_yaml;
  scenario.taxonomies = kind.taxonomies;
  auto req = MakeRequest(scenario, (*fed)->names);
  EXPECT_TRUE(req.ok()) << req.status();
  if (!req.ok()) return out;
  req->set_recipient(kind.recipient);
  auto info = (*fed)->Submit(*req);
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return out;
  const fedanon::v1::JobInfo done = (*fed)->Wait(info->job_id());
  out.state = done.state();
  out.failure = done.failure_reason();
  if (done.state() == fedanon::v1::JOB_STATE_DONE) {
    // The recipient's view of the release: the leader's result, or the party's output file.
    auto csv = kind.recipient.empty() ? (*fed)->leader->Result(info->job_id())
                                      : base::ReadFile((*fed)->dir + "/" + kind.recipient +
                                                       "/output/" + info->job_id() + ".csv");
    if (csv.ok()) {
      auto t = ParseCsvText(*csv, (*fed)->dir);
      if (t.ok()) out.release = RowsByColumns(*t, t->header);
      std::vector<std::string> lines = absl::StrSplit(*csv, '\n', absl::SkipEmpty());
      if (!lines.empty()) lines.erase(lines.begin());  // the header
      out.release_lines = std::move(lines);
    }
  }
  std::error_code ec;
  std::filesystem::remove_all((*fed)->dir, ec);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Judging a mutated run against the honest one

enum class Outcome {
  kRefused,
  kUnchanged,
  kFewerViews,  // the same release; a party opened less than in the honest run, nothing else
  kNotApplied,
  kViolation
};

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kRefused:
      return "refused by name";
    case Outcome::kUnchanged:
      return "unchanged";
    case Outcome::kFewerViews:
      return "same release, a party opened less";
    case Outcome::kNotApplied:
      return "not applicable";
    case Outcome::kViolation:
      return "VIOLATION";
  }
  return "?";
}

struct Honest {
  RunResult run;
  // (receiver, sender|purpose) whose contents differ between two honest runs (none with
  // deterministic parties, asserted): such a payload would be compared by size only.
  std::set<std::pair<std::string, std::string>> random;
};

// Every view of `got` is within the honest run's: for each receiver and (sender, purpose), the
// contents opened are among the honest ones (by size for the random purposes). Returns "" or what
// is outside.
std::string ViewsOutside(const Honest& honest, const RunResult& got) {
  for (const auto& [receiver, by_key] : got.opened) {
    for (const auto& [key, contents] : by_key) {
      const auto r = honest.run.opened.find(receiver);
      if (r == honest.run.opened.end() || !r->second.contains(key)) {
        return absl::StrCat(receiver, " opened '", key,
                            "', which it never opens in the honest run");
      }
      if (honest.random.contains({receiver, key})) {
        const auto& honest_sizes = honest.run.opened_sizes.at(receiver).at(key);
        for (size_t size : got.opened_sizes.at(receiver).at(key)) {
          if (!honest_sizes.contains(size)) {
            return absl::StrCat(receiver, " opened a '", key, "' of ", size,
                                " bytes, a size the honest run never shows it");
          }
        }
        continue;
      }
      for (const std::string& c : contents) {
        if (!r->second.at(key).contains(c)) {
          return absl::StrCat(receiver, " opened a '", key, "' the honest run never shows it");
        }
      }
    }
  }
  return "";
}

bool SameViews(const Honest& honest, const RunResult& got) {
  if (got.opened.size() != honest.run.opened.size()) return false;
  for (const auto& [receiver, by_key] : honest.run.opened) {
    const auto g = got.opened.find(receiver);
    if (g == got.opened.end() || g->second.size() != by_key.size()) return false;
    for (const auto& [key, contents] : by_key) {
      const auto c = g->second.find(key);
      if (c == g->second.end()) return false;
      if (honest.random.contains({receiver, key})) {
        if (got.opened_sizes.at(receiver).at(key) != honest.run.opened_sizes.at(receiver).at(key)) {
          return false;
        }
      } else if (c->second != contents) {
        return false;
      }
    }
  }
  return true;
}

// A refusal by name: a party's error with a code that says what kind of fault, and a message.
bool NamedRefusal(const RunResult& got) {
  for (const PartyRefusal& r : got.refusals) {
    const auto code = static_cast<absl::StatusCode>(r.code);
    if (code != absl::StatusCode::kInternal && code != absl::StatusCode::kUnknown &&
        code != absl::StatusCode::kOk && !r.message.empty()) {
      return true;
    }
  }
  return false;
}

Outcome Judge(const Honest& honest, const RunResult& got, std::string* why) {
  if (!got.applied) return Outcome::kNotApplied;
  if (std::string outside = ViewsOutside(honest, got); !outside.empty()) {
    *why = outside;
    return Outcome::kViolation;
  }
  if (got.state == fedanon::v1::JOB_STATE_DONE && got.release != honest.run.release) {
    *why = "the job released another table than the honest run";
    return Outcome::kViolation;
  }
  if (got.state == fedanon::v1::JOB_STATE_DONE) {
    if (SameViews(honest, got)) return Outcome::kUnchanged;
    // Every view within the honest run's (checked above) and the same release: a message the
    // mutation emptied or dropped carried nothing a party needed.
    *why = "a party opened less than in the honest run";
    return Outcome::kFewerViews;
  }
  if (NamedRefusal(got)) return Outcome::kRefused;
  // A failed job without a party's named refusal: the leader gave up on its own (its own checks
  // of a reply the mutation changed). Acceptable only when nobody saw anything new (checked
  // above) — counted as unchanged views, with the failure printed.
  *why = absl::StrCat("failed without a party's named refusal: ", got.failure,
                      got.refusals.empty()
                          ? ""
                          : absl::StrCat(" (party said: ", got.refusals.front().message, ")"));
  return Outcome::kViolation;
}

// ---------------------------------------------------------------------------------------------
// What every party opens in the honest run

// The share of 64-bit words of `bytes` below 2^40: near 0 for a vector under a uniform mask, near
// 1 for counts in the clear.
double SmallWordShare(const std::string& bytes) {
  const size_t words = bytes.size() / 8;
  size_t small = 0;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w = 0;
    for (int b = 7; b >= 0; --b) w = (w << 8) | static_cast<uint8_t>(bytes[i * 8 + b]);
    if (w < (uint64_t{1} << 40)) ++small;
  }
  return words == 0 ? 0 : static_cast<double>(small) / static_cast<double>(words);
}

// Every party, in the honest run of `kind`: the vectors it opens from another party in a secure
// sum or a final-check hop are masked (it never opens another party's counts in the clear); no raw
// record id reaches it (ID matching works on hashed points; "person-only-..." ids are outside the
// intersection); and no party but the signed recipient opens a released row. Returns how many
// payloads each check looked at.
std::map<std::string, int> ExpectWhatEveryPartyOpens(const JobKind& kind, const RunResult& honest) {
  std::map<std::string, int> looked;
  for (const auto& [receiver, opened] : honest.plaintexts) {
    for (const auto& [key, plain] : opened) {
      const std::string purpose = key.substr(key.find('|') + 1);
      // (The final check's total, which the first party hands every party, is the sum over all
      // parties, which the protocol shows every party: docs/threat-model.md, "The final check".)
      if (absl::StartsWith(purpose, "secure-sum/") ||
          absl::StartsWith(purpose, "final-check/hop")) {
        if (plain.size() >= 8 * 4) {
          ++looked["masked vectors"];
          EXPECT_LT(SmallWordShare(plain), 0.25)
              << receiver << " opened a '" << key << "' that looks like counts in the clear";
        }
      }
      ++looked["payloads searched for raw ids"];
      EXPECT_FALSE(absl::StrContains(plain, "person-"))
          << receiver << " opened a raw record id in '" << key << "'";
      if (receiver == kind.recipient) continue;
      for (const std::string& line : honest.release_lines) {
        ++looked["released rows searched at non-recipients"];
        EXPECT_FALSE(absl::StrContains(plain, line))
            << receiver << ", not the recipient, opened the released row '" << line << "' in '"
            << key << "'";
      }
    }
  }
  return looked;
}

TEST(MutatingLeaderChecks, TheMaskCheckTellsCountsFromMaskedWords) {
  std::string counts, masked;
  uint64_t state = 7;
  for (uint64_t i = 0; i < 64; ++i) {
    for (int b = 0; b < 8; ++b) counts += static_cast<char>(b == 0 ? i % 50 : 0);
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    for (int b = 0; b < 8; ++b) masked += static_cast<char>((state >> (8 * b)) & 0xff);
  }
  EXPECT_GT(SmallWordShare(counts), 0.99);
  EXPECT_LT(SmallWordShare(masked), 0.05);
}

void MutateEveryField(const JobKind& kind) {
  absl::StatusOr<FederationIdentities> identities = FederationIdentities::Issue(kind.files.size());
  ASSERT_TRUE(identities.ok()) << identities.status();
  Honest honest;
  honest.run = RunJob(kind, *identities, nullptr, kind.name + "_honest");
  ASSERT_EQ(honest.run.state, fedanon::v1::JOB_STATE_DONE) << honest.run.failure;
  ASSERT_FALSE(honest.run.release.empty());
  const std::map<std::string, int> looked = ExpectWhatEveryPartyOpens(kind, honest.run);
  if (kind.spec_yaml.find("partitioning: horizontal") != std::string::npos) {
    EXPECT_GT(looked.count("masked vectors") ? looked.at("masked vectors") : 0, 0)
        << "no party opened a sum vector: the mask check looked at nothing";
  }
  if (!kind.recipient.empty()) {
    // The search finds released rows where they are: the recipient opened them.
    bool found = false;
    for (const auto& [key, plain] : honest.run.plaintexts.at(kind.recipient)) {
      for (const std::string& line : honest.run.release_lines) {
        found = found || absl::StrContains(plain, line);
      }
    }
    EXPECT_TRUE(found) << "the recipient opened no released row: the row search finds nothing";
  }
  const RunResult again = RunJob(kind, *identities, nullptr, kind.name + "_honest2");
  ASSERT_EQ(again.state, fedanon::v1::JOB_STATE_DONE) << again.failure;
  ASSERT_EQ(again.release, honest.run.release) << "two honest runs released different tables";
  for (const auto& [receiver, by_key] : honest.run.opened) {
    for (const auto& [key, contents] : by_key) {
      const auto r = again.opened.find(receiver);
      if (r == again.opened.end() || !r->second.contains(key) || r->second.at(key) != contents) {
        honest.random.insert({receiver, key});
      }
    }
  }
  // With the same identities and deterministic randomness, two honest runs show every party the
  // same bytes: every view is then compared by content.
  std::vector<std::string> random_views;
  for (const auto& [receiver, key] : honest.random) random_views.push_back(receiver + ": " + key);
  EXPECT_TRUE(random_views.empty())
      << "two honest runs showed these parties different contents (compared by size only):\n"
      << absl::StrJoin(random_views, "\n");

  std::vector<std::string> names;
  for (size_t p = 0; p < kind.files.size(); ++p) {
    names.push_back(absl::StrCat("hospital-", std::string(1, static_cast<char>('a' + p))));
  }
  std::vector<Mutation> mutations;
  for (const auto& [kind_and_party, message] : honest.run.first) {
    std::vector<PathStep> path;
    Enumerate(message, path, kind_and_party.first, kind_and_party.second, names, &mutations);
  }
  // The last instance of a kind a party receives more than once: the fields whose value differs
  // from the first instance's.
  int later = 0;
  for (const auto& [kind_and_party, message] : honest.run.last) {
    const int count = honest.run.count.at(kind_and_party);
    if (count < 2) continue;
    std::vector<PathStep> path;
    std::vector<Mutation> of_last;
    Enumerate(message, path, kind_and_party.first, kind_and_party.second, names, &of_last);
    const LeaderMessage& first = honest.run.first.at(kind_and_party);
    for (Mutation& mu : of_last) {
      if (ValueAt(first, mu.path) == ValueAt(message, mu.path)) continue;
      mu.instance = count - 1;
      mutations.push_back(std::move(mu));
      ++later;
    }
  }

  // FEDANON_MUTATION_VERBOSE=1: every mutation with its outcome and the first refusal.
  const bool verbose = std::getenv("FEDANON_MUTATION_VERBOSE") != nullptr;
  // kind -> outcome -> count
  std::map<std::string, std::map<std::string, int>> table;
  std::vector<std::string> violations;
  int run = 0;
  for (const Mutation& mu : mutations) {
    const RunResult got = RunJob(kind, *identities, &mu, absl::StrCat(kind.name, "_m", run++));
    std::string why;
    const Outcome outcome = Judge(honest, got, &why);
    ++table[mu.instance == 0 ? mu.kind : mu.kind + " (last)"][OutcomeName(outcome)];
    if (outcome == Outcome::kViolation) violations.push_back(mu.Describe() + ": " + why);
    if (verbose) {
      std::cout << "  " << mu.Describe() << " -> " << OutcomeName(outcome)
                << (got.refusals.empty()
                        ? ""
                        : ": " + got.refusals.front().party + ": " + got.refusals.front().message)
                << (why.empty() ? "" : " (" + why + ")") << "\n";
    }
  }
  std::string printed = absl::StrCat(kind.name, ": ", mutations.size(), " mutated runs (", later,
                                     " of them of a later instance)\n");
  for (const auto& [check, n] : looked)
    absl::StrAppend(&printed, "  honest run, ", check, ": ", n, "\n");
  for (const auto& [k, outcomes] : table) {
    std::vector<std::string> parts;
    for (const auto& [o, n] : outcomes) parts.push_back(absl::StrCat(o, " ", n));
    absl::StrAppend(&printed, "  ", k, ": ", absl::StrJoin(parts, ", "), "\n");
  }
  std::cout << printed;
  EXPECT_TRUE(violations.empty()) << violations.size() << " mutated runs ended otherwise:\n"
                                  << absl::StrJoin(violations, "\n");
}

TEST(MutatingLeader, HorizontalGlobalTwoParties) {
  MutateEveryField(Horizontal("hg2", 2, false, ""));
}

// Age as a continuous attribute searched in bins (numeric_split: binned, 4 public cells): the
// job's bins go through the parties' bin check (SumBinCheck), whose every field is mutated too.
TEST(MutatingLeader, HorizontalGlobalTwoPartiesBinned) {
  MutateEveryField(Horizontal("hg2b", 2, false, "", ExampleABinned()));
}

TEST(MutatingLeader, HorizontalGlobalThreePartiesToAParty) {
  MutateEveryField(Horizontal("hg3", 3, false, "hospital-a"));
}

TEST(MutatingLeader, HorizontalLocalTwoParties) {
  MutateEveryField(Horizontal("hl2", 2, true, ""));
}

TEST(MutatingLeader, HorizontalLocalThreeParties) {
  MutateEveryField(Horizontal("hl3", 3, true, ""));
}

// Local recoding with Age searched in bins: the within-group bins' check (protocol 5.0), its
// ranges, thresholds and SumBinCheck messages mutated too.
TEST(MutatingLeader, HorizontalLocalTwoPartiesBinned) {
  MutateEveryField(Horizontal("hl2b", 2, true, "", ExampleABinned()));
}

TEST(MutatingLeader, VerticalGlobal) {
  MutateEveryField(Vertical("vg", 2, "privacy: {model: lkc, L: 2, K: 4}\n", false));
}

TEST(MutatingLeader, VerticalLocalWithAJudge) {
  MutateEveryField(Vertical(
      "vl", 3,
      "privacy: {model: lkc, L: 2, K: 4, C: 0.6, sensitive_values: [d0]}\nrecoding: local\n",
      true));
}

TEST(MutatingLeader, VerticalGameTheoretic) {
  MutateEveryField(Vertical(
      "vgt", 2, "privacy: {model: lkc, L: 2, K: 4}\nparticipation: game_theoretic\n", false));
}

}  // namespace
}  // namespace fedanon::testing
