#include "party/testing/in_process_channel.h"

#include "absl/strings/str_cat.h"

namespace fedanon::party_testing {

void InProcessPartyChannel::Add(party::PartyAgent* agent) {
  absl::MutexLock lock(&mu_);
  agents_[agent->name()] = agent;
  disconnected_.erase(agent->name());
}

void InProcessPartyChannel::Disconnect(const std::string& party) {
  absl::MutexLock lock(&mu_);
  disconnected_.insert(party);
}

void InProcessPartyChannel::Reconnect(const std::string& party) {
  absl::MutexLock lock(&mu_);
  disconnected_.erase(party);
}

absl::StatusOr<fedanon::v1::PartyMessage> InProcessPartyChannel::Call(
    const std::string& party, const fedanon::v1::LeaderMessage& request, absl::Duration) {
  party::PartyAgent* agent;
  std::function<void(const std::string&, const std::string&)> observer;
  std::function<void(const std::string&, fedanon::v1::LeaderMessage*)> tamper;
  std::function<void(const std::string&, fedanon::v1::PartyMessage*)> reply_tamper;
  {
    absl::MutexLock lock(&mu_);
    auto it = agents_.find(party);
    if (it == agents_.end() || disconnected_.count(party)) {
      return absl::UnavailableError(absl::StrCat("party '", party, "' is not connected"));
    }
    agent = it->second;
    observer = observer_;
    tamper = tamper_;
    reply_tamper = reply_tamper_;
  }
  fedanon::v1::LeaderMessage wire_request;
  if (!wire_request.ParseFromString(request.SerializeAsString())) {
    return absl::InternalError("request does not round-trip");
  }
  if (tamper) {
    absl::MutexLock lock(&callback_mu_);
    tamper(party, &wire_request);
  }
  const std::string bytes = agent->Handle(wire_request).SerializeAsString();
  if (observer) {
    absl::MutexLock lock(&callback_mu_);
    observer(party, bytes);
  }
  fedanon::v1::PartyMessage reply;
  if (!reply.ParseFromString(bytes)) return absl::InternalError("reply does not parse");
  if (reply_tamper) {
    absl::MutexLock lock(&callback_mu_);
    reply_tamper(party, &reply);
  }
  if (reply.has_error()) {
    return absl::Status(static_cast<absl::StatusCode>(reply.error().code()),
                        absl::StrCat("party '", party, "': ", reply.error().message()));
  }
  return reply;
}

std::vector<wire::ConnectedParty> InProcessPartyChannel::Parties() const {
  absl::MutexLock lock(&mu_);
  std::vector<wire::ConnectedParty> out;
  for (const auto& [name, agent] : agents_) {
    if (disconnected_.count(name)) continue;
    out.push_back(wire::ConnectedParty{name, 0, "in-process", agent->seal_cert_pem(),
                                       agent->sign_cert_pem()});
  }
  return out;
}

}  // namespace fedanon::party_testing
