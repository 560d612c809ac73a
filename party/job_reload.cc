// A job going on after its party restarted: its state rebuilt from the durable state file
// (party/job_journal.h) by handing every answered request to its protocol again, each keeping the
// reply that left, so that a repeated request gets the same bytes (one request, one answer).
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/spec/job_spec_loader.h"
#include "common/wire/federation_wire.h"
#include "party/job_state.h"
#include "party/party_agent.h"
#include "party/protocol_util.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

namespace {

// A horizontal job's answered request handed to its protocol again (the reply that left kept).
// Records other than the secure sum's, the final check's and the union's change nothing.
absl::Status ReplayHorizontal(JobState& job, const LeaderMessage& req, const PartyMessage& stored,
                              const std::string& extra, uint64_t last_collect) {
  const bool horizontal_record = req.has_sum_step() || req.has_sum_unmask() ||
                                 req.has_sum_bin_check() || req.has_final_check() ||
                                 req.has_union_step();
  if (req.has_chunk_put()) {
    // A chunk of a union list sealed for this party: back in the inbox until the union step
    // that names it comes again (or is replayed below and drops it).
    return job.transfer.ChunkPut(req, /*durable=*/true).status();
  }
  if (!horizontal_record) return absl::OkStatus();
  if (!job.horizontal) return absl::DataLossError("horizontal records in a vertical job's state");
  if (req.has_sum_step()) {
    const auto& step = req.sum_step();
    if (step.collect() < last_collect) {
      // An older secure sum: only its state updates and its bins matter now.
      return job.horizontal->sum.ReplayOlderCollect(step);
    }
    // The ring's first party's mask seed was recorded with the collect's first answer.
    if (step.chunk() == 0 && !extra.empty()) {
      job.horizontal->sum.RestoreSeed(extra);
    }
    RETURN_IF_ERROR(job.horizontal->sum.Step(req).status());
    job.horizontal->sum.RestoreReply(step.chunk(), stored);  // the bytes that left
  } else if (req.has_sum_bin_check()) {
    if (req.sum_bin_check().collect() == last_collect) {
      // The comparison runs again from the seed its first step kept: the same messages.
      if (!extra.empty()) job.horizontal->sum.RestoreBinCheckSeed(extra);
      RETURN_IF_ERROR(job.horizontal->sum.BinCheck(req).status());
      job.horizontal->sum.RestoreBinCheckReply(req.sum_bin_check().step(), stored);
    }
  } else if (req.has_sum_unmask()) {
    if (req.sum_unmask().collect() == last_collect) {
      job.horizontal->sum.RestoreUnmask(req, stored);
    }
  } else if (req.has_final_check()) {
    RETURN_IF_ERROR(job.horizontal->final_check.Replay(req, stored, extra));
  } else if (req.has_union_step()) {
    RETURN_IF_ERROR(job.horizontal->secure_union.Restore(req, stored));
  }
  return absl::OkStatus();
}

// A vertical job's record (a vertical step or a chunk put, with the reply that left and its
// extra: the ID matcher's secret, the alignment, the release-order seed) handed to its protocol
// again. `aligned`: the journal holds the ID alignment, so the matching's hops are skipped.
absl::Status ReplayVertical(JobState& job, const LeaderMessage& request, const PartyMessage& stored,
                            const std::string& extra, bool aligned) {
  if (!job.vertical) return absl::DataLossError("vertical records in a horizontal job's state");
  if (request.has_chunk_put()) {
    // A chunk of a payload sealed for this party (an ID list, an instruction, columns): back in
    // the inbox until the step that names it is replayed. The ID matching's are not needed once
    // the alignment is recorded.
    if (aligned && request.round() == 0) return absl::OkStatus();
    return job.transfer.ChunkPut(request, /*durable=*/true).status();
  }
  const fedanon::v1::VerticalStep& step = request.vertical();
  const uint64_t round = request.round();
  switch (step.step_case()) {
    case fedanon::v1::VerticalStep::kIdEncrypt:
    case fedanon::v1::VerticalStep::kIdReencrypt:
    case fedanon::v1::VerticalStep::kIdDigests:
    case fedanon::v1::VerticalStep::kIdCommon:
      if (aligned) break;  // the alignment below stands for the whole matching
      if (step.has_id_encrypt()) job.vertical->ids().RestoreSecret(extra);
      // The statement on the common ids carries the signature that left (a signature is drawn
      // afresh each time).
      if (step.has_id_common() && stored.vertical().ids().has_common()) {
        job.vertical->ids().RestoreCommonSignature(stored.vertical().ids().common().signature());
      }
      RETURN_IF_ERROR(job.vertical->Handle(request).status());
      job.vertical->ids().RestoreCommonSignature("");
      break;
    case fedanon::v1::VerticalStep::kIdAlign: {
      ASSIGN_OR_RETURN(const std::vector<uint64_t> words, wire::DecodeWords(extra));
      if (words.empty() || words.size() - 1 != job.vertical->replica().ids().size()) {
        return absl::DataLossError("the recorded ID alignment does not match this party's table");
      }
      IdAlignment alignment;
      alignment.common = words[0];
      for (size_t i = 1; i < words.size(); ++i) {
        alignment.canonical.push_back(static_cast<int64_t>(words[i]));
      }
      job.vertical->ids().RestoreAlignment(std::move(alignment));
      RETURN_IF_ERROR(job.vertical->Handle(request).status());
      break;
    }
    case fedanon::v1::VerticalStep::kPropose:
      // Only the key it keeps to check the round's winner against (the shares drawn again are
      // not used: the reply that left is restored below).
      RETURN_IF_ERROR(job.vertical->Handle(request).status());
      break;
    case fedanon::v1::VerticalStep::kCompare:
      // The winner's secure comparison runs again from the seed its first step kept, so an
      // instance interrupted by the restart goes on with the same messages.
      if (!extra.empty()) job.vertical->rounds().RestoreCompareSeed(extra);
      RETURN_IF_ERROR(job.vertical->Handle(request).status());
      job.vertical->rounds().RestoreCompareSeed("");
      break;
    case fedanon::v1::VerticalStep::kAssemble:
      // The released table is written already (and not again).
      if (!stored.has_error()) job.vertical->release().RestoreAssembled();
      break;
    case fedanon::v1::VerticalStep::kLocalPropose:
      RETURN_IF_ERROR(job.vertical->Handle(request).status());
      // The list is derived again; its signature is the one that left (a signature is drawn
      // afresh each time, and every page of the wave must carry the same).
      if (stored.vertical().has_local_proposals()) {
        job.vertical->waves().RestoreProposalsSignature(
            round, stored.vertical().local_proposals().signature());
      }
      break;
    case fedanon::v1::VerticalStep::kLocalJudge:
      RETURN_IF_ERROR(job.vertical->Handle(request).status());
      // As for the proposals: the verdict list's signature is the one that left.
      if (stored.vertical().has_local_verdicts()) {
        job.vertical->waves().RestoreVerdictsSignature(
            round, stored.vertical().local_verdicts().signature());
      }
      break;
    case fedanon::v1::VerticalStep::kRelease:
      if (!extra.empty()) job.vertical->release().RestoreOrderSeed(extra);  // drawn by ring[0]
      RETURN_IF_ERROR(job.vertical->Handle(request).status());
      break;
    default:
      // Winner, deliver, publish, commit: every instruction applied and every verdict as before.
      RETURN_IF_ERROR(job.vertical->Handle(request).status());
      break;
  }
  job.vertical->ids().ClearRestored();
  // The bytes that left answer a repeated request; a chunked step's chunks are derived again
  // (the same plaintext, sealed afresh, under the same stream description).
  const std::string digest = wire::RequestDigest(round, step);
  job.vertical->RestoreLast(digest, stored);
  const std::string key = ProducingStepKey(step, round);
  if (!key.empty()) job.transfer.RecordStepAnswer(key, digest, stored);
  return absl::OkStatus();
}

// Every table (a file, a table read into memory, a push-down snapshot) was read again at the
// reload: the requests answered before the restart came from the old one, so it must be the same
// data (docs/postgres.md, "One snapshot").
absl::Status TableUnchanged(const JobState& job, const std::string& snapshot,
                            const std::string& table_name) {
  if (snapshot == job.table_fingerprint) return absl::OkStatus();
  // The fingerprints stay in the party's log: they are hashes of the party's table.
  spdlog::error(
      "job={} table '{}' changed while the party was down: fingerprint {} at prepare, {} now",
      job.job_id, table_name, snapshot.empty() ? "(none recorded)" : snapshot,
      job.table_fingerprint);
  const bool pushdown = job.horizontal && job.horizontal->tables.pushdown != nullptr;
  return absl::FailedPreconditionError(absl::StrCat(
      "table '", table_name, "' changed while the party was down (",
      pushdown ? "push-down snapshot fingerprint differs: the row counts or per-class value "
                 "counts of the columns the job reads"
               : "its fingerprint differs from the one taken at prepare: its bytes",
      " are not those the job was prepared on and answered from before the restart); the job "
      "cannot resume"));
}

// A job's journal, parsed: its Prepare and the requests answered after it, with what the replay
// needs to know of them.
struct JournalledJob {
  LeaderMessage prepare;
  std::vector<std::pair<LeaderMessage, PartyMessage>> answered;
  uint64_t last_collect = 0;  // the last secure sum's collect
  // A vertical job whose ID matching ended here: its alignment is in the journal, so the
  // matching's hops need not be replayed (they cost elliptic-curve work per id).
  bool aligned = false;
};

// DataLoss naming what does not parse.
absl::StatusOr<JournalledJob> ParseJournal(const std::vector<JournalRecord>& records,
                                           const std::string& job_id) {
  JournalledJob out;
  if (!out.prepare.ParseFromString(records[0].request) || !out.prepare.has_prepare() ||
      out.prepare.job_id() != job_id) {
    return absl::DataLossError("its first record is not this job's Prepare");
  }
  for (size_t i = 1; i < records.size(); ++i) {
    LeaderMessage req;
    PartyMessage rep;
    if (!req.ParseFromString(records[i].request) || !rep.ParseFromString(records[i].reply) ||
        req.job_id() != job_id) {
      return absl::DataLossError(absl::StrCat("record ", i, " does not parse"));
    }
    if (req.has_sum_step()) out.last_collect = std::max(out.last_collect, req.sum_step().collect());
    if (req.has_vertical() && req.vertical().has_id_align()) out.aligned = true;
    out.answered.emplace_back(std::move(req), std::move(rep));
  }
  return out;
}

}  // namespace

absl::Status PartyAgent::ReloadJob(JobSlot& slot, const std::string& job_id) {
  if (options_.state_dir.empty() || !base::ValidateJobId(job_id).ok() ||
      !JobJournal::Exists(options_.state_dir, job_id)) {
    return absl::OkStatus();
  }
  const absl::Time start = absl::Now();
  auto lost = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat("the durable state of the job at party '",
                                            options_.name, "' cannot be reloaded (", why,
                                            "); the job cannot resume"));
  };
  std::string snapshot;  // the push-down snapshot's fingerprint at prepare (empty: none)
  absl::StatusOr<std::vector<JournalRecord>> records =
      JobJournal::Read(options_.state_dir, job_id, &snapshot);
  if (!records.ok()) return lost(records.status().message());
  absl::StatusOr<JournalledJob> journalled = ParseJournal(*records, job_id);
  if (!journalled.ok()) return lost(journalled.status().message());
  const LeaderMessage& prepare = journalled->prepare;
  const auto& answered = journalled->answered;
  RETURN_IF_ERROR(HandlePrepare(slot, prepare, /*reload=*/true, (*records)[0].extra).status());
  JobState& job = *slot.job;
  // A push-down table was opened again, as a new snapshot: the rounds answered before the restart
  // counted the old one, so it must be the same data (docs/postgres.md, "One snapshot").
  // Every table (a file, a table read into memory, a push-down snapshot) was read again: the
  // requests answered before the restart came from the old one, so it must be the same data.
  const std::string& table_name = prepare.prepare().data_path().empty()
                                      ? options_.default_data_path
                                      : prepare.prepare().data_path();
  if (absl::Status same = TableUnchanged(job, snapshot, table_name); !same.ok()) {
    slot.job.reset();  // (`job` is gone from here on)
    return same;       // (the leader names the party)
  }
  job.replaying = true;
  job.released = !answered.empty();
  // The chunks of spilled streams (the secure union's lists) received before the restart.
  absl::Status replayed = job.transfer.ReloadSpilledInbox();
  for (size_t i = 0; i < answered.size() && replayed.ok(); ++i) {
    const LeaderMessage& req = answered[i].first;
    const std::string& extra = (*records)[i + 1].extra;
    if (req.has_vertical() || (req.has_chunk_put() && job.vertical)) {
      replayed = ReplayVertical(job, req, answered[i].second, extra, journalled->aligned);
    } else {
      replayed = ReplayHorizontal(job, req, answered[i].second, extra, journalled->last_collect);
    }
  }
  job.replaying = false;
  job.fresh_answer = false;
  job.journal_extra.clear();
  if (job.horizontal) {
    job.horizontal->final_check.ClearRestored();
    job.horizontal->sum.ClearRestored();
  }
  if (job.vertical) job.vertical->ids().ClearRestored();
  if (replayed.ok()) {
    absl::StatusOr<std::unique_ptr<JobJournal>> journal =
        JobJournal::Reopen(options_.state_dir, job_id);
    replayed = journal.status();
    if (journal.ok()) job.journal = *std::move(journal);
  }
  if (!replayed.ok()) {
    slot.job.reset();
    return lost(replayed.message());
  }
  spdlog::warn(
      "job={} run={} reloaded from its durable state after a restart of this party: {} answered "
      "request(s), {} state update(s) ({} ms)",
      job_id, job.run_id, answered.size(),
      job.horizontal ? job.horizontal->tables.applied_updates : 0,
      absl::ToInt64Milliseconds(absl::Now() - start));
  return absl::OkStatus();
}

}  // namespace fedanon::party
