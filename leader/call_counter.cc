#include "leader/call_counter.h"

#include <algorithm>

namespace fedanon::leader {

absl::StatusOr<fedanon::v1::PartyMessage> CallCounter::Call(
    const std::string& party, const fedanon::v1::LeaderMessage& request, absl::Duration timeout) {
  const uint64_t sent = request.ByteSizeLong();
  {
    absl::MutexLock lock(&mu_);
    ++counts_.calls;
    if (in_flight_++ == 0) ++counts_.waves;
    counts_.bytes_sent += sent;
    Add(party, sent);
  }
  absl::StatusOr<fedanon::v1::PartyMessage> reply = inner_->Call(party, request, timeout);
  const uint64_t received = reply.ok() ? reply->ByteSizeLong() : 0;
  absl::MutexLock lock(&mu_);
  counts_.bytes_received += received;
  Add(party, received);
  if (--in_flight_ == 0) {  // the wave ends: its busiest party's bytes are on the critical path
    uint64_t busiest = 0;
    for (const auto& [name, bytes] : wave_bytes_) busiest = std::max(busiest, bytes);
    counts_.critical_bytes += busiest;
    wave_bytes_.clear();
  }
  return reply;
}

void CallCounter::Add(const std::string& party, uint64_t bytes) { wave_bytes_[party] += bytes; }

CallCounts CallCounter::counts() const {
  absl::MutexLock lock(&mu_);
  return counts_;
}

}  // namespace fedanon::leader
