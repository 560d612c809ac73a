// The secure set union at a party (horizontal jobs; mohammed2010 §5): this party's released rows,
// each sealed on its own for the recipient signed in the job, added to the list sealed from the
// agreed predecessor, shuffled, and sealed for the agreed successor; and, at a recipient that is
// a data party, the delivery: every row opened, shuffled and written. Released only once the
// final check allows it. Each hop and the delivery are answered once.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
  // chunks has them derived again from `list` (the list's plaintext recorded with the reply):
  // sealed afresh under the same stream description, so that chunks fetched before the restart
  // and after it open alike. DataLoss when the state file lacks it or it gives another shape.
  absl::Status Restore(const fedanon::v1::LeaderMessage& request,
                       const fedanon::v1::PartyMessage& reply, const std::string& list);

 private:
  // The union's order: the agreed ring without the recipient, then the recipient when it is a
  // data party.
  std::vector<std::string> Order() const;
  // The list so far, sealed by `sender` (the agreed predecessor, or this party itself to
  // deliver), whole or as a chunk stream.
  absl::StatusOr<fedanon::v1::UnionList> OpenList(const fedanon::v1::LeaderMessage& request,
                                                  const std::string& sender);
  // The recipient's delivery: every row opened, shuffled and written.
  absl::StatusOr<fedanon::v1::PartyMessage> Deliver(const fedanon::v1::LeaderMessage& request,
                                                    const fedanon::v1::UnionList& list);
  // The recipient's check of the rows it opened before it writes them: no row outside the final
  // cut, the privacy model on the table itself, and (three or more parties) every group's counts
  // equal to the final check's.
  absl::Status CheckTable(const fedanon::v1::UnionStep& step,
                          const std::vector<std::string>& rows) const;
  // This party's released rows as CSV lines, from the table it was prepared on.
  absl::StatusOr<std::vector<std::string>> OwnRows() const;
  // This party's hop: its rows, each sealed for the recipient, added to `list`, shuffled, and the
  // list sealed for `successor` (whole, or as a chunk stream under the step `key`).
  absl::StatusOr<fedanon::v1::PartyMessage> Hop(const fedanon::v1::LeaderMessage& request,
                                                const std::string& successor,
                                                const std::string& key, const std::string& digest,
                                                fedanon::v1::UnionList list);

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
