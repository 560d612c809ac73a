// A party's own policy (party.yaml `policy:`, docs/operations.md): what this institution will
// ever take part in, whatever an admin signs — the weakest privacy model it accepts (minimum K and
// L, maximum C), which of its attributes may be QIDs or be released at all, the recipients it
// accepts and how many times one table may be released. Checked at Prepare against the signed
// spec; a job outside the policy is refused with the rule it broke ("party policy: K=5 below the
// party's minimum K=10"). The release count lives in party/run_ledger.h. Plain data and a pure
// function: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::party {

struct PartyPolicy {
  std::optional<uint32_t> min_k;  // every K of the job (LKC K, each anonymity template's k)
  std::optional<uint32_t> min_l;  // LKC's L (a templates job has no L and is refused)
  // Every confidence bound of the job (LKC C, each confidence template's max); a job that bounds
  // no confidence counts as C = 1.
  std::optional<double> max_c;
  // Absent: any. Present: the only attributes of this party's that may be QIDs / released.
  std::optional<std::vector<std::string>> qid_attributes;
  std::optional<std::vector<std::string>> released_attributes;
  std::optional<std::vector<std::string>> recipients;  // by name; the leader by its name
  std::optional<uint64_t> max_releases;  // per table, over every job prepared and not failed

  bool empty() const {
    return !min_k && !min_l && !max_c && !qid_attributes && !released_attributes && !recipients &&
           !max_releases;
  }
};

// Checks `spec` (as signed by the admin) and the job's effective `recipient` (the leader's name
// when the leader receives) against every rule but max_releases. `party` is this party's name:
// in a vertical job only the attributes it holds (and the shared class) are its own.
// PermissionDenied "party policy: ..." naming the first rule broken.
absl::Status CheckPartyPolicy(const PartyPolicy& policy, const fedanon::v1::JobSpec& spec,
                              const std::string& party, const std::string& recipient);

}  // namespace fedanon::party
