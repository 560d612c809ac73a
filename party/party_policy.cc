#include "party/party_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace fedanon::party {
namespace {

absl::Status Refuse(const std::string& why) {
  return absl::PermissionDeniedError(absl::StrCat("party policy: ", why));
}

bool Listed(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// Whether `a` is a column of this party's table in the job.
bool Holds(const fedanon::v1::JobSpec& spec, const fedanon::v1::Attribute& a,
           const std::string& party) {
  if (spec.partitioning() != fedanon::v1::PARTITIONING_VERTICAL) return true;
  return a.role() == fedanon::v1::ROLE_ID || a.role() == fedanon::v1::ROLE_CLASS ||
         a.party() == party;
}

}  // namespace

absl::Status CheckPartyPolicy(const PartyPolicy& policy, const fedanon::v1::JobSpec& spec,
                              const std::string& party, const std::string& recipient) {
  const auto& p = spec.privacy();
  const bool lkc = p.model() != fedanon::v1::PRIVACY_MODEL_TEMPLATES;
  if (policy.min_k) {
    if (lkc && p.k() < *policy.min_k) {
      return Refuse(absl::StrCat("K=", p.k(), " below the party's minimum K=", *policy.min_k));
    }
    for (const auto& t : p.templates()) {
      if (t.k() < *policy.min_k) {
        return Refuse(absl::StrCat("anonymity template k=", t.k(),
                                   " below the party's minimum K=", *policy.min_k));
      }
    }
    if (spec.has_sequential()) {
      for (const auto& t : spec.sequential().anonymity()) {
        if (t.k() < *policy.min_k) {
          return Refuse(absl::StrCat("sequential anonymity template k=", t.k(),
                                     " below the party's minimum K=", *policy.min_k));
        }
      }
    }
  }
  if (policy.min_l) {
    if (!lkc) {
      return Refuse(absl::StrCat("the job's model (templates) has no L; the party's minimum is L=",
                                 *policy.min_l));
    }
    if (p.l() < *policy.min_l) {
      return Refuse(absl::StrCat("L=", p.l(), " below the party's minimum L=", *policy.min_l));
    }
  }
  if (policy.max_c) {
    std::vector<double> bounds;
    if (lkc) bounds.push_back(p.sensitive_values_size() > 0 && p.c() > 0 ? p.c() : 1.0);
    for (const auto& t : p.confidence()) bounds.push_back(t.max());
    if (spec.has_sequential()) {
      for (const auto& t : spec.sequential().confidentiality()) bounds.push_back(t.max());
    }
    if (bounds.empty()) bounds.push_back(1.0);
    for (double c : bounds) {
      if (c > *policy.max_c) {
        return Refuse(absl::StrCat("C=", c, " above the party's maximum C=", *policy.max_c,
                                   c == 1.0 ? " (the job bounds no confidence: C=1)" : ""));
      }
    }
  }
  for (const auto& a : spec.attributes()) {
    if (!Holds(spec, a, party)) continue;
    if (policy.qid_attributes && a.role() == fedanon::v1::ROLE_QID &&
        !Listed(*policy.qid_attributes, a.name())) {
      return Refuse(absl::StrCat("attribute '", a.name(), "' may not be a QID (qid_attributes)"));
    }
    if (policy.released_attributes && a.role() != fedanon::v1::ROLE_ID &&
        !Listed(*policy.released_attributes, a.name())) {
      return Refuse(
          absl::StrCat("attribute '", a.name(), "' may not be released (released_attributes)"));
    }
  }
  if (policy.recipients && !Listed(*policy.recipients, recipient)) {
    return Refuse(absl::StrCat("recipient '", recipient, "' is not one the party accepts"));
  }
  return absl::OkStatus();
}

}  // namespace fedanon::party
