// What a party opened during a job, told to an observer: the seam through which tests check what
// every role sees (docs/threat-model.md) — the plaintexts a party opens from the others, and a
// vertical job's matched ids in the canonical order the release must not follow. The daemons set
// none (PartyAgentOptions::observer); the base class observes nothing. Tests build observers from
// callbacks with party_testing::ObservingParty (party/testing/observing_party.h).
#pragma once

#include <string>
#include <vector>

namespace fedanon::party {

class PartyObserver {
 public:
  virtual ~PartyObserver() = default;
  // A plaintext this party opened from `sender` under `purpose` (a sealed payload, a mask share,
  // a union row, a record's id batch, ...).
  virtual void Opened(const std::string& sender, const std::string& purpose,
                      const std::string& plaintext) const;
  // A vertical job's ids common to every party, in canonical order (after ID matching).
  virtual void CanonicalIds(const std::vector<std::string>& ids) const;
};

}  // namespace fedanon::party
