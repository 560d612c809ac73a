#include "common/base/version.h"

#include "fedanon/build_info.h"

namespace fedanon::base {

std::string_view Version() { return FEDANON_VERSION; }
std::string_view GitRevision() { return FEDANON_GIT_REVISION; }
std::string VersionLine(std::string_view program) {
  std::string line(program);
  line.append(" ").append(Version()).append(" (git ").append(GitRevision()).append(")");
  return line;
}

}  // namespace fedanon::base
