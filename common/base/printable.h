// Text from a peer or a file made safe to log or show: Printable() keeps printable ASCII and
// well-formed UTF-8 text, escapes everything that could forge or hide log content (control
// characters such as newline and ESC, C1 controls, Unicode line separators and bidirectional
// overrides, malformed UTF-8) as \xNN or \u{NNNN}, and truncates long text, saying how much was
// cut. Every string a peer supplies (versions, names, error messages) passes through it before a
// log line or an admin's screen.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace fedanon::base {

inline constexpr size_t kMaxPrintableBytes = 2048;

std::string Printable(std::string_view text, size_t max_bytes = kMaxPrintableBytes);

}  // namespace fedanon::base
