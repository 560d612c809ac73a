// A horizontal job at a party: its table and cut (horizontal_tables.h) and the three protocols
// that answer from it — the secure sum, the final check, the secure union.
#pragma once

#include <utility>

#include "party/final_check_party.h"
#include "party/horizontal_tables.h"
#include "party/job_context.h"
#include "party/payload_transfer.h"
#include "party/secure_sum_party.h"
#include "party/secure_union_party.h"

namespace fedanon::party {

struct HorizontalJobParty {
  HorizontalJobParty(JobContext& ctx, PayloadTransfer& transfer, ReleasedTableWriter write_table)
      : final_check(ctx, tables, transfer),
        sum(ctx, tables, final_check, transfer),
        secure_union(ctx, tables, final_check, transfer, std::move(write_table)) {}

  HorizontalTables tables;
  FinalCheckParty final_check;
  SecureSumParty sum;
  SecureUnionParty secure_union;
};

}  // namespace fedanon::party
