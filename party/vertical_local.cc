#include "party/vertical_local.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/engine/hierarchy.h"
#include "common/engine/numeric_split.h"
#include "common/engine/tds_engine.h"

namespace fedanon::party {

using common::LocalValue;
using common::QidKind;

namespace {

absl::Status Refuse(const std::string& why) {
  return absl::PermissionDeniedError(absl::StrCat(kRefusedLocalWave, ": ", why));
}

LocalValue FromMessage(const fedanon::v1::LocalValueMessage& m) {
  return {m.node(), m.lo(), m.hi()};
}

}  // namespace

absl::StatusOr<std::unique_ptr<VerticalLocalReplica>> VerticalLocalReplica::Create(
    const common::Dataset* data, const common::PrivacyModel* model,
    const fedanon::v1::JobSpec& spec, std::string self, std::vector<std::string> owner_of) {
  std::unique_ptr<VerticalLocalReplica> r(new VerticalLocalReplica());
  r->data_ = data;
  r->model_ = model;
  r->spec_ = spec;
  r->self_ = std::move(self);
  r->owner_of_ = std::move(owner_of);
  r->rule_ = common::LocalRuleFromModel(*model, data->tracked.size());
  if (common::LocalRuleHasConfidenceBound(r->rule_)) {
    return absl::UnimplementedError(
        "a vertical job with recoding: local and a confidence bound needs judges (the holders of "
        "the sensitive values) to veto per group; that is not built: use recoding: global, or a "
        "model without confidence bounds (k-anonymity templates)");
  }
  r->rule_.score = spec.score();
  r->rule_.beneficial = spec.beneficial();
  const common::NumericSplitConfig numeric = common::NumericSplitFromSpec(spec);
  const int q = static_cast<int>(data->qids.size());
  std::vector<std::vector<int32_t>> bins(q);
  for (int a = 0; a < q; ++a) {
    if (r->owner_of_[a] != r->self_) continue;
    r->own_attrs_.push_back(a);
    const common::QidColumn& col = data->qids[a];
    if (col.kind != QidKind::kContinuous || !numeric.binned()) continue;
    // The global bins from this party's own column (it holds every common record's value).
    const std::vector<int32_t> cells = common::PublicCellBounds(col, numeric.cells);
    if (cells.size() < 2) continue;
    std::vector<uint64_t> counts(cells.size() - 1, 0);
    for (size_t i = 0; i < data->num_records; ++i) {
      const auto it = std::upper_bound(cells.begin(), cells.end(), col.codes[i]);
      if (it == cells.begin() || it == cells.end()) continue;
      ++counts[static_cast<size_t>(it - cells.begin()) - 1];
    }
    bins[a] = common::MergeCellsIntoBins(cells, counts,
                                         common::SplitBinBound(*model, numeric.min_split_bin));
  }
  if (numeric.binned()) {
    // As the centralized LocalRecoder: within a group, bins of at least kmin records (the
    // largest k), never finer than the global bins' own bound.
    r->rule_.within_group_min_bin =
        std::max<uint64_t>(r->rule_.kmin, common::SplitBinBound(*model, numeric.min_split_bin));
  }
  r->fine_ = std::make_unique<common::LocalFineMap>(data, numeric.binned(), std::move(bins));
  std::vector<LocalValue> root = common::LocalRootKey(*data);
  const uint64_t n = data->num_records;
  if (n < r->rule_.kmin) {
    return absl::FailedPreconditionError(
        absl::StrCat("privacy requirement cannot be met: local recoding needs groups of at least ",
                     r->rule_.kmin, " records but the joined table has only ", n, " records"));
  }
  r->keys_.push_back(std::move(root));
  r->records_.emplace_back(n);
  for (uint32_t i = 0; i < n; ++i) r->records_[0][i] = i;
  r->live_ = {0};
  r->group_of_.assign(n, 0);
  return r;
}

fedanon::v1::LocalProposals VerticalLocalReplica::Propose(uint64_t wave) {
  fedanon::v1::LocalProposals out;
  out.set_live_groups(live_.size());
  proposed_wave_ = wave;
  proposed_.assign(live_.size(), std::nullopt);
  for (size_t i = 0; i < live_.size(); ++i) {
    const int32_t g = live_[i];
    proposed_[i] =
        common::BestLocalCandidate(*data_, *fine_, rule_, keys_[g], records_[g], own_attrs_);
    if (!proposed_[i]) continue;
    auto* p = out.add_proposals();
    p->set_group(static_cast<uint32_t>(g));
    p->set_attribute(static_cast<uint32_t>(proposed_[i]->attr));
    p->set_candidate(proposed_[i]->c);
    p->set_score(proposed_[i]->score);
  }
  return out;
}

absl::StatusOr<fedanon::v1::LocalInstruction> VerticalLocalReplica::MakeInstruction(
    uint64_t wave, const fedanon::v1::LocalWinners& won) {
  if (wave != proposed_wave_) {
    return Refuse(absl::StrCat("winners of wave ", wave, ", but this party proposed in wave ",
                               proposed_wave_));
  }
  fedanon::v1::LocalInstruction out;
  out.set_wave(wave);
  int32_t last = -1;
  for (const auto& w : won.won()) {
    const int32_t g = static_cast<int32_t>(w.group());
    const auto it = std::lower_bound(live_.begin(), live_.end(), g);
    if (it == live_.end() || *it != g || g <= last) {
      return Refuse(absl::StrCat("the leader names group ", w.group(),
                                 ", which is not a live group (or is named twice)"));
    }
    last = g;
    const auto& mine = proposed_[static_cast<size_t>(it - live_.begin())];
    if (!mine || mine->attr != static_cast<int>(w.attribute()) || mine->c != w.candidate() ||
        mine->score != w.score()) {
      return Refuse(absl::StrCat("the leader's winner in group ", g,
                                 " is not this party's proposal of the wave"));
    }
    auto* split = out.add_splits();
    *split->mutable_proposal() = w;
    for (const LocalValue& v : mine->child_values) {
      auto* m = split->add_children();
      m->set_node(v.node);
      m->set_lo(v.lo);
      m->set_hi(v.hi);
    }
    for (int32_t c : common::LocalChildrenOf(*data_, *fine_, keys_[g], records_[g], *mine)) {
      split->add_child_of_record(static_cast<uint32_t>(c));
    }
  }
  own_instruction_ = std::pair{wave, out};
  return out;
}

absl::Status VerticalLocalReplica::CheckSplit(const std::string& sender,
                                              const fedanon::v1::LocalSplit& split,
                                              const std::vector<bool>& split_this_wave) const {
  const auto& p = split.proposal();
  const int32_t g = static_cast<int32_t>(p.group());
  const auto it = std::lower_bound(live_.begin(), live_.end(), g);
  if (it == live_.end() || *it != g) {
    return Refuse(absl::StrCat("'", sender, "' splits group ", p.group(), ", not a live group"));
  }
  if (split_this_wave[static_cast<size_t>(it - live_.begin())]) {
    return Refuse(absl::StrCat("group ", g, " is split twice in one wave"));
  }
  const int a = static_cast<int>(p.attribute());
  if (a < 0 || static_cast<size_t>(a) >= owner_of_.size() || owner_of_[a] != sender) {
    return Refuse(absl::StrCat("'", sender, "' splits group ", g, " on attribute ", p.attribute(),
                               ", which it does not hold"));
  }
  const LocalValue key = keys_[g][a];
  const common::QidColumn& col = data_->qids[a];
  const int children = split.children_size();
  bool shape_ok = children >= 1;  // a taxonomy node may have a single child
  switch (col.kind) {
    case QidKind::kTaxonomy: {
      const auto& kids = col.taxonomy->children(key.node);
      shape_ok = shape_ok && static_cast<size_t>(children) == kids.size();
      for (int c = 0; shape_ok && c < children; ++c) {
        shape_ok = split.children(c).node() == kids[c];
      }
      break;
    }
    case QidKind::kContinuous: {
      const LocalValue l = FromMessage(split.children(0)), h = FromMessage(split.children(1));
      shape_ok = shape_ok && children == 2 && l.lo == key.lo && h.hi == key.hi && l.hi == h.lo &&
                 key.lo < l.hi && l.hi < key.hi;
      break;
    }
    case QidKind::kSuppression:
      shape_ok = shape_ok && children == 2 && key.node == -1 && split.children(0).node() >= 0 &&
                 static_cast<size_t>(split.children(0).node()) < col.values.size() &&
                 split.children(1).node() == -1;
      break;
  }
  if (!shape_ok) {
    return Refuse(absl::StrCat("the children of group ", g, " on '", col.name,
                               "' are not the children of its value"));
  }
  if (static_cast<size_t>(split.child_of_record_size()) != records_[g].size()) {
    return Refuse(absl::StrCat("the split of group ", g, " places ", split.child_of_record_size(),
                               " records, but the group has ", records_[g].size()));
  }
  std::vector<uint64_t> sizes(static_cast<size_t>(children), 0);
  for (uint32_t c : split.child_of_record()) {
    if (c >= static_cast<uint32_t>(children)) {
      return Refuse(absl::StrCat("the split of group ", g, " names child ", c));
    }
    ++sizes[c];
  }
  // A split may leave a single non-empty child (the group's value becomes more specific without
  // dividing it), as in the centralized recoder.
  for (uint64_t s : sizes) {
    if (s == 0) continue;
    if (s < rule_.kmin) {
      return Refuse(absl::StrCat("the split of group ", g, " on '", col.name,
                                 "' leaves a group of ", s, " records, fewer than ", rule_.kmin));
    }
  }
  return absl::OkStatus();
}

absl::Status VerticalLocalReplica::ApplyWave(
    uint64_t wave,
    const std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>>& from_others) {
  std::vector<std::pair<std::string, const fedanon::v1::LocalInstruction*>> all;
  if (own_instruction_ && own_instruction_->first == wave) {
    all.emplace_back(self_, &own_instruction_->second);
  }
  for (const auto& [sender, instruction] : from_others) {
    if (sender == self_) return Refuse("an instruction from this party itself was relayed");
    for (const auto& [s, unused] : all) {
      if (s == sender) return Refuse(absl::StrCat("two instructions from '", sender, "'"));
    }
    if (instruction.wave() != wave) {
      return Refuse(
          absl::StrCat("'", sender, "' instructed wave ", instruction.wave(), ", not wave ", wave));
    }
    all.emplace_back(sender, &instruction);
  }
  // Check every split before applying any.
  std::vector<bool> split_this_wave(live_.size(), false);
  std::map<int32_t, std::pair<std::string, const fedanon::v1::LocalSplit*>> splits;
  for (const auto& [sender, instruction] : all) {
    for (const auto& split : instruction->splits()) {
      RETURN_IF_ERROR(CheckSplit(sender, split, split_this_wave));
      const int32_t g = static_cast<int32_t>(split.proposal().group());
      split_this_wave[std::lower_bound(live_.begin(), live_.end(), g) - live_.begin()] = true;
      splits[g] = {sender, &split};
    }
  }
  // Apply in group order; children numbered in that order (every replica alike).
  std::vector<int32_t> next_live;
  for (int32_t g : live_) {
    auto found = splits.find(g);
    if (found == splits.end()) {
      next_live.push_back(g);
      continue;
    }
    const fedanon::v1::LocalSplit& split = *found->second.second;
    const int a = static_cast<int>(split.proposal().attribute());
    const size_t children = static_cast<size_t>(split.children_size());
    std::vector<int32_t> id(children, -1);
    std::vector<uint64_t> sizes(children, 0);
    for (uint32_t c : split.child_of_record()) ++sizes[c];
    fedanon::v1::SpecializationStep step;
    step.set_round(static_cast<uint32_t>(steps_.size() + 1));
    step.set_attribute(data_->qids[a].name);
    const LocalValue parent = keys_[g][a];
    const common::QidColumn& col = data_->qids[a];
    step.set_value(
        col.kind == QidKind::kSuppression
            ? absl::StrCat(spec_.suppression_token(), " -> ", col.values[split.children(0).node()])
            : ValueLabel(a, parent));
    step.set_score(split.proposal().score());
    step.set_records(records_[g].size());
    step_origin_.push_back({waves_, g, static_cast<int32_t>(keys_.size())});
    for (size_t c = 0; c < children; ++c) {
      if (sizes[c] == 0) continue;
      id[c] = static_cast<int32_t>(keys_.size());
      std::vector<LocalValue> key = keys_[g];
      key[a] = FromMessage(split.children(static_cast<int>(c)));
      step.add_children(ValueLabel(a, key[a]));
      keys_.push_back(std::move(key));
      records_.emplace_back();
      records_.back().reserve(sizes[c]);
      next_live.push_back(id[c]);
    }
    const std::vector<uint32_t> members = std::move(records_[g]);
    records_[g].clear();
    for (size_t i = 0; i < members.size(); ++i) {
      const int32_t child = id[split.child_of_record(static_cast<int>(i))];
      records_[child].push_back(members[i]);
      group_of_[members[i]] = child;
    }
    steps_.push_back(std::move(step));
  }
  std::sort(next_live.begin(), next_live.end());
  live_ = std::move(next_live);
  proposed_.clear();
  own_instruction_.reset();
  ++waves_;
  return absl::OkStatus();
}

absl::Status VerticalLocalReplica::CheckRelease() const {
  // Coded apart from the group bookkeeping: count the records per distinct released key, each
  // record's key read through its group (the public partition every replica shares).
  std::map<std::vector<std::tuple<int32_t, int32_t, int32_t>>, uint64_t> classes;
  uint64_t covered = 0;
  for (int32_t g : live_) {
    std::vector<std::tuple<int32_t, int32_t, int32_t>> k;
    for (const LocalValue& v : keys_[g]) k.emplace_back(v.node, v.lo, v.hi);
    classes[k] += records_[g].size();
    covered += records_[g].size();
  }
  if (covered != data_->num_records) {
    return absl::InternalError("the final groups do not cover every common record");
  }
  for (const auto& [k, n] : classes) {
    if (n < rule_.kmin) {
      return absl::FailedPreconditionError(
          absl::StrCat("refused to release: a final local-recoding group has ", n,
                       " records, fewer than ", rule_.kmin));
    }
  }
  return absl::OkStatus();
}

std::string VerticalLocalReplica::ValueLabel(int a, const LocalValue& v) const {
  const common::QidColumn& col = data_->qids[a];
  switch (col.kind) {
    case QidKind::kTaxonomy:
      return col.taxonomy->label(v.node);
    case QidKind::kSuppression:
      return v.node < 0 ? spec_.suppression_token() : col.values[v.node];
    case QidKind::kContinuous: {
      const int32_t ranks = static_cast<int32_t>(col.sorted_values.size());
      if (v.lo < 0 || v.hi > ranks) return common::IntervalLabel(col.range_lo, col.range_hi);
      const double lo = v.lo == 0 ? col.range_lo : col.sorted_values[v.lo];
      const double hi = v.hi == ranks ? col.range_hi : col.sorted_values[v.hi];
      return common::IntervalLabel(lo, hi);
    }
  }
  return "";
}

std::string VerticalLocalReplica::Label(int a, uint32_t r) const {
  return ValueLabel(a, keys_[group_of_[r]][a]);
}

void VerticalLocalReplica::FillReport(const std::string& stop_reason,
                                      fedanon::v1::Report* report) const {
  report->set_recoding(fedanon::v1::RECODING_LOCAL);
  report->set_records_out(data_->num_records);
  report->set_groups(live_.size());
  // The steps in the centralized run's order (LocalRecoder::Run): wave by wave, best score first,
  // ties to the group the centralized run numbered first. That run numbers new groups in the
  // order it applies the splits, this replica in group order, so the centralized ids are
  // recomputed here wave by wave (the root is 0 in both).
  std::vector<int32_t> central(keys_.size(), -1);
  central[0] = 0;
  int32_t next_id = 1;
  std::vector<size_t> order;
  order.reserve(steps_.size());
  for (size_t begin = 0; begin < steps_.size();) {
    size_t end = begin;
    while (end < steps_.size() && step_origin_[end].wave == step_origin_[begin].wave) ++end;
    std::vector<size_t> wave(end - begin);
    std::iota(wave.begin(), wave.end(), begin);
    std::sort(wave.begin(), wave.end(), [&](size_t x, size_t y) {
      const double sx = steps_[x].score(), sy = steps_[y].score();
      return sx > sy ||
             (sx == sy && central[step_origin_[x].group] < central[step_origin_[y].group]);
    });
    for (size_t i : wave) {
      order.push_back(i);
      for (int c = 0; c < steps_[i].children_size(); ++c) {
        central[step_origin_[i].first_child + c] = next_id++;
      }
    }
    begin = end;
  }
  const size_t listed = std::min<size_t>(steps_.size(), common::kMaxReportedLocalSteps);
  for (size_t i = 0; i < listed; ++i) {
    auto* step = report->add_steps();
    *step = steps_[order[i]];
    step->set_round(static_cast<uint32_t>(i + 1));
  }
  uint64_t smallest = data_->num_records;
  long double squares = 0;
  for (int32_t g : live_) {
    const uint64_t s = records_[g].size();
    smallest = std::min(smallest, s);
    squares += static_cast<long double>(s) * static_cast<long double>(s);
  }
  for (size_t a = 0; a < data_->qids.size(); ++a) {
    std::vector<std::tuple<int32_t, int32_t, int32_t>> values;
    for (int32_t g : live_) {
      const LocalValue& v = keys_[g][a];
      values.emplace_back(v.node, v.lo, v.hi);
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    auto* cut = report->add_cut();
    cut->set_attribute(data_->qids[a].name);
    // Labels of attributes this party does not hold: intervals need the ranks' values, which
    // the public schema carries; taxonomy nodes and disclosed values are public.
    for (const auto& [node, lo, hi] : values) {
      cut->add_values(ValueLabel(static_cast<int>(a), LocalValue{node, lo, hi}));
    }
  }
  const long double n = static_cast<long double>(data_->num_records);
  report->set_smallest_group(smallest);
  report->set_discernibility_ratio(n > 0 ? static_cast<double>(squares / (n * n)) : 0);
  report->set_constraints_checked(model_->constraints.size());
  report->set_stop_reason(listed == steps_.size()
                              ? stop_reason
                              : absl::StrCat(stop_reason, " (", steps_.size(),
                                             " specializations; the report lists the first ",
                                             listed, ")"));
}

}  // namespace fedanon::party
