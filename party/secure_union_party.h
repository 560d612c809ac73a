// The secure set union at a party (horizontal jobs; mohammed2010 §5): this party's released rows,
// each sealed on its own for the recipient signed in the job, added to the list sealed from the
// agreed predecessor, shuffled, and sealed for the agreed successor; and, at a recipient that is
// a data party, the delivery: every row opened, shuffled and written. Released only once the
// final check allows it. Each hop and the delivery are answered once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/engine/final_check.h"
#include "common/engine/released_table_check.h"
#include "fedanon/v1/federation.pb.h"
#include "party/final_check_party.h"
#include "party/horizontal_tables.h"
#include "party/job_context.h"
#include "party/payload_transfer.h"
#include "party/reply_cache.h"

namespace fedanon::party {

class SecureUnionParty {
 public:
  SecureUnionParty(JobContext& ctx, HorizontalTables& tables, const FinalCheckParty& final_check,
                   PayloadTransfer& transfer, ReleasedTableWriter write_table)
      : ctx_(ctx),
        tables_(tables),
        final_check_(final_check),
        transfer_(transfer),
        write_table_(std::move(write_table)) {}

  absl::StatusOr<fedanon::v1::PartyMessage> Step(const fedanon::v1::LeaderMessage& request);
  // After a restart: the reply that left for the hop or the delivery. A hop whose list went in
  // chunks serves them again from its spill file (DataLoss when it is not there).
  absl::Status Restore(const fedanon::v1::LeaderMessage& request,
                       const fedanon::v1::PartyMessage& reply);

 private:
  // Sealed rows opened, or own rows sealed, in batches of this many (in parallel).
  static constexpr size_t kOpenBatchRows = 4096;
  // The recipient's check of the table as it is written (common/engine/released_table_check.h).
  struct TableCheck {
    engine::FinalCheckLayout layout;  // when the final check did not pass one
    engine::ReleasedTableExpectations expected;
    std::optional<engine::ReleasedTableChecker> checker;
  };
  // The union's order: the agreed ring without the recipient, then the recipient when it is a
  // data party.
  std::vector<std::string> Order() const;
  // PermissionDenied unless the step's list (whole or chunked) names `sender`.
  absl::Status CheckListSender(const fedanon::v1::UnionStep& step, const std::string& sender) const;
  // The size of the step's list as it travels (its ciphertext, or its chunks' total).
  static uint64_t ListBytes(const fedanon::v1::UnionStep& step);
  // Each sealed row of the list so far, sealed by `sender` (the agreed predecessor, or this
  // party itself to deliver), handed to `row` in order: whole in the step, or read a row at a
  // time from its chunk stream.
  absl::Status ForEachListRow(const fedanon::v1::LeaderMessage& request, const std::string& sender,
                              const std::function<absl::Status(std::string_view)>& row);
  // The recipient's delivery: every row opened, shuffled, checked and written, in bounded memory.
  absl::StatusOr<fedanon::v1::PartyMessage> Deliver(const fedanon::v1::LeaderMessage& request);
  // The recipient's check of the rows it opened: no row outside the final cut, the privacy model
  // on the table itself, and (three or more parties) every group's counts equal to the final
  // check's. Null for a local-recoding table (checked for repeats only).
  absl::StatusOr<std::unique_ptr<TableCheck>> StartCheck(const fedanon::v1::UnionStep& step) const;
  // This party's released rows as CSV lines, from the table it was prepared on.
  absl::StatusOr<std::vector<std::string>> OwnRows() const;
  // This party's hop: the list of `predecessor` (none for the first), its own rows each sealed
  // for the recipient, shuffled, and the list sealed for `successor` (whole, or as a chunk stream
  // under the step `key`).
  absl::StatusOr<fedanon::v1::PartyMessage> Hop(const fedanon::v1::LeaderMessage& request,
                                                const std::string& predecessor,
                                                const std::string& successor,
                                                const std::string& key, const std::string& digest);

  JobContext& ctx_;
  HorizontalTables& tables_;
  const FinalCheckParty& final_check_;
  PayloadTransfer& transfer_;
  ReleasedTableWriter write_table_;
  // This party's hop and (recipient) the delivery: the request's bytes and the reply.
  OneReply<> hop_;
  OneReply<> delivery_;
};

}  // namespace fedanon::party
