#include "party/secure_union_party.h"

#include <algorithm>
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
#include "crypto/shuffle.h"
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
  fedanon::v1::UnionList list;
  if (step.deliver()) {
    if (order.empty() || order.back() != ctx_.self() || ctx_.recipient != ctx_.self()) {
      return absl::PermissionDeniedError("asked to deliver a union meant for another party");
    }
    RETURN_IF_ERROR(ctx_.CheckReleasedHeader(step.header(), "secure union"));
    RETURN_IF_ERROR(answered_already);
    ASSIGN_OR_RETURN(list, OpenList(request, ctx_.self()));
    ASSIGN_OR_RETURN(PartyMessage reply, Deliver(request, list));
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
    ASSIGN_OR_RETURN(list, OpenList(request, order[pos - 1]));
  }
  const std::string successor = pos + 1 < order.size() ? order[pos + 1] : ctx_.recipient;
  if (step.next() != successor) {
    return absl::PermissionDeniedError(
        absl::StrCat("secure union: next is '", step.next(),
                     "' but this party's successor agreed at Prepare is '", successor, "'"));
  }
  RETURN_IF_ERROR(answered_already);
  ASSIGN_OR_RETURN(PartyMessage reply, Hop(request, successor, key, digest, std::move(list)));
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

absl::StatusOr<fedanon::v1::UnionList> SecureUnionParty::OpenList(const LeaderMessage& request,
                                                                  const std::string& sender) {
  const auto& step = request.union_step();
  fedanon::v1::UnionList list;
  const bool chunked_input = !step.list_ref().stream().empty();
  if (!chunked_input) {
    const crypto::SealPublicKey& key =
        sender == ctx_.self() ? ctx_.own_seal->keys->public_key() : *ctx_.seal_keys.at(sender);
    ASSIGN_OR_RETURN(list, OpenUnionList(*ctx_.own_seal->keys, ctx_.job_id, ctx_.run_id,
                                         request.round(), ctx_.self(), sender, key, step.list()));
    return list;
  }
  if (step.list_ref().sender() != sender) {
    return absl::PermissionDeniedError(absl::StrCat("the union list must come from '", sender,
                                                    "' (the agreed predecessor), not from '",
                                                    step.list_ref().sender(), "'"));
  }
  ASSIGN_OR_RETURN(std::string bytes,
                   transfer_.OpenPayload(fedanon::v1::SealedPayload(), step.list_ref(),
                                         request.round(), "union-list", nullptr));
  if (!list.ParseFromString(bytes)) {
    return absl::InvalidArgumentError("the union list does not parse");
  }
  return list;
}

absl::StatusOr<PartyMessage> SecureUnionParty::Deliver(const LeaderMessage& request,
                                                       const fedanon::v1::UnionList& list) {
  const auto& step = request.union_step();
  PartyMessage reply;
  auto* out = reply.mutable_union_step();
  // This party is the recipient: open every row, shuffle, write the integrated table.
  absl::StatusOr<std::vector<std::string>> opened = OpenUnionRows(
      *ctx_.own_seal->keys, ctx_.job_id, ctx_.run_id, request.round(), ctx_.self(), list.rows());
  if (!opened.ok()) {
    return absl::Status(
        opened.status().code(),
        absl::StrCat("party '", ctx_.self(),
                     "' (recipient) refuses the released table: ", opened.status().message()));
  }
  std::vector<std::string> rows = *std::move(opened);
  for (const std::string& row : rows) ctx_.Observe("", "union-row", row);  // anonymous rows
  RETURN_IF_ERROR(CheckTable(step, rows));
  ASSIGN_OR_RETURN(std::vector<size_t> perm, crypto::SecurePermutation(rows.size()));
  std::string csv = CsvLine(step.header());
  for (size_t i : perm) csv += rows[i];
  ASSIGN_OR_RETURN(const std::string path, write_table_(ctx_.job_id, csv));
  spdlog::info("job={} integrated table ({} rows) written to {}", ctx_.job_id, rows.size(), path);
  out->set_rows_written(rows.size());
  RETURN_IF_ERROR(
      ctx_.Audit(request.round(), {.kind = kAuditReleasedTable,
                                   .form = kAuditPlaintext,
                                   .to = {ctx_.leader},
                                   .numbers = {{"rows", rows.size()}},
                                   .texts = {{"recipient", ctx_.self()}, {"file", path}}}));
  return reply;
}

absl::Status SecureUnionParty::CheckTable(const fedanon::v1::UnionStep& step,
                                          const std::vector<std::string>& rows) const {
  // A local-recoding table's cells are its groups' own values, not one cut: the rows are
  // checked for repeats only (OpenUnionRows), its groups by the final check.
  if (tables_.local) return absl::OkStatus();
  ASSIGN_OR_RETURN(const engine::PrivacyModel model,
                   engine::BuildPrivacyModel(ctx_.spec, *tables_.data));
  engine::FinalCheckLayout built;
  const engine::FinalCheckLayout* layout = final_check_.passed_layout();
  if (layout == nullptr) {
    ASSIGN_OR_RETURN(built, engine::BuildFinalCheckLayout(model, *tables_.data, tables_.hier,
                                                          ctx_.spec.suppression_token()));
    layout = &built;
  }
  engine::ReleasedTableExpectations expected{
      .layout = layout,
      .schema = tables_.data.get(),
      .hier = &tables_.hier,
      .suppression_token = ctx_.spec.suppression_token(),
      .header = {step.header().begin(), step.header().end()},
      .rows = std::nullopt,
      // Three or more parties: every group's counts as the final check summed them. Two: the
      // only rows before this party's are the other party's own, which no one could drop.
      .final_check_totals = final_check_.passed_total()};
  if (absl::Status st = engine::CheckReleasedTable(expected, rows); !st.ok()) {
    spdlog::error("job={} the received table is refused: {}", ctx_.job_id,
                  std::string(st.message()));
    return absl::Status(st.code(),
                        absl::StrCat("party '", ctx_.self(),
                                     "' (recipient) refuses the released table: ", st.message()));
  }
  return absl::OkStatus();
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
                                                   const std::string& successor,
                                                   const std::string& key,
                                                   const std::string& digest,
                                                   fedanon::v1::UnionList list) {
  const auto& step = request.union_step();
  auto recipient = ctx_.seal_keys.find(ctx_.recipient);
  auto next = ctx_.seal_keys.find(successor);
  if (recipient == ctx_.seal_keys.end() || next == ctx_.seal_keys.end()) {
    return absl::InvalidArgumentError("the union names someone who is not a participant");
  }
  ASSIGN_OR_RETURN(std::vector<std::string> lines, OwnRows());
  ctx_.options().Deviation().UnionHop(ctx_.spec, &list, &lines);
  PartyMessage reply;
  auto* out = reply.mutable_union_step();
  const size_t before = list.rows_size();
  for (size_t i = 0; i < lines.size(); ++i) list.add_rows();
  const crypto::SealContext row_context =
      UnionRowContext(ctx_.job_id, ctx_.run_id, request.round(), step.recipient());
  RETURN_IF_ERROR(ParallelFor(lines.size(), [&](size_t i) -> absl::Status {
    ASSIGN_OR_RETURN(*list.mutable_rows(static_cast<int>(before + i)),
                     crypto::Seal(*recipient->second, row_context, wire::PadUnionRow(lines[i])));
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(ShuffleRows(list.mutable_rows()));
  // A list that fits in one chunk travels whole, inside the reply (and so in the party's durable
  // state: a restarted party answers the repeated hop with it); a larger one goes in chunks.
  if (ctx_.chunk_bytes > 0 && list.ByteSizeLong() > ctx_.chunk_bytes) {
    // In chunks sealed for the successor (each under UnionListContext's purpose + chunk).
    transfer_.StartProducing(key, digest);
    fedanon::v1::SealedPayload unused;
    std::string plain = list.SerializeAsString();
    const absl::Status sealed = transfer_.SealPayload(successor, request.round(), "union-list",
                                                      plain, &unused, out->mutable_list_ref());
    transfer_.StopProducing();
    RETURN_IF_ERROR(sealed);
    // Durable with the reply: a restarted party derives the same chunks from it (Restore), for
    // the leader to fetch those it has not yet.
    ctx_.journal_extra = std::move(plain);
  } else {
    ASSIGN_OR_RETURN(std::string sealed,
                     crypto::SealFrom(*ctx_.own_seal->keys, *next->second,
                                      UnionListContext(ctx_.job_id, ctx_.run_id, request.round(),
                                                       ctx_.self(), successor),
                                      list.SerializeAsString()));
    auto* payload = out->mutable_list();
    payload->set_sender(ctx_.self());
    payload->set_receiver(successor);
    payload->set_purpose("union-list");
    payload->set_ciphertext(std::move(sealed));
  }
  // This party's released rows, each sealed for the recipient, inside the list sealed for the
  // next hop.
  RETURN_IF_ERROR(ctx_.Audit(
      request.round(),
      {.kind = kAuditUnionRows,
       .form = kAuditSealed,
       .to = {successor},
       .numbers = {{"rows", lines.size()}, {"list_rows", static_cast<uint64_t>(list.rows_size())}},
       .texts = {{"rows_sealed_for", ctx_.recipient}}}));
  return reply;
}

absl::Status SecureUnionParty::Restore(const LeaderMessage& request, const PartyMessage& reply,
                                       const std::string& list) {
  const auto& step = request.union_step();
  // The list this step opened (its chunks replayed into the inbox) is not needed again.
  if (!step.list_ref().stream().empty()) transfer_.DiscardReceived(step.list_ref());
  const fedanon::v1::ChunkRef& sent = reply.union_step().list_ref();
  if (!step.deliver() && !sent.stream().empty()) {
    if (list.empty()) {
      return absl::DataLossError(
          "the state file holds the union hop's reply but not its chunked list");
    }
    const std::string digest = wire::RequestDigest(request.round(), step);
    transfer_.StartProducing("union", digest);
    fedanon::v1::SealedPayload unused;
    fedanon::v1::ChunkRef again;
    const absl::Status sealed = transfer_.SealPayload(sent.receiver(), request.round(),
                                                      "union-list", list, &unused, &again);
    transfer_.StopProducing();
    RETURN_IF_ERROR(sealed);
    if (!wire::SameChunkRef(again, sent)) {
      return absl::DataLossError(
          "the union hop's list in the state file does not give the chunks its reply named");
    }
    transfer_.step_answers().Put("union", digest, reply);
  }
  (step.deliver() ? delivery_ : hop_)
      .Put(absl::StrCat(request.round(), "/", step.SerializeAsString()), reply);
  return absl::OkStatus();
}

}  // namespace fedanon::party
