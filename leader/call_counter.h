// A PartyChannel in front of the leader's own for one job: it passes every call through
// unchanged and counts what the job asked of its parties, for the job's end-of-run log line and
// the wide-area floor (bench/wide_area.sh): the calls, the bytes each way (protobuf sizes, before
// TLS and HTTP/2 framing), and the job's critical path as the leader sees it — the waves of calls.
// A wave begins when a call starts while none is in flight and ends when none is left: calls to
// several parties at once share a wave, a ring's hops relayed one after the other take one wave
// each, so the job waits at least one round trip per wave. The bytes on the critical path are,
// per wave, those of the party that sent and received the most in it, summed over the waves.
// Thread-safe like the channel it wraps.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/wire/party_channel.h"

namespace fedanon::leader {

struct CallCounts {
  uint64_t calls = 0;
  uint64_t waves = 0;
  uint64_t bytes_sent = 0;      // requests
  uint64_t bytes_received = 0;  // replies
  uint64_t critical_bytes = 0;  // per wave, the busiest party's bytes; summed
};

class CallCounter final : public wire::PartyChannel {
 public:
  explicit CallCounter(wire::PartyChannel* inner) : inner_(inner) {}  // not owned

  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& request,
                                                 absl::Duration timeout) override
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<wire::ConnectedParty> Parties() const override { return inner_->Parties(); }

  CallCounts counts() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Add(const std::string& party, uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  wire::PartyChannel* inner_;
  mutable absl::Mutex mu_;
  CallCounts counts_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, uint64_t> wave_bytes_ ABSL_GUARDED_BY(mu_);  // the current wave's
};

}  // namespace fedanon::leader
