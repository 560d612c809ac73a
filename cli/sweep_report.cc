#include "cli/sweep_report.h"

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/html_report/html_text.h"
#include "common/table/csv.h"

namespace fedanon::cli {
namespace {

std::string Num(double x) { return absl::StrFormat("%g", x); }
std::string Coord(double x) { return absl::StrFormat("%.1f", x); }

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                   "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

// The horizontal axis of the charts: K, or C when the grid varies C but not K.
struct XAxis {
  bool is_c = false;
  double Of(const SweepPoint& p) const { return is_c ? p.C : static_cast<double>(p.K); }
  // The parameter that is neither L nor the axis (it tells lines apart when it varies).
  double Other(const SweepPoint& p) const { return is_c ? static_cast<double>(p.K) : p.C; }
  const char* name() const { return is_c ? "C" : "K"; }
  const char* other_name() const { return is_c ? "K" : "C"; }
  const char* title() const {
    return is_c ? "C (largest confidence of a sensitive value)" : "K (smallest group size)";
  }
};

XAxis ChooseXAxis(const SweepResult& result) {
  std::vector<double> ks, cs;
  for (const SweepPoint& p : result.points) {
    if (std::find(ks.begin(), ks.end(), p.K) == ks.end()) ks.push_back(p.K);
    if (std::find(cs.begin(), cs.end(), p.C) == cs.end()) cs.push_back(p.C);
  }
  return XAxis{ks.size() <= 1 && cs.size() > 1};
}

// The points of one line: one method, L and the other parameter, ordered along the x axis.
struct Series {
  std::string method;
  std::string label;
  std::string color;
  std::vector<const SweepPoint*> points;
  bool any_ok() const {
    return std::any_of(points.begin(), points.end(), [](const SweepPoint* p) { return p->ok; });
  }
};

std::vector<Series> GroupSeries(const SweepResult& result, const XAxis& axis) {
  std::map<std::tuple<int, uint32_t, double>, Series> by_key;
  std::vector<double> others;
  std::vector<uint32_t> ls;
  for (const SweepPoint& p : result.points) {
    if (std::find(others.begin(), others.end(), axis.Other(p)) == others.end()) {
      others.push_back(axis.Other(p));
    }
    if (std::find(ls.begin(), ls.end(), p.L) == ls.end()) ls.push_back(p.L);
  }
  for (const SweepPoint& p : result.points) {
    const bool naive = p.method == "naive";
    const bool local = p.method == "local";
    Series& s = by_key[{naive ? 1 : local ? 2 : 0, p.L, axis.Other(p)}];
    if (s.points.empty()) {
      s.method = p.method;
      s.label = absl::StrCat("L=", p.L);
      if (others.size() > 1)
        absl::StrAppend(&s.label, ", ", axis.other_name(), "=", Num(axis.Other(p)));
      if (naive) absl::StrAppend(&s.label, " naive (", result.naive_parties, " parties)");
      if (local) absl::StrAppend(&s.label, " local recoding");
      if (!local && !naive && result.local) absl::StrAppend(&s.label, " global recoding");
      const size_t shade =
          (std::find(ls.begin(), ls.end(), p.L) - ls.begin()) * others.size() +
          (std::find(others.begin(), others.end(), axis.Other(p)) - others.begin());
      s.color = kColors[shade % std::size(kColors)];
    }
    s.points.push_back(&p);
  }
  std::vector<Series> out;
  for (auto& [key, s] : by_key) {
    std::sort(s.points.begin(), s.points.end(),
              [&](const SweepPoint* a, const SweepPoint* b) { return axis.Of(*a) < axis.Of(*b); });
    out.push_back(std::move(s));
  }
  return out;
}

struct Reference {
  std::string label;
  double value;
};

// Chart geometry in SVG units: the plot area is [kLeft, kRight] x [kTop, kBottom], the legend
// right of it.
constexpr double kChartWidth = 760, kLeft = 70, kRight = 540, kTop = 40, kBottom = 320;

// The value ranges of a chart and where values land in the SVG.
struct ChartScale {
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  bool percent = false;
  double X(double x) const { return kLeft + (x - x_lo) / (x_hi - x_lo) * (kRight - kLeft); }
  double Y(double y) const { return kBottom - (y - y_lo) / (y_hi - y_lo) * (kBottom - kTop); }
  std::string YText(double y) const {
    return percent ? html_report::FormatPercent(y) : absl::StrFormat("%.3f", y);
  }
};

// Ranges covering `xs` (sorted) and `ys` (any order), the y range padded by 8% and starting at
// 0 when `from_zero`.
ChartScale ScaleFor(const std::vector<double>& xs, const std::vector<double>& ys, bool percent,
                    bool from_zero) {
  ChartScale scale;
  scale.percent = percent;
  scale.x_lo = xs.empty() ? 0 : xs.front();
  scale.x_hi = xs.empty() ? 1 : xs.back();
  if (scale.x_hi - scale.x_lo < 1e-12) {
    scale.x_lo -= 1;
    scale.x_hi += 1;
  }
  scale.y_lo = ys.empty() ? 0 : *std::min_element(ys.begin(), ys.end());
  scale.y_hi = ys.empty() ? 1 : *std::max_element(ys.begin(), ys.end());
  if (from_zero) scale.y_lo = 0;
  if (scale.y_hi - scale.y_lo < 1e-9) scale.y_hi = scale.y_lo + (percent ? 0.01 : 0.1);
  const double pad = 0.08 * (scale.y_hi - scale.y_lo);
  scale.y_hi += pad;
  if (!from_zero) scale.y_lo = std::max(0.0, scale.y_lo - pad);
  return scale;
}

// The frame, the grid with the y ticks, the x ticks at `xs` and both axis titles.
void AppendAxes(const ChartScale& scale, const std::vector<double>& xs, const XAxis& axis,
                const std::string& y_name, std::string* svg) {
  absl::StrAppend(svg, "<rect x=\"", kLeft, "\" y=\"", kTop, "\" width=\"", kRight - kLeft,
                  "\" height=\"", kBottom - kTop, "\" class=\"frame\"/>\n");
  for (int i = 0; i <= 5; ++i) {
    const double y = scale.y_lo + (scale.y_hi - scale.y_lo) * i / 5;
    absl::StrAppend(svg, "<line x1=\"", kLeft, "\" x2=\"", kRight, "\" y1=\"", Coord(scale.Y(y)),
                    "\" y2=\"", Coord(scale.Y(y)), "\" class=\"grid\"/>\n");
    absl::StrAppend(svg, "<text x=\"", kLeft - 6, "\" y=\"", Coord(scale.Y(y) + 4),
                    "\" class=\"tick\" text-anchor=\"end\">", scale.YText(y), "</text>\n");
  }
  for (double x : xs) {
    absl::StrAppend(svg, "<text x=\"", Coord(scale.X(x)), "\" y=\"", kBottom + 18,
                    "\" class=\"tick\" text-anchor=\"middle\">", Num(x), "</text>\n");
  }
  absl::StrAppend(svg, "<text x=\"", (kLeft + kRight) / 2, "\" y=\"", kBottom + 40,
                  "\" class=\"axis\" text-anchor=\"middle\">", axis.title(), "</text>\n");
  absl::StrAppend(svg, "<text x=\"16\" y=\"", (kTop + kBottom) / 2,
                  "\" class=\"axis\" text-anchor=\"middle\" transform=\"rotate(-90 16 ",
                  (kTop + kBottom) / 2, ")\">", html_report::HtmlEscape(y_name), "</text>\n");
}

// A chart's legend: one entry per line, stacked right of the plot area.
class Legend {
 public:
  explicit Legend(std::string* svg) : svg_(svg) {}

  void Add(const std::string& color, const std::string& dash, const std::string& text) {
    absl::StrAppend(svg_, "<line x1=\"", kRight + 16, "\" x2=\"", kRight + 44, "\" y1=\"", y_,
                    "\" y2=\"", y_, "\" stroke=\"", color, "\" stroke-width=\"2\"", dash, "/>\n");
    absl::StrAppend(svg_, "<text x=\"", kRight + 50, "\" y=\"", y_ + 4, "\" class=\"legend\">",
                    html_report::HtmlEscape(text), "</text>\n");
    y_ += 20;
  }

 private:
  std::string* svg_;
  double y_ = kTop + 6;
};

// The line of one series (dashed for the naive method, dotted for local recoding), its points
// (each a
// `<circle class="point">` with the data attributes of sweep_report.h) and its legend entry.
void AppendSeries(const std::string& chart, const Series& s, const XAxis& axis,
                  const ChartScale& scale, const std::function<double(const SweepPoint&)>& value,
                  Legend* legend, std::string* svg) {
  const bool naive = s.method == "naive";
  const std::string dash = naive                 ? " stroke-dasharray=\"6 4\""
                           : s.method == "local" ? " stroke-dasharray=\"2 3\""
                                                 : "";
  std::string path;
  for (const SweepPoint* p : s.points) {
    if (!p->ok) continue;
    absl::StrAppend(&path, path.empty() ? "M" : " L", Coord(scale.X(axis.Of(*p))), " ",
                    Coord(scale.Y(value(*p))));
  }
  absl::StrAppend(svg, "<path d=\"", path, "\" fill=\"none\" stroke=\"", s.color,
                  "\" stroke-width=\"2\"", dash, "/>\n");
  for (const SweepPoint* p : s.points) {
    if (!p->ok) continue;
    const double v = value(*p);
    absl::StrAppend(svg, "<circle class=\"point\" data-chart=\"", chart, "\" data-method=\"",
                    p->method, "\" data-l=\"", p->L, "\" data-k=\"", p->K, "\" data-c=\"",
                    Num(p->C), "\" data-value=\"", absl::StrFormat("%.6g", v), "\" cx=\"",
                    Coord(scale.X(axis.Of(*p))), "\" cy=\"", Coord(scale.Y(v)),
                    "\" r=\"4\" stroke=\"", s.color, "\" fill=\"", naive ? "#ffffff" : s.color,
                    "\"><title>", html_report::HtmlEscape(s.label), ", ", axis.name(), "=",
                    Num(axis.Of(*p)), ": ", scale.YText(v), "</title></circle>\n");
  }
  legend->Add(s.color, dash, s.label);
}

// One line chart of `value(point)` against the x axis.
std::string Chart(const std::string& chart, const std::string& title, const std::string& y_name,
                  const XAxis& axis, const std::vector<Series>& series,
                  const std::function<double(const SweepPoint&)>& value,
                  const std::vector<Reference>& references, bool percent, bool from_zero) {
  std::vector<double> xs, ys;
  size_t legend_entries = references.size();
  for (const Series& s : series) {
    legend_entries += s.any_ok();
    for (const SweepPoint* p : s.points) {
      xs.push_back(axis.Of(*p));
      if (p->ok) ys.push_back(value(*p));
    }
  }
  const double height = std::max(380.0, kTop + 6 + 20.0 * legend_entries + 10);
  for (const Reference& r : references) ys.push_back(r.value);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  const ChartScale scale = ScaleFor(xs, ys, percent, from_zero);

  std::string svg = absl::StrCat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"chart-", chart, "\" width=\"",
      kChartWidth, "\" height=\"", height, "\" viewBox=\"0 0 ", kChartWidth, " ", height,
      "\" role=\"img\" aria-label=\"", html_report::HtmlEscape(title), "\">\n");
  absl::StrAppend(&svg, "<text x=\"", kLeft, "\" y=\"22\" class=\"title\">",
                  html_report::HtmlEscape(title), "</text>\n");
  AppendAxes(scale, xs, axis, y_name, &svg);

  // Reference lines, then the series; the legend lists both.
  Legend legend(&svg);
  for (const Reference& r : references) {
    absl::StrAppend(&svg, "<line x1=\"", kLeft, "\" x2=\"", kRight, "\" y1=\"",
                    Coord(scale.Y(r.value)), "\" y2=\"", Coord(scale.Y(r.value)),
                    "\" class=\"reference\"/>\n");
    legend.Add("#777777", " stroke-dasharray=\"2 3\"",
               absl::StrCat(r.label, " ", scale.YText(r.value)));
  }
  for (const Series& s : series) {
    // A series without a release is listed in the table as "no release".
    if (s.any_ok()) AppendSeries(chart, s, axis, scale, value, &legend, &svg);
  }
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace

std::string SweepHtml(const SweepResult& r) {
  const evaluation::RawBaselines& b = r.baselines;
  const XAxis axis = ChooseXAxis(r);
  const std::vector<Series> series = GroupSeries(r, axis);
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>";
  absl::StrAppend(&html, "fedanon sweep: ", html_report::HtmlEscape(r.job_name), "</title>\n");
  absl::StrAppend(&html,
                  "<style>\n"
                  "body { font-family: sans-serif; margin: 2em; color: #222; }\n"
                  "table { border-collapse: collapse; margin: 1em 0; }\n"
                  "td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }\n"
                  "td.text, th.text { text-align: left; }\n"
                  ".chart .frame { fill: none; stroke: #444; }\n"
                  ".chart .grid { stroke: #e4e4e4; }\n"
                  ".chart .reference { stroke: #777; stroke-width: 1.5; stroke-dasharray: 2 3; }\n"
                  ".chart text { font-size: 12px; fill: #222; }\n"
                  ".chart .title { font-size: 15px; font-weight: bold; }\n"
                  "</style>\n</head>\n<body>\n");
  absl::StrAppend(&html, "<h1>Utility sweep: ", html_report::HtmlEscape(r.job_name), "</h1>\n");
  absl::StrAppend(&html, "<p>Spec <code>", html_report::HtmlEscape(r.spec_path),
                  "</code>, raw table <code>", html_report::HtmlEscape(r.raw_path),
                  "</code>, grid <code>", html_report::HtmlEscape(r.grid), "</code>. ", b.records,
                  " records; C4.5-style tree trained on ", b.train_records, " and tested on ",
                  b.test_records, " (seed ", r.seed,
                  "). Anonymization: centralized top-down specialization (equal to the "
                  "federated result)");
  if (r.naive_parties > 0) {
    absl::StrAppend(&html, "; naive: the table cut into ", r.naive_parties,
                    " contiguous parts, each anonymized alone, then concatenated "
                    "(generalize-then-integrate)");
  }
  if (r.local) {
    absl::StrAppend(&html,
                    "; local: the same cells with <code>recoding: local</code> (each group "
                    "specialized on its own; dotted lines), global recoding solid");
  }
  absl::StrAppend(&html, ".</p>\n");

  absl::StrAppend(&html,
                  "<table id=\"baselines\">\n<tr><th class=\"text\">error</th>"
                  "<th>value</th></tr>\n");
  absl::StrAppend(&html, "<tr><td class=\"text\">BE (raw data)</td><td>",
                  html_report::FormatPercent(b.baseline_error), "</td></tr>\n");
  absl::StrAppend(&html, "<tr><td class=\"text\">UE (QID attributes removed)</td><td>",
                  html_report::FormatPercent(b.upper_bound_error), "</td></tr>\n");
  for (const evaluation::SourceError& s : b.source_errors) {
    absl::StrAppend(&html, "<tr><td class=\"text\">SE (party ", html_report::HtmlEscape(s.party),
                    "'s attributes)</td><td>", html_report::FormatPercent(s.error), "</td></tr>\n");
  }
  absl::StrAppend(&html, "</table>\n");

  absl::StrAppend(&html, "<div>\n",
                  Chart(
                      "ce", absl::StrCat("Classification error CE against ", axis.name()),
                      "classification error", axis, series,
                      [](const SweepPoint& p) { return p.classification_error; },
                      {{"BE", b.baseline_error}, {"UE", b.upper_bound_error}}, true, false),
                  Chart(
                      "dr", absl::StrCat("Discernibility ratio DR against ", axis.name()),
                      "discernibility ratio", axis, series,
                      [](const SweepPoint& p) { return p.discernibility_ratio; }, {}, false, true),
                  "</div>\n");

  absl::StrAppend(&html,
                  "<table id=\"points\">\n<tr><th class=\"text\">method</th><th>L</th><th>K</th>"
                  "<th>C</th><th>CE</th><th>DR</th><th>groups</th><th>seconds</th>"
                  "<th class=\"text\">note</th></tr>\n");
  for (const SweepPoint& p : r.points) {
    absl::StrAppend(&html, "<tr><td class=\"text\">", p.method, "</td><td>", p.L, "</td><td>", p.K,
                    "</td><td>", Num(p.C), "</td>");
    if (p.ok) {
      absl::StrAppend(&html, "<td>", html_report::FormatPercent(p.classification_error),
                      "</td><td>", absl::StrFormat("%.4f", p.discernibility_ratio), "</td><td>",
                      p.groups, "</td>");
    } else {
      absl::StrAppend(&html, "<td></td><td></td><td></td>");
    }
    absl::StrAppend(&html, "<td>", absl::StrFormat("%.1f", p.seconds), "</td><td class=\"text\">",
                    p.ok ? "" : html_report::HtmlEscape(absl::StrCat("no release: ", p.error)),
                    "</td></tr>\n");
  }
  absl::StrAppend(&html, "</table>\n</body>\n</html>\n");
  return html;
}

std::string SweepCsv(const SweepResult& r) {
  std::string csv = "method,L,K,C,status,CE,DR,groups,seconds,BE,UE,error\n";
  for (const SweepPoint& p : r.points) {
    absl::StrAppend(&csv, p.method, ",", p.L, ",", p.K, ",", Num(p.C), ",",
                    p.ok ? "ok" : "no release", ",");
    if (p.ok) {
      absl::StrAppend(&csv, absl::StrFormat("%.6f", p.classification_error), ",",
                      absl::StrFormat("%.6f", p.discernibility_ratio), ",", p.groups, ",");
    } else {
      absl::StrAppend(&csv, ",,,");
    }
    absl::StrAppend(&csv, absl::StrFormat("%.2f", p.seconds), ",",
                    absl::StrFormat("%.6f", r.baselines.baseline_error), ",",
                    absl::StrFormat("%.6f", r.baselines.upper_bound_error), ",",
                    table::CsvField(p.error), "\n");
  }
  return csv;
}

absl::Status WriteSweepReport(const SweepResult& result, const std::string& html_path,
                              const std::string& csv_path) {
  if (absl::Status s = table::WriteFileAtomically(html_path, SweepHtml(result)); !s.ok()) return s;
  if (absl::Status s = table::WriteFileAtomically(csv_path, SweepCsv(result)); !s.ok()) {
    ::unlink(html_path.c_str());
    return s;
  }
  return absl::OkStatus();
}

}  // namespace fedanon::cli
