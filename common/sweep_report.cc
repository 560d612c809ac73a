#include "common/sweep_report.h"

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/csv.h"

namespace fedanon::common {
namespace {

std::string Escape(std::string_view text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string CsvField(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string Num(double x) { return absl::StrFormat("%g", x); }
std::string Pct(double x) { return absl::StrFormat("%.2f%%", 100 * x); }
std::string Coord(double x) { return absl::StrFormat("%.1f", x); }

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                   "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

// The points of one line: one method, L and C, ordered by K.
struct Series {
  std::string method;
  uint32_t L = 0;
  double C = 0;
  std::string label;
  std::string color;
  std::vector<const SweepPoint*> points;
};

std::vector<Series> GroupSeries(const SweepResult& result) {
  std::map<std::tuple<int, uint32_t, double>, Series> by_key;
  std::vector<double> cs;
  std::vector<uint32_t> ls;
  for (const SweepPoint& p : result.points) {
    if (std::find(cs.begin(), cs.end(), p.C) == cs.end()) cs.push_back(p.C);
    if (std::find(ls.begin(), ls.end(), p.L) == ls.end()) ls.push_back(p.L);
  }
  for (const SweepPoint& p : result.points) {
    const bool naive = p.method == "naive";
    Series& s = by_key[{naive ? 1 : 0, p.L, p.C}];
    if (s.points.empty()) {
      s.method = p.method;
      s.L = p.L;
      s.C = p.C;
      s.label = absl::StrCat("L=", p.L);
      if (cs.size() > 1) absl::StrAppend(&s.label, ", C=", Num(p.C));
      if (naive) absl::StrAppend(&s.label, " naive (", result.naive_parties, " parties)");
      const size_t shade = (std::find(ls.begin(), ls.end(), p.L) - ls.begin()) * cs.size() +
                           (std::find(cs.begin(), cs.end(), p.C) - cs.begin());
      s.color = kColors[shade % std::size(kColors)];
    }
    s.points.push_back(&p);
  }
  std::vector<Series> out;
  for (auto& [key, s] : by_key) {
    std::sort(s.points.begin(), s.points.end(),
              [](const SweepPoint* a, const SweepPoint* b) { return a->K < b->K; });
    out.push_back(std::move(s));
  }
  return out;
}

struct Reference {
  std::string label;
  double value;
};

// One line chart of `value(point)` against K.
std::string Chart(const std::string& chart, const std::string& title, const std::string& y_name,
                  const std::vector<Series>& series,
                  const std::function<double(const SweepPoint&)>& value,
                  const std::vector<Reference>& references, bool percent, bool from_zero) {
  constexpr double kWidth = 760, kHeight = 380;
  constexpr double kLeft = 70, kRight = 540, kTop = 40, kBottom = 320;
  std::vector<double> ks, ys;
  for (const Series& s : series) {
    for (const SweepPoint* p : s.points) {
      ks.push_back(p->K);
      if (p->ok) ys.push_back(value(*p));
    }
  }
  for (const Reference& r : references) ys.push_back(r.value);
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  double x_lo = ks.empty() ? 0 : ks.front(), x_hi = ks.empty() ? 1 : ks.back();
  if (x_hi - x_lo < 1e-12) {
    x_lo -= 1;
    x_hi += 1;
  }
  double y_lo = ys.empty() ? 0 : *std::min_element(ys.begin(), ys.end());
  double y_hi = ys.empty() ? 1 : *std::max_element(ys.begin(), ys.end());
  if (from_zero) y_lo = 0;
  if (y_hi - y_lo < 1e-9) y_hi = y_lo + (percent ? 0.01 : 0.1);
  const double pad = 0.08 * (y_hi - y_lo);
  y_hi += pad;
  if (!from_zero) y_lo = std::max(0.0, y_lo - pad);
  auto x_of = [&](double k) { return kLeft + (k - x_lo) / (x_hi - x_lo) * (kRight - kLeft); };
  auto y_of = [&](double y) { return kBottom - (y - y_lo) / (y_hi - y_lo) * (kBottom - kTop); };
  auto y_text = [&](double y) { return percent ? Pct(y) : absl::StrFormat("%.3f", y); };

  std::string svg =
      absl::StrCat("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"chart-", chart,
                   "\" width=\"", kWidth, "\" height=\"", kHeight, "\" viewBox=\"0 0 ", kWidth, " ",
                   kHeight, "\" role=\"img\" aria-label=\"", Escape(title), "\">\n");
  absl::StrAppend(&svg, "<text x=\"", kLeft, "\" y=\"22\" class=\"title\">", Escape(title),
                  "</text>\n");
  // Axes, grid and ticks.
  absl::StrAppend(&svg, "<rect x=\"", kLeft, "\" y=\"", kTop, "\" width=\"", kRight - kLeft,
                  "\" height=\"", kBottom - kTop, "\" class=\"frame\"/>\n");
  for (int i = 0; i <= 5; ++i) {
    const double y = y_lo + (y_hi - y_lo) * i / 5;
    absl::StrAppend(&svg, "<line x1=\"", kLeft, "\" x2=\"", kRight, "\" y1=\"", Coord(y_of(y)),
                    "\" y2=\"", Coord(y_of(y)), "\" class=\"grid\"/>\n");
    absl::StrAppend(&svg, "<text x=\"", kLeft - 6, "\" y=\"", Coord(y_of(y) + 4),
                    "\" class=\"tick\" text-anchor=\"end\">", y_text(y), "</text>\n");
  }
  for (double k : ks) {
    absl::StrAppend(&svg, "<text x=\"", Coord(x_of(k)), "\" y=\"", kBottom + 18,
                    "\" class=\"tick\" text-anchor=\"middle\">", Num(k), "</text>\n");
  }
  absl::StrAppend(&svg, "<text x=\"", (kLeft + kRight) / 2, "\" y=\"", kBottom + 40,
                  "\" class=\"axis\" text-anchor=\"middle\">K (minimum group size)</text>\n");
  absl::StrAppend(&svg, "<text x=\"16\" y=\"", (kTop + kBottom) / 2,
                  "\" class=\"axis\" text-anchor=\"middle\" transform=\"rotate(-90 16 ",
                  (kTop + kBottom) / 2, ")\">", Escape(y_name), "</text>\n");

  // Reference lines, then the series.
  double legend_y = kTop + 6;
  auto legend = [&](const std::string& color, const std::string& dash, const std::string& text) {
    absl::StrAppend(&svg, "<line x1=\"", kRight + 16, "\" x2=\"", kRight + 44, "\" y1=\"", legend_y,
                    "\" y2=\"", legend_y, "\" stroke=\"", color, "\" stroke-width=\"2\"", dash,
                    "/>\n");
    absl::StrAppend(&svg, "<text x=\"", kRight + 50, "\" y=\"", legend_y + 4,
                    "\" class=\"legend\">", Escape(text), "</text>\n");
    legend_y += 20;
  };
  for (const Reference& r : references) {
    absl::StrAppend(&svg, "<line x1=\"", kLeft, "\" x2=\"", kRight, "\" y1=\"",
                    Coord(y_of(r.value)), "\" y2=\"", Coord(y_of(r.value)),
                    "\" class=\"reference\"/>\n");
    legend("#777777", " stroke-dasharray=\"2 3\"",
           absl::StrCat(r.label, " ", percent ? Pct(r.value) : y_text(r.value)));
  }
  for (const Series& s : series) {
    const bool naive = s.method == "naive";
    const std::string dash = naive ? " stroke-dasharray=\"6 4\"" : "";
    std::string path;
    for (const SweepPoint* p : s.points) {
      if (!p->ok) continue;
      absl::StrAppend(&path, path.empty() ? "M" : " L", Coord(x_of(p->K)), " ",
                      Coord(y_of(value(*p))));
    }
    if (!path.empty()) {
      absl::StrAppend(&svg, "<path d=\"", path, "\" fill=\"none\" stroke=\"", s.color,
                      "\" stroke-width=\"2\"", dash, "/>\n");
    }
    for (const SweepPoint* p : s.points) {
      if (!p->ok) continue;
      const double v = value(*p);
      absl::StrAppend(&svg, "<circle class=\"point\" data-chart=\"", chart, "\" data-method=\"",
                      p->method, "\" data-l=\"", p->L, "\" data-k=\"", p->K, "\" data-c=\"",
                      Num(p->C), "\" data-value=\"", absl::StrFormat("%.6g", v), "\" cx=\"",
                      Coord(x_of(p->K)), "\" cy=\"", Coord(y_of(v)), "\" r=\"4\" stroke=\"",
                      s.color, "\" fill=\"", naive ? "#ffffff" : s.color, "\"><title>",
                      Escape(s.label), ", K=", p->K, ": ", y_text(v), "</title></circle>\n");
    }
    legend(s.color, dash, s.label);
  }
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace

std::string SweepHtml(const SweepResult& r) {
  const RawBaselines& b = r.baselines;
  const std::vector<Series> series = GroupSeries(r);
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>";
  absl::StrAppend(&html, "fedanon sweep: ", Escape(r.job_name), "</title>\n");
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
  absl::StrAppend(&html, "<h1>Utility sweep: ", Escape(r.job_name), "</h1>\n");
  absl::StrAppend(&html, "<p>Spec <code>", Escape(r.spec_path), "</code>, raw table <code>",
                  Escape(r.raw_path), "</code>, grid <code>", Escape(r.grid), "</code>. ",
                  b.records, " records; C4.5-style tree trained on ", b.train_records,
                  " and tested on ", b.test_records, " (seed ", r.seed,
                  "). Anonymization: centralized top-down specialization (equal to the "
                  "federated result)");
  if (r.naive_parties > 0) {
    absl::StrAppend(&html, "; naive: the table cut into ", r.naive_parties,
                    " contiguous parts, each anonymized alone, then concatenated "
                    "(generalize-then-integrate)");
  }
  absl::StrAppend(&html, ".</p>\n");

  absl::StrAppend(&html,
                  "<table id=\"baselines\">\n<tr><th class=\"text\">error</th>"
                  "<th>value</th></tr>\n");
  absl::StrAppend(&html, "<tr><td class=\"text\">BE (raw data)</td><td>", Pct(b.baseline_error),
                  "</td></tr>\n");
  absl::StrAppend(&html, "<tr><td class=\"text\">UE (QID attributes removed)</td><td>",
                  Pct(b.upper_bound_error), "</td></tr>\n");
  for (const SourceError& s : b.source_errors) {
    absl::StrAppend(&html, "<tr><td class=\"text\">SE (party ", Escape(s.party),
                    "'s attributes)</td><td>", Pct(s.error), "</td></tr>\n");
  }
  absl::StrAppend(&html, "</table>\n");

  absl::StrAppend(&html, "<div>\n",
                  Chart(
                      "ce", "Classification error CE against K", "classification error", series,
                      [](const SweepPoint& p) { return p.classification_error; },
                      {{"BE", b.baseline_error}, {"UE", b.upper_bound_error}}, true, false),
                  Chart(
                      "dr", "Discernibility ratio DR against K", "discernibility ratio", series,
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
      absl::StrAppend(&html, "<td>", Pct(p.classification_error), "</td><td>",
                      absl::StrFormat("%.4f", p.discernibility_ratio), "</td><td>", p.groups,
                      "</td>");
    } else {
      absl::StrAppend(&html, "<td></td><td></td><td></td>");
    }
    absl::StrAppend(&html, "<td>", absl::StrFormat("%.1f", p.seconds), "</td><td class=\"text\">",
                    p.ok ? "" : Escape(absl::StrCat("no release: ", p.error)), "</td></tr>\n");
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
                    absl::StrFormat("%.6f", r.baselines.upper_bound_error), ",", CsvField(p.error),
                    "\n");
  }
  return csv;
}

absl::Status WriteSweepReport(const SweepResult& result, const std::string& html_path,
                              const std::string& csv_path) {
  if (absl::Status s = WriteFileAtomically(html_path, SweepHtml(result)); !s.ok()) return s;
  if (absl::Status s = WriteFileAtomically(csv_path, SweepCsv(result)); !s.ok()) {
    ::unlink(html_path.c_str());
    return s;
  }
  return absl::OkStatus();
}

}  // namespace fedanon::common
