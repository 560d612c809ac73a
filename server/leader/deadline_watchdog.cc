#include "server/leader/deadline_watchdog.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace fedanon::leader_daemon {

DeadlineWatchdog::DeadlineWatchdog() : thread_([this] { Loop(); }) {}

DeadlineWatchdog::~DeadlineWatchdog() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    changed_.SignalAll();
  }
  thread_.join();
}

uint64_t DeadlineWatchdog::Arm(absl::Time deadline, std::function<void()> on_expiry) {
  absl::MutexLock lock(&mu_);
  const uint64_t token = next_token_++;
  armed_[token] = Watch{deadline, std::move(on_expiry)};
  changed_.SignalAll();
  return token;
}

bool DeadlineWatchdog::Disarm(uint64_t token) {
  absl::MutexLock lock(&mu_);
  if (armed_.erase(token) > 0) return true;
  expired_.erase(token);
  return false;
}

void DeadlineWatchdog::Loop() {
  mu_.Lock();
  while (!stopping_) {
    absl::Time next = absl::InfiniteFuture();
    for (const auto& [token, watch] : armed_) next = std::min(next, watch.deadline);
    if (absl::Now() < next) {
      changed_.WaitWithDeadline(&mu_, next);
      continue;
    }
    std::vector<std::function<void()>> due;
    for (auto it = armed_.begin(); it != armed_.end();) {
      if (it->second.deadline <= absl::Now()) {
        due.push_back(std::move(it->second.on_expiry));
        expired_[it->first] = true;
        it = armed_.erase(it);
      } else {
        ++it;
      }
    }
    mu_.Unlock();
    for (auto& f : due) f();
    mu_.Lock();
  }
  mu_.Unlock();
}

}  // namespace fedanon::leader_daemon
