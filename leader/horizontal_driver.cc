#include "leader/horizontal_driver.h"

#include <algorithm>
#include <filesystem>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/parallel_for.h"
#include "common/base/status_macros.h"
#include "common/base/version.h"
#include "common/engine/final_check.h"
#include "common/engine/numeric_split.h"
#include "common/engine/released_table_check.h"
#include "common/spec/job_spec_loader.h"
#include "common/table/csv.h"
#include "common/wire/payload_chunks.h"
#include "common/wire/released_union.h"
#include "crypto/certificates.h"
#include "crypto/spilling_shuffle.h"
#include "leader/call_recorder.h"
#include "leader/final_check_ring.h"
#include "leader/released_table_writer.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {

// At most this many released words (final groups x value combinations) in one secure sum of the
// released counts of a global job; beyond it the secure union releases the rows.
constexpr uint64_t kMaxReleasedWords = 50'000'000;

absl::Status HorizontalDriver::Run(const JobHost& host, const JobRun& job,
                                   const table::Dataset& schema) {
  ASSIGN_OR_RETURN(engine::PrivacyModel model,
                   engine::BuildPrivacyModel(job.request.spec(), schema));
  HorizontalDriver driver(host, job, schema, std::move(model));
  RETURN_IF_ERROR(driver.SetUpSums());
  const bool local = job.request.spec().recoding() == fedanon::v1::RECODING_LOCAL;
  ASSIGN_OR_RETURN(const Rounds rounds, local ? driver.RunLocalRounds() : driver.RunGlobalRounds());
  ASSIGN_OR_RETURN(const std::string final_check, driver.RunFinalCheck(rounds));
  const double check_end = job.elapsed();
  RETURN_IF_ERROR(driver.Release(rounds));
  return driver.Finish(rounds, final_check, check_end);
}

HorizontalDriver::HorizontalDriver(const JobHost& host, const JobRun& job,
                                   const table::Dataset& schema, engine::PrivacyModel model)
    : host_(host),
      job_(job),
      schema_(schema),
      spec_(job.request.spec()),
      model_(std::move(model)),
      channel_(host.channel, host.options->resume_timeout, host.CancelCheck(job.job_id)),
      // Secure-sum and final-check vectors go in chunks that fit the message limit (the limit
      // minus the chunk headroom, in 8-byte words), at most 2^20 words (8 MiB) a chunk.
      sum_chunk_words_(static_cast<size_t>(std::clamp<uint64_t>(
          wire::ChunkBytesForLimit(host.options->max_message_bytes) / sizeof(uint64_t), 1,
          uint64_t{1} << 20))) {
  for (const auto& q : schema_.qids) hier_.emplace_back(&q);
  channel_.set_waiting_observer(host.WaitingObserver(job.job_id));
}

absl::Status HorizontalDriver::SetUpSums() {
  sums_ = std::make_unique<SecureSumCountSource>(
      &channel_, job_.job_id, job_.ring, job_.timeout, &hier_, std::max(1, schema_.num_classes()),
      schema_.tracked.size(), [this] { return round_; }, host_.CancelCheck(job_.job_id),
      sum_chunk_words_);
  // Every collect recorded before it is sent and once complete; after a restart, replayed.
  const CallRecorder recorder(host_.store, job_.job_id);
  SecureSumCountSource::Journal journal;
  journal.record_request = recorder.RequestRecorder();
  journal.record_sum = recorder.ReplyRecorder();
  if (job_.resume) {
    ASSIGN_OR_RETURN(journal.recorded, recorder.Load());
    spdlog::info("job={} replaying {} recorded secure sum(s) without the network", job_.job_id,
                 journal.recorded.size());
  }
  sums_->set_journal(std::move(journal));
  sums_->set_view_log(job_.view_log.get());
  sums_->set_observer(host_.observer);
  ASSIGN_OR_RETURN(leader_keys_, crypto::SealKeyPairFromPem(host_.options->seal_key_pem));
  ASSIGN_OR_RETURN(first_party_key_, host_.PartySealKey(job_.ring.front()));
  ASSIGN_OR_RETURN(last_party_key_, host_.PartySealKey(job_.ring.back()));
  sums_->set_numeric_split(engine::NumericSplitFromSpec(spec_));
  sums_->set_sealing(host_.options->name, job_.run_id, leader_keys_.get(), first_party_key_.get(),
                     last_party_key_.get());
  return absl::OkStatus();
}

engine::EngineOptions HorizontalDriver::EngineOptions() {
  engine::EngineOptions options;
  options.score = spec_.score();
  options.beneficial = spec_.beneficial();
  options.suppression_token = spec_.suppression_token();
  options.numeric = engine::NumericSplitFromSpec(spec_);
  // No root count the parties sum may exceed what the signed job lets them hold together.
  const uint64_t per_party = spec::MaxRecordsPerParty(spec_);
  const uint64_t parties = std::max<uint64_t>(1, job_.ring.size());
  options.max_records = per_party > UINT64_MAX / parties ? UINT64_MAX : per_party * parties;
  options.on_step = OnStep();
  return options;
}

std::function<void(const fedanon::v1::SpecializationStep&, size_t)> HorizontalDriver::OnStep() {
  return [this](const fedanon::v1::SpecializationStep& step, size_t groups) {
    round_ = step.round();
    host_.RoundDone(job_, step.round(), absl::StrCat(step.attribute(), " ", step.value()));
    spdlog::info("job={} round={} specialized {} {} ({} groups)", job_.job_id, step.round(),
                 step.attribute(), step.value(), groups);
  };
}

absl::StatusOr<HorizontalDriver::Rounds> HorizontalDriver::RunGlobalRounds() {
  ASSIGN_OR_RETURN(global_, engine::TopDownSpecializer::Create(&schema_, &model_, &hier_,
                                                               sums_.get(), EngineOptions()));
  Rounds rounds;
  rounds.start = job_.elapsed();
  ASSIGN_OR_RETURN(const std::string stop_reason, global_->Run());
  round_ = static_cast<uint32_t>(global_->steps().size() + 1);
  rounds.end = job_.elapsed();
  rounds.total_records = global_->total_records();
  const engine::TopDownSpecializer& engine = *global_;
  std::vector<std::vector<engine::NodeIndex>> keys = engine.GroupKeys();
  rounds.groups = keys.size();
  rounds.labels_of = [this, keys](size_t g) {
    std::vector<std::string> labels(hier_.size());
    for (size_t a = 0; a < hier_.size(); ++a) {
      labels[a] = hier_[a].Label(keys[g][a], spec_.suppression_token());
    }
    return labels;
  };
  rounds.fill_report = [&engine, stop_reason](fedanon::v1::Report* r) {
    engine.FillReport(stop_reason, r);
  };
  rounds.final_check_layout = [this]() -> absl::StatusOr<std::pair<uint64_t, std::string>> {
    ASSIGN_OR_RETURN(
        const engine::FinalCheckLayout layout,
        engine::BuildFinalCheckLayout(model_, schema_, hier_, spec_.suppression_token()));
    return std::pair{layout.words,
                     absl::StrCat(layout.constraints.size(),
                                  " constraint(s) on the global counts of the final cut")};
  };
  rounds.final_check_skipped =
      "skipped: with two data parties and an ldiversity or tcloseness model (which the secure "
      "comparisons do not check) the parties did not re-check the privacy model; the final "
      "groups rest on the leader's word (docs/threat-model.md)";
  // When every released non-QID attribute has a declared domain, the released table is a
  // multiset over public values: one more secure sum gives the leader (recipient) the count of
  // every (group, values) combination and nothing else.
  const uint64_t combinations = schema_.ValueCombinations();
  rounds.counts_apply = [this, combinations, groups = rounds.groups] {
    return schema_.all_values_declared && combinations <= kMaxReleasedWords &&
           // checked: the product below cannot overflow
           groups * combinations <= kMaxReleasedWords;
  };
  rounds.group_totals = [this, keys] {
    const auto totals = global_->GroupTotals();
    std::vector<std::vector<uint64_t>> out;
    for (const auto& key : keys) {
      const auto it = totals.find(key);
      out.push_back(it == totals.end() ? std::vector<uint64_t>() : it->second);
    }
    return out;
  };
  rounds.start_table_check =
      [this, total = rounds.total_records](
          const std::vector<std::string>& header) -> absl::StatusOr<Rounds::TableCheck> {
    struct State {
      engine::FinalCheckLayout layout;
      decltype(global_->GroupTotals()) group_totals;
      engine::ReleasedTableExpectations expected;
      std::optional<engine::ReleasedTableChecker> checker;
    };
    auto state = std::make_shared<State>();
    ASSIGN_OR_RETURN(state->layout, engine::BuildFinalCheckLayout(model_, schema_, hier_,
                                                                  spec_.suppression_token()));
    state->group_totals = global_->GroupTotals();
    state->expected = {.layout = &state->layout,
                       .schema = &schema_,
                       .hier = &hier_,
                       .suppression_token = spec_.suppression_token(),
                       .header = header,
                       .rows = total,
                       .final_check_totals = nullptr,
                       .group_totals = &state->group_totals};
    ASSIGN_OR_RETURN(engine::ReleasedTableChecker checker,
                     engine::ReleasedTableChecker::Create(state->expected));
    state->checker.emplace(std::move(checker));
    return Rounds::TableCheck{
        [state](const std::vector<std::string>& rows) { return state->checker->AddRows(rows); },
        [state] { return state->checker->Finish(); }};
  };
  rounds.collect_counts = [this, keys = std::move(keys), combinations] {
    engine::StatsRequest released;
    released.released_groups = keys;
    released.released_combinations = combinations;
    return sums_->Collect(released);
  };
  return rounds;
}

absl::StatusOr<HorizontalDriver::Rounds> HorizontalDriver::RunLocalRounds() {
  // Local recoding (leader/local_job.h): per-group secure sums.
  Rounds rounds;
  rounds.start = job_.elapsed();
  ASSIGN_OR_RETURN(local_, leader::RunLocalRounds(schema_, model_, sums_.get(), job_.view_log.get(),
                                                  &round_, EngineOptions()));
  rounds.end = job_.elapsed();
  const engine::LocalRecoder& engine = *local_->engine;
  rounds.total_records = engine.total_records();
  rounds.groups = engine.final_groups().size();
  rounds.labels_of = [&engine](size_t g) {
    const std::vector<engine::LocalValue>& key = engine.Key(engine.final_groups()[g]);
    std::vector<std::string> labels(key.size());
    for (size_t a = 0; a < key.size(); ++a) {
      labels[a] = engine.Label(static_cast<int>(a), key[a]);
    }
    return labels;
  };
  rounds.fill_report = [&engine, stop_reason = local_->stop_reason](fedanon::v1::Report* r) {
    engine.FillReport(stop_reason, r);
  };
  rounds.final_check_layout = [this,
                               &engine]() -> absl::StatusOr<std::pair<uint64_t, std::string>> {
    // Every party re-checks each final group's size and confidences on the summed counts.
    ASSIGN_OR_RETURN(const engine::FinalCheckLayout layout,
                     engine::LocalFinalCheckLayout(model_, schema_, engine.final_groups().size()));
    return std::pair{layout.words, absl::StrCat(engine.final_groups().size(),
                                                " local group(s) on their global counts")};
  };
  rounds.final_check_skipped =
      "skipped: with two data parties and an ldiversity or tcloseness model (which the secure "
      "comparisons do not check) the parties did not re-check the final groups; they rest on "
      "the leader's word (docs/threat-model.md)";
  // One secure sum of the released counts per (final group, value combination) when every
  // released non-QID value is declared and the request fits (leader/local_job.h).
  rounds.counts_apply = [this, &engine] { return LocalReleasedCountsApply(engine, schema_); };
  rounds.collect_counts = [this, &engine] {
    return CollectLocalReleasedCounts(engine, schema_, sums_.get(), job_.view_log.get(), round_);
  };
  // Local groups generalize each attribute their own way (no one cut to check cells against):
  // the row count, and repeated rows (OpenUnionRows).
  rounds.start_table_check =
      [total = rounds.total_records](
          const std::vector<std::string>&) -> absl::StatusOr<Rounds::TableCheck> {
    auto seen = std::make_shared<uint64_t>(0);
    return Rounds::TableCheck{
        [seen](const std::vector<std::string>& rows) {
          *seen += rows.size();
          return absl::OkStatus();
        },
        [seen, total]() -> absl::Status {
          if (*seen == total) return absl::OkStatus();
          return absl::DataLossError(
              absl::StrCat("the released table holds ", *seen, " rows but the parties summed ",
                           total, " records: a party dropped or added rows in the secure union"));
        }};
  };
  return rounds;
}

absl::StatusOr<std::string> HorizontalDriver::RunFinalCheck(const Rounds& rounds) {
  // The final check (docs/threat-model.md): before any row or released count leaves a party,
  // every data party re-checks the signed privacy model on the global counts of the final
  // groups, summed around the ring without the leader. With two data parties the sum would
  // reveal the other party's counts: the two decide every group size and confidence bound by
  // secure comparisons instead, except for an ldiversity / tcloseness model, which they cannot
  // check that way (the check is skipped and the groups rest on the leader's word).
  if (job_.ring.size() == 2 && model_.distribution.has_value()) {
    spdlog::warn("job={} round={} final check {}", job_.job_id, round_, rounds.final_check_skipped);
    return rounds.final_check_skipped;
  }
  ASSIGN_OR_RETURN(const auto layout, rounds.final_check_layout());
  FinalCheckRing ring;
  ring.channel = &channel_;
  ring.job_id = job_.job_id;
  ring.ring = job_.ring;
  ring.round = round_;
  ring.timeout = job_.timeout;
  ring.check = host_.CancelCheck(job_.job_id);
  ring.chunk_words = sum_chunk_words_;
  if (job_.ring.size() == 2) {
    ASSIGN_OR_RETURN(
        const uint32_t comparisons,
        leader::RunTwoPartyFinalCheck(ring, sums_->TakePendingUpdates(), layout.first));
    const std::string passed =
        absl::StrCat("passed at both data parties: ", comparisons,
                     " secure comparisons between the two checked ", layout.second, " (",
                     layout.first, " words) without either seeing the other's counts");
    spdlog::info("job={} round={} final check {}", job_.job_id, round_, passed);
    return passed;
  }
  RETURN_IF_ERROR(leader::RunFinalCheck(ring, sums_->TakePendingUpdates(), layout.first));
  const std::string passed =
      absl::StrCat("passed at every data party: ", job_.ring.size(), " parties re-checked ",
                   layout.second, " (", layout.first, " words)");
  spdlog::info("job={} round={} final check {}", job_.job_id, round_, passed);
  return passed;
}

absl::Status HorizontalDriver::Release(const Rounds& rounds) {
  // The released counts when the leader is the recipient and they fit; otherwise the secure set
  // union of the local anonymous tables (rows sealed for the recipient) travels the ring.
  if (job_.recipient != host_.options->name || !rounds.counts_apply()) {
    return RunSecureUnion(rounds);
  }
  ASSIGN_OR_RETURN(const std::vector<uint64_t> counts, rounds.collect_counts());
  std::vector<std::vector<uint64_t>> group_totals;
  if (rounds.group_totals) group_totals = rounds.group_totals();
  return host_.StoreResultOnce(job_.job_id, [&](const JobStore::ResultWriter& write) {
    return WriteReleasedTableFromCounts(spec_, schema_, rounds.groups, rounds.labels_of, counts,
                                        rounds.total_records, write,
                                        rounds.group_totals ? &group_totals : nullptr);
  });
}

absl::Status HorizontalDriver::RunSecureUnion(const Rounds& rounds) {
  // A recipient party goes last, so that it only ever sees the complete, shuffled set.
  std::vector<std::string> union_ring;
  for (const auto& p : job_.ring) {
    if (p != job_.recipient) union_ring.push_back(p);
  }
  const bool leader_receives = job_.recipient == host_.options->name;
  if (!leader_receives) union_ring.push_back(job_.recipient);
  std::vector<std::string> header;
  for (const auto& a : spec_.attributes()) {
    if (a.role() != fedanon::v1::ROLE_ID) header.push_back(a.name());
  }
  // The set travels whole or in chunks under the message limit: piped from each hop to the next
  // a chunk at a time before that one's step (leader/payload_relay.h), never held whole here.
  const PayloadRelay relay(&channel_, job_.job_id, host_.CancelCheck(job_.job_id));
  fedanon::v1::UnionStepResult previous;  // the last hop's answer: its list, whole or as a stream
  for (size_t i = 0; i < union_ring.size(); ++i) {
    RETURN_IF_ERROR(host_.check_cancelled(job_.job_id));
    fedanon::v1::LeaderMessage msg;
    msg.set_job_id(job_.job_id);
    msg.set_round(round_);
    auto* step = msg.mutable_union_step();
    step->set_recipient(job_.recipient);
    if (i > 0) {
      RETURN_IF_ERROR(relay.Pipe(union_ring[i - 1], union_ring[i], round_, job_.timeout,
                                 previous.list(), previous.list_ref(), step->mutable_list(),
                                 step->mutable_list_ref()));
    }
    step->set_next(i + 1 < union_ring.size() ? union_ring[i + 1] : job_.recipient);
    ASSIGN_OR_RETURN(fedanon::v1::PartyMessage reply,
                     channel_.Call(union_ring[i], msg, job_.timeout));
    if (!reply.has_union_step() ||
        (!reply.union_step().has_list() && reply.union_step().list_ref().stream().empty())) {
      return absl::InternalError(absl::StrCat("party '", union_ring[i], "' sent no union reply"));
    }
    previous = std::move(*reply.mutable_union_step());
  }
  if (leader_receives) return StoreUnionAtLeader(rounds, header, relay, previous);
  fedanon::v1::LeaderMessage msg;
  msg.set_job_id(job_.job_id);
  msg.set_round(round_);
  auto* step = msg.mutable_union_step();
  step->set_recipient(job_.recipient);
  RETURN_IF_ERROR(relay.Pipe(union_ring.back(), job_.recipient, round_, job_.timeout,
                             previous.list(), previous.list_ref(), step->mutable_list(),
                             step->mutable_list_ref()));
  step->set_deliver(true);
  for (const auto& h : header) step->add_header(h);
  return channel_.Call(job_.recipient, msg, job_.timeout).status();
}

absl::Status HorizontalDriver::StoreUnionAtLeader(const Rounds& rounds,
                                                  const std::vector<std::string>& header,
                                                  const PayloadRelay& relay,
                                                  const fedanon::v1::UnionStepResult& last_hop) {
  const std::string& leader = host_.options->name;
  const auto refused = [](const absl::Status& st) {
    return absl::Status(st.code(), absl::StrCat("the leader (recipient) refuses the released "
                                                "table: ",
                                                st.message()));
  };
  // The last party of the union (the ring without the recipient, which is the leader here).
  const std::string& last = job_.ring.back();
  const fedanon::v1::ChunkRef& ref = last_hop.list_ref();
  // Every sealed row into a shuffle that spills to disk and refuses a repeated box (a row a
  // later party replayed), chunk by chunk as it is fetched: the list is never held whole.
  const uint64_t list_bytes =
      ref.stream().empty() ? last_hop.list().ciphertext().size() : ref.total_bytes();
  const std::string spill_dir = host_.options->data_dir.empty()
                                    ? std::filesystem::temp_directory_path().string()
                                    : host_.options->data_dir;
  ASSIGN_OR_RETURN(
      std::unique_ptr<crypto::SpillingShuffle> shuffle,
      crypto::SpillingShuffle::Create(spill_dir, list_bytes, {.refuse_duplicates = true}));
  const auto add = [&](std::string_view row) { return shuffle->Add(row); };
  if (ref.stream().empty()) {
    ASSIGN_OR_RETURN(const fedanon::v1::UnionList list,
                     wire::OpenUnionList(*leader_keys_, job_.job_id, job_.run_id, round_, leader,
                                         last, *last_party_key_, last_hop.list()));
    for (const std::string& row : list.rows()) RETURN_IF_ERROR(add(row));
  } else {
    if (ref.sender() != last || ref.receiver() != leader || ref.purpose() != "union-list") {
      return absl::PermissionDeniedError(
          absl::StrCat("the union list must come from '", last, "' for '", leader, "', not ",
                       wire::DescribeStream(ref), " for '", ref.receiver(), "'"));
    }
    wire::UnionListReader reader(add, wire::kMaxSealedUnionRowBytes);
    RETURN_IF_ERROR(relay.FetchEach(
        last, round_, job_.timeout, ref,
        [&](uint32_t i, const fedanon::v1::SealedPayload& chunk) -> absl::Status {
          const crypto::SealContext context{job_.job_id,  job_.run_id, round_,
                                            ref.sender(), leader,      wire::ChunkPurpose(ref, i)};
          ASSIGN_OR_RETURN(
              const std::string piece,
              crypto::OpenFrom(*leader_keys_, *last_party_key_, context, chunk.ciphertext()));
          return reader.Feed(piece);
        }));
    RETURN_IF_ERROR(reader.Finish());
  }
  const uint64_t rows = shuffle->records();
  // The released table itself is the job's result; the view log records its size.
  RETURN_IF_ERROR(job_.view_log->Append(round_, kViewReleasedRows, "", false, {rows}));
  ASSIGN_OR_RETURN(Rounds::TableCheck check, rounds.start_table_check(header));
  const crypto::SealContext row_context =
      wire::UnionRowContext(job_.job_id, job_.run_id, round_, leader);
  const std::vector<std::string_view> header_views(header.begin(), header.end());
  // Opened in batches (in parallel) in the shuffle's order, checked and written as they come;
  // the job store keeps the table only when the whole check passes.
  return host_.StoreResultOnce(job_.job_id, [&](const JobStore::ResultWriter& write) {
    RETURN_IF_ERROR(write(table::CsvLine(header_views)));
    std::vector<std::string> sealed;
    std::string buffer;
    const auto open_row = [&](std::vector<std::string>& lines, size_t i) -> absl::Status {
      ASSIGN_OR_RETURN(const std::string padded,
                       crypto::Open(*leader_keys_, row_context, sealed[i]));
      ASSIGN_OR_RETURN(lines[i], wire::UnpadUnionRow(padded));
      return absl::OkStatus();
    };
    const auto flush = [&]() -> absl::Status {
      std::vector<std::string> lines(sealed.size());
      if (absl::Status st =
              base::ParallelFor(sealed.size(), [&](size_t i) { return open_row(lines, i); });
          !st.ok()) {
        return refused(st);
      }
      sealed.clear();
      if (absl::Status st = check.add_rows(lines); !st.ok()) return refused(st);
      for (const std::string& line : lines) buffer += line;
      if (buffer.size() >= (size_t{4} << 20)) {
        RETURN_IF_ERROR(write(buffer));
        buffer.clear();
      }
      return absl::OkStatus();
    };
    const absl::Status shuffled = shuffle->Finish([&](std::string_view row) -> absl::Status {
      sealed.emplace_back(row);
      return sealed.size() == 4096 ? flush() : absl::OkStatus();
    });
    if (absl::IsDataLoss(shuffled)) {
      return refused(
          absl::DataLossError(absl::StrCat("the secure union holds a sealed row twice (of ", rows,
                                           "): a party repeated another's row on its way")));
    }
    RETURN_IF_ERROR(shuffled);
    RETURN_IF_ERROR(flush());
    if (!buffer.empty()) RETURN_IF_ERROR(write(buffer));
    if (absl::Status st = check.finish(); !st.ok()) return refused(st);
    return absl::OkStatus();
  });
}

absl::Status HorizontalDriver::Finish(const Rounds& rounds, const std::string& final_check,
                                      double check_end) {
  fedanon::v1::Report report;
  report.set_job_name(spec_.name());
  report.set_version(base::VersionLine("fedanon-leader"));
  report.set_records_in(rounds.total_records);
  report.set_records_out(rounds.total_records);
  rounds.fill_report(&report);
  (*report.mutable_timings_seconds())["validate"] = rounds.start;
  (*report.mutable_timings_seconds())["rounds"] = rounds.end - rounds.start;
  (*report.mutable_timings_seconds())["final_check"] = check_end - rounds.end;
  (*report.mutable_timings_seconds())["union"] = job_.elapsed() - check_end;
  (*report.mutable_timings_seconds())["total"] = job_.elapsed();
  report.set_secure_sums(sums_->stats().collects);
  report.set_bytes_to_parties(sums_->stats().bytes_sent);
  report.set_bytes_from_parties(sums_->stats().bytes_received);
  report.set_final_check(final_check);
  if (absl::StartsWith(final_check, "skipped")) {
    report.add_warnings(absl::StrCat("final check ", final_check));
  }
  if (job_.resumes > 0) {
    report.add_warnings(absl::StrCat(
        "resumed ", job_.resumes, " time(s) after a leader restart (", sums_->replayed(),
        " secure sum(s) replayed from the job store this time; timings count from the last "
        "resume; the job's audit trail names each resume and its round)"));
  }
  RETURN_IF_ERROR(host_.store->SetReport(job_.job_id, report));
  RETURN_IF_ERROR(host_.store->SetProgress(job_.job_id, round_, "done", job_.elapsed()));
  // From here on (the report stored) a restarted leader records the job done and tells the
  // parties again instead of resuming it (JobStore::RecoverForResume).
  host_.EndJobAtParties(job_);
  return absl::OkStatus();
}

}  // namespace fedanon::leader
