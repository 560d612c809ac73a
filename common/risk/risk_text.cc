#include "common/risk/risk_text.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace fedanon::risk {
namespace {

std::string Pct(double x) { return absl::StrFormat("%.2f%%", 100 * x); }
std::string Prob(double x) { return absl::StrFormat("%.4f", x); }

}  // namespace

std::string RiskSummaryToText(const fedanon::v1::RiskSummary& s, size_t max_combinations) {
  std::string out =
      absl::StrCat("Re-identification risk of ", s.table(), ": ", s.records(), " records");
  if (s.records_dropped() > 0) {
    absl::StrAppend(&out, " (", s.records_dropped(), " rows with a missing value left out)");
  }
  absl::StrAppend(&out, ", QIDs ", absl::StrJoin(s.qids(), ", "), "\n");
  absl::StrAppendFormat(&out, "  equivalence classes        %d (smallest %d, average size %.2f)\n",
                        s.classes(), s.smallest_class(), s.average_class_size());
  absl::StrAppendFormat(&out, "  sample uniques             %d (%s of the records)\n",
                        s.sample_uniques(), Pct(s.sample_uniques_fraction()));
  absl::StrAppendFormat(&out, "  %-26s %-12s %-12s %s\n", "attacker model", "prosecutor",
                        "journalist", "marketer");
  absl::StrAppendFormat(
      &out, "  %-26s %-12s %-12s %s\n", absl::StrCat("records at risk (> ", s.threshold(), ")"),
      Pct(s.prosecutor().records_at_risk()), Pct(s.journalist().records_at_risk()), "-");
  absl::StrAppendFormat(&out, "  %-26s %-12s %-12s %s\n", "highest risk",
                        Prob(s.prosecutor().highest()), Prob(s.journalist().highest()), "-");
  absl::StrAppendFormat(&out, "  %-26s %-12s %-12s %s\n", "success rate (average)",
                        Prob(s.prosecutor().average()), Prob(s.journalist().average()),
                        Prob(s.marketer().average()));
  absl::StrAppend(&out,
                  "  (journalist = prosecutor: no population table, the table is taken as its "
                  "own population, as ARX does)\n");
  if (s.population_size() > 0) {
    absl::StrAppendFormat(&out,
                          "Population uniqueness (population %.0f, sampling fraction %.6g):\n",
                          s.population_size(), s.sampling_fraction());
    for (const auto& p : s.uniqueness()) {
      if (!p.available()) {
        absl::StrAppendFormat(&out, "  %-8s not available: %s\n", p.model(), p.note());
        continue;
      }
      absl::StrAppendFormat(&out, "  %-8s %.1f population uniques (%s of the population)%s\n",
                            p.model(), p.uniques(), absl::StrFormat("%.4g%%", 100 * p.fraction()),
                            p.chosen_model().empty()
                                ? absl::StrCat("; ", p.note())
                                : absl::StrCat("; the rule chose ", p.chosen_model()));
    }
  } else {
    absl::StrAppend(&out,
                    "Population uniqueness: not computed (give the population size or the "
                    "sampling fraction: risk.population_size / --population-size, "
                    "risk.sampling_fraction / --sampling-fraction)\n");
  }
  absl::StrAppendFormat(&out,
                        "QID combinations (distinction = classes / records, separation = share "
                        "of record pairs told apart; up to %d attributes):\n",
                        s.max_combination_size());
  // The most distinguishing combinations of each size, in order.
  size_t printed = 0;
  int size = 0;
  size_t of_size = 0;
  const size_t per_size = std::max<size_t>(1, max_combinations / 3);
  for (const auto& c : s.combinations()) {
    if (c.attributes_size() != size) {
      size = c.attributes_size();
      of_size = 0;
    }
    if (of_size++ >= per_size || printed >= max_combinations) continue;
    ++printed;
    absl::StrAppendFormat(&out, "  %-44s distinction %.4f  separation %.6f  uniques %d\n",
                          absl::StrJoin(c.attributes(), ", "), c.distinction(), c.separation(),
                          c.uniques());
  }
  return out;
}

}  // namespace fedanon::risk
