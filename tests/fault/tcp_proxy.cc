#include "tests/fault/tcp_proxy.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <string>
#include <utility>

#include "absl/time/clock.h"

namespace fedanon::testing {

// One direction of one connection: `from` is read into `queue`, delivered to `to`.
struct TcpProxy::Direction {
  int from = -1;
  int to = -1;
  struct Chunk {
    absl::Time deliver_at;
    std::string bytes;
  };
  std::deque<Chunk> queue;  // guarded by the proxy's mu_, like every field below
  size_t queued_bytes = 0;
  bool eof = false;  // `from` ended
  // The link model (LinkProfile): when the link has sent what it was given, and when the last
  // chunk arrives (the next one never arrives before it).
  absl::Time link_free = absl::InfinitePast();
  absl::Time last_arrival = absl::InfinitePast();
  std::thread reader;
  std::thread writer;
};

struct TcpProxy::Connection {
  int client = -1;
  int server = -1;
  std::atomic<bool> closed{false};
  Direction up;    // client -> server
  Direction down;  // server -> client
};

namespace {

// What a direction holds before its reader stops reading (then the sender's TCP window fills, as
// behind a slow link): a few bandwidth-delay products of any link a test models.
constexpr size_t kMaxQueuedBytes = 8 << 20;

int ConnectLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

}  // namespace

TcpProxy::TcpProxy(int target_port) : target_port_(target_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return;  // port() stays 0: the test fails when it dials
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

TcpProxy::~TcpProxy() {
  stopping_ = true;
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  std::vector<std::unique_ptr<Connection>> connections;
  {
    absl::MutexLock lock(&mu_);
    connections.swap(connections_);
  }
  for (auto& c : connections) Close(c.get());
  {
    // Wake writers waiting for data or for a black hole to end.
    absl::MutexLock lock(&mu_);
    black_hole_ = false;
  }
  for (auto& c : connections) {
    for (Direction* d : {&c->up, &c->down}) {
      if (d->reader.joinable()) d->reader.join();
      if (d->writer.joinable()) d->writer.join();
    }
    ::close(c->client);
    ::close(c->server);
  }
}

void TcpProxy::SetDelay(absl::Duration per_chunk) { SetLink({.one_way_delay = per_chunk}); }

void TcpProxy::SetLink(const LinkProfile& profile) {
  absl::MutexLock lock(&mu_);
  link_ = profile;
  random_.seed(profile.seed);
  next_stall_ = absl::InfiniteFuture();
  next_stall_hit_ = false;
  if (profile.stall_every > absl::ZeroDuration() && profile.stall_length > absl::ZeroDuration()) {
    std::exponential_distribution<double> gap(1.0 / absl::ToDoubleSeconds(profile.stall_every));
    next_stall_ = absl::Now() + absl::Seconds(gap(random_));
  }
}

LinkStats TcpProxy::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

absl::Time TcpProxy::AfterStall(absl::Time t) {
  if (next_stall_ == absl::InfiniteFuture()) return t;
  std::exponential_distribution<double> gap(1.0 / absl::ToDoubleSeconds(link_.stall_every));
  while (t >= next_stall_ + link_.stall_length) {  // that stall is over: draw the next one
    next_stall_ += link_.stall_length + absl::Seconds(gap(random_));
    next_stall_hit_ = false;
  }
  if (t < next_stall_) return t;
  if (!next_stall_hit_) {
    next_stall_hit_ = true;
    ++stats_.stalls_hit;
    stats_.stall_time += link_.stall_length;
  }
  return next_stall_ + link_.stall_length;
}

absl::Time TcpProxy::Schedule(Direction* d, size_t bytes) {
  const absl::Time now = absl::Now();
  absl::Time leaves = std::max(now, d->link_free);
  if (link_.bytes_per_second > 0) {
    leaves += absl::Seconds(static_cast<double>(bytes) / link_.bytes_per_second);
  }
  leaves = AfterStall(leaves);
  d->link_free = leaves;
  absl::Duration jitter = absl::ZeroDuration();
  if (link_.jitter > absl::ZeroDuration()) {
    std::uniform_real_distribution<double> draw(0, absl::ToDoubleSeconds(link_.jitter));
    jitter = absl::Seconds(draw(random_));
  }
  d->last_arrival = std::max(d->last_arrival, leaves + link_.one_way_delay + jitter);
  return d->last_arrival;
}

void TcpProxy::BlackHole(bool on) {
  absl::MutexLock lock(&mu_);
  black_hole_ = on;
}

void TcpProxy::Cut() {
  absl::MutexLock lock(&mu_);
  for (auto& c : connections_) Close(c.get());
}

int TcpProxy::accepted() const {
  absl::MutexLock lock(&mu_);
  return accepted_;
}

void TcpProxy::Close(Connection* c) {
  c->closed = true;
  // Wakes every blocked recv/send on both sockets; the peers see the connection end.
  ::shutdown(c->client, SHUT_RDWR);
  ::shutdown(c->server, SHUT_RDWR);
}

void TcpProxy::AcceptLoop() {
  while (!stopping_) {
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // shut down
    }
    if (stopping_) {
      ::close(client);
      return;
    }
    const int server = ConnectLoopback(target_port_);
    if (server < 0) {  // nothing listens: the client sees its connection closed, as it would
      ::close(client);
      continue;
    }
    const int one = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto c = std::make_unique<Connection>();
    c->client = client;
    c->server = server;
    c->up.from = client;
    c->up.to = server;
    c->down.from = server;
    c->down.to = client;
    Connection* raw = c.get();
    absl::MutexLock lock(&mu_);
    ++accepted_;
    for (Direction* d : {&raw->up, &raw->down}) {
      d->reader = std::thread([this, raw, d] { ReadLoop(raw, d); });
      d->writer = std::thread([this, raw, d] { WriteLoop(raw, d); });
    }
    connections_.push_back(std::move(c));
  }
}

void TcpProxy::ReadLoop(Connection* c, Direction* d) {
  char buffer[64 * 1024];
  while (true) {
    {
      // Behind a full queue the reader waits (the sender's TCP window fills up).
      absl::MutexLock lock(&mu_);
      auto room = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return c->closed.load() || d->queued_bytes < kMaxQueuedBytes;
      };
      while (!room()) mu_.AwaitWithTimeout(absl::Condition(&room), absl::Milliseconds(20));
    }
    const ssize_t n = ::recv(d->from, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    absl::MutexLock lock(&mu_);
    if (n <= 0 || c->closed) {
      d->eof = true;
      return;
    }
    const auto size = static_cast<size_t>(n);
    stats_.bytes_up += d == &c->up ? size : 0;
    stats_.bytes_down += d == &c->down ? size : 0;
    d->queued_bytes += size;
    d->queue.push_back({Schedule(d, size), std::string(buffer, size)});
  }
}

void TcpProxy::WriteLoop(Connection* c, Direction* d) {
  while (true) {
    std::string bytes;
    absl::Duration wait;
    {
      absl::MutexLock lock(&mu_);
      // Data to deliver or the end of the input to pass on (neither in a black hole: the peer
      // sees no FIN either), or a cut.
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return c->closed.load() || (!black_hole_ && (!d->queue.empty() || d->eof));
      };
      while (!ready()) mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(20));
      if (c->closed) return;
      if (d->queue.empty()) {  // the sender closed its side: pass the end on
        ::shutdown(d->to, SHUT_WR);
        return;
      }
      const absl::Duration early = d->queue.front().deliver_at - absl::Now();
      if (early <= absl::ZeroDuration()) {
        bytes = std::move(d->queue.front().bytes);
        d->queue.pop_front();
        d->queued_bytes -= bytes.size();
      } else {
        wait = std::min(early, absl::Milliseconds(20));
      }
    }
    if (bytes.empty()) {  // not due yet (chunks are never empty)
      absl::SleepFor(wait);
      continue;
    }
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(d->to, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {  // the receiver is gone: end the whole connection, as a relay would
        absl::MutexLock lock(&mu_);
        Close(c);
        return;
      }
      sent += static_cast<size_t>(n);
    }
  }
}

}  // namespace fedanon::testing
