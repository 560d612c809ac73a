#include "party/vertical_local.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/engine/hierarchy.h"
#include "common/engine/numeric_split.h"
#include "common/engine/tds_engine.h"
#include "crypto/hash.h"

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

bool SameProposal(const fedanon::v1::LocalGroupProposal& a,
                  const fedanon::v1::LocalGroupProposal& b) {
  return a.group() == b.group() && a.attribute() == b.attribute() &&
         a.candidate() == b.candidate() && a.score() == b.score();
}

common::CandidateRank RankOf(const fedanon::v1::LocalGroupProposal& p) {
  return {p.score(), static_cast<int>(p.attribute()), 0, p.candidate()};
}

void PutWord(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
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
  r->order_id_ = {0};
  return r;
}

fedanon::v1::LocalProposals VerticalLocalReplica::Propose(uint64_t wave) {
  fedanon::v1::LocalProposals out;
  out.set_live_groups(live_.size());
  out.set_state_digest(StateDigest());
  proposed_wave_ = wave;
  checked_wave_ = 0;
  winners_.clear();
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
  proposed_msg_ = out;
  return out;
}

std::string VerticalLocalReplica::StateDigest() const {
  std::string bytes;
  const size_t key_words = keys_.empty() ? 0 : keys_[0].size() * 3;
  bytes.reserve(64 + live_.size() * 8 * (2 + key_words) + group_of_.size() * 4);
  bytes.append("fedanon vertical local state v1");
  PutWord(waves_, &bytes);
  PutWord(live_.size(), &bytes);
  for (int32_t g : live_) {
    PutWord(static_cast<uint64_t>(g), &bytes);
    PutWord(records_[g].size(), &bytes);
    for (const LocalValue& v : keys_[g]) {
      PutWord(static_cast<uint64_t>(static_cast<int64_t>(v.node)), &bytes);
      PutWord(static_cast<uint64_t>(static_cast<int64_t>(v.lo)), &bytes);
      PutWord(static_cast<uint64_t>(static_cast<int64_t>(v.hi)), &bytes);
    }
  }
  PutWord(group_of_.size(), &bytes);
  for (int32_t g : group_of_) {
    const uint32_t u = static_cast<uint32_t>(g);
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  }
  return crypto::Sha256(bytes);
}

absl::Status VerticalLocalReplica::CheckProposals(
    uint64_t wave,
    const std::vector<std::pair<std::string, fedanon::v1::LocalProposals>>& proposals) {
  if (wave != proposed_wave_ || proposed_.size() != live_.size()) {
    return Refuse(absl::StrCat("the proposals of wave ", wave, ", but this party proposed in wave ",
                               proposed_wave_));
  }
  checked_wave_ = 0;
  winners_.clear();
  const std::string own_digest = proposed_msg_.state_digest();
  bool heard_self = false;
  std::map<uint32_t, std::pair<std::string, fedanon::v1::LocalGroupProposal>> best;
  for (const auto& [party, list] : proposals) {
    if (list.state_digest() != own_digest || list.live_groups() != live_.size()) {
      return Refuse(absl::StrCat("the replicas diverged: the public state of '", party,
                                 "' before wave ", wave, " (", list.live_groups(),
                                 " live groups) differs from this party's (", live_.size(),
                                 " live groups)"));
    }
    if (party == self_) {
      fedanon::v1::LocalProposals mine = list;
      mine.clear_signature();
      if (mine.SerializeAsString() != proposed_msg_.SerializeAsString()) {
        return Refuse(absl::StrCat("the relayed proposals of this party for wave ", wave,
                                   " are not the ones it made"));
      }
      heard_self = true;
    }
    int64_t last = -1;
    for (const auto& p : list.proposals()) {
      const int32_t g = static_cast<int32_t>(p.group());
      if (!std::binary_search(live_.begin(), live_.end(), g) || g <= last) {
        return Refuse(absl::StrCat("'", party, "' proposes for group ", p.group(),
                                   ", which is not a live group (or is named twice)"));
      }
      last = g;
      const size_t a = p.attribute();
      if (a >= owner_of_.size() || owner_of_[a] != party) {
        return Refuse(absl::StrCat("'", party, "' proposes a split of group ", g, " on attribute ",
                                   a, ", which it does not hold"));
      }
      auto [it, fresh] = best.try_emplace(p.group(), party, p);
      if (!fresh && common::RanksAbove(RankOf(p), RankOf(it->second.second))) {
        it->second = {party, p};
      }
    }
  }
  if (!heard_self) {
    return Refuse(absl::StrCat("the proposals of wave ", wave, " lack this party's own"));
  }
  winners_ = std::move(best);
  checked_wave_ = wave;
  return absl::OkStatus();
}

absl::Status VerticalLocalReplica::CloseWaves(uint64_t wave) {
  if (checked_wave_ != wave || wave == 0) {
    return Refuse(absl::StrCat("the closing wave ", wave, " comes without checked proposals"));
  }
  if (!winners_.empty()) {
    return Refuse(absl::StrCat("the leader closes the waves at wave ", wave, ", but ",
                               winners_.size(), " groups have a valid signed proposal"));
  }
  closed_ = true;
  return absl::OkStatus();
}

absl::StatusOr<fedanon::v1::LocalInstruction> VerticalLocalReplica::MakeInstruction(
    uint64_t wave, const fedanon::v1::LocalWinners& won) {
  if (wave != proposed_wave_) {
    return Refuse(absl::StrCat("winners of wave ", wave, ", but this party proposed in wave ",
                               proposed_wave_));
  }
  if (checked_wave_ != wave) {
    return Refuse(absl::StrCat("winners of wave ", wave,
                               " without every party's signed proposals of the wave"));
  }
  // The leader's announcement must be exactly the groups this party's proposal wins.
  std::vector<const fedanon::v1::LocalGroupProposal*> should_win;
  for (const auto& [group, w] : winners_) {
    if (w.first == self_) should_win.push_back(&w.second);
  }
  for (size_t i = 0; i < should_win.size() || i < static_cast<size_t>(won.won_size()); ++i) {
    if (i >= should_win.size() || i >= static_cast<size_t>(won.won_size()) ||
        !SameProposal(*should_win[i], won.won(static_cast<int>(i)))) {
      const uint32_t g =
          i < should_win.size() ? should_win[i]->group() : won.won(static_cast<int>(i)).group();
      const auto found = winners_.find(g);
      return Refuse(absl::StrCat(
          "the leader's winners differ from the best signed proposals: group ", g,
          found == winners_.end() ? " has no signed proposal"
                                  : absl::StrCat(" is won by '", found->second.first,
                                                 "' (attribute ", found->second.second.attribute(),
                                                 ", score ", found->second.second.score(), ")")));
    }
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
  // Exactly the recomputed winners: a won group's split from its winner, with its signed
  // proposal; nothing else.
  if (checked_wave_ != wave) {
    return Refuse(absl::StrCat("the commit of wave ", wave,
                               " comes without every party's signed proposals of the wave"));
  }
  for (const auto& [g, split] : splits) {
    const auto w = winners_.find(static_cast<uint32_t>(g));
    if (w == winners_.end()) {
      return Refuse(absl::StrCat("'", split.first, "' instructs a split of group ", g,
                                 ", which no signed proposal of the wave wins"));
    }
    if (w->second.first != split.first ||
        !SameProposal(w->second.second, split.second->proposal())) {
      return Refuse(absl::StrCat("'", split.first, "' instructs a split of group ", g,
                                 ", which the signed proposal of '", w->second.first, "' wins"));
    }
  }
  for (const auto& [g, w] : winners_) {
    if (!splits.count(static_cast<int32_t>(g))) {
      return Refuse(absl::StrCat("the instruction of '", w.first, "' for group ", g,
                                 ", which it won in wave ", wave,
                                 ", is missing (withheld from this party)"));
    }
  }
  // Apply in group order; children numbered in that order (every replica alike). The report's
  // steps come in the centralized order instead: best score first, ties to the group the
  // centralized recoder created first (its id, tracked in order_id_).
  struct WaveStep {
    double score;
    uint32_t parent_order;
    std::vector<int32_t> children;  // public ids of the non-empty children, in child order
    fedanon::v1::SpecializationStep step;
  };
  std::vector<WaveStep> wave_steps;
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
    step.set_attribute(data_->qids[a].name);
    const LocalValue parent = keys_[g][a];
    const common::QidColumn& col = data_->qids[a];
    step.set_value(
        col.kind == QidKind::kSuppression
            ? absl::StrCat(spec_.suppression_token(), " -> ", col.values[split.children(0).node()])
            : ValueLabel(a, parent));
    step.set_score(split.proposal().score());
    step.set_records(records_[g].size());
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
    std::vector<int32_t> kids;
    for (int32_t c : id) {
      if (c >= 0) kids.push_back(c);
    }
    wave_steps.push_back(
        {split.proposal().score(), order_id_[g], std::move(kids), std::move(step)});
  }
  std::stable_sort(wave_steps.begin(), wave_steps.end(), [](const WaveStep& x, const WaveStep& y) {
    return x.score > y.score || (x.score == y.score && x.parent_order < y.parent_order);
  });
  for (WaveStep& w : wave_steps) {
    for (int32_t c : w.children) {
      if (order_id_.size() <= static_cast<size_t>(c)) order_id_.resize(c + 1, 0);
      order_id_[c] = next_order_id_++;
    }
    w.step.set_round(static_cast<uint32_t>(steps_.size() + 1));
    steps_.push_back(std::move(w.step));
  }
  std::sort(next_live.begin(), next_live.end());
  live_ = std::move(next_live);
  proposed_.clear();
  own_instruction_.reset();
  checked_wave_ = 0;
  winners_.clear();
  ++waves_;
  return absl::OkStatus();
}

absl::Status VerticalLocalReplica::CheckRelease() const {
  if (!closed_) {
    return absl::FailedPreconditionError(absl::StrCat(
        kRefusedLocalWave,
        ": refused to release: the replicas' final states were not compared (no closing wave)"));
  }
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
  const size_t listed = std::min<size_t>(steps_.size(), common::kMaxReportedLocalSteps);
  for (size_t i = 0; i < listed; ++i) *report->add_steps() = steps_[i];
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
