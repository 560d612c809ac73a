#include "party/vertical_party.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/engine/numeric_split.h"
#include "common/table/csv.h"
#include "common/table_postgres/postgres_source.h"
#include "common/wire/federation_wire.h"
#include "common/wire/release_digests.h"
#include "crypto/shuffle.h"
#include "party/table_fingerprint.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {
namespace {

using engine::NodeIndex;
using fedanon::v1::Attribute;
using fedanon::v1::JobSpec;
using table::QidKind;

// A record code that lies under `node` (representative of every code the node covers).
int32_t RepresentativeCode(const engine::AttributeHierarchy& h, NodeIndex n) {
  const engine::HierarchyNode& node = h.node(n);
  switch (h.kind()) {
    case QidKind::kTaxonomy: {
      const table::Taxonomy& tax = *h.column().taxonomy;
      table::Taxonomy::NodeId t = node.tax;
      while (!tax.is_leaf(t)) t = tax.children(t).front();
      return t;
    }
    case QidKind::kSuppression:
      if (!node.suppressed) return node.value;
      return node.hidden.empty() ? 0 : node.hidden.front();
    case QidKind::kContinuous:
      return node.rank_lo;
  }
  return 0;
}

// The code representing child `k` of candidate `c` of `n`, before the children exist.
absl::StatusOr<int32_t> ChildRepresentative(const engine::AttributeHierarchy& h, NodeIndex n, int c,
                                            int k) {
  const engine::HierarchyNode& node = h.node(n);
  switch (h.kind()) {
    case QidKind::kTaxonomy: {
      const table::Taxonomy& tax = *h.column().taxonomy;
      const auto& kids = tax.children(node.tax);
      if (k < 0 || static_cast<size_t>(k) >= kids.size()) break;
      table::Taxonomy::NodeId t = kids[k];
      while (!tax.is_leaf(t)) t = tax.children(t).front();
      return t;
    }
    case QidKind::kSuppression:
      if (k == 0) return node.hidden[c];
      if (k == 1 && node.hidden.size() > 1) return node.hidden[c == 0 ? 1 : 0];
      break;
    case QidKind::kContinuous:
      if (k == 0) return node.rank_lo;
      if (k == 1) return node.split_rank;
      break;
  }
  return absl::InvalidArgumentError("the instruction names a child the candidate does not have");
}

uint32_t BitsPerChild(int children) {
  if (children <= 2) return 1;
  if (children <= 4) return 2;
  if (children <= 16) return 4;
  if (children <= 256) return 8;
  return 16;
}

// The spec restricted to what one party's file holds (for loading it).
JobSpec PartySpec(const JobSpec& spec, const std::string& party, bool* holds_sensitive) {
  JobSpec out = spec;
  out.clear_attributes();
  std::vector<std::string> own;
  for (const Attribute& a : spec.attributes()) {
    const bool shared = a.role() == fedanon::v1::ROLE_ID || a.role() == fedanon::v1::ROLE_CLASS;
    if (shared || a.party() == party) {
      *out.add_attributes() = a;
      own.push_back(a.name());
    }
  }
  auto is_own = [&](const std::string& name) {
    return std::find(own.begin(), own.end(), name) != own.end();
  };
  // Loading needs only the sensitive values this party can see; the model is the job's.
  auto* privacy = out.mutable_privacy();
  privacy->clear_templates();
  privacy->set_model(fedanon::v1::PRIVACY_MODEL_TEMPLATES);
  privacy->clear_confidence();
  privacy->clear_sensitive_values();
  privacy->clear_sensitive_attribute();
  *holds_sensitive = false;
  const auto& p = spec.privacy();
  std::string lkc_attr = p.sensitive_attribute();
  if (lkc_attr.empty()) {
    for (const Attribute& a : spec.attributes()) {
      if (a.role() == fedanon::v1::ROLE_SENSITIVE) lkc_attr = a.name();
    }
  }
  if (p.model() == fedanon::v1::PRIVACY_MODEL_LKC && p.sensitive_values_size() > 0 &&
      is_own(lkc_attr)) {
    auto* t = privacy->add_confidence();
    t->set_attribute(lkc_attr);
    *t->mutable_sensitive_values() = p.sensitive_values();
    t->set_max(1);
    *holds_sensitive = true;
  }
  for (const auto& c : p.confidence()) {
    std::string attr = c.attribute().empty() ? lkc_attr : c.attribute();
    if (!is_own(attr)) continue;
    auto* t = privacy->add_confidence();
    *t = c;
    t->set_attribute(attr);
    t->clear_qid();
    *holds_sensitive = true;
  }
  // ldiversity / tcloseness: the holder of the model's sensitive attribute judges (§8).
  if ((p.model() == fedanon::v1::PRIVACY_MODEL_LDIVERSITY ||
       p.model() == fedanon::v1::PRIVACY_MODEL_TCLOSENESS) &&
      is_own(lkc_attr)) {
    *holds_sensitive = true;
  }
  return out;
}

// This party's columns of the table, encoded against the job's public schema (its taxonomies).
absl::StatusOr<table::Dataset> LoadOwnColumns(const JobSpec& party_spec,
                                              const table::Dataset& schema,
                                              const std::string& csv_path,
                                              const table_postgres::PostgresSource* postgres) {
  std::map<std::string, const table::QidColumn*> schema_qid;
  for (const auto& q : schema.qids) schema_qid[q.name] = &q;
  table::Dataset own_schema = schema;
  own_schema.qids.clear();
  for (const Attribute& a : party_spec.attributes()) {
    if (a.role() == fedanon::v1::ROLE_QID) own_schema.qids.push_back(*schema_qid.at(a.name()));
  }
  ASSIGN_OR_RETURN(own_schema.tracked, table::TrackedSensitiveValues(party_spec));
  own_schema.value_columns.clear();
  if (postgres != nullptr)
    return table_postgres::LoadDatasetFromPostgres(party_spec, *postgres, &own_schema);
  return table::LoadDataset(party_spec, csv_path, &own_schema);
}

}  // namespace

// The count source of one replica: statistics from the local TIPS (placeholders for attributes
// the party does not own), and the owners' announced split thresholds.
class VerticalParty::Source : public engine::CountSource {
 public:
  Source(engine::Tips* tips, std::vector<engine::AttributeHierarchy>* hier,
         const std::vector<bool>* owned, bool holds_distribution)
      : tips_(tips), hier_(hier), owned_(owned), holds_distribution_(holds_distribution) {}
  absl::Status Specialize(int attr, NodeIndex node, int c,
                          const std::vector<uint64_t>& /*new_group_sizes*/) override {
    tips_->Specialize(attr, node, c);
    return absl::OkStatus();
  }
  absl::Status Split(int, NodeIndex, int32_t) override { return absl::OkStatus(); }
  absl::StatusOr<std::vector<uint64_t>> Collect(const engine::StatsRequest& request) override {
    std::vector<uint64_t> out;
    engine::AppendLocalStats(*tips_, request, &out);
    return out;
  }
  bool CountsInProcess() const override { return true; }
  absl::StatusOr<std::vector<uint64_t>> CollectAttributeBlocks(
      int attr, const std::vector<std::vector<NodeIndex>>& keys) override {
    std::vector<uint64_t> out;
    tips_->AppendAttributeBlocks(attr, keys, &out);
    return out;
  }
  bool Owns(int attr) const override { return (*owned_)[attr]; }
  int32_t AnnouncedSplit(int attr, NodeIndex node) override {
    // The owner announces the real threshold with the instruction that refines the node; until
    // then any threshold inside the interval keeps the node a candidate here.
    const auto& n = (*hier_)[attr].node(node);
    return n.rank_hi - n.rank_lo >= 2 ? n.rank_lo + 1 : -1;
  }
  // Only the holder of the ldiversity / tcloseness attribute counts its histograms; the others
  // leave that part of the model to its verdicts (mohammed2011 §8).
  bool HoldsSensitiveDistribution() const override { return holds_distribution_; }

 private:
  engine::Tips* tips_;
  std::vector<engine::AttributeHierarchy>* hier_;
  const std::vector<bool>* owned_;
  bool holds_distribution_;
};

VerticalParty::~VerticalParty() = default;

absl::StatusOr<std::unique_ptr<VerticalParty>> VerticalParty::Load(
    const JobSpec& spec, const table::Dataset& schema, const std::string& csv_path,
    VerticalPartyOptions options, const table_postgres::PostgresSource* postgres) {
  // A replica that could not score its own candidates as the centralized engine does (PrivLoss
  // out of its reach) refuses the job rather than run a different algorithm.
  RETURN_IF_ERROR(engine::CheckVerticalScoreComputable(spec));
  std::unique_ptr<VerticalParty> p(new VerticalParty());
  p->options_ = std::move(options);
  p->spec_ = spec;
  bool holds_sensitive = false;
  const JobSpec party_spec = PartySpec(spec, p->options_.name, &holds_sensitive);
  p->holds_sensitive_ = holds_sensitive;
  ASSIGN_OR_RETURN(table::Dataset own, LoadOwnColumns(party_spec, schema, csv_path, postgres));
  ASSIGN_OR_RETURN(p->table_fingerprint_, TableFingerprint(own));
  RETURN_IF_ERROR(p->ReadIdsAndValues(party_spec, own));
  RETURN_IF_ERROR(p->BuildJoinedData(schema, csv_path, std::move(own)));
  for (const auto& q : p->data_->qids) {
    for (const Attribute& a : spec.attributes()) {
      if (a.name() == q.name) p->owner_of_.push_back(a.party());
    }
  }
  for (const auto& party : p->options_.parties) {
    p->mu_[party] = 0;
    bool judges = false;
    PartySpec(spec, party, &judges);
    if (judges) p->judges_.push_back(party);
  }
  if (p->options_.deviation != nullptr) {
    spdlog::warn("party {} DEVIATES from the protocol ('{}'), for tests and demonstrations",
                 p->options_.name, p->options_.deviation->Name());
  }
  return p;
}

absl::Status VerticalParty::ReadIdsAndValues(const JobSpec& party_spec, const table::Dataset& own) {
  int id_column = -1;
  std::vector<int> value_columns;
  for (const Attribute& a : party_spec.attributes()) {
    const auto it = std::find(own.header.begin(), own.header.end(), a.name());
    const int col = static_cast<int>(it - own.header.begin());
    if (a.role() == fedanon::v1::ROLE_ID) id_column = col;
    const bool released = a.role() == fedanon::v1::ROLE_SENSITIVE ||
                          a.role() == fedanon::v1::ROLE_OTHER ||
                          (a.role() == fedanon::v1::ROLE_CLASS && options_.releases_class);
    if (released) {
      value_columns.push_back(col);
      value_names_.push_back(a.name());
    }
  }
  if (id_column < 0) {
    return absl::InvalidArgumentError("a vertical job needs an attribute with role id");
  }
  value_cells_.resize(value_columns.size());
  // The rows as read when they were encoded (the file's or the database's text kept in memory).
  ASSIGN_OR_RETURN(std::unique_ptr<table::CsvReader> reader, table::ReopenSource(own));
  std::vector<std::string_view> fields;
  ASSIGN_OR_RETURN(bool more, reader->Next(&fields));  // header
  size_t row = 0;
  while (true) {
    ASSIGN_OR_RETURN(more, reader->Next(&fields));
    if (!more) break;
    if (row < own.kept.size() && own.kept[row]) {
      ids_.emplace_back(fields[id_column]);
      for (size_t v = 0; v < value_columns.size(); ++v) {
        value_cells_[v].emplace_back(fields[value_columns[v]]);
      }
    }
    ++row;
  }
  if (ids_.size() != own.num_records) {
    return absl::InternalError("the table changed while it was being read");
  }
  return absl::OkStatus();
}

absl::Status VerticalParty::BuildJoinedData(const table::Dataset& schema,
                                            const std::string& csv_path, table::Dataset own) {
  auto data = std::make_unique<table::Dataset>(schema);
  data->source_path = csv_path;
  data->num_records = own.num_records;
  data->class_codes = std::move(own.class_codes);
  data->sensitive_bits.assign(own.num_records, 0);
  for (size_t b = 0; b < own.tracked.size(); ++b) {
    size_t full_bit = data->tracked.size();
    for (size_t f = 0; f < data->tracked.size(); ++f) {
      if (data->tracked[f].attribute == own.tracked[b].attribute &&
          data->tracked[f].value == own.tracked[b].value) {
        full_bit = f;
      }
    }
    if (full_bit == data->tracked.size()) continue;
    held_bits_ |= uint64_t{1} << full_bit;
    for (size_t r = 0; r < own.num_records; ++r) {
      if (own.sensitive_bits[r] >> b & 1) data->sensitive_bits[r] |= uint64_t{1} << full_bit;
    }
  }
  owned_.assign(data->qids.size(), false);
  for (size_t q = 0; q < data->qids.size(); ++q) {
    for (auto& oq : own.qids) {
      if (oq.name == data->qids[q].name) {
        data->qids[q].codes = std::move(oq.codes);
        owned_[q] = true;
      }
    }
  }
  // ldiversity / tcloseness: the holder of the sensitive attribute encodes it against its
  // declared values (the sensitive histograms its replica counts).
  if (data->distribution_column >= 0) {
    table::Dataset::ValueColumn& column =
        data->value_columns[static_cast<size_t>(data->distribution_column)];
    for (size_t v = 0; v < value_names_.size(); ++v) {
      if (value_names_[v] != column.name) continue;
      std::map<std::string, int32_t> code_of;
      for (size_t i = 0; i < column.values.size(); ++i) {
        code_of.emplace(column.values[i], static_cast<int32_t>(i));
      }
      column.codes.reserve(value_cells_[v].size());
      for (const std::string& cell : value_cells_[v]) {
        auto it = code_of.find(cell);
        if (it == code_of.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("a value of sensitive attribute '", column.name,
                           "' is not among the values the job declares for it"));
        }
        column.codes.push_back(it->second);
      }
      holds_distribution_ = true;
    }
  }
  data_ = std::move(data);
  return absl::OkStatus();
}

absl::Status VerticalParty::Start(const std::vector<int64_t>& canonical, uint64_t common_records) {
  if (canonical.size() != data_->num_records) {
    return absl::InvalidArgumentError("the ID alignment does not match the table");
  }
  auto permute = [&](auto& column) {
    std::remove_reference_t<decltype(column)> out(common_records);
    for (size_t i = 0; i < canonical.size(); ++i) {
      if (canonical[i] >= 0) out[canonical[i]] = std::move(column[i]);
    }
    column = std::move(out);
  };
  for (size_t i = 0; i < canonical.size(); ++i) {
    if (canonical[i] >= static_cast<int64_t>(common_records)) {
      return absl::InvalidArgumentError("the ID alignment names a position past the end");
    }
  }
  if (!data_->class_codes.empty()) permute(data_->class_codes);
  permute(data_->sensitive_bits);
  for (auto& column : data_->value_columns) {
    if (!column.codes.empty()) permute(column.codes);
  }
  for (auto& cells : value_cells_) permute(cells);
  std::vector<std::string> common_ids(common_records);
  for (size_t i = 0; i < canonical.size(); ++i) {
    if (canonical[i] >= 0) common_ids[canonical[i]] = ids_[i];
  }
  ids_ = std::move(common_ids);
  data_->num_records = common_records;
  for (size_t q = 0; q < data_->qids.size(); ++q) {
    if (owned_[q]) permute(data_->qids[q].codes);
  }
  data_->kept.assign(common_records, true);

  hier_.clear();
  for (const auto& q : data_->qids) hier_.emplace_back(&q);
  for (size_t q = 0; q < data_->qids.size(); ++q) {
    if (!owned_[q]) {
      data_->qids[q].codes.assign(common_records, RepresentativeCode(hier_[q], 0));
    }
  }
  ASSIGN_OR_RETURN(engine::PrivacyModel model, engine::BuildPrivacyModel(spec_, *data_));
  model_ = std::make_unique<engine::PrivacyModel>(std::move(model));
  tips_ = std::make_unique<engine::Tips>(data_.get(), &hier_);
  source_ = std::make_unique<Source>(tips_.get(), &hier_, &owned_, holds_distribution_);
  engine::EngineOptions options;
  options.score = spec_.score();
  options.beneficial = spec_.beneficial();
  options.suppression_token = spec_.suppression_token();
  options.numeric = engine::NumericSplitFromSpec(spec_);
  ASSIGN_OR_RETURN(engine_, engine::TopDownSpecializer::Create(data_.get(), model_.get(), &hier_,
                                                               source_.get(), options));
  if (spec_.recoding() == fedanon::v1::RECODING_LOCAL) {
    ASSIGN_OR_RETURN(local_, VerticalLocalReplica::Create(data_.get(), model_.get(), spec_,
                                                          options_.name, owner_of_));
    local_->SetDeviation(options_.deviation);
  }
  return absl::OkStatus();
}

VerticalProposalView VerticalParty::Propose() const {
  VerticalProposalView out;
  if (!engine_) {
    out.reason = "the job has not started";
    return out;
  }
  if (spec_.participation() == fedanon::v1::PARTICIPATION_GAME_THEORETIC) {
    const std::string ahead_of = AheadOf();
    if (!ahead_of.empty()) {
      spdlog::info("party {} declines: its contribution {} exceeds {}'s {} by more than {} of {}",
                   options_.name, mu_.at(options_.name), ahead_of, mu_.at(ahead_of),
                   spec_.epsilon(), TotalContribution());
      out.reason = kAheadOfAnotherParty;
      return out;
    }
  }
  auto best = engine_->BestOwned();
  if (!best) {
    out.reason = "no valid candidate";
    return out;
  }
  out.choice = best;
  return out;
}

bool VerticalParty::InGame(const std::string& party) const {
  return std::find(owner_of_.begin(), owner_of_.end(), party) != owner_of_.end();
}

double VerticalParty::TotalContribution() const {
  double total = 0;
  for (const auto& [party, mu] : mu_) total += mu;
  return total;
}

std::string VerticalParty::AheadOf() const {
  // mohammed2011 Alg. 2, line 5 with a relative ε (§7: "parties participate if the difference of
  // the contribution is equal or less than 1%"): take part only while
  // mu_self - mu_j <= epsilon * (sum of all mu) for every other party j in the game. Parties that
  // own no QID attribute can never contribute; they are outside the game (docs/vertical.md).
  const double mine = mu_.count(options_.name) ? mu_.at(options_.name) : 0.0;
  const double slack = spec_.epsilon() * TotalContribution();
  for (const auto& other : options_.parties) {
    if (other == options_.name || !InGame(other)) continue;
    const double theirs = mu_.count(other) ? mu_.at(other) : 0.0;
    if (mine - theirs > slack) return other;
  }
  return "";
}

absl::Status VerticalParty::CheckCandidate(const fedanon::v1::VerticalCandidate& c) const {
  if (!engine_) return absl::FailedPreconditionError("the vertical job has not started");
  if (c.attribute() >= hier_.size() || c.node() < 0 ||
      static_cast<size_t>(c.node()) >= hier_[c.attribute()].size() || c.candidate() < 0 ||
      c.candidate() >= hier_[c.attribute()].CandidateCount(c.node()) ||
      !hier_[c.attribute()].node(c.node()).children.empty()) {
    return absl::InvalidArgumentError("the winner names no candidate of the current cut");
  }
  return absl::OkStatus();
}

std::vector<int32_t> VerticalParty::PartitionsOn(int attr, NodeIndex node) const {
  std::vector<int32_t> out;
  for (size_t p = 0; p < tips_->partition_count(); ++p) {
    const int32_t id = static_cast<int32_t>(p);
    if (tips_->alive(id) && tips_->key(id)[attr] == node) out.push_back(id);
  }
  return out;
}

absl::StatusOr<std::string> VerticalParty::MakeInstruction(
    const fedanon::v1::VerticalCandidate& winner) {
  RETURN_IF_ERROR(CheckCandidate(winner));
  const int attr = static_cast<int>(winner.attribute());
  if (!owned_[attr]) {
    return absl::InvalidArgumentError("asked to instruct for an attribute this party lacks");
  }
  // The holder of the attribute checks its own split first: it refuses to instruct (and so to
  // let anyone apply) a candidate its replica finds invalid or that a judge vetoed.
  ASSIGN_OR_RETURN(const bool valid,
                   engine_->IsValid(attr, winner.node(), static_cast<int>(winner.candidate())));
  if (!valid) {
    return absl::FailedPreconditionError(absl::StrCat(
        engine::kRefusedSpecialization, ": ", data_->qids[attr].name, " ",
        hier_[attr].CandidateLabel(winner.node(), winner.candidate(), spec_.suppression_token())));
  }
  const engine::AttributeHierarchy& h = hier_[attr];
  const int children = h.ChildCount(winner.node(), winner.candidate());
  fedanon::v1::VerticalInstruction in;
  *in.mutable_candidate() = winner;
  // The owner's own score of the candidate, for the replicas that cannot compute it exactly.
  ASSIGN_OR_RETURN(const double score,
                   engine_->ScoreOf(attr, winner.node(), static_cast<int>(winner.candidate())));
  in.mutable_candidate()->set_score(score);
  in.set_split(h.node(winner.node()).split_rank);
  const uint32_t bits = BitsPerChild(children);
  in.set_bits_per_child(bits);
  const auto& codes = data_->qids[attr].codes;
  std::string packed;
  uint64_t n = 0;
  uint32_t acc = 0, used = 0;
  for (int32_t part : PartitionsOn(attr, winner.node())) {
    for (uint32_t r : tips_->records(part)) {
      const uint32_t child =
          static_cast<uint32_t>(h.ChildOfRecord(winner.node(), winner.candidate(), codes[r]));
      acc |= child << used;
      used += bits;
      while (used >= 8) {
        packed.push_back(static_cast<char>(acc & 0xff));
        acc >>= 8;
        used -= 8;
      }
      ++n;
    }
  }
  if (used > 0) packed.push_back(static_cast<char>(acc & 0xff));
  in.set_records(n);
  in.set_children(std::move(packed));
  return in.SerializeAsString();
}

absl::StatusOr<std::vector<int>> VerticalParty::NodeRecordClasses(
    const fedanon::v1::VerticalCandidate& candidate) const {
  RETURN_IF_ERROR(CheckCandidate(candidate));
  std::vector<int> classes;
  for (int32_t part : PartitionsOn(static_cast<int>(candidate.attribute()), candidate.node())) {
    for (uint32_t r : tips_->records(part)) {
      classes.push_back(data_->class_codes.empty() ? 0 : data_->class_codes[r]);
    }
  }
  return classes;
}

absl::StatusOr<bool> VerticalParty::Deliver(const std::string& instruction_bytes) {
  fedanon::v1::VerticalInstruction in;
  if (!in.ParseFromString(instruction_bytes)) {
    return absl::InvalidArgumentError("the instruction does not parse");
  }
  RETURN_IF_ERROR(CheckCandidate(in.candidate()));
  const int attr = static_cast<int>(in.candidate().attribute());
  const NodeIndex node = in.candidate().node();
  const int c = in.candidate().candidate();
  if (owned_[attr]) return absl::InvalidArgumentError("an instruction for our own attribute");
  engine::AttributeHierarchy& h = hier_[attr];
  if (h.kind() == QidKind::kContinuous) {
    const auto& n = h.node(node);
    if (in.split() <= n.rank_lo || in.split() >= n.rank_hi) {
      return absl::InvalidArgumentError("the instruction's threshold lies outside its interval");
    }
    h.SetSplit(node, in.split());
  }
  const int children = h.ChildCount(node, c);
  const uint32_t bits = BitsPerChild(children);
  if (in.bits_per_child() != bits) {
    return absl::InvalidArgumentError("the instruction's packing does not match the candidate");
  }
  // A representative code per child (-1: the child cannot hold records, e.g. an empty ⊥').
  std::vector<int32_t> child_code(children, -1);
  for (int k = 0; k < children; ++k) {
    auto code = ChildRepresentative(h, node, c, k);
    if (code.ok() && h.ChildOfRecord(node, c, *code) == k) child_code[k] = *code;
  }
  auto& codes = data_->qids[attr].codes;
  staged_.clear();
  staged_attr_ = attr;
  staged_owner_score_ = in.candidate().score();
  const std::string& packed = in.children();
  uint64_t i = 0;
  const uint32_t mask = (1u << bits) - 1;
  for (int32_t part : PartitionsOn(attr, node)) {
    for (uint32_t r : tips_->records(part)) {
      const uint64_t bit = i * bits;
      if (bit / 8 >= packed.size()) {
        return absl::InvalidArgumentError("the instruction covers fewer records than the node");
      }
      uint32_t word = static_cast<uint8_t>(packed[bit / 8]);
      if (bits == 16 && bit / 8 + 1 < packed.size()) {
        word |= static_cast<uint32_t>(static_cast<uint8_t>(packed[bit / 8 + 1])) << 8;
      }
      const uint32_t child = (word >> (bit % 8)) & mask;
      if (child >= static_cast<uint32_t>(children) || child_code[child] < 0) {
        return absl::InvalidArgumentError("the instruction names a child that does not exist");
      }
      staged_.emplace_back(r, codes[r]);
      codes[r] = child_code[child];
      ++i;
    }
  }
  if (i != in.records() || (i * bits + 7) / 8 != packed.size()) {
    return absl::InvalidArgumentError("the instruction does not cover the node's records");
  }
  if (!holds_sensitive_) return true;
  // mohammed2011 §8: the holder of the sensitive values checks the specialization first.
  return engine_->Recheck(attr, node, c);
}

absl::Status VerticalParty::Commit(const fedanon::v1::VerticalCandidate& winner, bool accept) {
  RETURN_IF_ERROR(CheckCandidate(winner));
  const int attr = static_cast<int>(winner.attribute());
  if (!accept) {
    if (staged_attr_ == attr) {
      auto& codes = data_->qids[attr].codes;
      for (const auto& [r, old] : staged_) codes[r] = old;
    }
    staged_.clear();
    staged_attr_ = -1;
    RETURN_IF_ERROR(engine_->Reject(attr, winner.node(), winner.candidate()));
    if (owned_[attr]) {
      last_vetoed_ = engine::TopDownSpecializer::Choice{attr, winner.node(), winner.candidate(),
                                                        winner.score(), winner.order_key()};
    }
    ++decisions_;
    return absl::OkStatus();
  }
  if (!owned_[attr] && staged_attr_ != attr) {
    return absl::FailedPreconditionError("commit of a winner whose instruction never arrived");
  }
  std::optional<double> owner_score;
  if (!owned_[attr] && engine_->ScoreNeedsOwner(attr, held_bits_)) {
    owner_score = staged_owner_score_;  // from the owner's sealed instruction
  }
  staged_.clear();
  staged_attr_ = -1;
  // The winner's signed score, which chose it among the round's proposals: refused when above
  // what its split gives, wherever this replica can compute that.
  RETURN_IF_ERROR(
      engine_->ApplyChosen(attr, winner.node(), winner.candidate(), owner_score, winner.score()));
  // Every replica computes the winner's score from the same counts: its owner's contribution.
  mu_[owner_of_[attr]] += engine_->steps().back().score();
  ++decisions_;
  return absl::OkStatus();
}

}  // namespace fedanon::party
