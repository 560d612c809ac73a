// Fuzz target: the decoders both protocol roles apply to what arrives over the wire
// (common/wire): count vectors, statistics requests checked against the public hierarchies, the
// join of released vertical columns and the sealed secure-union list a recipient opens. The first
// byte picks the decoder:
//   0: DecodeWords; a vector that decodes must encode back to the same bytes.
//   1: a StatsRequest (protobuf) through FromProto against a fixed job's hierarchies; a request
//      that passes must survive ToProto/FromProto, and the local answer computed from a small
//      table must have exactly StatsLength words (what the leader expects back).
//   2: 0-3 VerticalColumns and a VerticalAssemble header (length-prefixed protobuf pieces) through
//      JoinReleasedColumns; a joined table must read back as CSV with the header, one row per
//      record and one field per column.
//   3: a SealedPayload holding a UnionList for OpenUnionList, then its rows for OpenUnionRows.
//      A ciphertext (the list's or a row's) that starts with "plain:" is first sealed here, with
//      the context the recipient expects, so that the decoders behind the decryption are reached.
#include <algorithm>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/engine/count_source.h"
#include "common/engine/hierarchy.h"
#include "common/engine/tips.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/csv.h"
#include "common/table/dataset.h"
#include "common/wire/federation_wire.h"
#include "common/wire/released_union.h"
#include "crypto/sealed_box.h"
#include "fedanon/v1/federation.pb.h"
#include "tests/fuzz/fuzz_support.h"

namespace fedanon::fuzz {
namespace {

constexpr char kPlain[] = "plain:";
constexpr size_t kPlainSize = sizeof(kPlain) - 1;
constexpr char kJob[] = "job-00000000f022";
constexpr char kRun[] = "0123456789abcdef0123456789abcdef";
constexpr uint64_t kRound = 3;
constexpr char kRecipient[] = "leader";

constexpr char kSpec[] = R"(name: wire
attributes:
  - {name: edu, role: qid, taxonomy: edu.csv}
  - {name: g, role: qid, values: [ga, gb, gc]}
  - {name: age, role: qid, type: continuous, range: [0, 100], precision: 1}
  - {name: other, role: other, values: [x, y]}
  - {name: cls, role: class, values: [yes, no]}
partitioning: horizontal
privacy: {model: lkc, L: 2, K: 2}
)";
constexpr char kEducation[] =
    "Bachelors;Undergraduate;Higher;ANY\nMasters;Graduate;Higher;ANY\n"
    "Doctorate;Graduate;Higher;ANY\n11th;Secondary;ANY\n";
constexpr char kTable[] =
    "edu,g,age,other,cls\nBachelors,ga,23,x,yes\nMasters,gb,37,y,no\nDoctorate,ga,51,x,yes\n"
    "11th,gc,17,y,no\nMasters,ga,44,x,no\nBachelors,gb,30,y,yes\n";

// The fixed job: its table, hierarchies and TIPS, built once.
struct Job {
  table::Dataset data;
  std::vector<engine::AttributeHierarchy> hier;
  std::unique_ptr<engine::Tips> tips;
};

const Job& TheJob() {
  static const Job* job = [] {
    absl::StatusOr<fedanon::v1::JobSpec> spec = spec::ParseJobSpecYaml(kSpec, "wire.yaml");
    if (!spec.ok()) FuzzFail("the fixed spec does not load");
    const std::string csv = ScratchDir() + "/wire.csv";
    WriteTextFile(csv, kTable);
    absl::StatusOr<table::Dataset> schema = table::BuildPublicSchema(*spec, {{"edu", kEducation}});
    if (!schema.ok()) FuzzFail("the fixed schema does not build");
    absl::StatusOr<table::Dataset> data = table::LoadDataset(*spec, csv, &*schema);
    if (!data.ok()) FuzzFail("the fixed table does not load");
    auto* j = new Job;
    j->data = *std::move(data);
    for (const auto& q : j->data.qids) j->hier.emplace_back(&q);
    j->tips = std::make_unique<engine::Tips>(&j->data, &j->hier);
    return j;
  }();
  return *job;
}

// A P-256 key made for this fuzz target only (it protects nothing).
const crypto::SealKeyPair& Keys() {
  static const crypto::SealKeyPair* keys = [] {
    absl::StatusOr<std::unique_ptr<crypto::SealKeyPair>> k = crypto::SealKeyPair::Generate();
    if (!k.ok()) FuzzFail("no key pair");
    return k->release();
  }();
  return *keys;
}

// The sender of the union list in the seeds ("hospital-b"): the list is sealed
// sender-authenticated by it.
constexpr char kUnionSender[] = "hospital-b";
const crypto::SealKeyPair& SenderKeys() {
  static const crypto::SealKeyPair* keys = [] {
    absl::StatusOr<std::unique_ptr<crypto::SealKeyPair>> k = crypto::SealKeyPair::Generate();
    if (!k.ok()) FuzzFail("no key pair");
    return k->release();
  }();
  return *keys;
}

void CheckWords(std::string_view bytes) {
  absl::StatusOr<std::vector<uint64_t>> words = wire::DecodeWords(bytes);
  if (words.ok() != (bytes.size() % 8 == 0)) FuzzFail("DecodeWords accepts a partial word");
  if (words.ok() && wire::EncodeWords(*words) != bytes) FuzzFail("word round trip");
}

void CheckStatsRequest(std::string_view bytes) {
  fedanon::v1::StatsRequest proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  const Job& job = TheJob();
  absl::StatusOr<engine::StatsRequest> request = wire::FromProto(proto, job.hier);
  if (!request.ok()) return;
  absl::StatusOr<engine::StatsRequest> again = wire::FromProto(wire::ToProto(*request), job.hier);
  if (!again.ok() || again->rank_histograms != request->rank_histograms ||
      again->node_class_counts != request->node_class_counts ||
      again->group_keys != request->group_keys ||
      again->released_groups != request->released_groups ||
      again->released_combinations != request->released_combinations) {
    FuzzFail("StatsRequest round trip");
  }
  // As the party does: released counts only over the job's declared domain.
  if (!request->released_groups.empty() &&
      request->released_combinations != job.data.ValueCombinations()) {
    return;
  }
  std::vector<uint64_t> counts;
  engine::AppendLocalStats(*job.tips, *request, &counts);
  if (counts.size() !=
      engine::StatsLength(job.hier, job.data.num_classes(), job.data.tracked.size(), *request)) {
    FuzzFail("the local answer's length differs from StatsLength");
  }
}

void CheckJoin(FuzzInput& in) {
  std::vector<fedanon::v1::VerticalColumns> parts(in.Byte() % 4);
  for (auto& part : parts) {
    const std::string_view piece = in.Piece();
    if (!part.ParseFromArray(piece.data(), static_cast<int>(piece.size()))) return;
  }
  fedanon::v1::VerticalAssemble assemble;
  const std::string_view rest = in.Rest();
  if (!assemble.ParseFromArray(rest.data(), static_cast<int>(rest.size()))) return;
  const std::vector<std::string> header(assemble.header().begin(), assemble.header().end());
  absl::StatusOr<std::string> csv = wire::JoinReleasedColumns(parts, header);
  if (!csv.ok() || header.empty()) return;
  if (std::string_view(*csv).starts_with("\xEF\xBB\xBF")) return;  // read as a byte order mark
  // The expected rows, each column taken from the part that names it (JoinReleasedColumns has
  // checked that exactly one does); the joined rows come in a random order, so compare sorted.
  std::vector<std::vector<std::string>> expected;
  for (size_t c = 0; c < header.size(); ++c) {
    for (const auto& part : parts) {
      for (int i = 0; i < part.names_size(); ++i) {
        if (part.names(i) != header[c]) continue;
        const size_t records = part.cells_size() / part.names_size();
        expected.resize(records, std::vector<std::string>(header.size()));
        for (size_t r = 0; r < records; ++r) {
          expected[r][c] = part.cells(static_cast<int>(r * part.names_size() + i));
        }
      }
    }
  }
  absl::StatusOr<std::unique_ptr<table::CsvReader>> reader =
      table::CsvReader::FromString(*csv, "joined.csv", table::CsvOptions{','});
  if (!reader.ok()) FuzzFail("the joined table has no reader");
  std::vector<std::vector<std::string>> got;
  std::vector<std::string_view> fields;
  for (;;) {
    absl::StatusOr<bool> more = (*reader)->Next(&fields);
    if (!more.ok()) FuzzFail("the joined table is not valid CSV");
    if (!*more) break;
    got.emplace_back(fields.begin(), fields.end());
  }
  if (got.empty() || got.front() != header) FuzzFail("the joined table's header reads back wrong");
  got.erase(got.begin());
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  if (got != expected) FuzzFail("the joined table's rows read back wrong");
}

// Seals `ciphertext`'s rest for the recipient when it starts with "plain:".
void SealIfPlain(std::string* ciphertext, const crypto::SealContext& context) {
  if (!std::string_view(*ciphertext).starts_with(kPlain)) return;
  absl::StatusOr<std::string> sealed =
      crypto::Seal(Keys().public_key(), context, ciphertext->substr(kPlainSize));
  if (!sealed.ok()) FuzzFail("Seal failed");
  *ciphertext = *std::move(sealed);
}

void CheckUnion(std::string_view bytes) {
  fedanon::v1::SealedPayload payload;
  if (!payload.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  if (std::string_view(payload.ciphertext()).starts_with(kPlain)) {
    fedanon::v1::UnionList list;
    if (list.ParseFromString(payload.ciphertext().substr(kPlainSize))) {
      for (std::string& row : *list.mutable_rows()) {
        // A plain row is padded as a party pads it (wire::PadUnionRow) before it is sealed.
        if (std::string_view(row).starts_with(kPlain)) {
          row = std::string(kPlain) + wire::PadUnionRow(row.substr(kPlainSize));
        }
        SealIfPlain(&row, wire::UnionRowContext(kJob, kRun, kRound, kRecipient));
      }
      payload.set_ciphertext(std::string(kPlain) + list.SerializeAsString());
    }
    // The list hop is sender-authenticated: sealed by kUnionSender's key.
    absl::StatusOr<std::string> sealed =
        crypto::SealFrom(SenderKeys(), Keys().public_key(),
                         wire::UnionListContext(kJob, kRun, kRound, kUnionSender, kRecipient),
                         payload.ciphertext().substr(kPlainSize));
    if (!sealed.ok()) FuzzFail("SealFrom failed");
    payload.set_ciphertext(*std::move(sealed));
  }
  absl::StatusOr<fedanon::v1::UnionList> list = wire::OpenUnionList(
      Keys(), kJob, kRun, kRound, kRecipient, kUnionSender, SenderKeys().public_key(), payload);
  if (!list.ok()) return;
  absl::StatusOr<std::vector<std::string>> rows =
      wire::OpenUnionRows(Keys(), kJob, kRun, kRound, kRecipient, list->rows());
  if (rows.ok() && rows->size() != static_cast<size_t>(list->rows_size())) {
    FuzzFail("OpenUnionRows lost rows");
  }
}

void FuzzWire(FuzzInput in) {
  static const bool quiet = [] {
    QuietProtobuf();
    return true;
  }();
  if (!quiet) return;
  switch (in.Byte() % 4) {
    case 0:
      CheckWords(in.Rest());
      break;
    case 1:
      CheckStatsRequest(in.Rest());
      break;
    case 2:
      CheckJoin(in);
      break;
    default:
      CheckUnion(in.Rest());
      break;
  }
}

// Appends `nodes` to a group key (protobuf 3.21's Add takes one value at a time).
void AddNodes(fedanon::v1::StatsRequest::GroupKey* key, std::initializer_list<int32_t> nodes) {
  for (int32_t n : nodes) key->add_nodes(n);
}

std::string Serialized(const google::protobuf::MessageLite& message) {
  return message.SerializeAsString();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> FuzzSeeds() {
  std::vector<std::pair<std::string, std::string>> seeds;
  seeds.emplace_back("words", std::string(1, '\0') + wire::EncodeWords({1, 2, 3, ~0ULL}));
  seeds.emplace_back("words-partial", std::string(1, '\0') + "1234567890");

  // Statistics requests as the leader sends them: group keys over the root cut, class counts and
  // rank histograms of the roots, released counts over the declared domain (2 other values x ...).
  fedanon::v1::StatsRequest stats;
  AddNodes(stats.add_groups(), {0, 0, 0});
  stats.add_node_class_counts()->set_attribute(0);
  auto* hist = stats.add_rank_histograms();
  hist->set_attribute(2);
  hist->set_node(0);
  seeds.emplace_back("stats", std::string(1, '\x01') + Serialized(stats));
  fedanon::v1::StatsRequest released;
  AddNodes(released.add_released_groups(), {0, 0, 0});
  released.set_released_combinations(2);
  seeds.emplace_back("stats-released", std::string(1, '\x01') + Serialized(released));
  fedanon::v1::StatsRequest bad;
  AddNodes(bad.add_groups(), {0, 7});
  seeds.emplace_back("stats-bad-width", std::string(1, '\x01') + Serialized(bad));

  // Released columns of two parties (the class with the first) and the header to join them by.
  fedanon::v1::VerticalColumns a;
  a.add_names("cls");
  a.add_names("Sex");
  for (const char* cell : {"Y", "Male", "N", "ANY_Sex", "Y", "Female"}) a.add_cells(cell);
  fedanon::v1::VerticalColumns b;
  b.add_names("Job");
  for (const char* cell : {"Blue-collar", "White, collar", "\"quoted\""}) b.add_cells(cell);
  fedanon::v1::VerticalAssemble header;
  for (const char* name : {"Sex", "Job", "cls"}) header.add_header(name);
  std::string join(1, '\x02');
  join.push_back('\x02');
  AppendPiece(&join, Serialized(a));
  AppendPiece(&join, Serialized(b));
  join += Serialized(header);
  seeds.emplace_back("join", join);

  // A union list from party b with two rows, both sealed here (see SealIfPlain).
  fedanon::v1::UnionList list;
  list.add_rows(std::string(kPlain) + "Masters,ga,[30-40),x,no\n");
  list.add_rows(std::string(kPlain) + "ANY,*,[0-100),y,yes\n");
  fedanon::v1::SealedPayload payload;
  payload.set_sender("hospital-b");
  payload.set_receiver(kRecipient);
  payload.set_purpose("union-list");
  payload.set_ciphertext(std::string(kPlain) + Serialized(list));
  seeds.emplace_back("union", std::string(1, '\x03') + Serialized(payload));
  payload.set_ciphertext("");
  seeds.emplace_back("union-empty", std::string(1, '\x03') + Serialized(payload));
  return seeds;
}

}  // namespace fedanon::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fedanon::fuzz::FuzzWire(fedanon::fuzz::FuzzInput(data, size));
  return 0;
}
