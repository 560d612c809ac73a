// The version and git revision this binary was built from (`<tool> --version`).
#pragma once

#include <string>
#include <string_view>

namespace fedanon::base {

std::string_view Version();      // e.g. "0.1.0"
std::string_view GitRevision();  // short hash, "-dirty" when built from a modified tree
// "<program> <version> (git <revision>)"
std::string VersionLine(std::string_view program);

}  // namespace fedanon::base
