#include "server/runtime/unix_metrics_endpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"

namespace fedanon::server {
namespace {

constexpr size_t kMaxRequestBytes = 8192;
constexpr int kRequestTimeoutMs = 2000;

absl::StatusOr<sockaddr_un> SocketAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.front() != '/' || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("metrics socket '", path,
                                                   "' must be an absolute path of at most ",
                                                   sizeof(addr.sun_path) - 1, " bytes"));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

// Removes a socket file nobody serves; refuses a live socket or another kind of file.
absl::Status ClearStaleSocket(const std::string& path, const sockaddr_un& addr) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return base::ErrnoStatus(errno, "cannot stat the metrics socket", path);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("metrics socket path '", path, "' exists and is not a socket"));
  }
  const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return base::ErrnoStatus(errno, "socket", path);
  const bool live = ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(probe);
  if (live) {
    return absl::FailedPreconditionError(
        absl::StrCat("metrics socket '", path, "' is served by another process"));
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return base::ErrnoStatus(errno, "cannot remove the stale metrics socket", path);
  }
  return absl::OkStatus();
}

void SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void Respond(int fd, int code, std::string_view reason, std::string_view content_type,
             std::string_view body) {
  std::string response = "HTTP/1.1 " + std::to_string(code) + " ";
  response.append(reason);
  response.append("\r\nContent-Type: ");
  response.append(content_type);
  response.append("\r\nContent-Length: " + std::to_string(body.size()) +
                  "\r\nConnection: close\r\n\r\n");
  response.append(body);
  SendAll(fd, response);
}

}  // namespace

absl::StatusOr<std::unique_ptr<UnixMetricsEndpoint>> UnixMetricsEndpoint::Start(
    const std::string& path, const MetricsRegistry& registry, HealthProbe health, mode_t mode) {
  absl::StatusOr<sockaddr_un> addr = SocketAddress(path);
  if (!addr.ok()) return addr.status();
  if (absl::Status st = ClearStaleSocket(path, *addr); !st.ok()) return st;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return base::ErrnoStatus(errno, "cannot create the metrics socket", path);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) != 0) {
    const int err = errno;
    ::close(fd);
    return absl::UnavailableError(
        base::ErrnoStatus(err, "cannot bind the metrics socket", path).message());
  }
  // The mode is set before listen(): until then every connect() is refused, so no process
  // outside `mode` can ever have been served.
  int wake[2] = {-1, -1};
  if (::chmod(path.c_str(), mode) != 0 || ::listen(fd, 16) != 0 ||
      ::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return base::ErrnoStatus(err, "cannot set up the metrics socket", path);
  }
  std::unique_ptr<UnixMetricsEndpoint> endpoint(
      new UnixMetricsEndpoint(path, registry, std::move(health), fd, wake[0], wake[1]));
  endpoint->thread_ = std::thread([e = endpoint.get()] { e->Serve(); });
  return endpoint;
}

UnixMetricsEndpoint::UnixMetricsEndpoint(std::string path, const MetricsRegistry& registry,
                                         HealthProbe health, int listen_fd, int wake_read,
                                         int wake_write)
    : path_(std::move(path)),
      registry_(registry),
      health_(std::move(health)),
      listen_fd_(listen_fd),
      wake_read_(wake_read),
      wake_write_(wake_write) {}

UnixMetricsEndpoint::~UnixMetricsEndpoint() {
  const char byte = 1;
  if (::write(wake_write_, &byte, 1) < 0) {
    spdlog::warn("metrics socket: cannot wake the server thread: {}", std::strerror(errno));
  }
  if (thread_.joinable()) thread_.join();
  ::close(listen_fd_);
  ::close(wake_read_);
  ::close(wake_write_);
  ::unlink(path_.c_str());
}

void UnixMetricsEndpoint::Serve() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("metrics socket {}: poll: {}", path_, std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;  // EAGAIN, ECONNABORTED, EMFILE: try again at the next event
    Answer(fd);
    ::close(fd);
  }
}

void UnixMetricsEndpoint::Answer(int fd) {
  std::string request;
  char buf[1024];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < kMaxRequestBytes) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, kRequestTimeoutMs) <= 0) return;  // too slow: close
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    request.append(buf, static_cast<size_t>(n));
  }
  const size_t line_end = request.find("\r\n");
  const std::string_view line =
      std::string_view(request).substr(0, line_end == std::string::npos ? 0 : line_end);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) {
    Respond(fd, 400, "Bad Request", "text/plain", "bad request\n");
    return;
  }
  const std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  target = target.substr(0, target.find('?'));
  if (method != "GET") {
    Respond(fd, 405, "Method Not Allowed", "text/plain", "only GET\n");
    return;
  }
  if (target == "/metrics") {
    Respond(fd, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", registry_.Text());
  } else if (target == "/health") {
    const auto [linked, detail] = health_ ? health_() : std::make_pair(false, std::string("?"));
    Respond(fd, linked ? 200 : 503, linked ? "OK" : "Service Unavailable", "text/plain",
            absl::StrCat(detail, "\n"));
  } else if (target == "/live") {
    Respond(fd, 200, "OK", "text/plain", "live\n");
  } else {
    Respond(fd, 404, "Not Found", "text/plain", "not found: /metrics, /health, /live\n");
  }
}

}  // namespace fedanon::server
