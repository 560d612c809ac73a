// Dates (ARX's date-based builder, day granularity): each day generalized to the levels asked
// for, finest first: month "2020-03", quarter "2020-Q1", year "2020", decade "2020-2029",
// century "2000-2099". Dates are read and written in `format` (%Y, %m, %d, %% and literal
// characters); days are counted with the civil calendar (Gregorian, proleptic).
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/string_views.h"
#include "common/hierarchies/hierarchy_kinds.h"

namespace fedanon::hierarchies::hierarchy_internal {
namespace {

using fedanon::v1::DateHierarchy;

struct Date {
  int year = 0, month = 0, day = 0;
};

bool IsLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }
int DaysInMonth(int y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// Days since 1970-01-01 (H. Hinnant's days_from_civil) and back.
int64_t DaysFromCivil(const Date& d) {
  const int y = d.year - (d.month <= 2 ? 1 : 0);
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (d.month + (d.month > 2 ? -3 : 9)) + 2) / 5 + d.day - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}
Date CivilFromDays(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return Date{static_cast<int>(yoe + era * 400 + (month <= 2 ? 1 : 0)), month, day};
}

std::string FormatOf(const DateHierarchy& d) {
  return d.format().empty() ? "%Y-%m-%d" : d.format();
}

// Parses `text` exactly as `format` writes dates; nullopt if it does not match or is no real day.
std::optional<Date> ParseDate(std::string_view text, std::string_view format) {
  Date d;
  size_t pos = 0;
  auto digits = [&](size_t count, int* out) {
    if (pos + count > text.size()) return false;
    int v = 0;
    for (size_t i = 0; i < count; ++i) {
      const char c = text[pos + i];
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    pos += count;
    *out = v;
    return true;
  };
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '%' && i + 1 < format.size()) {
      const char f = format[++i];
      const bool ok = f == 'Y'   ? digits(4, &d.year)
                      : f == 'm' ? digits(2, &d.month)
                      : f == 'd' ? digits(2, &d.day)
                                 : (pos < text.size() && text[pos++] == '%');
      if (!ok) return std::nullopt;
    } else if (pos >= text.size() || text[pos++] != format[i]) {
      return std::nullopt;
    }
  }
  if (pos != text.size() || d.month < 1 || d.month > 12 || d.day < 1 ||
      d.day > DaysInMonth(d.year, d.month)) {
    return std::nullopt;
  }
  return d;
}

std::string FormatDate(const Date& d, std::string_view format) {
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '%' && i + 1 < format.size()) {
      const char f = format[++i];
      if (f == 'Y') {
        absl::StrAppendFormat(&out, "%04d", d.year);
      } else if (f == 'm') {
        absl::StrAppendFormat(&out, "%02d", d.month);
      } else if (f == 'd') {
        absl::StrAppendFormat(&out, "%02d", d.day);
      } else {
        out.push_back('%');
      }
    } else {
      out.push_back(format[i]);
    }
  }
  return out;
}

std::string LevelLabel(const Date& d, fedanon::v1::DateLevel level) {
  switch (level) {
    case fedanon::v1::DATE_LEVEL_MONTH:
      return absl::StrFormat("%04d-%02d", d.year, d.month);
    case fedanon::v1::DATE_LEVEL_QUARTER:
      return absl::StrFormat("%04d-Q%d", d.year, (d.month - 1) / 3 + 1);
    case fedanon::v1::DATE_LEVEL_YEAR:
      return absl::StrFormat("%04d", d.year);
    case fedanon::v1::DATE_LEVEL_DECADE:
      return absl::StrFormat("%04d-%04d", d.year / 10 * 10, d.year / 10 * 10 + 9);
    case fedanon::v1::DATE_LEVEL_CENTURY:
      return absl::StrFormat("%04d-%04d", d.year / 100 * 100, d.year / 100 * 100 + 99);
    default:
      return "*";
  }
}

}  // namespace

absl::Status ValidateDate(const DateHierarchy& d, std::string_view attribute) {
  const std::string format = FormatOf(d);
  for (const char* token : {"%Y", "%m", "%d"}) {
    const size_t first = format.find(token);
    if (first == std::string::npos || format.find(token, first + 1) != std::string::npos) {
      return DefinitionError(attribute, base::Cat("the date format '", format,
                                                  "' must contain %Y, %m and %d once each"));
    }
  }
  if (format.find(';') != std::string::npos || format.find(',') != std::string::npos) {
    return DefinitionError(attribute, "the date format may not contain ';' or ','");
  }
  if (d.levels().empty()) {
    return DefinitionError(attribute,
                           "date needs its levels (month, quarter, year, decade, century)");
  }
  int previous = fedanon::v1::DATE_LEVEL_UNSPECIFIED;
  for (int level : d.levels()) {
    if (level <= previous || level > fedanon::v1::DATE_LEVEL_CENTURY) {
      return DefinitionError(attribute,
                             "date levels go from fine to coarse, each once: month, quarter, "
                             "year, decade, century");
    }
    previous = level;
  }
  if (d.from().empty() != d.to().empty()) {
    return DefinitionError(attribute, "give both from and to, or neither");
  }
  if (!d.from().empty()) {
    const std::optional<Date> from = ParseDate(d.from(), format);
    const std::optional<Date> to = ParseDate(d.to(), format);
    if (!from.has_value() || !to.has_value()) {
      return DefinitionError(attribute,
                             base::Cat("from and to must be dates written as '", format, "'"));
    }
    const int64_t days = DaysFromCivil(*to) - DaysFromCivil(*from) + 1;
    if (days < 1) return DefinitionError(attribute, "from must not be after to");
    if (days > static_cast<int64_t>(kMaxHierarchyLeaves)) {
      return DefinitionError(attribute,
                             base::Cat("from..to spans more than ", kMaxHierarchyLeaves, " days"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<HierarchyRows> DateRows(const DateHierarchy& d, const ValueList* values,
                                       std::string_view attribute) {
  if (absl::Status st = ValidateDate(d, attribute); !st.ok()) return st;
  const std::string format = FormatOf(d);
  std::vector<std::pair<int64_t, std::string>> leaves;  // (day number, as written)
  std::optional<int64_t> first_day, last_day;
  if (!d.from().empty()) {
    first_day = DaysFromCivil(*ParseDate(d.from(), format));
    last_day = DaysFromCivil(*ParseDate(d.to(), format));
    for (int64_t day = *first_day; day <= *last_day; ++day) {
      leaves.emplace_back(day, FormatDate(CivilFromDays(day), format));
    }
  }
  if (values != nullptr) {
    std::vector<std::pair<int64_t, std::string>> listed;
    for (const auto& [value, where] : values->values) {
      const std::optional<Date> date = ParseDate(value, format);
      if (!date.has_value()) {
        return ValueError(where,
                          base::Cat("'", value, "' is not a date written as '", format, "'"));
      }
      const int64_t day = DaysFromCivil(*date);
      if (first_day.has_value() && (day < *first_day || day > *last_day)) {
        return ValueError(where,
                          base::Cat("date '", value, "' lies outside ", d.from(), "..", d.to()));
      }
      listed.emplace_back(day, value);
    }
    if (!first_day.has_value()) {
      std::stable_sort(listed.begin(), listed.end());
      leaves = std::move(listed);
    }
  }
  if (leaves.empty()) {
    return DefinitionError(attribute, "date has no leaves: give from/to, a values file or a table");
  }
  HierarchyRows rows;
  rows.reserve(leaves.size());
  for (const auto& [day, label] : leaves) {
    std::vector<std::string> row = {label};
    const Date date = CivilFromDays(day);
    for (int level : d.levels()) {
      row.push_back(LevelLabel(date, static_cast<fedanon::v1::DateLevel>(level)));
    }
    row.push_back("*");
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace fedanon::hierarchies::hierarchy_internal
