#include "common/html_report/report_page.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/html_report/cut_tree.h"
#include "common/html_report/html_text.h"

namespace fedanon::html_report {
namespace {

using fedanon::v1::Report;
using fedanon::v1::RiskSummary;

constexpr char kStyle[] = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2430;
background:#f6f7f9;line-height:1.45}
header{background:#1f3a5f;color:#fff;padding:18px 28px}header h1{margin:0;font-size:1.5em}
header p{margin:4px 0 0;opacity:.85}nav{padding:8px 28px;background:#e8edf3;font-size:.92em}
nav a{margin-right:14px;color:#1f3a5f}main{padding:8px 28px 40px;max-width:1200px}
section{background:#fff;border:1px solid #dde3ea;border-radius:6px;padding:14px 18px;margin:16px 0}
h2{margin:0 0 10px;font-size:1.2em;color:#1f3a5f}h3{font-size:1.02em;margin:16px 0 6px}
table{border-collapse:collapse;margin:6px 0}th,td{padding:3px 10px;border-bottom:1px solid #e4e8ee;
text-align:left;vertical-align:top}th{background:#f0f3f7;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.note{color:#5a6575;font-size:.9em}.pass{color:#17803d;font-weight:600}
.fail{color:#b42318;font-weight:600}code{background:#f0f3f7;padding:0 3px;border-radius:3px}
.cutvalues code{display:inline-block;margin:2px}.scroll{overflow-x:auto}
svg.tree .edge{fill:none;stroke:#9aa7b8;stroke-width:1.2}
svg.tree .node rect{fill:#f0f3f7;stroke:#c3ccd8}svg.tree .node text{font-size:12px;fill:#333}
svg.tree .cut rect{fill:#ffd88a;stroke:#c98a00}svg.tree .cut text{font-weight:600;fill:#000}
svg.bars text{font-size:12px;fill:#333}.legend span{display:inline-block;margin-right:14px}
.swatch{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px}
)css";

constexpr char kBefore[] = "#7f8fa6";
constexpr char kAfter[] = "#2f7dd1";

// A figure the browser test compares with the report's JSON at `path`.
std::string Fig(const std::string& path, const std::string& text) {
  return absl::StrCat("<span data-check=\"", HtmlEscape(path), "\">", HtmlEscape(text), "</span>");
}

std::string Row(const std::string& label, const std::string& value_html,
                const std::string& note = "") {
  return absl::StrCat("<tr><th>", HtmlEscape(label), "</th><td class=\"num\">", value_html,
                      "</td><td class=\"note\">", HtmlEscape(note), "</td></tr>");
}

std::string KindTitle(const ReportPage& page) {
  if (page.kind == "horizontal") {
    return absl::StrCat("horizontal federation of ", page.parties.size(), " parties");
  }
  if (page.kind == "vertical") {
    return absl::StrCat("vertical federation of ", page.parties.size(), " parties");
  }
  return "centralized run";
}

std::string Summary(const ReportPage& page) {
  const Report& r = page.report;
  std::string s = "<section id=\"summary\"><h2>Summary</h2><table>";
  absl::StrAppend(&s, Row("Records in", Fig("records_in", absl::StrCat(r.records_in()))));
  absl::StrAppend(&s, Row("Dropped for a missing value",
                          Fig("records_dropped", absl::StrCat(r.records_dropped()))));
  absl::StrAppend(&s, Row("Records released", Fig("records_out", absl::StrCat(r.records_out()))));
  absl::StrAppend(&s, Row("Specializations applied", absl::StrCat(r.steps_size())));
  absl::StrAppend(&s, Row("Groups in the release", Fig("groups", absl::StrCat(r.groups())),
                          "distinct combinations of generalized QID values"));
  absl::StrAppend(&s, Row("Stop reason", Fig("stop_reason", r.stop_reason())));
  absl::StrAppend(
      &s, Row("Recoding", r.recoding() == fedanon::v1::RECODING_LOCAL ? "local" : "global"));
  if (auto it = r.timings_seconds().find("total"); it != r.timings_seconds().end()) {
    absl::StrAppend(&s, Row("Time (s)", Fig("timings_seconds.total", FormatSeconds(it->second))));
  }
  if (page.kind != "centralized") {
    absl::StrAppend(&s, Row("Secure sums", Fig("secure_sums", absl::StrCat(r.secure_sums()))));
    absl::StrAppend(
        &s, Row("Bytes to / from the parties",
                absl::StrCat(Fig("bytes_to_parties", absl::StrCat(r.bytes_to_parties())), " / ",
                             Fig("bytes_from_parties", absl::StrCat(r.bytes_from_parties())))));
  }
  s += "</table></section>";
  return s;
}

std::string ModelDescription(const fedanon::v1::JobSpec& spec) {
  const fedanon::v1::Privacy& p = spec.privacy();
  if (p.model() == fedanon::v1::PRIVACY_MODEL_TEMPLATES) {
    std::vector<std::string> parts;
    for (const auto& t : p.templates()) {
      parts.push_back(absl::StrCat("&lt;{", HtmlEscape(absl::StrJoin(t.qid(), ", ")),
                                   "}, k = ", t.k(), "&gt;"));
    }
    for (const auto& c : p.confidence()) {
      parts.push_back(absl::StrCat("confidence of {",
                                   HtmlEscape(absl::StrJoin(c.sensitive_values(), ", ")),
                                   "} at most ", c.max()));
    }
    return absl::StrCat("anonymity and confidence templates: ", absl::StrJoin(parts, "; "));
  }
  std::string s = absl::StrCat("LKC-privacy: every combination of at most L = ", p.l(),
                               " QID values is shared by at least K = ", p.k(), " records");
  if (!p.sensitive_values().empty()) {
    absl::StrAppend(&s, " and infers none of {",
                    HtmlEscape(absl::StrJoin(p.sensitive_values(), ", ")),
                    "} with confidence above C = ", p.c());
  }
  return s;
}

std::string Model(const ReportPage& page) {
  const Report& r = page.report;
  std::string s = "<section id=\"model\"><h2>Privacy model and its checks</h2>";
  if (page.spec.has_value()) absl::StrAppend(&s, "<p>", ModelDescription(*page.spec), ".</p>");
  s += "<table>";
  absl::StrAppend(
      &s, Row("Smallest group (engine)", Fig("smallest_group", absl::StrCat(r.smallest_group())),
              "over every QID subset or template checked"));
  absl::StrAppend(&s, Row("Largest confidence (engine)",
                          Fig("largest_confidence", FormatProbability(r.largest_confidence()))));
  absl::StrAppend(&s, Row("Constraints checked",
                          Fig("constraints_checked", absl::StrCat(r.constraints_checked()))));
  s += "</table>";
  if (!r.model_checks().empty()) {
    s += "<h3>Measured again on the released table</h3><table><tr><th>Requirement</th>"
         "<th>Measured</th><th>Result</th></tr>";
    for (int i = 0; i < r.model_checks_size(); ++i) {
      const auto& c = r.model_checks(i);
      absl::StrAppend(&s, "<tr><td>", HtmlEscape(c.requirement()), "</td><td>",
                      HtmlEscape(c.measured()), "</td><td class=\"", c.passed() ? "pass" : "fail",
                      "\">",
                      Fig(absl::StrCat("model_checks.", i, ".passed"), c.passed() ? "yes" : "no"),
                      "</td></tr>");
    }
    s += "</table>";
  }
  if (!r.final_check().empty()) {
    absl::StrAppend(&s, "<p>Parties' own re-check before the release: ",
                    Fig("final_check", r.final_check()), "</p>");
  }
  for (const std::string& w : r.warnings()) {
    absl::StrAppend(&s, "<p class=\"fail\">Warning: ", HtmlEscape(w), "</p>");
  }
  s += "</section>";
  return s;
}

std::string Generalization(const ReportPage& page) {
  const Report& r = page.report;
  std::string s =
      "<section id=\"generalization\"><h2>What was generalized</h2><p class=\"note\">Each QID's "
      "hierarchy from its root down to the release's cut; the cut's values are highlighted "
      "(a number in brackets: how many original values one stands for).</p>";
  for (int i = 0; i < r.cut_size(); ++i) {
    const fedanon::v1::AttributeCut& cut = r.cut(i);
    std::vector<const fedanon::v1::SpecializationStep*> steps;
    for (const auto& step : r.steps()) {
      if (step.attribute() == cut.attribute()) steps.push_back(&step);
    }
    auto t = page.taxonomies.find(cut.attribute());
    const CutTree tree =
        BuildCutTree(cut, steps, t == page.taxonomies.end() ? nullptr : t->second.get());
    absl::StrAppend(&s, "<h3 id=\"cut-", i, "\">", HtmlEscape(cut.attribute()), ": ",
                    cut.values_size(), " released values, ", steps.size(), " specializations</h3>");
    const std::string svg = CutTreeSvg(tree);
    if (!svg.empty()) {
      absl::StrAppend(&s, "<div class=\"scroll\">", svg, "</div>");
    } else {
      s += "<p class=\"note\">The cut is too wide to draw; its values:</p>";
    }
    if (!tree.from_taxonomy && page.taxonomies.empty() && !steps.empty()) {
      s += "<p class=\"note\">Drawn from the specialization steps (no taxonomy given).</p>";
    }
    s += "<p class=\"cutvalues\">";
    for (int j = 0; j < cut.values_size(); ++j) {
      absl::StrAppend(&s, "<code>", Fig(absl::StrCat("cut.", i, ".values.", j), cut.values(j)),
                      "</code> ");
    }
    s += "</p>";
  }
  s += "</section>";
  return s;
}

// Horizontal bars of `values` (0..max_value), one per label.
std::string Bars(const std::vector<std::pair<std::string, double>>& values, double max_value,
                 const std::string& color, const std::function<std::string(double)>& format) {
  constexpr double kLabel = 170, kBar = 320, kRow = 22;
  const double height = values.size() * kRow + 6;
  std::string svg = absl::StrFormat(
      "<svg class=\"bars\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\">",
      kLabel + kBar + 90, height);
  for (size_t i = 0; i < values.size(); ++i) {
    const double y = 3 + i * kRow;
    const double w = max_value > 0 ? std::clamp(values[i].second / max_value, 0.0, 1.0) * kBar : 0;
    absl::StrAppendFormat(&svg,
                          "<text x=\"0\" y=\"%.1f\">%s</text><rect x=\"%.0f\" y=\"%.1f\" "
                          "width=\"%.1f\" height=\"15\" fill=\"%s\"/><text x=\"%.1f\" "
                          "y=\"%.1f\">%s</text>",
                          y + 12, HtmlEscape(values[i].first), kLabel, y, w, color, kLabel + w + 6,
                          y + 12, HtmlEscape(format(values[i].second)));
  }
  return svg + "</svg>";
}

std::string Utility(const ReportPage& page) {
  const Report& r = page.report;
  const fedanon::v1::UtilitySummary& u = r.utility();
  std::string s = "<section id=\"utility\"><h2>Utility</h2><table>";
  absl::StrAppend(&s, Row("Discernibility ratio (DR)",
                          Fig("discernibility_ratio", FormatRatio(r.discernibility_ratio())),
                          "sum of squared group sizes / records^2 (lower is finer)"));
  if (u.classification()) {
    absl::StrAppend(&s, Row("Baseline error, raw data (BE)",
                            Fig("utility.baseline_error", FormatPercent(u.baseline_error())),
                            "C4.5-style tree, 2/3 training, 1/3 test"));
    absl::StrAppend(
        &s, Row("Classification error, release (CE)",
                Fig("utility.classification_error", FormatPercent(u.classification_error())),
                absl::StrFormat("CE - BE = %+.2f points",
                                100 * (u.classification_error() - u.baseline_error()))));
    absl::StrAppend(&s,
                    Row("Upper-bound error, QIDs removed (UE)",
                        Fig("utility.upper_bound_error", FormatPercent(u.upper_bound_error()))));
  } else {
    s += "<tr><td colspan=\"3\" class=\"note\">Classification errors not measured (no class "
         "attribute, or the input was a stream).</td></tr>";
  }
  s += "</table>";
  if (!u.attribute_loss().empty()) {
    s += "<h3>Information loss per attribute</h3><p class=\"note\">ARX's loss: 0 = kept as it "
         "was, 1 = suppressed; a generalized value loses (values it stands for - 1) / (values of "
         "the attribute - 1), an interval its share of the range.</p><table><tr><th>Attribute"
         "</th><th class=\"num\">Loss</th><th class=\"num\">Released values</th></tr>";
    std::vector<std::pair<std::string, double>> bars;
    for (int i = 0; i < u.attribute_loss_size(); ++i) {
      const auto& l = u.attribute_loss(i);
      absl::StrAppend(
          &s, "<tr><td>", HtmlEscape(l.attribute()), "</td><td class=\"num\">",
          Fig(absl::StrCat("utility.attribute_loss.", i, ".loss"), FormatProbability(l.loss())),
          "</td><td class=\"num\">", l.distinct_values(), "</td></tr>");
      bars.emplace_back(l.attribute(), l.loss());
    }
    absl::StrAppend(&s, "<tr><th>Average</th><td class=\"num\">",
                    Fig("utility.average_loss", FormatProbability(u.average_loss())),
                    "</td><td></td></tr></table>");
    s += Bars(bars, 1, kAfter, FormatProbability);
  }
  s += "</section>";
  return s;
}

// One column of the risk table: the summary's figures under `prefix` (its JSON path).
struct RiskColumn {
  const RiskSummary* summary;
  std::string prefix;
  std::string title;
};

std::string RiskTable(const std::vector<RiskColumn>& columns) {
  std::string s = "<table><tr><th></th>";
  for (const auto& c : columns)
    absl::StrAppend(&s, "<th class=\"num\">", HtmlEscape(c.title), "</th>");
  s += "</tr>";
  auto row = [&](const std::string& label, const std::string& field,
                 const std::function<std::string(const RiskSummary&)>& value) {
    absl::StrAppend(&s, "<tr><th>", HtmlEscape(label), "</th>");
    for (const auto& c : columns) {
      absl::StrAppend(&s, "<td class=\"num\">",
                      Fig(absl::StrCat(c.prefix, ".", field), value(*c.summary)), "</td>");
    }
    s += "</tr>";
  };
  row("Records", "records", [](const RiskSummary& r) { return absl::StrCat(r.records()); });
  row("Equivalence classes", "classes",
      [](const RiskSummary& r) { return absl::StrCat(r.classes()); });
  row("Smallest class", "smallest_class",
      [](const RiskSummary& r) { return absl::StrCat(r.smallest_class()); });
  row("Sample uniques", "sample_uniques",
      [](const RiskSummary& r) { return absl::StrCat(r.sample_uniques()); });
  row("Sample uniques (share)", "sample_uniques_fraction",
      [](const RiskSummary& r) { return FormatPercent(r.sample_uniques_fraction()); });
  row("Prosecutor: records at risk", "prosecutor.records_at_risk",
      [](const RiskSummary& r) { return FormatPercent(r.prosecutor().records_at_risk()); });
  row("Prosecutor: highest risk", "prosecutor.highest",
      [](const RiskSummary& r) { return FormatProbability(r.prosecutor().highest()); });
  row("Prosecutor: success rate", "prosecutor.average",
      [](const RiskSummary& r) { return FormatProbability(r.prosecutor().average()); });
  row("Journalist: records at risk", "journalist.records_at_risk",
      [](const RiskSummary& r) { return FormatPercent(r.journalist().records_at_risk()); });
  row("Journalist: highest risk", "journalist.highest",
      [](const RiskSummary& r) { return FormatProbability(r.journalist().highest()); });
  row("Marketer: success rate", "marketer.average",
      [](const RiskSummary& r) { return FormatProbability(r.marketer().average()); });
  s += "</table>";
  return s;
}

std::string PopulationTable(const RiskSummary& r, const std::string& prefix,
                            const std::string& title) {
  if (r.uniqueness().empty()) {
    return absl::StrCat("<p class=\"note\">", HtmlEscape(title),
                        ": population uniqueness not computed (no population size or sampling "
                        "fraction given: risk.population_size in the spec).</p>");
  }
  std::string s =
      absl::StrCat("<h3>Population uniqueness, ", HtmlEscape(title), " (population ",
                   Fig(prefix + ".population_size", absl::StrFormat("%.0f", r.population_size())),
                   ", sampling fraction ",
                   Fig(prefix + ".sampling_fraction", FormatShare(r.sampling_fraction())),
                   ")</h3><table><tr><th>Model</th><th class=\"num\">Population uniques</th>"
                   "<th class=\"num\">Share of the population</th><th>Note</th></tr>");
  for (int i = 0; i < r.uniqueness_size(); ++i) {
    const auto& p = r.uniqueness(i);
    const std::string path = absl::StrCat(prefix, ".uniqueness.", i);
    absl::StrAppend(&s, "<tr><td>", HtmlEscape(p.model()), "</td>");
    if (p.available()) {
      absl::StrAppend(&s, "<td class=\"num\">", Fig(path + ".uniques", FormatEstimate(p.uniques())),
                      "</td><td class=\"num\">", Fig(path + ".fraction", FormatShare(p.fraction())),
                      "</td>");
    } else {
      s += "<td class=\"num\">n/a</td><td class=\"num\">n/a</td>";
    }
    absl::StrAppend(&s, "<td class=\"note\">",
                    HtmlEscape(p.chosen_model().empty()
                                   ? p.note()
                                   : absl::StrCat("the decision rule chose ", p.chosen_model())),
                    "</td></tr>");
  }
  s += "</table>";
  return s;
}

std::string CombinationTable(const RiskSummary& r, const std::string& prefix,
                             const std::string& title, int per_size = 5) {
  if (r.combinations().empty()) return "";
  std::string s = absl::StrCat(
      "<h3>QID combinations, ", HtmlEscape(title),
      "</h3><p class=\"note\">Distinction: classes / records; separation: share of record pairs "
      "the combination tells apart (Motwani &amp; Xu, as ARX shows them); the most "
      "distinguishing ",
      per_size,
      " of each size.</p><table><tr><th>Attributes</th><th class=\"num\">Distinction"
      "</th><th class=\"num\">Separation</th><th class=\"num\">Uniques</th></tr>");
  int size = 0, shown = 0;
  for (int i = 0; i < r.combinations_size(); ++i) {
    const auto& c = r.combinations(i);
    if (c.attributes_size() != size) {
      size = c.attributes_size();
      shown = 0;
    }
    if (shown++ >= per_size) continue;
    const std::string path = absl::StrCat(prefix, ".combinations.", i);
    absl::StrAppend(
        &s, "<tr><td>", HtmlEscape(absl::StrJoin(c.attributes(), ", ")), "</td><td class=\"num\">",
        Fig(path + ".distinction", FormatProbability(c.distinction())), "</td><td class=\"num\">",
        Fig(path + ".separation", FormatRatio(c.separation())), "</td><td class=\"num\">",
        Fig(path + ".uniques", absl::StrCat(c.uniques())), "</td></tr>");
  }
  s += "</table>";
  return s;
}

std::string Risk(const ReportPage& page) {
  const Report& r = page.report;
  std::vector<RiskColumn> columns;
  if (r.has_risk_before()) columns.push_back({&r.risk_before(), "risk_before", "Before (input)"});
  if (r.has_risk_after()) columns.push_back({&r.risk_after(), "risk_after", "After (release)"});
  std::string s = "<section id=\"risk\"><h2>Re-identification risk</h2>";
  if (columns.empty()) {
    s += "<p class=\"note\">Not assessed in this report.</p></section>";
    return s;
  }
  const RiskSummary& first = *columns.front().summary;
  absl::StrAppend(&s, "<p class=\"note\">Over the QIDs ",
                  HtmlEscape(absl::StrJoin(first.qids(), ", ")),
                  "; a record's risk is 1 / the size of its class; \"at risk\" means above the "
                  "threshold ",
                  Fig(columns.front().prefix + ".threshold", FormatProbability(first.threshold())),
                  ". Journalist risk equals prosecutor risk without a population table (as in "
                  "ARX); the success rate is the share of records re-identified on average.",
                  page.kind == "centralized"
                      ? ""
                      : " In a federation the input is never pooled: each party assesses its own "
                        "table (below), the recipient the release.",
                  "</p>");
  s += RiskTable(columns);
  // Before / after bars for the headline figures.
  s += "<p class=\"legend\">";
  for (const auto& c : columns) {
    absl::StrAppend(&s, "<span><i class=\"swatch\" style=\"background:",
                    c.prefix == "risk_before" ? kBefore : kAfter, "\"></i>", HtmlEscape(c.title),
                    "</span>");
  }
  s += "</p>";
  for (const auto& c : columns) {
    s += Bars({{"records at risk", c.summary->prosecutor().records_at_risk()},
               {"highest risk", c.summary->prosecutor().highest()},
               {"success rate", c.summary->prosecutor().average()},
               {"sample uniques", c.summary->sample_uniques_fraction()}},
              1, c.prefix == "risk_before" ? kBefore : kAfter, FormatProbability);
  }
  for (const auto& c : columns) s += PopulationTable(*c.summary, c.prefix, c.title);
  for (const auto& c : columns) s += CombinationTable(*c.summary, c.prefix, c.title);
  s += "</section>";
  return s;
}

std::string Parties(const ReportPage& page) {
  const Report& r = page.report;
  if (page.parties.empty() && r.participation().empty() && r.party_risk().empty()) return "";
  std::string s = "<section id=\"parties\"><h2>Parties</h2>";
  if (!page.parties.empty()) {
    absl::StrAppend(
        &s, "<p>Data parties (ring order): ", HtmlEscape(absl::StrJoin(page.parties, ", ")),
        ". Recipient: ", HtmlEscape(page.recipient.empty() ? "the leader" : page.recipient),
        ".</p>");
  }
  if (!r.participation().empty()) {
    s += "<h3>Contributions (vertical job, mohammed2011 &#167;6)</h3><table><tr><th>Party</th>"
         "<th class=\"num\">Contribution</th><th class=\"num\">Rounds won</th>"
         "<th class=\"num\">Rounds declined</th></tr>";
    for (int i = 0; i < r.participation_size(); ++i) {
      const auto& p = r.participation(i);
      const std::string path = absl::StrCat("participation.", i);
      absl::StrAppend(
          &s, "<tr><td>", HtmlEscape(p.party()), "</td><td class=\"num\">",
          Fig(path + ".contribution", absl::StrFormat("%.4f", p.contribution())),
          "</td><td class=\"num\">", Fig(path + ".rounds_won", absl::StrCat(p.rounds_won())),
          "</td><td class=\"num\">",
          Fig(path + ".rounds_declined", absl::StrCat(p.rounds_declined())), "</td></tr>");
    }
    s += "</table>";
  }
  if (!r.party_risk().empty()) {
    s += "<h3>Risk at each party, on its own table</h3><p class=\"note\">Computed by each party "
         "where its table is (<code>fedanon party risk</code>); no class sizes were pooled.</p>"
         "<table><tr><th>Party</th><th class=\"num\">Records</th><th class=\"num\">Sample "
         "uniques</th><th class=\"num\">Records at risk</th><th class=\"num\">Highest risk</th>"
         "<th class=\"num\">Success rate</th></tr>";
    for (int i = 0; i < r.party_risk_size(); ++i) {
      const auto& p = r.party_risk(i);
      const std::string path = absl::StrCat("party_risk.", i, ".risk");
      absl::StrAppend(
          &s, "<tr><td>", HtmlEscape(p.party()), "</td><td class=\"num\">",
          Fig(path + ".records", absl::StrCat(p.risk().records())), "</td><td class=\"num\">",
          Fig(path + ".sample_uniques_fraction", FormatPercent(p.risk().sample_uniques_fraction())),
          "</td><td class=\"num\">",
          Fig(path + ".prosecutor.records_at_risk",
              FormatPercent(p.risk().prosecutor().records_at_risk())),
          "</td><td class=\"num\">",
          Fig(path + ".prosecutor.highest", FormatProbability(p.risk().prosecutor().highest())),
          "</td><td class=\"num\">",
          Fig(path + ".prosecutor.average", FormatProbability(p.risk().prosecutor().average())),
          "</td></tr>");
    }
    s += "</table>";
  }
  s += "</section>";
  return s;
}

std::string LeaderView(const ReportPage& page) {
  if (!page.leader_view.has_value()) {
    if (page.kind == "centralized") return "";
    return "<section id=\"leader-view\"><h2>What the leader decoded</h2><p class=\"note\">The "
           "view log was not given.</p></section>";
  }
  const ViewLogSummary& v = *page.leader_view;
  std::string s = absl::StrCat(
      "<section id=\"leader-view\"><h2>What the leader decoded</h2><p>From the leader's view "
      "log: ",
      Fig("view.entries", absl::StrCat(v.entries)), " entries, ",
      Fig("view.integers", absl::StrCat(v.integers)), " integers, over ",
      Fig("view.last_round", absl::StrCat(v.last_round)),
      " rounds. Each kind is explained in docs/threat-model.md (\"The leader's view log\").</p>"
      "<table><tr><th>Kind</th><th class=\"num\">Entries</th><th class=\"num\">Integers</th>"
      "<th class=\"num\">Split by class / sensitive value</th><th class=\"num\">Smallest "
      "non-zero count</th><th>Attributes</th></tr>");
  for (const ViewKindSummary& k : v.kinds) {
    const std::string path = absl::StrCat("view.kind.", k.kind);
    absl::StrAppend(&s, "<tr><td><code>", HtmlEscape(k.kind), "</code></td><td class=\"num\">",
                    Fig(path + ".entries", absl::StrCat(k.entries)), "</td><td class=\"num\">",
                    Fig(path + ".integers", absl::StrCat(k.integers)), "</td><td class=\"num\">",
                    Fig(path + ".labelled", absl::StrCat(k.labelled_entries)),
                    "</td><td class=\"num\">",
                    Fig(path + ".smallest_nonzero", absl::StrCat(k.smallest_nonzero)), "</td><td>",
                    HtmlEscape(absl::StrJoin(k.attributes, ", ")), "</td></tr>");
  }
  s += "</table></section>";
  return s;
}

std::string Steps(const Report& r) {
  std::string s = absl::StrCat(
      "<section id=\"steps\"><h2>Specialization steps</h2><details><summary>", r.steps_size(),
      " steps, in the order applied</summary><table><tr><th class=\"num\">Round</th><th>"
      "Attribute</th><th>Value</th><th>Replaced by</th><th class=\"num\">Records</th>"
      "<th class=\"num\">Score</th></tr>");
  for (const auto& step : r.steps()) {
    absl::StrAppend(&s, "<tr><td class=\"num\">", step.round(), "</td><td>",
                    HtmlEscape(step.attribute()), "</td><td>", HtmlEscape(step.value()),
                    "</td><td>", HtmlEscape(absl::StrJoin(step.children(), ", ")),
                    "</td><td class=\"num\">", step.records(), "</td><td class=\"num\">",
                    absl::StrFormat("%.6g", step.score()), "</td></tr>");
  }
  s += "</table></details></section>";
  return s;
}

}  // namespace

std::string RenderReportHtml(const ReportPage& page) {
  const Report& r = page.report;
  const std::string name = r.job_name().empty() ? "(unnamed job)" : r.job_name();
  const std::string name_html = r.job_name().empty() ? HtmlEscape(name) : Fig("job_name", name);
  std::string html = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width, initial-scale=1\"><title>fedanon report: ",
      HtmlEscape(name), "</title><style>", kStyle, "</style></head><body><header><h1>",
      "Anonymization report: ", name_html, "</h1><p>", HtmlEscape(KindTitle(page)));
  if (!page.job_id.empty()) absl::StrAppend(&html, " &middot; job ", HtmlEscape(page.job_id));
  absl::StrAppend(&html, " &middot; ", HtmlEscape(r.version()),
                  "</p></header><nav><a href=\"#summary\">Summary</a><a href=\"#model\">Privacy "
                  "model</a><a href=\"#generalization\">Generalization</a><a "
                  "href=\"#utility\">Utility</a><a href=\"#risk\">Risk</a>",
                  page.kind == "centralized" ? ""
                                             : "<a href=\"#parties\">Parties</a><a "
                                               "href=\"#leader-view\">Leader's view</a>",
                  "<a href=\"#steps\">Steps</a></nav><main>");
  html += Summary(page);
  html += Model(page);
  html += Generalization(page);
  html += Utility(page);
  html += Risk(page);
  html += Parties(page);
  html += LeaderView(page);
  html += Steps(r);
  html += "</main></body></html>\n";
  return html;
}

}  // namespace fedanon::html_report
