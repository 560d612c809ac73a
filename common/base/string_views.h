// Bridges std::string_view and Debian's Abseil, which keeps its own absl::string_view type
// (ABSL_OPTION_USE_STD_STRING_VIEW 0): absl::StrCat and friends do not accept std::string_view.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace fedanon::base {

inline absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }
inline std::string_view Sv(absl::string_view s) { return std::string_view(s.data(), s.size()); }

namespace internal {
template <typename T>
decltype(auto) CatArg(const T& value) {
  if constexpr (std::is_same_v<T, std::string_view>) {
    return Av(value);
  } else {
    return (value);
  }
}
}  // namespace internal

// absl::StrCat that also takes std::string_view.
template <typename... T>
std::string Cat(const T&... values) {
  return absl::StrCat(internal::CatArg(values)...);
}

// Appends std::string_view elements in absl::StrJoin.
inline constexpr auto kViewFormatter = [](std::string* out, std::string_view s) { out->append(s); };

}  // namespace fedanon::base
