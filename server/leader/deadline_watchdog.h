// Deadlines for blocking calls that have none of their own, such as a synchronous gRPC stream
// Write stuck on flow control because the peer stopped reading: Arm(deadline, on_expiry) before
// the call, Disarm(token) after it. If the deadline passes first, one background thread runs
// on_expiry (which must unblock the call, e.g. cancel the stream) and Disarm returns false.
// Thread-safe; the destructor stops the thread without running pending expiries.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace fedanon::leader_daemon {

class DeadlineWatchdog {
 public:
  DeadlineWatchdog();
  ~DeadlineWatchdog();
  DeadlineWatchdog(const DeadlineWatchdog&) = delete;
  DeadlineWatchdog& operator=(const DeadlineWatchdog&) = delete;

  uint64_t Arm(absl::Time deadline, std::function<void()> on_expiry);
  // True when the call finished in time (on_expiry has not run and never will).
  bool Disarm(uint64_t token);

 private:
  struct Watch {
    absl::Time deadline;
    std::function<void()> on_expiry;
  };
  void Loop();

  absl::Mutex mu_;
  absl::CondVar changed_;
  std::map<uint64_t, Watch> armed_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, bool> expired_ ABSL_GUARDED_BY(mu_);  // tokens whose expiry ran
  uint64_t next_token_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace fedanon::leader_daemon
