// The leader's TCP listener, owned by fedanon rather than by gRPC.
//
// gRPC 1.51's own listener gives up for good after one failed accept (EMFILE: too many open
// files): it logs "Failed accept4: Too many open files" and stops polling the socket, so the
// kernel keeps completing TCP handshakes that nobody reads and every TLS handshake fails until
// the leader restarts. A flood of idle connections could thus lock every admin and party out.
//
// GuardedListener binds and listens itself and runs one accept thread that
//   * hands each accepted connection to gRPC (ExternalConnectionAcceptor, with the server's mTLS
//     credentials; gRPC then times out the TLS handshake, see transport.h);
//   * sheds a connection (closes it at once) when its descriptor lies within `headroom` of the
//     process's descriptor limit, so the connections already established (parties' streams) and
//     the leader's own files keep the descriptors they need;
//   * survives EMFILE/ENFILE: it frees a reserved descriptor, accepts and closes the pending
//     connection, re-reserves, and goes on accepting;
//   * logs shedding at most once per second with the counts so far.
// Thread-safe; Stop() is idempotent and joins the thread.
#pragma once

#include <grpcpp/server_builder.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace fedanon::leader_daemon {

class GuardedListener {
 public:
  struct Counters {
    uint64_t accepted = 0;   // handed to gRPC
    uint64_t shed = 0;       // closed at once: too close to the descriptor limit
    uint64_t exhausted = 0;  // accept failed with EMFILE/ENFILE (connection dropped)
  };

  // Binds `address` (host:port, [v6]:port; port 0 picks a free one) without SO_REUSEPORT and
  // listens. Unavailable "cannot listen on X (...)" when the address is in use or not local.
  static absl::StatusOr<std::unique_ptr<GuardedListener>> Bind(const std::string& address);
  ~GuardedListener();
  GuardedListener(const GuardedListener&) = delete;
  GuardedListener& operator=(const GuardedListener&) = delete;

  int port() const { return port_; }

  // Starts the accept thread; call after the gRPC server has started (gRPC closes connections
  // handed to it before). `headroom` descriptors below the limit are kept free.
  void Start(std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor,
             int headroom);
  // Stops accepting and closes the listening socket (new connections are refused).
  void Stop();

  Counters counters() const;

 private:
  GuardedListener(int fd, int port, int wake_read, int wake_write)
      : fd_(fd), port_(port), wake_read_(wake_read), wake_write_(wake_write) {}
  void AcceptLoop();
  void AcceptPending();
  void LogShedding();

  int fd_;  // closed by Stop()
  const int port_;
  const int wake_read_;
  const int wake_write_;
  int reserve_fd_ = -1;
  int headroom_ = 0;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> accepted_{0}, shed_{0}, exhausted_{0};
  int64_t last_warning_nanos_ = 0;  // accept thread only
};

// The soft limit on open descriptors raised to the hard limit (daemons call it at startup);
// returns the limit now in force.
uint64_t RaiseDescriptorLimit();

}  // namespace fedanon::leader_daemon
