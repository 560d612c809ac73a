// Runs a daemon's settings reload (server/runtime/config_reload.h) on its own thread: every
// `period` (never when zero) and whenever Trigger() asks (SIGHUP), one run at a time; a trigger
// during a run starts one more run after it. Stops (and joins) in the destructor. Thread-safe.
#pragma once

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace fedanon::server {

class PeriodicReloader {
 public:
  // `reload` is told why it runs: "periodic check" or "SIGHUP" (the reason Trigger names).
  PeriodicReloader(absl::Duration period, std::function<void(const std::string& why)> reload);
  ~PeriodicReloader();
  PeriodicReloader(const PeriodicReloader&) = delete;
  PeriodicReloader& operator=(const PeriodicReloader&) = delete;

  void Trigger(std::string why = "SIGHUP") ABSL_LOCKS_EXCLUDED(mu_);
  // Runs completed so far (tests).
  int runs() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  bool ShouldWake() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !triggered_.empty();
  }

  const absl::Duration period_;
  const std::function<void(const std::string&)> reload_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::string triggered_ ABSL_GUARDED_BY(mu_);  // the pending trigger's reason; "": none
  int runs_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace fedanon::server
