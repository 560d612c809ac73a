// A PartyChannel that calls PartyAgents in the same process: N-party protocol tests without
// sockets. Every request and reply is serialized and parsed as on the wire, and an optional
// observer sees each party's outgoing bytes (for leakage tests). Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/wire/party_channel.h"
#include "party/party_agent.h"

namespace fedanon::party {

class InProcessPartyChannel : public common::PartyChannel {
 public:
  // Agents are not owned.
  void Add(PartyAgent* agent);
  // Simulates a party going away: later calls fail with Unavailable.
  void Disconnect(const std::string& party);
  // Called with (party, serialized reply) for every reply a party sends.
  void set_observer(std::function<void(const std::string&, const std::string&)> observer) {
    observer_ = std::move(observer);
  }

  absl::StatusOr<fedanon::v1::PartyMessage> Call(const std::string& party,
                                                 const fedanon::v1::LeaderMessage& request,
                                                 absl::Duration timeout) override;
  std::vector<common::ConnectedParty> Parties() const override;

 private:
  mutable std::mutex mu_;
  std::map<std::string, PartyAgent*> agents_;
  std::set<std::string> disconnected_;
  std::function<void(const std::string&, const std::string&)> observer_;
};

}  // namespace fedanon::party
