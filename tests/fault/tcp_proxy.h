// A TCP relay on loopback that a test controls (tests only): parties dial the proxy, the proxy
// dials the leader and copies bytes both ways. TLS passes through untouched (it is a byte relay),
// so a party's mutual-TLS session with the leader is unchanged; only timing and delivery change.
//
// Faults, applied to every connection through the proxy, both directions:
//   * SetDelay(d): each chunk read from one side is delivered to the other d after it arrived
//     (latency, pipelined: chunks keep their order and are not delayed behind each other's delay).
//   * BlackHole(true/false): bytes are still accepted (read and kept) but nothing is forwarded
//     until the black hole ends; then everything kept is delivered in order. This models a link
//     that drops every packet for a while and recovers: TCP would retransmit and deliver the same
//     bytes late, as here. Neither end sees a reset, nor the other end closing (a FIN is held
//     too): a peer that dies during a black hole looks like a crashed host.
//   * Cut(): closes both ends of every current connection at once (both peers see the connection
//     end); new connections are accepted as before.
// Thread-safe. The destructor closes everything and joins every thread (bounded: all blocking
// calls are woken by shutdown(2)).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace fedanon::testing {

class TcpProxy {
 public:
  // Listens on 127.0.0.1 (a free port) and forwards to 127.0.0.1:`target_port`.
  explicit TcpProxy(int target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  void SetDelay(absl::Duration per_chunk) ABSL_LOCKS_EXCLUDED(mu_);
  void BlackHole(bool on) ABSL_LOCKS_EXCLUDED(mu_);
  void Cut() ABSL_LOCKS_EXCLUDED(mu_);
  // Connections accepted so far.
  int accepted() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Connection;
  struct Direction;
  void AcceptLoop();
  void ReadLoop(Connection* c, Direction* d);
  void WriteLoop(Connection* c, Direction* d);
  static void Close(Connection* c);

  int listen_fd_ = -1;
  int port_ = 0;
  const int target_port_;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;

  mutable absl::Mutex mu_;
  absl::Duration delay_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  bool black_hole_ ABSL_GUARDED_BY(mu_) = false;
  int accepted_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fedanon::testing
