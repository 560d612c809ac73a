// What the leader of a federated job decoded, summarized from its view log (leader/view_log.h:
// one JSON object per line with round, kind, attribute, labelled and counts): per kind, how many
// entries and integers, how many were split by class or sensitive value, and the smallest
// non-zero count it saw, so that a steward can judge the coordinator's view at a glance.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace fedanon::html_report {

struct ViewKindSummary {
  std::string kind;
  uint64_t entries = 0;
  uint64_t integers = 0;          // counts decoded
  uint64_t labelled_entries = 0;  // split by class or sensitive value
  uint64_t smallest_nonzero = 0;  // 0: none
  std::set<std::string> attributes;
  std::set<std::string> parties;
};

struct ViewLogSummary {
  uint64_t entries = 0;
  uint64_t integers = 0;
  uint32_t last_round = 0;
  std::vector<ViewKindSummary> kinds;  // by kind name
};

// InvalidArgument naming the line for a line that is not a view-log entry.
absl::StatusOr<ViewLogSummary> SummarizeViewLog(std::string_view jsonl);

}  // namespace fedanon::html_report
