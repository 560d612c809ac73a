// The small text helpers the job page is written with: HTML escaping and the fixed number formats
// its figures use (the browser test reads the figures back and compares them with report.json
// to the precision shown, so each format is one function here).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fedanon::html_report {

std::string HtmlEscape(std::string_view text);
std::string FormatPercent(double fraction);  // "12.34%"
std::string FormatProbability(double p);     // "0.2000"
std::string FormatRatio(double x);           // "0.066188" (six decimals)
std::string FormatEstimate(double x);        // "12345.6"
std::string FormatShare(double x);           // "0.0001234" or "1.234e-07" (four significant)
std::string FormatSeconds(double s);         // "1.23"

}  // namespace fedanon::html_report
