// A PartyChannel that calls PartyAgents in the same process: N-party protocol tests without
// sockets. Every request and reply is serialized and parsed as on the wire, and an optional
// observer sees each party's outgoing bytes (for leakage tests). Thread-safe; the observer and
// tamper callbacks are never run concurrently.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/wire/party_channel.h"
#include "party/party_agent.h"

namespace fedanon::party_testing {

class InProcessPartyChannel : public wire::PartyChannel {
 public:
  // Agents are not owned.
  void Add(party::PartyAgent* agent) ABSL_LOCKS_EXCLUDED(mu_);
  // Simulates a party going away: later calls fail with Unavailable.
  void Disconnect(const std::string& party) ABSL_LOCKS_EXCLUDED(mu_);
  // The party is back (its agent kept its state, as a party whose link was cut).
  void Reconnect(const std::string& party) ABSL_LOCKS_EXCLUDED(mu_);
  // Called with (party, serialized reply) for every reply a party sends.
  void set_observer(std::function<void(const std::string&, const std::string&)> observer)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    observer_ = std::move(observer);
  }

  // Tests of a deviating leader: called with (party, request) before the party sees the
  // request, and may alter it in flight.
  void set_tamper(std::function<void(const std::string&, fedanon::v1::LeaderMessage*)> tamper)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    tamper_ = std::move(tamper);
  }

  // Tests of a deviating party (the leader's checks): called with (party, reply) after the
  // observer, and may alter the reply the leader receives.
  void set_reply_tamper(std::function<void(const std::string&, fedanon::v1::PartyMessage*)> tamper)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    reply_tamper_ = std::move(tamper);
  }

  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& request,
                                                 absl::Duration timeout) override
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<wire::ConnectedParty> Parties() const override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  // The leader calls parties from several threads (Prepare runs in parallel): the observer and
  // the tamper hook are called one at a time, so a test's callback needs no lock of its own.
  absl::Mutex callback_mu_;
  std::map<std::string, party::PartyAgent*> agents_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> disconnected_ ABSL_GUARDED_BY(mu_);
  std::function<void(const std::string&, const std::string&)> observer_ ABSL_GUARDED_BY(mu_);
  std::function<void(const std::string&, fedanon::v1::LeaderMessage*)> tamper_ ABSL_GUARDED_BY(mu_);
  std::function<void(const std::string&, fedanon::v1::PartyMessage*)> reply_tamper_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace fedanon::party_testing
