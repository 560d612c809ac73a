#include "server/runtime/periodic_reloader.h"

#include <utility>

namespace fedanon::server {

PeriodicReloader::PeriodicReloader(absl::Duration period,
                                   std::function<void(const std::string&)> reload)
    : period_(period), reload_(std::move(reload)) {
  thread_ = std::thread([this] { Loop(); });
}

PeriodicReloader::~PeriodicReloader() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void PeriodicReloader::Trigger(std::string why) {
  absl::MutexLock lock(&mu_);
  triggered_ = why.empty() ? "SIGHUP" : std::move(why);
}

int PeriodicReloader::runs() const {
  absl::MutexLock lock(&mu_);
  return runs_;
}

void PeriodicReloader::Loop() {
  const absl::Duration wait = period_ > absl::ZeroDuration() ? period_ : absl::InfiniteDuration();
  while (true) {
    std::string why;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(this, &PeriodicReloader::ShouldWake), wait);
      if (stopping_) return;
      why = triggered_.empty() ? "periodic check" : std::exchange(triggered_, "");
    }
    reload_(why);
    absl::MutexLock lock(&mu_);
    ++runs_;
  }
}

}  // namespace fedanon::server
