// The release of a vertical job at a party: its released columns in the canonical record order
// (shuffled by a seed the ring's first party draws), sealed for the recipient signed in the job —
// never for anyone else; the release report in pages when it does not fit one message; and, at
// the recipient, the assembly of every party's columns into the released table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fedanon/v1/federation.pb.h"
#include "party/job_context.h"
#include "party/payload_transfer.h"
#include "party/secure_union_party.h"
#include "party/vertical_party.h"

namespace fedanon::party {

class VerticalReleaseParty {
 public:
  VerticalReleaseParty(JobContext& ctx, PayloadTransfer& transfer, VerticalParty& replica,
                       ReleasedTableWriter write_table)
      : ctx_(ctx), transfer_(transfer), replica_(replica), write_table_(std::move(write_table)) {}

  absl::Status Release(const fedanon::v1::VerticalRelease& release, uint64_t round,
                       fedanon::v1::VerticalStepResult* out);
  absl::Status ReportPage(const fedanon::v1::ReleaseReportPage& ask, uint64_t round,
                          fedanon::v1::VerticalStepResult* out);
  absl::Status Assemble(const fedanon::v1::VerticalAssemble& assemble, uint64_t round,
                        fedanon::v1::VerticalStepResult* out);

  // After a restart: the release order's seed the ring's first party drew before it, and that
  // the released table was assembled here already.
  void RestoreOrderSeed(std::string seed) { order_seed_ = std::move(seed); }
  void RestoreAssembled() { assembled_ = true; }

 private:
  // Draws (the ring's first party) or opens the release order's seed into order_seed_; the first
  // party seals it for every other data party in `out`.
  absl::Status SettleReleaseOrder(const fedanon::v1::VerticalRelease& release, uint64_t round,
                                  fedanon::v1::VerticalStepResult* out);
  JobContext& ctx_;
  PayloadTransfer& transfer_;
  VerticalParty& replica_;
  ReleasedTableWriter write_table_;
  std::string order_seed_;  // the secret seed of the release order, once drawn or received
  // The release report's steps: a report too large for one message is answered in pages of these
  // (ReportPage); derived again on a replayed release (the steps are the replica's state, so the
  // pages are the same bytes).
  std::optional<std::vector<fedanon::v1::SpecializationStep>> release_steps_;
  bool assembled_ = false;  // the recipient wrote the released table
  // The replica's groups digest as this party's release reported it (one pass over every record),
  // for the recipient's check of the joined rows; empty before a release.
  std::string released_groups_digest_;
};

}  // namespace fedanon::party
