#include "server/runtime/sd_notify.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"

namespace fedanon::server {

absl::Status SdNotifyTo(const std::string& socket_name, const std::string& state) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_name.size() < 2 || socket_name.size() >= sizeof(addr.sun_path) ||
      (socket_name[0] != '/' && socket_name[0] != '@')) {
    return absl::InvalidArgumentError(
        absl::StrCat("NOTIFY_SOCKET '", socket_name, "' is not an absolute path or @name"));
  }
  std::memcpy(addr.sun_path, socket_name.data(), socket_name.size());
  socklen_t length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_name.size());
  if (socket_name[0] == '@') {
    addr.sun_path[0] = '\0';  // abstract namespace: no terminating NUL counted
  } else {
    length += 1;  // the path's NUL
  }
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return base::ErrnoStatus(errno, "sd_notify: socket");
  const ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                                reinterpret_cast<const sockaddr*>(&addr), length);
  const int saved = errno;
  ::close(fd);
  if (sent < 0) return base::ErrnoStatus(saved, absl::StrCat("sd_notify to ", socket_name));
  if (static_cast<size_t>(sent) != state.size()) {
    return absl::InternalError("sd_notify: short datagram");
  }
  return absl::OkStatus();
}

absl::Status SdNotify(const std::string& state) {
  const char* name = std::getenv("NOTIFY_SOCKET");
  if (name == nullptr || *name == '\0') return absl::OkStatus();
  return SdNotifyTo(name, state);
}

}  // namespace fedanon::server
