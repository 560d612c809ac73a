#include "party/horizontal_tables.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/engine/numeric_split.h"
#include "common/wire/federation_wire.h"

namespace fedanon::party {

absl::Status HorizontalTables::ApplyUpdates(
    const fedanon::v1::JobSpec& spec,
    const google::protobuf::RepeatedPtrField<fedanon::v1::StateUpdate>& updates) {
  const engine::NumericSplitConfig numeric = engine::NumericSplitFromSpec(spec);
  for (const auto& u : updates) {
    if (u.sequence() < applied_updates) {
      // Applied already: the leader repeats it (a retried or later step); it must be the same.
      if (wire::ChainStateUpdate("", u) != applied[u.sequence()]) {
        return absl::PermissionDeniedError(
            absl::StrCat("state update ", u.sequence(),
                         " differs from the one applied under that number (one update, one "
                         "content)"));
      }
      continue;
    }
    if (u.sequence() != applied_updates) {
      return absl::FailedPreconditionError(
          absl::StrCat("state update ", u.sequence(), " arrived before ", applied_updates));
    }
    if (cut_fixed) {
      return absl::PermissionDeniedError(
          absl::StrCat("state update ", u.sequence(),
                       " after the final check: the cut was fixed when the parties re-checked "
                       "the privacy model"));
    }
    if (u.has_local_setup() || u.has_local_split()) {
      if (!local) {
        return absl::PermissionDeniedError(
            "a local-recoding update in a job without recoding: local");
      }
      RETURN_IF_ERROR(u.has_local_setup() ? local->ApplySetup(u.local_setup())
                                          : local->ApplySplit(u.local_split()));
    } else if (local) {
      return absl::PermissionDeniedError(
          "a global instruction in a job with recoding: local (only group splits apply)");
    } else if (u.has_instruction()) {
      RETURN_IF_ERROR(ApplyInstruction(u.instruction()));
    } else if (u.has_split()) {
      RETURN_IF_ERROR(ApplySplit(u.split(), numeric));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("state update ", u.sequence(), " names no instruction or split"));
    }
    applied.push_back(wire::ChainStateUpdate("", u));
    update_chain = wire::ChainStateUpdate(update_chain, u);
    ++applied_updates;
  }
  return absl::OkStatus();
}

absl::Status HorizontalTables::ApplyInstruction(const fedanon::v1::Instruction& in) {
  if (in.attribute() >= hier.size() || in.node() < 0 ||
      static_cast<size_t>(in.node()) >= hier[in.attribute()].size() || in.candidate() < 0 ||
      in.candidate() >= hier[in.attribute()].CandidateCount(in.node()) ||
      !hier[in.attribute()].node(in.node()).children.empty()) {
    return absl::InvalidArgumentError("instruction names no candidate of the current cut");
  }
  hier[in.attribute()].Specialize(in.node(), in.candidate());
  if (tips) {
    tips->Specialize(static_cast<int>(in.attribute()), in.node(), in.candidate());
  }
  if (pushdown) {
    pushdown->Specialize(static_cast<int>(in.attribute()), in.node(), in.candidate());
  }
  return absl::OkStatus();
}

absl::Status HorizontalTables::ApplySplit(const fedanon::v1::SplitDecision& sp,
                                          const engine::NumericSplitConfig& numeric) {
  if (sp.attribute() >= hier.size() || hier[sp.attribute()].kind() != table::QidKind::kContinuous ||
      sp.node() < 0 || static_cast<size_t>(sp.node()) >= hier[sp.attribute()].size()) {
    return absl::InvalidArgumentError("split names no interval of the current cut");
  }
  const auto& node = hier[sp.attribute()].node(sp.node());
  if (sp.split() != -1 && (sp.split() <= node.rank_lo || sp.split() >= node.rank_hi)) {
    return absl::InvalidArgumentError("split threshold lies outside its interval");
  }
  // Each interval is split once: a second threshold for the same node would let the leader
  // difference the class counts of its two sides between thresholds.
  if (split_decided.count({sp.attribute(), sp.node()}) > 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("the split of interval ", sp.node(), " of attribute ", sp.attribute(),
                     " was decided already; an interval is split once"));
  }
  // Binned search: thresholds only on public-cell boundaries, so that no statistic that
  // follows a threshold (class counts of the node's sides, group counts) is finer than the
  // public cells (docs/threat-model.md, "Numeric split search").
  if (sp.split() != -1 && numeric.binned()) {
    const std::vector<int32_t> cells =
        engine::PublicCellBounds(hier[sp.attribute()].column(), numeric.cells);
    if (!std::binary_search(cells.begin(), cells.end(), sp.split())) {
      return absl::PermissionDeniedError(
          absl::StrCat("split threshold ", sp.split(), " of attribute ", sp.attribute(),
                       " is not a public-cell boundary (numeric_split: binned)"));
    }
    // And on a bin's boundary: the two sides' class counts are then unions of bins, which the
    // bin check showed to hold K records each, and so are their differences with the bins'.
    const auto b = bins.find(sp.attribute());
    if (b == bins.end() || !std::binary_search(b->second.begin(), b->second.end(), sp.split())) {
      return absl::PermissionDeniedError(absl::StrCat(
          "split threshold ", sp.split(), " of attribute ", sp.attribute(),
          b == bins.end() ? " comes before any class counts over its bins were asked"
                          : " is not a boundary of its bins",
          " (numeric_split: binned: an interval is a union of bins of at least K records)"));
    }
  }
  split_decided.insert({sp.attribute(), sp.node()});
  hier[sp.attribute()].SetSplit(sp.node(), sp.split());
  return absl::OkStatus();
}

absl::Status HorizontalTables::RecordBins(const engine::StatsRequest& request,
                                          const engine::NumericSplitConfig& numeric) {
  if (!numeric.binned()) return absl::OkStatus();
  std::set<int> asked;
  for (const engine::RangeCountRequest& r : request.range_counts) {
    if (!r.labelled) continue;
    if (bins.contains(static_cast<uint32_t>(r.attr)) || !asked.insert(r.attr).second) {
      return absl::PermissionDeniedError(absl::StrCat(
          "class counts of attribute ", r.attr,
          " were asked over bins already; an attribute's bins are asked once (numeric_split: "
          "binned: a second set of bins would difference the first)"));
    }
  }
  for (const engine::RangeCountRequest& r : request.range_counts) {
    if (r.labelled) bins[static_cast<uint32_t>(r.attr)] = r.bounds;
  }
  return absl::OkStatus();
}

}  // namespace fedanon::party
