#include "server/leader/guarded_listener.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace fedanon::leader_daemon {
namespace {

uint64_t DescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1 << 20;
  return limit.rlim_cur;
}

int OpenReserve() { return open("/dev/null", O_RDONLY | O_CLOEXEC); }

// host and port of "host:port" / "[v6]:port" (ValidateHostPort has checked the form).
std::pair<std::string, std::string> SplitHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return {host, address.substr(colon + 1)};
}

}  // namespace

uint64_t RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      spdlog::warn("cannot raise the descriptor limit: {}", std::strerror(errno));
    }
  }
  return DescriptorLimit();
}

absl::StatusOr<std::unique_ptr<GuardedListener>> GuardedListener::Bind(const std::string& address) {
  const auto [host, port] = SplitHostPort(address);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc =
          getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address, " (", gai_strerror(rc), ")"));
  }
  std::string last_error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // restarts; never REUSEPORT
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      last_error = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address, " (", last_error,
                                               ": address in use, or not an address of this "
                                               "host?)"));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const int bound_port = bound.ss_family == AF_INET6
                             ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                             : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address, " (", error, ")"));
  }
  return std::unique_ptr<GuardedListener>(new GuardedListener(fd, bound_port, wake[0], wake[1]));
}

GuardedListener::~GuardedListener() {
  Stop();
  close(wake_read_);
  close(wake_write_);
  if (reserve_fd_ >= 0) close(reserve_fd_);
}

void GuardedListener::Start(
    std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor, int headroom) {
  acceptor_ = std::move(acceptor);
  headroom_ = headroom;
  reserve_fd_ = OpenReserve();
  thread_ = std::thread([this] { AcceptLoop(); });
}

void GuardedListener::Stop() {
  if (stopping_.exchange(true)) return;
  const char byte = 0;
  if (write(wake_write_, &byte, 1) < 0) {
    spdlog::warn("cannot wake the accept thread: {}", std::strerror(errno));
  }
  if (thread_.joinable()) thread_.join();
  close(fd_);
  fd_ = -1;
}

GuardedListener::Counters GuardedListener::counters() const {
  return {accepted_.load(), shed_.load(), exhausted_.load()};
}

void GuardedListener::AcceptLoop() {
  pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
  while (!stopping_.load()) {
    const int ready = poll(fds, 2, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      spdlog::error("listener: poll failed: {}", std::strerror(errno));
      absl::SleepFor(absl::Milliseconds(100));
      continue;
    }
    if (fds[1].revents != 0) break;
    if (fds[0].revents != 0) AcceptPending();
  }
}

void GuardedListener::AcceptPending() {
  const uint64_t limit = DescriptorLimit();
  const uint64_t shed_from = limit > static_cast<uint64_t>(headroom_) ? limit - headroom_ : 0;
  for (;;) {
    const int fd = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EMFILE || errno == ENFILE) {
        // Free the reserved descriptor, take the pending connection off the queue and drop it,
        // so that the socket does not stay readable (and the client is told at once).
        ++exhausted_;
        if (reserve_fd_ >= 0) close(reserve_fd_);
        const int dropped = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (dropped >= 0) close(dropped);
        reserve_fd_ = OpenReserve();
        LogShedding();
        if (dropped < 0) return;  // still exhausted: wait for the next readiness
        continue;
      }
      spdlog::warn("listener: accept failed: {}", std::strerror(errno));
      absl::SleepFor(absl::Milliseconds(10));  // ENOBUFS, ENOMEM: let the system recover
      return;
    }
    if (static_cast<uint64_t>(fd) >= shed_from) {
      ++shed_;
      close(fd);
      LogShedding();
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters params;
    params.listener_fd = fd_;
    params.fd = fd;
    ++accepted_;
    acceptor_->HandleNewConnection(&params);  // takes ownership of fd
  }
}

void GuardedListener::LogShedding() {
  const int64_t now = absl::GetCurrentTimeNanos();
  if (now - last_warning_nanos_ < 1'000'000'000) return;
  last_warning_nanos_ = now;
  spdlog::warn(
      "listener: near the limit of {} open descriptors: {} connections shed, {} dropped on "
      "EMFILE so far (idle or handshaking connections are closed after the handshake timeout)",
      DescriptorLimit(), shed_.load(), exhausted_.load());
}

}  // namespace fedanon::leader_daemon
