#include "party/secure_union_party.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/parallel_for.h"
#include "common/base/status_macros.h"
#include "common/engine/privacy_model.h"
#include "common/engine/released_rows.h"
#include "common/engine/released_table_check.h"
#include "common/table/csv.h"
#include "common/wire/federation_wire.h"
#include "common/wire/released_union.h"
#include "crypto/sealed_box.h"
#include "crypto/spilling_shuffle.h"
#include "party/protocol_util.h"
#include "party/table_fingerprint.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {

using base::ParallelFor;
using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using table::CsvLine;
using wire::CsvLine;
using wire::OpenUnionList;
using wire::OpenUnionRows;
using wire::UnionListContext;
using wire::UnionRowContext;

absl::StatusOr<PartyMessage> SecureUnionParty::Step(const LeaderMessage& request) {
  RETURN_IF_ERROR(final_check_.ReleaseAllowed("secure union"));
  const auto& step = request.union_step();
  // One request, one answer: this party's hop and its delivery are each answered once.
  const std::string union_key = absl::StrCat(request.round(), "/", step.SerializeAsString());
  OneReply<>& answer = step.deliver() ? delivery_ : hop_;
  if (const PartyMessage* same = answer.Same(union_key)) return *same;
  // Another request after an answer is refused once the routing checks below have spoken.
  const absl::Status answered_already =
      answer.has_value()
          ? absl::PermissionDeniedError(
                "secure union: already answered for a different request (one request, one "
                "answer)")
          : absl::OkStatus();
  if (step.recipient() != ctx_.recipient) {
    return absl::PermissionDeniedError(absl::StrCat("secure union: recipient '", step.recipient(),
                                                    "' is not the one agreed at Prepare ('",
                                                    ctx_.recipient, "')"));
  }
  const std::vector<std::string> order = Order();
  const size_t pos = std::find(order.begin(), order.end(), ctx_.self()) - order.begin();
  // One request, one answer (chunked jobs): the same hop again gets the stored reply (the same
  // chunks); another request for the hop is refused.
  const std::string key = step.deliver() ? "" : "union";
  std::string digest;
  if (!key.empty() && ctx_.chunk_bytes > 0) {
    digest = wire::RequestDigest(request.round(), step);
    if (const auto* answered = transfer_.step_answers().Find(key)) {
      if (answered->fingerprint == digest) return answered->reply;
      return absl::FailedPreconditionError(
          "one request, one answer: the secure union hop was already answered for another "
          "request");
    }
  }
  if (step.deliver()) {
    if (order.empty() || order.back() != ctx_.self() || ctx_.recipient != ctx_.self()) {
      return absl::PermissionDeniedError("asked to deliver a union meant for another party");
    }
    RETURN_IF_ERROR(ctx_.CheckReleasedHeader(step.header(), "secure union"));
    RETURN_IF_ERROR(answered_already);
    RETURN_IF_ERROR(CheckListSender(step, ctx_.self()));
    ASSIGN_OR_RETURN(PartyMessage reply, Deliver(request));
    answer.Put(union_key, reply);
    ctx_.fresh_answer = true;
    return reply;
  }
  if (pos == 0) {
    if ((step.has_list() && !step.list().ciphertext().empty()) ||
        !step.list_ref().stream().empty()) {
      return absl::PermissionDeniedError(
          "secure union: the first party of the ring starts from the empty set");
    }
  } else {
    RETURN_IF_ERROR(CheckListSender(step, order[pos - 1]));
  }
  const std::string successor = pos + 1 < order.size() ? order[pos + 1] : ctx_.recipient;
  if (step.next() != successor) {
    return absl::PermissionDeniedError(
        absl::StrCat("secure union: next is '", step.next(),
                     "' but this party's successor agreed at Prepare is '", successor, "'"));
  }
  RETURN_IF_ERROR(answered_already);
  ASSIGN_OR_RETURN(PartyMessage reply,
                   Hop(request, pos == 0 ? "" : order[pos - 1], successor, key, digest));
  if (!key.empty() && ctx_.chunk_bytes > 0) transfer_.step_answers().Put(key, digest, reply);
  answer.Put(union_key, reply);
  ctx_.fresh_answer = true;
  return reply;
}

std::vector<std::string> SecureUnionParty::Order() const {
  // The agreed ring without the recipient, then the recipient when it is a data party (so that
  // it only ever sees the complete, shuffled set).
  std::vector<std::string> order;
  for (const auto& p : ctx_.ring) {
    if (p != ctx_.recipient) order.push_back(p);
  }
  if (ctx_.recipient != ctx_.leader) order.push_back(ctx_.recipient);
  return order;
}

absl::Status SecureUnionParty::CheckListSender(const fedanon::v1::UnionStep& step,
                                               const std::string& sender) const {
  if (step.list_ref().stream().empty()) {
    const fedanon::v1::SealedPayload& whole = step.list();
    if (whole.sender() != sender || whole.receiver() != ctx_.self()) {
      return absl::PermissionDeniedError(absl::StrCat(
          "the union list must come from '", sender, "' (the agreed predecessor) for '",
          ctx_.self(), "', not from '", whole.sender(), "' for '", whole.receiver(), "'"));
    }
    return absl::OkStatus();
  }
  if (step.list_ref().sender() != sender) {
    return absl::PermissionDeniedError(absl::StrCat("the union list must come from '", sender,
                                                    "' (the agreed predecessor), not from '",
                                                    step.list_ref().sender(), "'"));
  }
  return absl::OkStatus();
}

uint64_t SecureUnionParty::ListBytes(const fedanon::v1::UnionStep& step) {
  return step.list_ref().stream().empty() ? step.list().ciphertext().size()
                                          : step.list_ref().total_bytes();
}

absl::Status SecureUnionParty::ForEachListRow(
    const LeaderMessage& request, const std::string& sender,
    const std::function<absl::Status(std::string_view)>& row) {
  const auto& step = request.union_step();
  if (step.list_ref().stream().empty()) {
    // Whole, inside the step: at most one message.
    const crypto::SealPublicKey& key =
        sender == ctx_.self() ? ctx_.own_seal->keys->public_key() : *ctx_.seal_keys.at(sender);
    ASSIGN_OR_RETURN(const fedanon::v1::UnionList list,
                     OpenUnionList(*ctx_.own_seal->keys, ctx_.job_id, ctx_.run_id, request.round(),
                                   ctx_.self(), sender, key, step.list()));
    for (const std::string& r : list.rows()) RETURN_IF_ERROR(row(r));
    return absl::OkStatus();
  }
  // In chunks (on disk): read a row at a time, never the whole list in memory.
  wire::UnionListReader reader(row, wire::kMaxSealedUnionRowBytes);
  RETURN_IF_ERROR(
      transfer_.OpenPayloadTo(step.list_ref(), request.round(), "union-list",
                              [&](std::string_view piece) { return reader.Feed(piece); }));
  return reader.Finish();
}

absl::StatusOr<PartyMessage> SecureUnionParty::Deliver(const LeaderMessage& request) {
  const auto& step = request.union_step();
  const auto refused = [&](const absl::Status& st) {
    spdlog::error("job={} the received table is refused: {}", ctx_.job_id,
                  std::string(st.message()));
    return absl::Status(st.code(),
                        absl::StrCat("party '", ctx_.self(),
                                     "' (recipient) refuses the released table: ", st.message()));
  };
  // This party is the recipient: every sealed row into a shuffle that refuses a repeated box (an
  // honest party seals each row under a fresh ephemeral key, so a repeated box is a row a later
  // party replayed: it cannot read it, but can count it twice).
  ASSIGN_OR_RETURN(const std::string dir, transfer_.SpillDir());
  ASSIGN_OR_RETURN(
      std::unique_ptr<crypto::SpillingShuffle> shuffle,
      crypto::SpillingShuffle::Create(dir, ListBytes(step), {.refuse_duplicates = true}));
  if (absl::Status st = ForEachListRow(request, ctx_.self(),
                                       [&](std::string_view row) { return shuffle->Add(row); });
      !st.ok()) {
    return refused(st);
  }
  const uint64_t rows = shuffle->records();
  // The rows opened in batches (in parallel), checked and written as they come, in the
  // shuffle's order; the table is kept only when the whole of it passes the check.
  ASSIGN_OR_RETURN(std::unique_ptr<TableCheck> check, StartCheck(step));
  const crypto::SealContext context =
      UnionRowContext(ctx_.job_id, ctx_.run_id, request.round(), ctx_.self());
  absl::Status opened = absl::OkStatus();
  absl::StatusOr<std::string> path =
      write_table_(ctx_.job_id, [&](const TablePieceSink& sink) -> absl::Status {
        RETURN_IF_ERROR(sink(CsvLine(step.header())));
        std::vector<std::string> sealed;
        const auto flush = [&]() -> absl::Status {
          std::vector<std::string> lines(sealed.size());
          opened = ParallelFor(sealed.size(), [&](size_t i) -> absl::Status {
            ASSIGN_OR_RETURN(const std::string padded,
                             crypto::Open(*ctx_.own_seal->keys, context, sealed[i]));
            ASSIGN_OR_RETURN(lines[i], wire::UnpadUnionRow(padded));
            return absl::OkStatus();
          });
          RETURN_IF_ERROR(opened);
          sealed.clear();
          for (const std::string& line : lines) ctx_.Observe("", "union-row", line);  // anonymous
          if (check != nullptr) RETURN_IF_ERROR(check->checker->AddRows(lines));
          for (const std::string& line : lines) RETURN_IF_ERROR(sink(line));
          return absl::OkStatus();
        };
        absl::Status shuffled = shuffle->Finish([&](std::string_view row) -> absl::Status {
          sealed.emplace_back(row);
          return sealed.size() == kOpenBatchRows ? flush() : absl::OkStatus();
        });
        if (absl::IsDataLoss(shuffled)) {
          return absl::DataLossError(absl::StrCat("the secure union holds a sealed row twice (of ",
                                                  rows,
                                                  "): a party repeated another's row on its way"));
        }
        RETURN_IF_ERROR(shuffled);
        RETURN_IF_ERROR(flush());
        return check != nullptr ? check->checker->Finish() : absl::OkStatus();
      });
  if (!path.ok()) {
    // A refusal of the table (its rows or its check) is the recipient's; a failed write is not.
    const absl::Status& st = path.status();
    if (!opened.ok() || absl::IsDataLoss(st) || absl::IsInvalidArgument(st) ||
        absl::IsFailedPrecondition(st)) {
      return refused(st);
    }
    return st;
  }
  spdlog::info("job={} integrated table ({} rows) written to {}", ctx_.job_id, rows, *path);
  PartyMessage reply;
  reply.mutable_union_step()->set_rows_written(rows);
  RETURN_IF_ERROR(
      ctx_.Audit(request.round(), {.kind = kAuditReleasedTable,
                                   .form = kAuditPlaintext,
                                   .to = {ctx_.leader},
                                   .numbers = {{"rows", rows}},
                                   .texts = {{"recipient", ctx_.self()}, {"file", *path}}}));
  return reply;
}

absl::StatusOr<std::unique_ptr<SecureUnionParty::TableCheck>> SecureUnionParty::StartCheck(
    const fedanon::v1::UnionStep& step) const {
  // A local-recoding table's cells are its groups' own values, not one cut: the rows are
  // checked for repeats only (the shuffle), its groups by the final check.
  if (tables_.local) return nullptr;
  ASSIGN_OR_RETURN(const engine::PrivacyModel model,
                   engine::BuildPrivacyModel(ctx_.spec, *tables_.data));
  auto check = std::make_unique<TableCheck>();
  const engine::FinalCheckLayout* layout = final_check_.passed_layout();
  if (layout == nullptr) {
    ASSIGN_OR_RETURN(check->layout,
                     engine::BuildFinalCheckLayout(model, *tables_.data, tables_.hier,
                                                   ctx_.spec.suppression_token()));
    layout = &check->layout;
  }
  check->expected = engine::ReleasedTableExpectations{
      .layout = layout,
      .schema = tables_.data.get(),
      .hier = &tables_.hier,
      .suppression_token = ctx_.spec.suppression_token(),
      .header = {step.header().begin(), step.header().end()},
      .rows = std::nullopt,
      // Three or more parties: every group's counts as the final check summed them. Two: the
      // only rows before this party's are the other party's own, which no one could drop.
      .final_check_totals = final_check_.passed_total()};
  ASSIGN_OR_RETURN(check->checker, engine::ReleasedTableChecker::Create(check->expected));
  return check;
}

absl::StatusOr<std::vector<std::string>> SecureUnionParty::OwnRows() const {
  // The released rows copy non-QID columns from the file, read again: it must be the table the
  // job was prepared on.
  if (!tables_.pushdown && tables_.data->source_text == nullptr) {
    absl::StatusOr<std::string> now = TableFingerprint(*tables_.data);
    if (!now.ok() || *now != ctx_.table_fingerprint) {
      spdlog::error("job={} table changed since prepare: fingerprint {} then, {} now", ctx_.job_id,
                    ctx_.table_fingerprint, now.ok() ? *now : std::string(now.status().message()));
      return absl::FailedPreconditionError(absl::StrCat(
          "party '", ctx_.self(),
          "': its table changed since the job was prepared; its released rows would not be "
          "those the job anonymized (details in the party's log)"));
    }
  }
  // Our released rows, each sealed on its own for the recipient (no two rows share a key, so the
  // recipient cannot tell which rows came from the same party), added to the set and shuffled.
  std::vector<std::string> lines;
  const std::vector<int> columns =
      engine::ReleasedColumns(ctx_.spec, *tables_.data, /*spec_order=*/true);
  const auto add_line = [&](const std::vector<std::string_view>& row) {
    lines.push_back(CsvLine(row));
  };
  if (tables_.pushdown) {
    if (absl::Status st = tables_.pushdown->ForEachReleasedRow(tables_.hier, columns, add_line);
        !st.ok()) {
      spdlog::error("job={} push-down released rows failed: {}", ctx_.job_id,
                    std::string(st.message()));
      return absl::UnavailableError(absl::StrCat(
          "party '", ctx_.self(),
          "': its database could not compute the released rows (details in the party's log)"));
    }
  } else if (tables_.local) {
    RETURN_IF_ERROR(tables_.local->ForEachReleasedRow(columns, add_line));
  } else {
    RETURN_IF_ERROR(engine::ForEachReleasedRow(ctx_.spec, *tables_.data, *tables_.tips,
                                               tables_.hier, columns, add_line));
  }
  return lines;
}

absl::StatusOr<PartyMessage> SecureUnionParty::Hop(const LeaderMessage& request,
                                                   const std::string& predecessor,
                                                   const std::string& successor,
                                                   const std::string& key,
                                                   const std::string& digest) {
  const auto& step = request.union_step();
  auto recipient = ctx_.seal_keys.find(ctx_.recipient);
  auto next = ctx_.seal_keys.find(successor);
  if (recipient == ctx_.seal_keys.end() || next == ctx_.seal_keys.end()) {
    return absl::InvalidArgumentError("the union names someone who is not a participant");
  }
  ASSIGN_OR_RETURN(std::vector<std::string> lines, OwnRows());
  // How many times each earlier row is passed on: once (a test double deviates here).
  std::map<uint64_t, int> copies;
  ctx_.options().Deviation().UnionHop(ctx_.spec, &copies, &lines);
  // The list so far and this party's rows, each as its list entry, into a shuffle that spills to
  // disk: never the whole list in memory.
  ASSIGN_OR_RETURN(const std::string dir, transfer_.SpillDir());
  const uint64_t expected = (predecessor.empty() ? 0 : ListBytes(step)) +
                            lines.size() * (wire::kUnionRowFloorBytes + crypto::kSealOverhead + 4);
  ASSIGN_OR_RETURN(std::unique_ptr<crypto::SpillingShuffle> shuffle,
                   crypto::SpillingShuffle::Create(dir, expected));
  uint64_t list_bytes = 0;
  const auto add = [&](std::string_view sealed_row) -> absl::Status {
    const std::string entry = wire::EncodeUnionListEntry(sealed_row);
    list_bytes += entry.size();
    return shuffle->Add(entry);
  };
  if (!predecessor.empty()) {
    uint64_t index = 0;
    RETURN_IF_ERROR(ForEachListRow(request, predecessor, [&](std::string_view row) {
      const auto it = copies.find(index++);
      for (int c = it == copies.end() ? 1 : it->second; c > 0; --c) RETURN_IF_ERROR(add(row));
      return absl::OkStatus();
    }));
  }
  // This party's released rows, each sealed on its own for the recipient (no two rows share a
  // key, so the recipient cannot tell which rows came from the same party), in batches.
  const crypto::SealContext row_context =
      UnionRowContext(ctx_.job_id, ctx_.run_id, request.round(), step.recipient());
  for (size_t first = 0; first < lines.size(); first += kOpenBatchRows) {
    const size_t n = std::min(kOpenBatchRows, lines.size() - first);
    std::vector<std::string> sealed(n);
    RETURN_IF_ERROR(ParallelFor(n, [&](size_t i) -> absl::Status {
      ASSIGN_OR_RETURN(sealed[i], crypto::Seal(*recipient->second, row_context,
                                               wire::PadUnionRow(lines[first + i])));
      return absl::OkStatus();
    }));
    for (const std::string& box : sealed) RETURN_IF_ERROR(add(box));
  }
  const uint64_t list_rows = shuffle->records();
  PartyMessage reply;
  auto* out = reply.mutable_union_step();
  // A list that fits in one chunk travels whole, inside the reply (and so in the party's durable
  // state: a restarted party answers the repeated hop with it); a larger one goes in chunks from
  // a spill file (synced before the reply leaves: a restarted party serves the same chunks).
  if (ctx_.chunk_bytes > 0 && list_bytes > ctx_.chunk_bytes) {
    // In chunks sealed for the successor (each under UnionListContext's purpose + chunk).
    transfer_.StartProducing(key, digest);
    const absl::Status sealed = transfer_.SealPayloadStream(
        successor, request.round(), "union-list", list_bytes,
        [&](const std::function<absl::Status(std::string_view)>& append) {
          return shuffle->Finish(append);
        },
        out->mutable_list_ref());
    transfer_.StopProducing();
    RETURN_IF_ERROR(sealed);
  } else {
    std::string plain;
    plain.reserve(list_bytes);
    RETURN_IF_ERROR(shuffle->Finish([&](std::string_view entry) {
      plain.append(entry);
      return absl::OkStatus();
    }));
    ASSIGN_OR_RETURN(std::string sealed,
                     crypto::SealFrom(*ctx_.own_seal->keys, *next->second,
                                      UnionListContext(ctx_.job_id, ctx_.run_id, request.round(),
                                                       ctx_.self(), successor),
                                      plain));
    auto* payload = out->mutable_list();
    payload->set_sender(ctx_.self());
    payload->set_receiver(successor);
    payload->set_purpose("union-list");
    payload->set_ciphertext(std::move(sealed));
  }
  // This party's released rows, each sealed for the recipient, inside the list sealed for the
  // next hop.
  RETURN_IF_ERROR(
      ctx_.Audit(request.round(), {.kind = kAuditUnionRows,
                                   .form = kAuditSealed,
                                   .to = {successor},
                                   .numbers = {{"rows", lines.size()}, {"list_rows", list_rows}},
                                   .texts = {{"rows_sealed_for", ctx_.recipient}}}));
  return reply;
}

absl::Status SecureUnionParty::Restore(const LeaderMessage& request, const PartyMessage& reply) {
  const auto& step = request.union_step();
  const fedanon::v1::ChunkRef& sent = reply.union_step().list_ref();
  if (!step.deliver() && !sent.stream().empty()) {
    // The chunks the leader has not fetched yet, from the spill file synced before the reply.
    RETURN_IF_ERROR(transfer_.RestoreSpilledPayload(request.round(), sent));
    transfer_.step_answers().Put("union", wire::RequestDigest(request.round(), step), reply);
  }
  (step.deliver() ? delivery_ : hop_)
      .Put(absl::StrCat(request.round(), "/", step.SerializeAsString()), reply);
  return absl::OkStatus();
}

}  // namespace fedanon::party
