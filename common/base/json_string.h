// A JSON string literal (RFC 8259) for hand-written JSON lines (the daemons' JSON logs, the
// leader's view log): quotes, backslashes and control characters escaped, other bytes as they are
// (the text is UTF-8).
#pragma once

#include <string>
#include <string_view>

namespace fedanon::base {

void AppendJsonString(std::string_view s, std::string& out);
std::string JsonString(std::string_view s);

}  // namespace fedanon::base
