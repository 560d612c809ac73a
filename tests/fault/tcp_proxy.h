// A TCP relay on loopback that a test controls (tests only): parties dial the proxy, the proxy
// dials the leader and copies bytes both ways. TLS passes through untouched (it is a byte relay),
// so a party's mutual-TLS session with the leader is unchanged; only timing and delivery change.
//
// Faults, applied to every connection through the proxy, both directions:
//   * SetDelay(d): each chunk read from one side is delivered to the other d after it arrived
//     (latency, pipelined: chunks keep their order and are not delayed behind each other's delay).
//   * SetLink(profile): a wide-area link (LinkProfile below): one-way delay and jitter, a rate
//     limit, and stalls; SetDelay(d) is SetLink({.one_way_delay = d}).
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
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace fedanon::testing {

// A wide-area link, per direction of every connection (the proxy is a path between two hosts):
// a chunk read at t leaves once the link has sent what came before it, at the rate
// (serialization), then arrives `one_way_delay` plus a uniform draw from [0, jitter] later, never
// before the chunk ahead of it (TCP delivers in order). A stall stops the path in both directions
// for `stall_length`; stalls start at exponential intervals of mean `stall_every` from the
// proxy's creation (a seeded, fixed schedule), and a chunk due to leave during one leaves when it
// ends. Zero fields switch their part off.
struct LinkProfile {
  absl::Duration one_way_delay = absl::ZeroDuration();
  absl::Duration jitter = absl::ZeroDuration();
  double bytes_per_second = 0;  // 0: unlimited
  absl::Duration stall_every = absl::ZeroDuration();
  absl::Duration stall_length = absl::ZeroDuration();
  uint64_t seed = 1;  // jitter draws and the stall schedule
};

// What crossed the proxy since its creation (every connection, both directions).
struct LinkStats {
  uint64_t bytes_up = 0;                             // client -> server
  uint64_t bytes_down = 0;                           // server -> client
  int stalls_hit = 0;                                // stalls that held back at least one chunk
  absl::Duration stall_time = absl::ZeroDuration();  // their lengths, summed
};

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
  // Applies to chunks read from now on (the stall schedule starts again from now).
  void SetLink(const LinkProfile& profile) ABSL_LOCKS_EXCLUDED(mu_);
  void BlackHole(bool on) ABSL_LOCKS_EXCLUDED(mu_);
  void Cut() ABSL_LOCKS_EXCLUDED(mu_);
  // Connections accepted so far.
  int accepted() const ABSL_LOCKS_EXCLUDED(mu_);
  LinkStats stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Connection;
  struct Direction;
  void AcceptLoop();
  void ReadLoop(Connection* c, Direction* d);
  void WriteLoop(Connection* c, Direction* d);
  static void Close(Connection* c);
  // When a chunk of `bytes` read now from `d` is to be delivered (the link profile's model).
  absl::Time Schedule(Direction* d, size_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `t`, or the end of the stall `t` falls in (and that stall counted as hit).
  absl::Time AfterStall(absl::Time t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  int listen_fd_ = -1;
  int port_ = 0;
  const int target_port_;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;

  mutable absl::Mutex mu_;
  LinkProfile link_ ABSL_GUARDED_BY(mu_);
  std::mt19937_64 random_ ABSL_GUARDED_BY(mu_);
  // The stall schedule: the start of the next stall not yet passed, and whether it was hit.
  absl::Time next_stall_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  bool next_stall_hit_ ABSL_GUARDED_BY(mu_) = false;
  LinkStats stats_ ABSL_GUARDED_BY(mu_);
  bool black_hole_ ABSL_GUARDED_BY(mu_) = false;
  int accepted_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fedanon::testing
