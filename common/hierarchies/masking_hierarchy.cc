// Codes of a fixed length masked from the right (ARX's redaction-based builder): level i replaces
// the last masked[i] characters by the mask character; the root masks every character.
#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/base/string_views.h"
#include "common/hierarchies/hierarchy_kinds.h"

namespace fedanon::hierarchies::hierarchy_internal {
namespace {

using fedanon::v1::MaskingHierarchy;

constexpr uint32_t kMaxCodeLength = 64;

std::string MaskOf(const MaskingHierarchy& d) { return d.mask().empty() ? "*" : d.mask(); }

std::vector<uint32_t> MaskedPerLevel(const MaskingHierarchy& d) {
  std::vector<uint32_t> masked(d.masked().begin(), d.masked().end());
  if (masked.empty()) {
    for (uint32_t m = 1; m <= d.length(); ++m) masked.push_back(m);
  }
  return masked;
}

}  // namespace

absl::Status ValidateMasking(const MaskingHierarchy& d, std::string_view attribute) {
  if (d.length() < 1 || d.length() > kMaxCodeLength) {
    return DefinitionError(attribute,
                           base::Cat("masking needs a code length from 1 to ", kMaxCodeLength));
  }
  if (MaskOf(d).size() != 1 || MaskOf(d) == ";" || MaskOf(d) == ",") {
    return DefinitionError(attribute, "the mask is one character other than ';' and ','");
  }
  uint32_t previous = 0;
  for (uint32_t m : d.masked()) {
    if (m <= previous || m > d.length()) {
      return DefinitionError(attribute,
                             base::Cat("masked lists how many characters each level masks, "
                                       "increasing, each at most the length ",
                                       d.length()));
    }
    previous = m;
  }
  if (!d.alphabet().empty()) {
    const std::set<char> distinct(d.alphabet().begin(), d.alphabet().end());
    if (distinct.size() != d.alphabet().size() || distinct.contains(MaskOf(d)[0]) ||
        distinct.contains(';') || distinct.contains(',')) {
      return DefinitionError(attribute,
                             "the alphabet lists distinct characters, none of them the mask, "
                             "';' or ','");
    }
    if (std::pow(static_cast<double>(distinct.size()), d.length()) >
        static_cast<double>(kMaxHierarchyLeaves)) {
      return DefinitionError(attribute,
                             base::Cat("the alphabet makes more than ", kMaxHierarchyLeaves,
                                       " codes: give a values file instead"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<HierarchyRows> MaskingRows(const MaskingHierarchy& d, const ValueList* values,
                                          std::string_view attribute) {
  if (absl::Status st = ValidateMasking(d, attribute); !st.ok()) return st;
  const char mask = MaskOf(d)[0];
  std::vector<std::string> leaves;
  if (!d.alphabet().empty()) {
    // Every code over the alphabet, in the alphabet's order (an odometer).
    std::vector<size_t> digit(d.length(), 0);
    while (true) {
      std::string code;
      for (size_t i : digit) code.push_back(d.alphabet()[i]);
      leaves.push_back(std::move(code));
      int position = static_cast<int>(d.length()) - 1;
      while (position >= 0 && ++digit[position] == d.alphabet().size()) digit[position--] = 0;
      if (position < 0) break;
    }
  }
  if (values != nullptr) {
    std::vector<std::string> listed;
    for (const auto& [value, where] : values->values) {
      if (value.size() != d.length()) {
        return ValueError(where, base::Cat("code '", value, "' has ", value.size(),
                                           " characters, not ", d.length()));
      }
      for (char c : value) {
        if (c == mask || c == ';' || c == ',' ||
            (!d.alphabet().empty() && d.alphabet().find(c) == std::string::npos)) {
          return ValueError(where,
                            base::Cat("code '", value, "' contains '", std::string(1, c),
                                      d.alphabet().empty() ? "', the mask or a separator"
                                                           : "', which is not in the alphabet"));
        }
      }
      listed.push_back(value);
    }
    if (d.alphabet().empty()) {
      std::sort(listed.begin(), listed.end());
      leaves = std::move(listed);
    }
  }
  if (leaves.empty()) {
    return DefinitionError(attribute,
                           "masking has no leaves: give an alphabet, a values file or a table");
  }
  const std::vector<uint32_t> masked = MaskedPerLevel(d);
  HierarchyRows rows;
  rows.reserve(leaves.size());
  for (const std::string& code : leaves) {
    std::vector<std::string> row = {code};
    for (uint32_t m : masked) {
      row.push_back(code.substr(0, d.length() - m) + std::string(m, mask));
    }
    if (masked.back() != d.length()) row.push_back(std::string(d.length(), mask));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace fedanon::hierarchies::hierarchy_internal
