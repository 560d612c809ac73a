#include "party/testing/deviating_party.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/table/csv.h"
#include "fedanon/v1/federation.pb.h"
#include "party/vertical_party.h"
#include "spdlog/spdlog.h"

namespace fedanon::party_testing {
namespace {

using party::PartyDeviation;
using party::VerticalParty;

// The owner's instruction with each record's child moved to the next record of the node of the
// same class: the same children's sizes and class counts (so the same score), other members.
absl::StatusOr<std::string> ShiftedInstruction(const VerticalParty& replica,
                                               const std::string& bytes) {
  fedanon::v1::VerticalInstruction in;
  if (!in.ParseFromString(bytes)) {
    return absl::InvalidArgumentError("the instruction does not parse");
  }
  const uint64_t n = in.records();
  const uint32_t bits = in.bits_per_child();
  const std::string& packed = in.children();
  if (bits == 0 || bits > 16 || (n * bits + 7) / 8 != packed.size()) {
    return absl::InvalidArgumentError("the instruction's packing is malformed");
  }
  std::vector<uint32_t> child(n, 0);
  for (uint64_t pos = 0; pos < n * bits; ++pos) {
    const uint32_t bit = (static_cast<uint8_t>(packed[pos / 8]) >> (pos % 8)) & 1;
    child[pos / bits] |= bit << (pos % bits);
  }
  absl::StatusOr<std::vector<int>> classes = replica.NodeRecordClasses(in.candidate());
  if (!classes.ok()) return classes.status();
  if (classes->size() != n) return absl::InvalidArgumentError("the instruction is not this node's");
  // Each class's children rotate among that class's records.
  std::map<int, std::vector<size_t>> by_class;
  for (size_t i = 0; i < n; ++i) by_class[(*classes)[i]].push_back(i);
  for (const auto& [cls, at] : by_class) {
    if (at.size() < 2) continue;
    const uint32_t first = child[at[0]];
    for (size_t k = 0; k + 1 < at.size(); ++k) child[at[k]] = child[at[k + 1]];
    child[at.back()] = first;
  }
  std::string shifted(packed.size(), '\0');
  for (uint64_t pos = 0; pos < n * bits; ++pos) {
    if ((child[pos / bits] >> (pos % bits) & 1) != 0) {
      shifted[pos / 8] = static_cast<char>(shifted[pos / 8] | (1 << (pos % 8)));
    }
  }
  in.set_children(std::move(shifted));
  return in.SerializeAsString();
}

class Deviating final : public PartyDeviation {
 public:
  explicit Deviating(std::string mode) : mode_(std::move(mode)) {
    // mohammed2011 §6's two malicious parties are the daemon's own (MaliciousVerticalParty).
    absl::StatusOr<party::MaliciousVerticalParty> malicious =
        party::MaliciousVerticalParty::Named(mode_);
    if (malicious.ok()) malicious_ = *std::move(malicious);
  }

  std::string Name() const override { return mode_; }
  bool IgnoresRecordLimit() const override { return mode_ == "ignore-record-limit"; }

  void VerticalProposal(const VerticalParty& replica,
                        party::VerticalProposalView* view) const override {
    if (malicious_) {
      malicious_->VerticalProposal(replica, view);
      return;
    }
    if (!replica.started() || view->reason == party::kAheadOfAnotherParty) return;
    if (mode_ == "repropose-vetoed" && replica.last_vetoed_own()) {
      spdlog::warn("DEVIATING (test): party {} proposes its vetoed candidate again, winning",
                   replica.name());
      view->choice = replica.last_vetoed_own();
      view->choice->score = 1e300;
      view->reason.clear();
    } else if (mode_ == "overstate-score" && view->choice) {
      spdlog::warn("DEVIATING (test): party {} overstates its score", replica.name());
      view->choice->score = 1e300;
    }
  }

  void WinnerKey(std::vector<uint64_t>* key) const override {
    if (mode_ != "inflate-comparison-key" || key->size() < 4 || (*key)[3] == 0) return;
    spdlog::warn("DEVIATING (test): the comparison gets a larger key than the candidate's");
    (*key)[2] = ~uint64_t{0};  // the largest score, whatever the candidate it reveals
  }

  void GroupProposalScore(double* score) const override {
    if (mode_ == "overstate-score") *score = 1e300;
  }

  void ReleasedColumns(const fedanon::v1::JobSpec& spec, std::string* columns) const override {
    if (mode_ != "release-record-tags") return;
    spdlog::warn("DEVIATING (test): a tag per record released in the QID columns");
    fedanon::v1::VerticalColumns parsed;
    if (!parsed.ParseFromString(*columns) || parsed.names().empty()) return;
    const int width = parsed.names_size();
    for (int i = 0; i < width; ++i) {
      const bool qid = std::any_of(
          spec.attributes().begin(), spec.attributes().end(), [&](const fedanon::v1::Attribute& a) {
            return a.name() == parsed.names(i) && a.role() == fedanon::v1::ROLE_QID;
          });
      if (!qid) continue;
      for (int r = 0; r * width + i < parsed.cells_size(); ++r) {
        parsed.set_cells(r * width + i, "record-" + std::to_string(r));
      }
    }
    *columns = parsed.SerializeAsString();
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

  void UnionHop(const fedanon::v1::JobSpec& spec, std::map<uint64_t, int>* copies,
                std::vector<std::string>* lines) const override {
    if (mode_.rfind("union-", 0) != 0) return;
    spdlog::warn("DEVIATING (test '{}') in the secure union", mode_);
    // (Row 0 of the list received: a party with no earlier rows changes nothing there.)
    if (mode_ == "union-drop-row") {
      (*copies)[0] = 0;  // one of the earlier parties' rows
    } else if (mode_ == "union-repeat-row") {
      (*copies)[0] = 2;  // counted twice; this party cannot read it
    } else if (mode_ == "union-swap-row" && !lines->empty()) {
      (*copies)[0] = 0;  // another party's row out, one of its own in twice
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
    return ShiftedInstruction(replica, bytes);
  }

 private:
  std::string mode_;
  std::optional<party::MaliciousVerticalParty> malicious_;
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
