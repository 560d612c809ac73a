#include "party/vertical_release_party.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/process_usage.h"
#include "common/base/status_macros.h"
#include "common/spec/job_digest.h"
#include "common/wire/federation_wire.h"
#include "common/wire/id_digests.h"
#include "common/wire/payload_chunks.h"
#include "common/wire/release_digests.h"
#include "common/wire/released_union.h"
#include "crypto/hash.h"
#include "crypto/secret_bytes.h"
#include "crypto/shuffle.h"
#include "crypto/signature.h"
#include "party/protocol_util.h"
#include "party/vertical_statement.h"
#include "spdlog/spdlog.h"

namespace fedanon::party {

namespace {

// Pages of the release report's steps: half a chunk of the job's message limit, as the local
// waves' proposal pages, so that a page and the reply around it fit one message.
uint64_t ReleaseReportPageBytes(uint64_t message_limit) {
  const uint64_t limit = message_limit > 0 ? message_limit : wire::kDefaultMessageLimitBytes;
  return std::max<uint64_t>(1, wire::ChunkBytesForLimit(limit) / 2);
}

// The first step of every page: steps in order, as many as fit `page_bytes` (their encoding in a
// repeated field), at least one per page. Deterministic in the steps.
std::vector<size_t> ReleaseReportPageStarts(
    const std::vector<fedanon::v1::SpecializationStep>& steps, uint64_t page_bytes) {
  std::vector<size_t> starts = {0};
  uint64_t used = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const uint64_t size = steps[i].ByteSizeLong() + 6;  // tag and length
    if (used > 0 && used + size > page_bytes) {
      starts.push_back(i);
      used = 0;
    }
    used += size;
  }
  return starts;
}

// Keeps the report's steps for ReleaseReportPage and, when they need more than one page, leaves
// only page 0's in the reply with the count and digest of all of them.
void PageReleaseReport(uint64_t message_limit,
                       std::optional<std::vector<fedanon::v1::SpecializationStep>>* steps,
                       fedanon::v1::VerticalReleased* released) {
  auto* report = released->mutable_report();
  steps->emplace(report->steps().begin(), report->steps().end());
  const std::vector<size_t> starts =
      ReleaseReportPageStarts(**steps, ReleaseReportPageBytes(message_limit));
  if (starts.size() < 2) return;
  fedanon::v1::Report all;
  *all.mutable_steps() = report->steps();
  released->set_report_pages(static_cast<uint32_t>(starts.size()));
  released->set_report_steps((*steps)->size());
  released->set_report_digest(crypto::Sha256(all.SerializeAsString()));
  report->mutable_steps()->DeleteSubrange(static_cast<int>(starts[1]),
                                          report->steps_size() - static_cast<int>(starts[1]));
}

}  // namespace

// The release order: a permutation of the canonical (ID) order from a seed the ring's first party
// draws and seals for the other data parties, so that the recipient cannot map the rows back to
// the ID order (the leader and a non-party recipient never see the seed).
absl::Status VerticalReleaseParty::SettleReleaseOrder(const fedanon::v1::VerticalRelease& release,
                                                      uint64_t round,
                                                      fedanon::v1::VerticalStepResult* out) {
  const bool first = ctx_.ring.front() == ctx_.self();
  if (first) {
    if (release.has_order_seed()) {
      return absl::InvalidArgumentError("the ring's first party draws the release order itself");
    }
    if (order_seed_.empty()) {
      ASSIGN_OR_RETURN(crypto::SecretBytes seed,
                       crypto::RandomBytes(crypto::kPermutationSeedBytes));
      order_seed_ = std::string(seed.AsStringView());
    }
    // Durable with the reply that carries it sealed: a restarted first party releases in the
    // same order as the others.
    if (!ctx_.replaying) ctx_.journal_extra = order_seed_;
    for (const auto& party : ctx_.ring) {
      if (party == ctx_.self()) continue;
      std::string seed = order_seed_;
      ctx_.options().Deviation().ReleaseOrderSeed(party, party == ctx_.ring.back(), &seed);
      ASSIGN_OR_RETURN(*out->mutable_released()->add_order_seeds(),
                       ctx_.SealFor(party, round, "release-order", seed));
    }
  } else {
    if (release.order_seed().sender() != ctx_.ring.front()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the release order's seed must come from the ring's first party '",
                       ctx_.ring.front(), "'"));
    }
    ASSIGN_OR_RETURN(order_seed_, ctx_.OpenSealed(release.order_seed(), round, "release-order"));
  }
  return absl::OkStatus();
}

absl::Status VerticalReleaseParty::Release(const fedanon::v1::VerticalRelease& release,
                                           uint64_t round, fedanon::v1::VerticalStepResult* out) {
  VerticalParty& vp = replica_;
  // The columns go only to the recipient the admin signed (Prepare checked it against the
  // spec's release rules and this party's policy), whoever the leader names now.
  if (release.recipient() != ctx_.recipient) {
    return absl::PermissionDeniedError(
        absl::StrCat("vertical release: the leader names '", release.recipient(),
                     "' as recipient, not the one the admin signed ('", ctx_.recipient,
                     "'); nothing is released"));
  }
  LogUsage(ctx_.job_id, "rounds done");
  // Before anything leaves, this party checks the model on the final joined groups it
  // can see (group sizes at every party, confidences where it holds the sensitive values).
  if (absl::Status check = vp.CheckRelease(); !check.ok()) {
    spdlog::error("job={} round={} {}", ctx_.job_id, round, std::string(check.message()));
    return check;
  }
  // The digests of the final groups (a pass over every record's labels) on a thread of their
  // own while the columns are serialized and sealed; joined on every way out.
  VerticalParty::GroupDigests digests;
  std::thread digesting([&vp, &digests] { digests = vp.ReleaseGroupDigests(); });
  struct Joiner {
    std::thread& thread;
    ~Joiner() {
      if (thread.joinable()) thread.join();
    }
  } joiner{digesting};
  RETURN_IF_ERROR(SettleReleaseOrder(release, round, out));
  ASSIGN_OR_RETURN(const std::vector<size_t> order,
                   crypto::SeededPermutation(order_seed_, vp.records()));
  uint64_t column_count = 0;
  {
    // The columns as bytes, straight from the codes (no message of strings per cell), freed
    // once sealed.
    ASSIGN_OR_RETURN(std::string columns, vp.SerializedReleasedColumns(order));
    ctx_.options().Deviation().ReleasedColumns(ctx_.spec, &columns);
    column_count = vp.released_column_count();
    RETURN_IF_ERROR(transfer_.SealPayload(ctx_.recipient, round,
                                          wire::ReleasePurpose(ctx_.recipient), columns,
                                          out->mutable_released()->mutable_columns(),
                                          out->mutable_released()->mutable_columns_ref()));
  }
  vp.FillReport("", out->mutable_released()->mutable_report());
  // What ties the release to what every replica agreed: the leader compares these across the
  // replicas before it fetches any column.
  {
    digesting.join();
    out->mutable_released()->set_partition_digest(digests.partition);
    out->mutable_released()->set_groups_digest(digests.groups);
    released_groups_digest_ = digests.groups;
    out->mutable_released()->set_order_seed_digest(wire::OrderSeedDigest(ctx_.job_id, order_seed_));
  }
  ctx_.options().Deviation().ReleaseReport(out->mutable_released()->mutable_report());
  PageReleaseReport(ctx_.message_limit, &release_steps_, out->mutable_released());
  LogUsage(ctx_.job_id, "release sealed");
  // The columns sealed for the recipient, the order seed sealed for the other data parties, this
  // replica's report in plaintext for the leader.
  const auto& report = out->released().report();
  return ctx_.Audit(
      round,
      {.kind = kAuditRelease,
       .form = kAuditSealed,
       .to = {ctx_.recipient},
       .numbers = {{"records", vp.records()},
                   {"columns", column_count},
                   {"report_groups", report.groups()},
                   {"report_smallest_group", report.smallest_group()}},
       .texts = {{"order_seed_for", absl::StrJoin(Receivers(out->released().order_seeds()), ",")},
                 {"report_to", ctx_.leader}}});
}

absl::Status VerticalReleaseParty::ReportPage(const fedanon::v1::ReleaseReportPage& ask,
                                              uint64_t round,
                                              fedanon::v1::VerticalStepResult* out) {
  // Only after this party's release passed its own check of the model (a reloaded job replays
  // its release): a refused release leaves no report pages to read.
  if (!release_steps_) {
    return absl::FailedPreconditionError(
        "the release report's pages come after this party's release (none passed here)");
  }
  const std::vector<size_t> starts =
      ReleaseReportPageStarts(*release_steps_, ReleaseReportPageBytes(ctx_.message_limit));
  if (ask.page() == 0 || ask.page() >= starts.size()) {
    return absl::InvalidArgumentError(absl::StrCat("page ", ask.page(), " of this party's ",
                                                   starts.size(),
                                                   " release report pages does not exist (page 0 "
                                                   "travels with the release)"));
  }
  const size_t end =
      ask.page() + 1 < starts.size() ? starts[ask.page() + 1] : release_steps_->size();
  auto* page = out->mutable_report_page();
  page->set_page(ask.page());
  page->set_pages(static_cast<uint32_t>(starts.size()));
  for (size_t i = starts[ask.page()]; i < end; ++i) *page->add_steps() = (*release_steps_)[i];
  spdlog::debug("job={} round={} release report page {} of {}", ctx_.job_id, round, ask.page(),
                starts.size());
  return absl::OkStatus();
}

absl::Status VerticalReleaseParty::Assemble(const fedanon::v1::VerticalAssemble& assemble,
                                            uint64_t round, fedanon::v1::VerticalStepResult* out) {
  if (ctx_.recipient != ctx_.self()) {
    return absl::PermissionDeniedError(
        absl::StrCat("vertical assemble: this party is not the recipient the admin signed ('",
                     ctx_.recipient, "'); it writes no joined table"));
  }
  // Written once: a second assembly (another round, header or set of parts) would replace or
  // contradict the released table.
  if (assembled_) {
    return absl::PermissionDeniedError(
        "vertical assemble: the released table was assembled already (one request, one answer)");
  }
  RETURN_IF_ERROR(ctx_.CheckReleasedHeader(assemble.header(), "vertical assemble"));
  const std::string purpose = wire::ReleasePurpose(ctx_.self());
  // Each part read in place (no string per cell); the sealed copies are the leader's request.
  std::vector<wire::VerticalColumnsView> parts;
  for (const auto& sealed : assemble.columns()) {
    ASSIGN_OR_RETURN(std::string bytes, transfer_.OpenPayload(sealed, fedanon::v1::ChunkRef(),
                                                              round, purpose, nullptr));
    ASSIGN_OR_RETURN(parts.emplace_back(), wire::VerticalColumnsView::Parse(std::move(bytes)));
  }
  for (const auto& ref : assemble.column_refs()) {
    ASSIGN_OR_RETURN(std::string bytes, transfer_.OpenPayload(fedanon::v1::SealedPayload(), ref,
                                                              round, purpose, nullptr));
    ASSIGN_OR_RETURN(parts.emplace_back(), wire::VerticalColumnsView::Parse(std::move(bytes)));
  }
  // The joined rows must be the agreed generalization of the common records: every QID cell a
  // value of the cut every replica reported, the groups those of this party's own replica (an
  // owner could release raw values or per-record tags, or the parts could come in different
  // orders). Checked before anything is written.
  {
    fedanon::v1::Report agreed;
    replica_.FillReport("", &agreed);
    if (released_groups_digest_.empty()) {
      released_groups_digest_ = replica_.ReleaseGroupDigests().groups;
    }
    if (absl::Status st = wire::CheckJoinedRelease(parts, agreed.cut(), released_groups_digest_);
        !st.ok()) {
      spdlog::error("job={} round={} vertical assemble refused: {}", ctx_.job_id, round,
                    std::string(st.message()));
      return absl::Status(
          st.code(), absl::StrCat("vertical assemble: ", st.message(), "; nothing was written"));
    }
  }
  std::vector<std::string> header(assemble.header().begin(), assemble.header().end());
  ASSIGN_OR_RETURN(const std::string path,
                   write_table_(ctx_.job_id, [&](const TablePieceSink& sink) {
                     return wire::JoinReleasedColumnsTo(parts, header, sink);
                   }));
  parts.clear();
  assembled_ = true;
  const uint64_t records = replica_.records();
  spdlog::info("job={} joined table ({} rows) written to {}", ctx_.job_id, records, path);
  LogUsage(ctx_.job_id, "joined table written");
  out->mutable_assembled()->set_rows_written(records);
  return ctx_.Audit(round, {.kind = kAuditReleasedTable,
                            .form = kAuditPlaintext,
                            .to = {ctx_.leader},
                            .numbers = {{"rows", records}},
                            .texts = {{"recipient", ctx_.self()}, {"file", path}}});
}

}  // namespace fedanon::party
