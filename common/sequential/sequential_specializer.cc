#include "common/sequential/sequential_specializer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "common/base/string_views.h"
#include "common/engine/candidate_score.h"
#include "common/engine/privacy_model.h"
#include "common/engine/tds_engine.h"

namespace fedanon::sequential {
namespace {

void AppendInt(std::string* out, int32_t v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

// Y codes per record of one side of an anonymity template: the record itself (`record`: a key),
// a dictionary id of the tuple of `cols`, or nothing (`out` left empty) when Y has no attribute
// on this side.
void EncodeY(bool record, const std::vector<int>& cols, const std::vector<CodedColumn>& columns,
             size_t n, std::vector<uint32_t>* out) {
  if (!record && cols.empty()) return;
  out->resize(n);
  absl::flat_hash_map<std::string, uint32_t> dict;
  for (size_t r = 0; r < n; ++r) {
    if (record) {
      (*out)[r] = static_cast<uint32_t>(r);
      continue;
    }
    std::string key;
    for (int c : cols) AppendInt(&key, columns[c].codes[r]);
    (*out)[r] = dict.emplace(key, static_cast<uint32_t>(dict.size())).first->second;
  }
}

// Sorted union of the given sorted vectors.
size_t UnionSize(std::vector<const std::vector<uint64_t>*> sets) {
  if (sets.size() == 1) return sets[0]->size();
  std::vector<uint64_t> all;
  for (const auto* s : sets) all.insert(all.end(), s->begin(), s->end());
  std::sort(all.begin(), all.end());
  return static_cast<size_t>(std::unique(all.begin(), all.end()) - all.begin());
}

}  // namespace

SequentialSpecializer::SequentialSpecializer(const table::Dataset* data,
                                             const SequentialModel* model,
                                             std::vector<engine::AttributeHierarchy>* hierarchies,
                                             engine::Tips* tips, SequentialOptions options)
    : data_(data),
      model_(model),
      hier_(hierarchies),
      tips_(tips),
      options_(std::move(options)),
      num_classes_(std::max(1, data->num_classes())) {}

absl::StatusOr<std::unique_ptr<SequentialSpecializer>> SequentialSpecializer::Create(
    const table::Dataset* data, const SequentialModel* model,
    std::vector<engine::AttributeHierarchy>* hierarchies, engine::Tips* tips,
    SequentialOptions options) {
  std::unique_ptr<SequentialSpecializer> s(
      new SequentialSpecializer(data, model, hierarchies, tips, std::move(options)));
  RETURN_IF_ERROR(s->Initialize());
  return s;
}

SequentialSpecializer::Stats SequentialSpecializer::ComputeStats(
    const std::vector<uint32_t>& records, bool previous) const {
  const std::vector<CodedColumn>& columns =
      previous ? model_->previous_columns : model_->current_columns;
  // Rows of a history table (several previous releases) stand for several combinations.
  const std::vector<uint64_t>* weights =
      previous && !model_->previous_weights.empty() ? &model_->previous_weights : nullptr;
  Stats s;
  s.count = records.size();
  if (weights != nullptr) {
    s.count = 0;
    for (uint32_t r : records) s.count += (*weights)[r];
  }
  s.per_template.resize(model_->templates.size());
  for (size_t t = 0; t < model_->templates.size(); ++t) {
    const JoinTemplate& jt = model_->templates[t];
    std::vector<uint64_t>& out = s.per_template[t];
    if (jt.anonymity) {
      const std::vector<uint32_t>& y_codes = previous ? y2_codes_[t] : y1_codes_[t];
      if (y_codes.empty()) continue;
      for (uint32_t r : records) out.push_back(y_codes[r]);
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
    } else if (jt.y_previous == previous) {
      out.assign(jt.sensitive_codes.size(), 0);
      const auto& codes = columns[jt.y_column].codes;
      for (uint32_t r : records) {
        for (size_t i = 0; i < jt.sensitive_codes.size(); ++i) {
          if (codes[r] == jt.sensitive_codes[i]) out[i] += weights ? (*weights)[r] : 1;
        }
      }
    }
  }
  return s;
}

absl::Status SequentialSpecializer::Initialize() {
  InitializeSlots();
  EncodeYCodes();
  BuildPreviousPartitions();
  if (data_->num_records == 0) return absl::FailedPreconditionError("the table has no records");
  RETURN_IF_ERROR(CheckPopulationRelated());
  BuildMostGeneralCurrent();
  for (int a = 0; a < static_cast<int>(data_->qids.size()); ++a) AddCandidates(a, 0);
  xmaps_.assign(model_->templates.size(), {});
  values_.assign(model_->templates.size(), 0);
  RebuildJoin();
  return CheckMostGeneralSatisfies();
}

void SequentialSpecializer::InitializeSlots() {
  const int q = static_cast<int>(data_->qids.size());
  // Matching slots: the join attributes (consistency), then the inconsistency rules.
  for (const JoinAttribute& j : model_->join) {
    slots_.push_back({j.name, j.qid, j.current_raw, j.previous});
  }
  for (const InconsistencyRule& r : model_->rules) {
    slots_.push_back({r.current_name, r.current_qid, r.current_raw, r.previous});
  }
  slots_of_qid_.assign(q, {});
  for (size_t j = 0; j < slots_.size(); ++j) {
    if (slots_[j].qid >= 0) slots_of_qid_[slots_[j].qid].push_back(static_cast<int>(j));
  }

  joined_.assign(q, false);
  for (const Slot& j : slots_) {
    if (j.qid >= 0) joined_[j.qid] = true;
  }
  for (const JoinTemplate& jt : model_->templates) {
    for (int a : jt.x1) joined_[a] = true;
  }
  for (const JoinTemplate& jt : model_->templates) {
    if (jt.anonymity) {
      prunable_ &= jt.x2.empty();
      continue;
    }
    for (const Slot& j : slots_) {
      prunable_ &= j.qid >= 0 && std::find(jt.x1.begin(), jt.x1.end(), j.qid) != jt.x1.end() &&
                   std::find(jt.x2.begin(), jt.x2.end(), j.previous) != jt.x2.end();
    }
  }
}

void SequentialSpecializer::EncodeYCodes() {
  const size_t nt = model_->templates.size();
  y1_codes_.assign(nt, {});
  y2_codes_.assign(nt, {});
  for (size_t t = 0; t < nt; ++t) {
    const JoinTemplate& jt = model_->templates[t];
    if (!jt.anonymity) continue;
    EncodeY(jt.y1_record, jt.y1, model_->current_columns, data_->num_records, &y1_codes_[t]);
    EncodeY(jt.y2_record, jt.y2, model_->previous_columns, model_->previous_records, &y2_codes_[t]);
  }
}

void SequentialSpecializer::BuildPreviousPartitions() {
  const size_t nt = model_->templates.size();
  std::vector<absl::flat_hash_map<std::string, int32_t>> x2_dict(nt);
  absl::flat_hash_map<std::string, int32_t> part_of, group_of;
  std::vector<std::vector<uint32_t>> part_records;
  for (size_t r = 0; r < model_->previous_records; ++r) {
    std::vector<int32_t> join;
    std::string jkey;
    for (const Slot& j : slots_) {
      join.push_back(model_->previous_columns[j.previous].codes[r]);
      AppendInt(&jkey, join.back());
    }
    std::vector<int32_t> x2(nt);
    std::string pkey = jkey;
    for (size_t t = 0; t < nt; ++t) {
      std::string xk;
      for (int c : model_->templates[t].x2) AppendInt(&xk, model_->previous_columns[c].codes[r]);
      x2[t] = x2_dict[t].emplace(xk, static_cast<int32_t>(x2_dict[t].size())).first->second;
      AppendInt(&pkey, x2[t]);
    }
    auto [git, gnew] = group_of.emplace(jkey, static_cast<int32_t>(groups2_.size()));
    if (gnew) groups2_.push_back(Group2{join, {}, static_cast<int32_t>(r)});
    auto [pit, pnew] = part_of.emplace(pkey, static_cast<int32_t>(parts2_.size()));
    if (pnew) {
      Part2 p;
      p.group = git->second;
      p.x2 = std::move(x2);
      for (const CodedColumn& c : model_->previous_columns) p.example.push_back(c.codes[r]);
      parts2_.push_back(std::move(p));
      part_records.emplace_back();
      groups2_[git->second].parts.push_back(pit->second);
    }
    part_records[pit->second].push_back(static_cast<uint32_t>(r));
  }
  for (size_t p = 0; p < parts2_.size(); ++p) {
    parts2_[p].stats = ComputeStats(part_records[p], /*previous=*/true);
  }
}

void SequentialSpecializer::BuildMostGeneralCurrent() {
  // The most general T1: roots everywhere, split by the raw values of unchanged join attributes.
  const int q = static_cast<int>(data_->qids.size());
  link_.assign(q, {});
  for (int a = 0; a < q; ++a) {
    engine::AttributeHierarchy& h = (*hier_)[a];
    if (h.kind() == table::QidKind::kContinuous) {
      h.SetSplit(h.root(), engine::ChooseSplitRank(tips_->RankClassHistogram(a, h.root()),
                                                   num_classes_, h.node(h.root()).rank_lo, true));
    }
  }
  absl::flat_hash_map<std::string, std::vector<uint32_t>> by_raw;
  std::vector<std::string> order;
  for (uint32_t r = 0; r < data_->num_records; ++r) {
    std::string k;
    for (const Slot& j : slots_) {
      if (j.current_raw >= 0) AppendInt(&k, model_->current_columns[j.current_raw].codes[r]);
    }
    auto [it, added] = by_raw.emplace(k, std::vector<uint32_t>());
    if (added) order.push_back(k);
    it->second.push_back(r);
  }
  for (const std::string& k : order) {
    std::vector<uint32_t>& recs = by_raw[k];
    std::vector<int32_t> join;
    for (const Slot& j : slots_) {
      join.push_back(j.qid >= 0 ? (*hier_)[j.qid].node(0).tax
                                : model_->current_columns[j.current_raw].codes[recs[0]]);
    }
    AddPart1(std::vector<engine::NodeIndex>(q, 0), std::move(join), std::move(recs));
  }
}

absl::Status SequentialSpecializer::CheckMostGeneralSatisfies() const {
  // Corollary 6.2.2: some generalized T1 satisfies a template iff the most general one does.
  for (size_t t = 0; t < model_->templates.size(); ++t) {
    if (Satisfies(t, values_[t])) continue;
    const JoinTemplate& jt = model_->templates[t];
    const XEntry* worst = nullptr;
    for (const auto& [key, e] : xmaps_[t]) {
      if (!Satisfies(t, e.value) &&
          (worst == nullptr || (jt.anonymity ? e.value < worst->value : e.value > worst->value))) {
        worst = &e;
      }
    }
    return absl::FailedPreconditionError(base::Cat(
        "privacy template ", jt.description, " cannot be met: even the most general current ",
        "release joined with ", model_->previous_path, " gives ",
        jt.anonymity ? "a_Y(x) = " : "c_y(x) = ", values_[t],
        " for x = ", worst ? DescribeX(t, *worst) : std::string("?"), " (thesis Cor. 6.2.2)"));
  }
  return absl::OkStatus();
}

absl::Status SequentialSpecializer::CheckPopulationRelated() const {
  std::vector<bool> group_matched(groups2_.size(), false);
  absl::flat_hash_set<std::string> seen;
  for (uint32_t r = 0; r < data_->num_records; ++r) {
    std::vector<int32_t> join;
    std::string k;
    for (const Slot& j : slots_) {
      join.push_back(j.qid >= 0 ? data_->qids[j.qid].codes[r]
                                : model_->current_columns[j.current_raw].codes[r]);
      AppendInt(&k, join.back());
    }
    if (!seen.insert(k).second) continue;
    bool any = false;
    for (size_t g = 0; g < groups2_.size(); ++g) {
      if (Matches(join, groups2_[g])) {
        any = true;
        group_matched[g] = true;
      }
    }
    if (!any) {
      std::vector<std::string> values;
      for (size_t j = 0; j < slots_.size(); ++j) {
        const Slot& ja = slots_[j];
        values.push_back(base::Cat(ja.name, "=",
                                   ja.qid >= 0
                                       ? data_->qids[ja.qid].taxonomy->label(join[j])
                                       : model_->current_columns[ja.current_raw].values[join[j]]));
      }
      return absl::FailedPreconditionError(base::Cat(
          data_->source_path, ":", model_->current_lines[r], ": this record (",
          absl::StrJoin(values, ", "), ") matches no record of the previous release ",
          model_->previous_path, "; the two releases must be projections of the same table ",
          "(population-related, thesis §6.2.2)"));
    }
  }
  // With several previous releases the loader checked each pair (T1, Ti) instead: a row of the
  // history table need not match any raw T1 record (only the most general one).
  for (size_t g = 0; g < groups2_.size() && !model_->several(); ++g) {
    if (group_matched[g]) continue;
    const int32_t r = groups2_[g].first_record;
    std::vector<std::string> values;
    for (size_t j = 0; j < slots_.size(); ++j) {
      const CodedColumn& c = model_->previous_columns[slots_[j].previous];
      values.push_back(base::Cat(c.name, "=", c.values[c.codes[r]]));
    }
    return absl::FailedPreconditionError(
        base::Cat(model_->previous_path, ":", model_->previous_lines[r], ": this record (",
                  absl::StrJoin(values, ", "), ") matches no record of the current release ",
                  data_->source_path, "; the two releases must be projections of the same table ",
                  "(population-related, thesis §6.2.2)"));
  }
  return absl::OkStatus();
}

int32_t SequentialSpecializer::AddPart1(std::vector<engine::NodeIndex> key,
                                        std::vector<int32_t> join, std::vector<uint32_t> records) {
  const int32_t id = static_cast<int32_t>(parts1_.size());
  Part1 p;
  p.stats = ComputeStats(records, /*previous=*/false);
  p.key = std::move(key);
  p.join = std::move(join);
  p.records = std::move(records);
  for (size_t a = 0; a < p.key.size(); ++a) {
    if (!joined_[a]) continue;
    auto& l = link_[a];
    if (l.size() <= static_cast<size_t>(p.key[a])) l.resize(p.key[a] + 1);
    l[p.key[a]].push_back(id);
  }
  parts1_.push_back(std::move(p));
  return id;
}

bool SequentialSpecializer::Matches(const std::vector<int32_t>& join, const Group2& g) const {
  for (size_t j = 0; j < join.size(); ++j) {
    const int ji = static_cast<int>(j);
    const int nj = static_cast<int>(model_->join.size());
    if (ji < nj ? !JoinValuesMatch(*model_, *data_, ji, join[j], g.join[j])
                : RuleForbids(*model_, *data_, ji - nj, join[j], g.join[j])) {
      return false;
    }
  }
  return true;
}

std::string SequentialSpecializer::XKey(size_t t, const std::vector<engine::NodeIndex>& key,
                                        int placeholder_attr, int placeholder_child,
                                        const Part2& p2) const {
  std::string k;
  for (int q : model_->templates[t].x1) {
    AppendInt(&k, q == placeholder_attr ? -(placeholder_child + 2) : key[q]);
  }
  AppendInt(&k, p2.x2[t]);
  return k;
}

double SequentialSpecializer::Measure(size_t t, const std::vector<PairRef>& pairs) const {
  const JoinTemplate& jt = model_->templates[t];
  if (!jt.anonymity) {
    uint64_t ax = 0;
    std::vector<uint64_t> axy(jt.sensitive_codes.size(), 0);
    for (const PairRef& pr : pairs) {
      const Stats& s2 = parts2_[pr.p2].stats;
      ax += pr.p1->count * s2.count;
      for (size_t i = 0; i < axy.size(); ++i) {
        axy[i] += jt.y_previous ? pr.p1->count * s2.per_template[t][i]
                                : pr.p1->per_template[t][i] * s2.count;
      }
    }
    double best = 0;
    for (uint64_t v : axy) {
      best = std::max(best, static_cast<double>(v) / static_cast<double>(ax));
    }
    return best;
  }
  // Anonymity: the number of distinct (y1, y2) over the pairs, Y1(P1) x Y2(P2) per pair.
  const bool trivial1 = y1_codes_[t].empty();
  const bool trivial2 = y2_codes_[t].empty();
  if (trivial2) {  // distinct Y1 over the P1s involved
    absl::flat_hash_set<const Stats*> seen;
    std::vector<const std::vector<uint64_t>*> sets;
    uint64_t sum = 0;
    for (const PairRef& pr : pairs) {
      if (!seen.insert(pr.p1).second) continue;
      sets.push_back(&pr.p1->per_template[t]);
      sum += pr.p1->per_template[t].size();
    }
    if (trivial1) return pairs.empty() ? 0 : 1;
    return static_cast<double>(jt.y1_record ? sum : UnionSize(sets));
  }
  if (trivial1) {
    absl::flat_hash_set<int32_t> seen;
    std::vector<const std::vector<uint64_t>*> sets;
    uint64_t sum = 0;
    for (const PairRef& pr : pairs) {
      if (!seen.insert(pr.p2).second) continue;
      sets.push_back(&parts2_[pr.p2].stats.per_template[t]);
      sum += sets.back()->size();
    }
    return static_cast<double>(jt.y2_record ? sum : UnionSize(sets));
  }
  if (jt.y1_record) {  // Y1 sets of different P1 are disjoint (thesis case 3/4)
    absl::flat_hash_map<const Stats*, std::vector<const std::vector<uint64_t>*>> by_p1;
    for (const PairRef& pr : pairs) by_p1[pr.p1].push_back(&parts2_[pr.p2].stats.per_template[t]);
    uint64_t total = 0;
    for (const auto& [p1, sets] : by_p1) total += p1->per_template[t].size() * UnionSize(sets);
    return static_cast<double>(total);
  }
  if (jt.y2_record) {  // Y2 sets of different P2 are disjoint (thesis case 2)
    absl::flat_hash_map<int32_t, std::vector<const std::vector<uint64_t>*>> by_p2;
    for (const PairRef& pr : pairs) by_p2[pr.p2].push_back(&pr.p1->per_template[t]);
    uint64_t total = 0;
    for (const auto& [p2, sets] : by_p2) {
      total += parts2_[p2].stats.per_template[t].size() * UnionSize(sets);
    }
    return static_cast<double>(total);
  }
  absl::flat_hash_set<std::pair<uint64_t, uint64_t>> distinct;
  for (const PairRef& pr : pairs) {
    for (uint64_t y1 : pr.p1->per_template[t]) {
      for (uint64_t y2 : parts2_[pr.p2].stats.per_template[t]) distinct.emplace(y1, y2);
    }
  }
  return static_cast<double>(distinct.size());
}

bool SequentialSpecializer::Satisfies(size_t t, double value) const {
  const JoinTemplate& jt = model_->templates[t];
  return jt.anonymity ? value >= static_cast<double>(jt.k)
                      : value <= jt.max_conf + engine::kConfidenceEpsilon;
}

void SequentialSpecializer::RebuildJoin() {
  const size_t nt = model_->templates.size();
  for (auto& m : xmaps_) m.clear();
  join_records_ = 0;
  ++join_version_;
  for (size_t p = 0; p < parts1_.size(); ++p) {
    const Part1& p1 = parts1_[p];
    if (!p1.alive) continue;
    for (const Group2& g : groups2_) {
      if (!Matches(p1.join, g)) continue;
      for (int32_t p2 : g.parts) {
        join_records_ += p1.stats.count * parts2_[p2].stats.count;
        for (size_t t = 0; t < nt; ++t) {
          xmaps_[t][XKey(t, p1.key, -1, -1, parts2_[p2])].pairs.emplace_back(
              static_cast<int32_t>(p), p2);
        }
      }
    }
  }
  for (size_t t = 0; t < nt; ++t) {
    const bool anon = model_->templates[t].anonymity;
    double ext = anon ? std::numeric_limits<double>::infinity() : 0;
    for (auto& [key, e] : xmaps_[t]) {
      std::vector<PairRef> refs;
      for (const auto& [p1, p2] : e.pairs) refs.push_back({&parts1_[p1].stats, p2});
      e.value = Measure(t, refs);
      ext = anon ? std::min(ext, e.value) : std::max(ext, e.value);
    }
    values_[t] = ext;
  }
}

void SequentialSpecializer::AddCandidates(int attr, engine::NodeIndex node) {
  const engine::AttributeHierarchy& h = (*hier_)[attr];
  const int count = h.CandidateCount(node);
  if (count == 0) return;
  const std::vector<uint64_t> fine = tips_->NodeClassCounts(attr, node);
  // As in the TDS engine: a ⊥ node's class counts are summed once (O(classes) per disclosure),
  // and disclosing a value no record has is not a specialization.
  const bool disclosure = h.kind() == table::QidKind::kSuppression;
  const std::vector<uint64_t> parent =
      disclosure ? engine::ParentClassCounts(fine, num_classes_) : std::vector<uint64_t>();
  for (int c = 0; c < count; ++c) {
    const engine::SplitMeasures m = disclosure
                                        ? engine::MeasureDisclosure(parent, fine, c, num_classes_)
                                        : engine::MeasureSplit(h, node, c, fine, num_classes_);
    if (!m.changes_table) continue;
    Candidate cand;
    cand.attr = attr;
    cand.node = node;
    cand.c = c;
    cand.records = m.records;
    cand.distortion_units = m.distortion_units;
    cand.beneficial = m.beneficial;
    cand.info_gain = m.info_gain;
    cand.split_info = m.split_info;
    cands_.push_back(cand);
  }
}

std::vector<int32_t> SequentialSpecializer::LiveLink(int attr, engine::NodeIndex node) const {
  std::vector<int32_t> link;
  if (static_cast<size_t>(node) < link_[attr].size()) {
    for (int32_t p : link_[attr][node]) {
      if (parts1_[p].alive) link.push_back(p);
    }
  }
  return link;
}

std::vector<SequentialSpecializer::Hyp> SequentialSpecializer::SplitLink(
    const Candidate& cand, const std::vector<int32_t>& link) const {
  const int a = cand.attr;
  const engine::AttributeHierarchy& h = (*hier_)[a];
  const int nchild = h.ChildCount(cand.node, cand.c);
  const std::vector<int>& slots = slots_of_qid_[a];
  std::vector<Hyp> hyps;
  for (int32_t p : link) {
    std::vector<std::vector<uint32_t>> split(nchild);
    for (uint32_t r : parts1_[p].records) {
      split[h.ChildOfRecord(cand.node, cand.c, data_->qids[a].codes[r])].push_back(r);
    }
    for (int ch = 0; ch < nchild; ++ch) {
      if (split[ch].empty()) continue;
      Hyp hy;
      hy.parent = p;
      hy.child = ch;
      hy.join = parts1_[p].join;
      for (int j : slots) hy.join[j] = h.column().taxonomy->children(h.node(cand.node).tax)[ch];
      hy.stats = ComputeStats(split[ch], /*previous=*/false);
      hyps.push_back(std::move(hy));
    }
  }
  return hyps;
}

absl::flat_hash_map<std::string, std::vector<SequentialSpecializer::PairRef>>
SequentialSpecializer::ChangedX(size_t t, const Candidate& cand, const std::vector<int32_t>& link,
                                const std::vector<Hyp>& hyps) const {
  const JoinTemplate& jt = model_->templates[t];
  const int a = cand.attr;
  const bool a_in_x = std::find(jt.x1.begin(), jt.x1.end(), a) != jt.x1.end();
  absl::flat_hash_map<std::string, std::vector<PairRef>> changed;  // x -> its new pairs
  for (int32_t p : link) {
    for (const Group2& g : groups2_) {
      if (!Matches(parts1_[p].join, g)) continue;
      for (int32_t p2 : g.parts) changed[XKey(t, parts1_[p].key, -1, -1, parts2_[p2])];
    }
  }
  for (const Hyp& hy : hyps) {
    for (const Group2& g : groups2_) {
      if (!Matches(hy.join, g)) continue;
      for (int32_t p2 : g.parts) {
        changed[XKey(t, parts1_[hy.parent].key, a_in_x ? a : -1, hy.child, parts2_[p2])].push_back(
            {&hy.stats, p2});
      }
    }
  }
  return changed;
}

std::vector<SequentialSpecializer::PairRef> SequentialSpecializer::PairsAfter(
    size_t t, const std::string& x, const std::vector<PairRef>& fresh,
    const absl::flat_hash_set<int32_t>& in_link) const {
  std::vector<PairRef> pairs;
  if (auto it = xmaps_[t].find(x); it != xmaps_[t].end()) {
    for (const auto& [p1, p2] : it->second.pairs) {
      if (!in_link.contains(p1)) pairs.push_back({&parts1_[p1].stats, p2});
    }
  }
  pairs.insert(pairs.end(), fresh.begin(), fresh.end());
  return pairs;
}

void SequentialSpecializer::Evaluate(Candidate& cand) {
  const int a = cand.attr;
  if (!joined_[a]) {  // the join and every value on X stay as they are
    cand.valid = true;
    cand.priv_loss = 0;
    cand.score = Score(cand);
    return;
  }
  // The evaluation depends only on the join's state: reuse it while the join has not changed.
  if (cand.join_version == join_version_) return;
  cand.join_version = join_version_;
  cand.valid = true;
  cand.priv_loss = 0;
  const std::vector<int32_t> link = LiveLink(a, cand.node);
  const absl::flat_hash_set<int32_t> in_link(link.begin(), link.end());
  // Split the partitions on Link[v] into the children (the hypothetical specialized T1).
  const std::vector<Hyp> hyps = SplitLink(cand, link);

  // Recompute only the x values touched by Link[v], per template.
  const bool want_loss = options_.score == fedanon::v1::SCORE_FUNCTION_INFOGAIN_PRIVLOSS;
  bool any_anonymity = false;
  for (const JoinTemplate& jt : model_->templates) any_anonymity |= jt.anonymity;
  double loss_sum = 0;
  int loss_n = 0;
  for (size_t t = 0; t < model_->templates.size() && cand.valid; ++t) {
    const JoinTemplate& jt = model_->templates[t];
    const auto changed = ChangedX(t, cand, link, hyps);
    double ext = jt.anonymity ? std::numeric_limits<double>::infinity() : 0;
    for (const auto& [key, fresh] : changed) {
      const std::vector<PairRef> pairs = PairsAfter(t, key, fresh, in_link);
      if (pairs.empty()) continue;  // x no longer occurs in the join
      const double v = Measure(t, pairs);
      if (!Satisfies(t, v)) {
        cand.valid = false;
        break;
      }
      ext = jt.anonymity ? std::min(ext, v) : std::max(ext, v);
    }
    if (!cand.valid || !want_loss || jt.anonymity != any_anonymity) continue;
    for (const auto& [key, e] : xmaps_[t]) {
      if (changed.contains(key)) continue;
      ext = jt.anonymity ? std::min(ext, e.value) : std::max(ext, e.value);
    }
    loss_sum += jt.anonymity ? values_[t] - ext : ext - values_[t];
    ++loss_n;
  }
  cand.priv_loss = loss_n ? loss_sum / loss_n : 0;
  cand.score = Score(cand);
}

double SequentialSpecializer::Score(const Candidate& cand) const {
  // The join has no group statistics for discernibility (the spec refuses it with sequential
  // releases); as before, that score function ranks by InfoGain here.
  const fedanon::v1::ScoreFunction score = engine::ScoreNeedsDiscernibility(options_.score)
                                               ? fedanon::v1::SCORE_FUNCTION_INFOGAIN
                                               : options_.score;
  engine::ScoreInputs in;
  in.distortion_units = cand.distortion_units;
  in.info_gain = cand.info_gain;
  in.split_info = cand.split_info;
  in.priv_loss = cand.priv_loss;
  return engine::CandidateScore(score, in);
}

void SequentialSpecializer::Apply(Candidate& cand) {
  const int a = cand.attr;
  const engine::NodeIndex v = cand.node;
  engine::AttributeHierarchy& h = (*hier_)[a];
  const std::string label = h.CandidateLabel(v, cand.c, options_.suppression_token);
  const std::vector<engine::NodeIndex> kids = h.Specialize(v, cand.c);
  tips_->Specialize(a, v, cand.c);
  if (h.kind() == table::QidKind::kContinuous) {
    for (engine::NodeIndex k : kids) {
      h.SetSplit(k, engine::ChooseSplitRank(tips_->RankClassHistogram(a, k), num_classes_,
                                            h.node(k).rank_lo, true));
    }
  }
  const std::vector<int>& slots = slots_of_qid_[a];
  const std::vector<int32_t> link =
      joined_[a] && static_cast<size_t>(v) < link_[a].size() ? link_[a][v] : std::vector<int32_t>();
  for (int32_t p : link) {
    if (!parts1_[p].alive) continue;
    parts1_[p].alive = false;
    std::vector<std::vector<uint32_t>> split(kids.size());
    for (uint32_t r : parts1_[p].records) {
      split[h.ChildOfRecord(v, cand.c, data_->qids[a].codes[r])].push_back(r);
    }
    for (size_t ch = 0; ch < kids.size(); ++ch) {
      if (split[ch].empty()) continue;
      std::vector<engine::NodeIndex> key = parts1_[p].key;
      key[a] = kids[ch];
      std::vector<int32_t> join = parts1_[p].join;
      for (int j : slots) join[j] = h.node(kids[ch]).tax;
      AddPart1(std::move(key), std::move(join), std::move(split[ch]));
    }
    parts1_[p].records.clear();
    parts1_[p].records.shrink_to_fit();
  }
  const size_t applied = &cand - cands_.data();
  for (Candidate& c : cands_) {
    if (c.attr == a && c.node == v) c.alive = false;
  }
  for (engine::NodeIndex k : kids) AddCandidates(a, k);

  const Candidate& best = cands_[applied];
  fedanon::v1::SpecializationStep step;
  step.set_round(static_cast<uint32_t>(steps_.size() + 1));
  step.set_attribute(data_->qids[a].name);
  step.set_value(label);
  for (engine::NodeIndex k : kids) step.add_children(h.Label(k, options_.suppression_token));
  step.set_score(best.score);
  step.set_info_gain(best.info_gain);
  step.set_records(best.records);
  steps_.push_back(step);
  if (joined_[a]) RebuildJoin();
  if (options_.on_step) options_.on_step(step);
}

int SequentialSpecializer::PickBest() {
  int best = -1;
  engine::CandidateRank best_rank;
  for (size_t i = 0; i < cands_.size(); ++i) {
    Candidate& c = cands_[i];
    if (!c.alive) continue;
    Evaluate(c);
    if (!c.valid) {
      if (prunable_) c.alive = false;  // anti-monotone (Cor. 6.2.1): it stays invalid
      continue;
    }
    if (c.records == 0) continue;  // a value no record has: nothing to specialize
    if (options_.beneficial && !c.beneficial) continue;
    const engine::CandidateRank rank{c.score, c.attr, (*hier_)[c.attr].OrderKey(c.node), c.c};
    if (best < 0 || engine::RanksAbove(rank, best_rank)) {
      best = static_cast<int>(i);
      best_rank = rank;
    }
  }
  return best;
}

absl::StatusOr<std::string> SequentialSpecializer::Run() {
  while (true) {
    if (options_.max_rounds && steps_.size() >= options_.max_rounds) {
      return std::string("reached max_rounds");
    }
    const int best = PickBest();
    if (best < 0) return std::string("no valid candidate left");
    Apply(cands_[best]);
  }
}

std::string SequentialSpecializer::DescribeX(size_t t, const XEntry& entry) const {
  const JoinTemplate& jt = model_->templates[t];
  if (entry.pairs.empty()) return "{}";
  const Part1& p1 = parts1_[entry.pairs[0].first];
  const Part2& p2 = parts2_[entry.pairs[0].second];
  std::vector<std::string> parts;
  for (int q : jt.x1) {
    parts.push_back(base::Cat("current.", data_->qids[q].name, "=",
                              (*hier_)[q].Label(p1.key[q], options_.suppression_token)));
  }
  for (int c : jt.x2) {
    const CodedColumn& col = model_->previous_columns[c];
    parts.push_back(base::Cat(model_->PreviousRef(c), "=", col.values[p2.example[c]]));
  }
  return base::Cat("{", absl::StrJoin(parts, ", "), "}");
}

void SequentialSpecializer::FillReport(const std::string& stop_reason,
                                       fedanon::v1::Report* report) const {
  for (const auto& s : steps_) *report->add_steps() = s;
  const size_t q = data_->qids.size();
  uint64_t groups = 0;
  std::vector<std::vector<engine::NodeIndex>> cut(q);
  for (size_t p = 0; p < tips_->partition_count(); ++p) {
    if (!tips_->alive(static_cast<int32_t>(p))) continue;
    ++groups;
    const std::vector<engine::NodeIndex>& key = tips_->key(static_cast<int32_t>(p));
    for (size_t a = 0; a < q; ++a) cut[a].push_back(key[a]);
  }
  for (size_t a = 0; a < q; ++a) {
    std::sort(cut[a].begin(), cut[a].end());
    cut[a].erase(std::unique(cut[a].begin(), cut[a].end()), cut[a].end());
    auto* ac = report->add_cut();
    ac->set_attribute(data_->qids[a].name);
    for (engine::NodeIndex n : cut[a])
      ac->add_values((*hier_)[a].Label(n, options_.suppression_token));
  }
  report->set_groups(groups);
  uint64_t smallest = 0;
  double largest = 0;
  bool any = false;
  for (size_t t = 0; t < model_->templates.size(); ++t) {
    if (model_->templates[t].anonymity) {
      // (values_ is finite: population-related releases have a non-empty join)
      const uint64_t v = std::isfinite(values_[t]) ? static_cast<uint64_t>(values_[t]) : 0;
      smallest = any ? std::min(smallest, v) : v;
      any = true;
    } else {
      largest = std::max(largest, values_[t]);
    }
  }
  report->set_smallest_group(smallest);
  report->set_largest_confidence(largest);
  report->set_constraints_checked(model_->templates.size());
  report->set_stop_reason(stop_reason);
}

}  // namespace fedanon::sequential
