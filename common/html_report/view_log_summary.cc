#include "common/html_report/view_log_summary.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace fedanon::html_report {

absl::StatusOr<ViewLogSummary> SummarizeViewLog(std::string_view jsonl) {
  ViewLogSummary summary;
  std::map<std::string, ViewKindSummary> kinds;
  size_t line_number = 0;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(jsonl.data(), jsonl.size()), '\n')) {
    ++line_number;
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr,
                                                   /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string() || !j.contains("counts") ||
        !j["counts"].is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat("view log line ", line_number, " is not a view-log entry"));
    }
    const std::string kind = j["kind"].get<std::string>();
    ViewKindSummary& k = kinds[kind];
    k.kind = kind;
    ++k.entries;
    ++summary.entries;
    if (j.value("labelled", false)) ++k.labelled_entries;
    if (j.contains("attribute") && j["attribute"].is_string() &&
        !j["attribute"].get<std::string>().empty()) {
      k.attributes.insert(j["attribute"].get<std::string>());
    }
    if (j.contains("party") && j["party"].is_string() && !j["party"].get<std::string>().empty()) {
      k.parties.insert(j["party"].get<std::string>());
    }
    if (j.contains("round") && j["round"].is_number_unsigned()) {
      summary.last_round = std::max(summary.last_round, j["round"].get<uint32_t>());
    }
    for (const auto& c : j["counts"]) {
      if (!c.is_number_unsigned()) {
        return absl::InvalidArgumentError(
            absl::StrCat("view log line ", line_number, " has a count that is not a number"));
      }
      const uint64_t v = c.get<uint64_t>();
      ++k.integers;
      ++summary.integers;
      if (v > 0 && (k.smallest_nonzero == 0 || v < k.smallest_nonzero)) k.smallest_nonzero = v;
    }
  }
  for (auto& [name, k] : kinds) summary.kinds.push_back(std::move(k));
  return summary;
}

}  // namespace fedanon::html_report
