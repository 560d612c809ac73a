#include "party/party_agent_options.h"

namespace fedanon::party {
namespace {

// A party that follows the protocol: every hook of the base class as it is.
class HonestParty final : public PartyDeviation {
 public:
  std::string Name() const override { return "honest"; }
};

}  // namespace

const PartyDeviation& PartyAgentOptions::Deviation() const {
  static const HonestParty kHonest;
  return deviation != nullptr ? *deviation : kHonest;
}

const PartyObserver& PartyAgentOptions::Observer() const {
  static const PartyObserver kNobody;
  return observer != nullptr ? *observer : kNobody;
}

}  // namespace fedanon::party
