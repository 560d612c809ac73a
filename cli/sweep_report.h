// The outputs of `fedanon sweep`: a self-contained HTML page (inline SVG charts, no scripts, no
// external assets) with CE and DR against K (against C when the grid varies C but not K), one
// line per L, method and value of the remaining parameter, BE and UE as reference lines, plus a
// table of every point; and a CSV with one row per point.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "cli/sweep.h"

namespace fedanon::cli {

// The HTML page. Every point of a chart is one `<circle class="point" ...>` element carrying
// data-chart ("ce" or "dr"), data-method, data-l, data-k, data-c and data-value attributes;
// the page is well-formed XML (every element closed, text escaped).
std::string SweepHtml(const SweepResult& result);

// Columns: method, L, K, C, status (ok / no release), CE, DR, groups, seconds, BE, UE, error.
std::string SweepCsv(const SweepResult& result);

// Writes both files atomically; if the second cannot be written the first is removed again.
absl::Status WriteSweepReport(const SweepResult& result, const std::string& html_path,
                              const std::string& csv_path);

}  // namespace fedanon::cli
