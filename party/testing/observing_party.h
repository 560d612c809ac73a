// Observers for tests of what a party opens (party/party_observer.h), built from callbacks.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "party/party_observer.h"

namespace fedanon::party_testing {

// Called with (sender, purpose, plaintext) of every payload the party opens.
using OpenedCallback = std::function<void(const std::string& sender, const std::string& purpose,
                                          const std::string& plaintext)>;
// Called with a vertical job's matched ids in canonical order.
using CanonicalIdsCallback = std::function<void(const std::vector<std::string>& ids)>;

// An observer that forwards to `opened` and `canonical_ids` (either may be empty).
std::shared_ptr<const party::PartyObserver> ObservingParty(
    OpenedCallback opened, CanonicalIdsCallback canonical_ids = nullptr);

}  // namespace fedanon::party_testing
