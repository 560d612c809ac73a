#include "party/vertical_local.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/engine/candidate_score.h"
#include "common/engine/hierarchy.h"
#include "common/engine/local_candidates.h"
#include "common/engine/numeric_split.h"
#include "common/engine/tds_engine.h"
#include "common/spec/job_spec_loader.h"
#include "crypto/hash.h"

namespace fedanon::party {

using engine::LocalValue;
using table::QidKind;

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

engine::CandidateRank RankOf(const fedanon::v1::LocalGroupProposal& p) {
  return {p.score(), static_cast<int>(p.attribute()), 0, p.candidate()};
}

void PutWord(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

absl::StatusOr<std::unique_ptr<VerticalLocalReplica>> VerticalLocalReplica::Create(
    const table::Dataset* data, const engine::PrivacyModel* model, const fedanon::v1::JobSpec& spec,
    std::string self, std::vector<std::string> owner_of) {
  if (model->distribution.has_value()) {
    return absl::InvalidArgumentError(
        "local recoding does not support privacy.model ldiversity or tcloseness (global only)");
  }
  std::unique_ptr<VerticalLocalReplica> r(new VerticalLocalReplica());
  r->data_ = data;
  r->model_ = model;
  r->spec_ = spec;
  r->self_ = std::move(self);
  r->owner_of_ = std::move(owner_of);
  r->rule_ = engine::LocalRuleFromModel(*model, data->tracked.size());
  // The holders of the bounded sensitive values judge every wave's winning splits; a proposer
  // checks the bounds only on the sensitive values it holds itself (its data's other bits are 0).
  r->judges_ = spec::VerticalLocalJudges(spec);
  RETURN_IF_ERROR(spec::CheckFederatedRecoding(spec));
  r->rule_.score = spec.score();
  r->rule_.beneficial = spec.beneficial();
  const engine::NumericSplitConfig numeric = engine::NumericSplitFromSpec(spec);
  const int q = static_cast<int>(data->qids.size());
  std::vector<std::vector<int32_t>> bins(q);
  for (int a = 0; a < q; ++a) {
    if (r->owner_of_[a] != r->self_) continue;
    r->own_attrs_.push_back(a);
    const table::QidColumn& col = data->qids[a];
    if (col.kind != QidKind::kContinuous || !numeric.binned()) continue;
    // The global bins from this party's own column (it holds every common record's value).
    const std::vector<int32_t> cells = engine::PublicCellBounds(col, numeric.cells);
    if (cells.size() < 2) continue;
    std::vector<uint64_t> counts(cells.size() - 1, 0);
    for (size_t i = 0; i < data->num_records; ++i) {
      const auto it = std::upper_bound(cells.begin(), cells.end(), col.codes[i]);
      if (it == cells.begin() || it == cells.end()) continue;
      ++counts[static_cast<size_t>(it - cells.begin()) - 1];
    }
    bins[a] = engine::MergeCellsIntoBins(cells, counts,
                                         engine::SplitBinBound(*model, numeric.min_split_bin));
  }
  if (numeric.binned()) {
    // As the centralized LocalRecoder: within a group, bins of at least kmin records (the
    // largest k), never finer than the global bins' own bound.
    r->rule_.within_group_min_bin = engine::WithinGroupBinBound(*model, numeric.min_split_bin);
  }
  r->fine_ = std::make_unique<engine::LocalFineMap>(data, numeric.binned(), std::move(bins));
  std::vector<LocalValue> root = engine::LocalRootKey(*data);
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
  r->depth_ = {0};
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
    // One veto per group and attribute: once a judge vetoed a candidate of
    // an attribute in this group, no other candidate of that attribute is proposed for it, so a
    // judge that vetoes wave after wave cannot see one split after another of the same values.
    const auto vetoed = vetoed_.find(g);
    std::vector<int> attrs;
    for (int a : own_attrs_) {
      if (vetoed == vetoed_.end() ||
          std::none_of(vetoed->second.begin(), vetoed->second.end(),
                       [a](const std::pair<int, int>& v) { return v.first == a; })) {
        attrs.push_back(a);
      }
    }
    proposed_[i] =
        engine::BestLocalCandidate(*data_, *fine_, rule_, keys_[g], records_[g], attrs, {});
    if (!proposed_[i]) continue;
    if (deviation_ != nullptr) deviation_->GroupProposalScore(&proposed_[i]->score);
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
  // The vetoed candidates of live groups (public: every party excludes them alike).
  PutWord(vetoed_.size(), &bytes);
  for (const auto& [g, list] : vetoed_) {
    PutWord(static_cast<uint64_t>(g), &bytes);
    PutWord(list.size(), &bytes);
    for (const auto& [a, c] : list) {
      PutWord(static_cast<uint64_t>(a), &bytes);
      PutWord(static_cast<uint64_t>(static_cast<int64_t>(c)), &bytes);
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
      const auto vetoed = vetoed_.find(g);
      if (vetoed != vetoed_.end() && std::any_of(vetoed->second.begin(), vetoed->second.end(),
                                                 [a](const std::pair<int, int>& v) {
                                                   return v.first == static_cast<int>(a);
                                                 })) {
        return Refuse(absl::StrCat("'", party, "' proposes for group ", g, " a candidate on ",
                                   data_->qids[a].name,
                                   ", an attribute of which a judge vetoed a candidate for this "
                                   "group in an earlier wave (one veto per group and attribute)"));
      }
      auto [it, fresh] = best.try_emplace(p.group(), party, p);
      if (!fresh && engine::RanksAbove(RankOf(p), RankOf(it->second.second))) {
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

fedanon::v1::LocalWinners VerticalLocalReplica::OwnWinners() const {
  fedanon::v1::LocalWinners out;
  for (const auto& [group, w] : winners_) {
    if (w.first == self_) *out.add_won() = w.second;
  }
  return out;
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
    split->set_info_gain(mine->info_gain);
    for (const LocalValue& v : mine->child_values) {
      auto* m = split->add_children();
      m->set_node(v.node);
      m->set_lo(v.lo);
      m->set_hi(v.hi);
    }
    for (int32_t c : engine::LocalChildrenOf(*data_, *fine_, keys_[g], records_[g], *mine)) {
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
  const table::QidColumn& col = data_->qids[a];
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

absl::Status VerticalLocalReplica::CheckDeclaredScore(int32_t g,
                                                      const fedanon::v1::LocalSplit& split) const {
  // A score whose privacy loss is the rise of a bounded confidence needs sensitive values that
  // only their holders have (each proposer scores with its own): not checked here.
  if (engine::ScoreNeedsPrivLoss(rule_.score) && !rule_.has_anonymity &&
      engine::LocalRuleHasConfidenceBound(rule_)) {
    return absl::OkStatus();
  }
  const size_t nc = static_cast<size_t>(std::max(1, data_->num_classes()));
  const size_t width = 1 + nc;
  const bool has_class = !data_->class_codes.empty();
  const std::vector<uint32_t>& members = records_[g];
  std::vector<uint64_t> stats(width, 0);
  std::vector<std::vector<uint64_t>> kids(static_cast<size_t>(split.children_size()),
                                          std::vector<uint64_t>(width, 0));
  for (size_t i = 0; i < members.size(); ++i) {
    std::vector<uint64_t>& k = kids[split.child_of_record(static_cast<int>(i))];
    ++stats[0];
    ++k[0];
    if (has_class) {
      ++stats[1 + data_->class_codes[members[i]]];
      ++k[1 + data_->class_codes[members[i]]];
    }
  }
  engine::LocalRule rule = rule_;
  rule.kmin = 0;  // sizes were checked (CheckSplit); only the score is wanted here
  std::vector<const uint64_t*> kid_words;
  kid_words.reserve(kids.size());
  for (const auto& k : kids) kid_words.push_back(k.data());
  const int a = static_cast<int>(split.proposal().attribute());
  const std::optional<engine::LocalChildrenScore> scored = engine::ScoreLocalChildren(
      rule, nc, 0, stats.data(), kid_words, a, split.proposal().candidate());
  if (!scored) return absl::OkStatus();
  if (engine::OverstatesScore(split.proposal().score(), scored->rank.score)) {
    return Refuse(absl::StrCat(engine::kScoreOverstated, ": the split of group ", g, " on '",
                               data_->qids[a].name, "' was declared at ", split.proposal().score(),
                               ", it gives ", scored->rank.score,
                               " here (every data party must hold the same class column)"));
  }
  return absl::OkStatus();
}

bool VerticalLocalReplica::is_judge() const {
  return std::find(judges_.begin(), judges_.end(), self_) != judges_.end();
}

absl::StatusOr<fedanon::v1::LocalVerdicts> VerticalLocalReplica::Judge(
    uint64_t wave,
    const std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>>& from_owners) {
  if (!is_judge()) return Refuse(absl::StrCat("asked to judge wave ", wave, ", but not a judge"));
  if (checked_wave_ != wave) {
    return Refuse(
        absl::StrCat("the splits of wave ", wave,
                     " to judge come without every party's signed proposals of the wave"));
  }
  std::vector<bool> split_this_wave(live_.size(), false);
  std::map<int32_t, const fedanon::v1::LocalSplit*> splits;
  std::set<std::string> senders;
  for (const auto& [sender, instruction] : from_owners) {
    if (sender == self_ || !senders.insert(sender).second) {
      return Refuse(absl::StrCat("two instructions from '", sender, "' to judge"));
    }
    if (instruction.wave() != wave) {
      return Refuse(
          absl::StrCat("'", sender, "' instructed wave ", instruction.wave(), ", not wave ", wave));
    }
    for (const auto& split : instruction.splits()) {
      RETURN_IF_ERROR(CheckSplit(sender, split, split_this_wave));
      const int32_t g = static_cast<int32_t>(split.proposal().group());
      split_this_wave[std::lower_bound(live_.begin(), live_.end(), g) - live_.begin()] = true;
      const auto w = winners_.find(static_cast<uint32_t>(g));
      if (w == winners_.end() || w->second.first != sender ||
          !SameProposal(w->second.second, split.proposal())) {
        return Refuse(absl::StrCat("'", sender, "' sends a split of group ", g,
                                   " to judge that is not the wave's signed winner"));
      }
      splits[g] = &split;
    }
  }
  fedanon::v1::LocalVerdicts out;
  const size_t m = data_->tracked.size();
  for (const auto& [group, w] : winners_) {
    if (w.first == self_) continue;
    const auto found = splits.find(static_cast<int32_t>(group));
    if (found == splits.end()) {
      return Refuse(
          absl::StrCat("the split of group ", group, " won by '", w.first,
                       "' is missing from the splits to judge (withheld from this judge)"));
    }
    const fedanon::v1::LocalSplit& split = *found->second;
    const std::vector<uint32_t>& members = records_[static_cast<int32_t>(group)];
    // Per child: [records, then per tracked value its count] on the values this party holds.
    std::vector<std::vector<uint64_t>> kids(static_cast<size_t>(split.children_size()),
                                            std::vector<uint64_t>(1 + m, 0));
    for (size_t i = 0; i < members.size(); ++i) {
      std::vector<uint64_t>& k = kids[split.child_of_record(static_cast<int>(i))];
      ++k[0];
      for (uint64_t bits = data_->sensitive_bits[members[i]]; bits != 0; bits &= bits - 1) {
        ++k[1 + static_cast<size_t>(__builtin_ctzll(bits))];
      }
    }
    bool accept = true;
    for (const auto& k : kids) {
      if (k[0] == 0) continue;
      for (size_t b = 0; b < m && accept; ++b) {
        const double conf = static_cast<double>(k[1 + b]) / static_cast<double>(k[0]);
        accept = conf <= rule_.bound[b] + engine::kConfidenceEpsilon;
      }
    }
    auto* v = out.add_verdicts();
    v->set_group(group);
    v->set_attribute(w.second.attribute());
    v->set_candidate(w.second.candidate());
    v->set_accept(accept);
  }
  judged_ = from_owners;
  judged_wave_ = wave;
  return out;
}

absl::Status VerticalLocalReplica::CheckVerdicts(
    uint64_t wave,
    const std::vector<std::pair<std::string, fedanon::v1::LocalVerdicts>>& verdicts) {
  verdicts_wave_ = 0;
  vetoed_now_.clear();
  if (checked_wave_ != wave) {
    return Refuse(absl::StrCat("the verdicts of wave ", wave,
                               " come without every party's signed proposals of the wave"));
  }
  std::map<uint32_t, bool> vetoed;
  for (const auto& [group, w] : winners_) vetoed[group] = false;
  std::set<std::string> heard;
  for (const auto& [judge, list] : verdicts) {
    if (!std::binary_search(judges_.begin(), judges_.end(), judge) || !heard.insert(judge).second) {
      return Refuse(absl::StrCat("forged local verdicts: '", judge,
                                 "' is not a judge of the job (or is named twice)"));
    }
    int i = 0;
    for (const auto& [group, w] : winners_) {
      if (w.first == judge) continue;
      if (i >= list.verdicts_size() || list.verdicts(i).group() != group ||
          list.verdicts(i).attribute() != w.second.attribute() ||
          list.verdicts(i).candidate() != w.second.candidate()) {
        return Refuse(absl::StrCat("the signed verdicts of judge '", judge,
                                   "' do not cover the winner of group ", group, " of wave ", wave,
                                   " (a verdict dropped, or about another candidate)"));
      }
      if (!list.verdicts(i).accept()) vetoed[group] = true;
      ++i;
    }
    if (i != list.verdicts_size()) {
      return Refuse(absl::StrCat("the signed verdicts of judge '", judge,
                                 "' name groups that no other party won in wave ", wave));
    }
  }
  if (heard.size() != judges_.size()) {
    return Refuse(absl::StrCat("the verdicts of wave ", wave,
                               " lack a judge's signed verdicts (a veto dropped)"));
  }
  vetoed_now_ = std::move(vetoed);
  verdicts_wave_ = wave;
  return absl::OkStatus();
}

absl::StatusOr<fedanon::v1::LocalInstruction> VerticalLocalReplica::PublishInstruction(
    uint64_t wave) {
  if (verdicts_wave_ != wave || !own_instruction_ || own_instruction_->first != wave) {
    return Refuse(absl::StrCat("asked to publish the splits of wave ", wave,
                               " without this party's instruction and the judges' verdicts"));
  }
  fedanon::v1::LocalInstruction out;
  out.set_wave(wave);
  for (const auto& split : own_instruction_->second.splits()) {
    if (!vetoed_now_.at(split.proposal().group())) *out.add_splits() = split;
  }
  return out;
}

absl::Status VerticalLocalReplica::ApplyWave(
    uint64_t wave,
    const std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>>& from_others) {
  ASSIGN_OR_RETURN(const WaveSplits splits, CheckedWaveSplits(wave, from_others));
  RETURN_IF_ERROR(CheckSplitsAreTheWinners(wave, splits));
  if (!judges_.empty()) {
    for (const auto& [g, vetoed] : vetoed_now_) {
      if (!vetoed) continue;
      const auto& p = winners_.at(g).second;
      vetoed_[static_cast<int32_t>(g)].emplace_back(static_cast<int>(p.attribute()), p.candidate());
      ++vetoes_;
    }
  }
  // Apply in group order; children numbered in that order (every replica alike). The report
  // orders the steps as the centralized recoder would (FillReport).
  std::vector<int32_t> next_live;
  for (int32_t g : live_) {
    auto found = splits.find(g);
    if (found == splits.end()) {
      next_live.push_back(g);
    } else {
      ApplySplit(g, *found->second.second, &next_live);
    }
  }
  std::sort(next_live.begin(), next_live.end());
  live_ = std::move(next_live);
  proposed_.clear();
  own_instruction_.reset();
  checked_wave_ = 0;
  winners_.clear();
  judged_.clear();
  judged_wave_ = 0;
  verdicts_wave_ = 0;
  vetoed_now_.clear();
  ++waves_;
  return absl::OkStatus();
}

absl::StatusOr<VerticalLocalReplica::WaveSplits> VerticalLocalReplica::CheckedWaveSplits(
    uint64_t wave,
    const std::vector<std::pair<std::string, fedanon::v1::LocalInstruction>>& from_others) const {
  const bool judging = !judges_.empty();
  if (judging && verdicts_wave_ != wave) {
    return Refuse(absl::StrCat("the commit of wave ", wave, " comes without the judges' verdicts"));
  }
  // (sender, instruction, whether it may hold vetoed splits: this party's own, and those it
  // judged, hold every winner; relayed ones only the accepted).
  struct Source {
    std::string sender;
    const fedanon::v1::LocalInstruction* instruction;
    bool whole;
  };
  std::vector<Source> all;
  if (own_instruction_ && own_instruction_->first == wave) {
    all.push_back({self_, &own_instruction_->second, true});
  }
  if (judging && judged_wave_ == wave) {
    for (const auto& [sender, instruction] : judged_) all.push_back({sender, &instruction, true});
  }
  for (const auto& [sender, instruction] : from_others) {
    if (sender == self_) return Refuse("an instruction from this party itself was relayed");
    for (const auto& other : all) {
      if (other.sender == sender)
        return Refuse(absl::StrCat("two instructions from '", sender, "'"));
    }
    if (instruction.wave() != wave) {
      return Refuse(
          absl::StrCat("'", sender, "' instructed wave ", instruction.wave(), ", not wave ", wave));
    }
    all.push_back({sender, &instruction, false});
  }
  // Check every split before applying any.
  std::vector<bool> split_this_wave(live_.size(), false);
  WaveSplits splits;
  for (const auto& source : all) {
    for (const auto& split : source.instruction->splits()) {
      const int32_t g = static_cast<int32_t>(split.proposal().group());
      if (judging) {
        const auto v = vetoed_now_.find(static_cast<uint32_t>(g));
        if (v != vetoed_now_.end() && v->second) {
          if (!source.whole) {
            return Refuse(absl::StrCat("'", source.sender, "' instructs a split of group ", g,
                                       " that a judge vetoed in wave ", wave));
          }
          continue;  // vetoed: not applied
        }
      }
      RETURN_IF_ERROR(CheckSplit(source.sender, split, split_this_wave));
      split_this_wave[std::lower_bound(live_.begin(), live_.end(), g) - live_.begin()] = true;
      splits[g] = {source.sender, &split};
    }
  }
  return splits;
}

absl::Status VerticalLocalReplica::CheckSplitsAreTheWinners(uint64_t wave,
                                                            const WaveSplits& splits) const {
  const bool judging = !judges_.empty();
  // Exactly the recomputed winners (with judges: the accepted ones): a won group's split from its
  // winner, with its signed proposal; nothing else.
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
  // Each other party's won split carries the score it signed: refused when above what the split
  // gives, wherever this replica can compute that.
  for (const auto& [g, split] : splits) {
    if (split.first != self_) RETURN_IF_ERROR(CheckDeclaredScore(g, *split.second));
  }
  for (const auto& [g, w] : winners_) {
    if (judging && vetoed_now_.at(g)) continue;
    if (!splits.count(static_cast<int32_t>(g))) {
      return Refuse(absl::StrCat(
          "the instruction of '", w.first, "' for group ", g, ", which it won in wave ", wave,
          judging ? " and every judge accepted" : "", ", is missing (withheld from this party)"));
    }
  }
  return absl::OkStatus();
}

void VerticalLocalReplica::ApplySplit(int32_t g, const fedanon::v1::LocalSplit& split,
                                      std::vector<int32_t>* next_live) {
  const int a = static_cast<int>(split.proposal().attribute());
  const size_t children = static_cast<size_t>(split.children_size());
  std::vector<int32_t> id(children, -1);
  std::vector<uint64_t> sizes(children, 0);
  for (uint32_t c : split.child_of_record()) ++sizes[c];
  fedanon::v1::SpecializationStep step;
  step.set_attribute(data_->qids[a].name);
  const LocalValue parent = keys_[g][a];
  const table::QidColumn& col = data_->qids[a];
  step.set_value(
      col.kind == QidKind::kSuppression
          ? absl::StrCat(spec_.suppression_token(), " -> ", col.values[split.children(0).node()])
          : ValueLabel(a, parent));
  step.set_score(split.proposal().score());
  step.set_info_gain(split.info_gain());
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
    depth_.push_back(depth_[g] + 1);
    next_live->push_back(id[c]);
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
  vetoed_.erase(g);
  applied_.push_back({depth_[g], split.proposal().score(), g, std::move(kids), std::move(step)});
}

}  // namespace fedanon::party
