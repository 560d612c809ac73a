// An audit entry the party's audit tests share: a secure-sum hop of round 3 with its own counts.
#pragma once

#include "party/audit_log.h"

namespace fedanon::testing {

inline party::AuditEntry SumAuditEntry() {
  return {.round = 3,
          .kind = party::kAuditSecureSum,
          .form = party::kAuditMaskedSealed,
          .to = {"hospital-b"},
          .numbers = {{"collect", 2}, {"chunk", 0}},
          .texts = {{"purpose", "statistics"}},
          .has_counts = true,
          .counts = {5, 0, 7}};
}

}  // namespace fedanon::testing
