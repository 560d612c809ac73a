#include "common/html_report/html_text.h"

#include "absl/strings/str_format.h"

namespace fedanon::html_report {

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
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
        out += c;
    }
  }
  return out;
}

std::string FormatPercent(double fraction) { return absl::StrFormat("%.2f%%", 100 * fraction); }
std::string FormatProbability(double p) { return absl::StrFormat("%.4f", p); }
std::string FormatRatio(double x) { return absl::StrFormat("%.6f", x); }
std::string FormatEstimate(double x) { return absl::StrFormat("%.1f", x); }
std::string FormatShare(double x) { return absl::StrFormat("%.4g", x); }
std::string FormatSeconds(double s) { return absl::StrFormat("%.2f", s); }

}  // namespace fedanon::html_report
