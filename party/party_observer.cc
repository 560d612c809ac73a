#include "party/party_observer.h"

namespace fedanon::party {

void PartyObserver::Opened(const std::string& /*sender*/, const std::string& /*purpose*/,
                           const std::string& /*plaintext*/) const {}

void PartyObserver::CanonicalIds(const std::vector<std::string>& /*ids*/) const {}

}  // namespace fedanon::party
