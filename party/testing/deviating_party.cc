#include "party/testing/deviating_party.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/table/csv.h"
#include "party/vertical_party.h"
#include "spdlog/spdlog.h"

namespace fedanon::party_testing {
namespace {

using party::Misbehaviour;
using party::PartyDeviation;
using party::VerticalParty;

class Deviating final : public PartyDeviation {
 public:
  explicit Deviating(std::string mode) : mode_(std::move(mode)) {}

  std::string Name() const override { return mode_; }
  bool IgnoresRecordLimit() const override { return mode_ == "ignore-record-limit"; }

  Misbehaviour Vertical() const override {
    if (mode_ == "never-participate") return Misbehaviour::kNeverParticipate;
    if (mode_ == "under-declare") return Misbehaviour::kUnderDeclare;
    if (mode_ == "repropose-vetoed") return Misbehaviour::kReproposeVetoed;
    if (mode_ == "overstate-score") return Misbehaviour::kOverstateScore;
    if (mode_ == "release-record-tags") return Misbehaviour::kReleaseRecordTags;
    return Misbehaviour::kNone;
  }

  void ReleasedCounts(uint64_t combinations, std::vector<uint64_t>* counts) const override {
    if (mode_ == "inflate-released-counts" && !counts->empty()) {
      spdlog::warn("DEVIATING (test): one record that does not exist added to the released counts");
      ++(*counts)[0];
    }
    if (mode_ == "move-released-count" && combinations > 0 && counts->size() > combinations) {
      // One of its own records moved to the same values in the next group: the total stays right.
      const auto held =
          std::find_if(counts->begin(), counts->end(), [](uint64_t n) { return n > 0; });
      if (held == counts->end()) return;
      spdlog::warn("DEVIATING (test): a released count moved to another group");
      const size_t from = static_cast<size_t>(held - counts->begin());
      --(*counts)[from];
      ++(*counts)[(from + combinations) % counts->size()];
    }
  }

  void FinalCheckCounts(std::vector<uint64_t>* counts) const override {
    if (mode_ != "final-check-negative-offset" || counts->empty()) return;
    spdlog::warn("DEVIATING (test): 1000 subtracted from the final check's first word");
    (*counts)[0] -= 1000;  // mod 2^64: other parties' records taken away, or a wrapped word
  }

  void UnionHop(const fedanon::v1::JobSpec& spec, fedanon::v1::UnionList* list,
                std::vector<std::string>* lines) const override {
    if (mode_.rfind("union-", 0) != 0) return;
    spdlog::warn("DEVIATING (test '{}') in the secure union", mode_);
    if (mode_ == "union-drop-row" && list->rows_size() > 0) {
      list->mutable_rows()->RemoveLast();  // one of the earlier parties' rows
    } else if (mode_ == "union-repeat-row" && list->rows_size() > 0) {
      *list->add_rows() = list->rows(0);  // counted twice; this party cannot read it
    } else if (mode_ == "union-swap-row" && list->rows_size() > 0 && !lines->empty()) {
      list->mutable_rows()->RemoveLast();  // another party's row out, one of its own in twice
      lines->push_back(lines->front());
    } else if (mode_ == "union-invent-row" && !lines->empty()) {
      // One of its own rows replaced by one whose every cell is made up.
      std::vector<std::string> cells;
      for (const auto& a : spec.attributes()) {
        if (a.role() != fedanon::v1::ROLE_ID) cells.push_back("invented");
      }
      lines->back() = table::CsvLine(std::vector<std::string_view>(cells.begin(), cells.end()));
    }
  }

  void ReleaseOrderSeed(const std::string& party, bool last, std::string* seed) const override {
    if (mode_ != "release-other-order" || !last || seed->empty()) return;
    spdlog::warn("DEVIATING (test): another release order for '{}'", party);
    (*seed)[0] = static_cast<char>((*seed)[0] ^ 1);
  }

  void ReleaseReport(fedanon::v1::Report* report) const override {
    if (mode_ != "report-larger-groups") return;
    spdlog::warn("DEVIATING (test): the release report's smallest group is inflated");
    report->set_smallest_group(report->smallest_group() + 1000);
    report->set_largest_confidence(1e9);
  }

  absl::StatusOr<std::string> InstructionForOthers(const VerticalParty& replica,
                                                   std::string bytes) const override {
    if (mode_ != "other-children-for-others") return bytes;
    spdlog::warn("DEVIATING (test): other children for the parties after the judges");
    return replica.ShiftedInstructionForTests(bytes);
  }

 private:
  std::string mode_;
};

}  // namespace

std::shared_ptr<const party::PartyDeviation> DeviatingParty(std::string_view mode) {
  if (mode.empty()) return nullptr;
  if (std::find(kDeviations.begin(), kDeviations.end(), mode) == kDeviations.end()) {
    std::fprintf(stderr, "DeviatingParty: no deviation named '%.*s'\n",
                 static_cast<int>(mode.size()), mode.data());
    std::abort();
  }
  return std::make_shared<const Deviating>(std::string(mode));
}

}  // namespace fedanon::party_testing
