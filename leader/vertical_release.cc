#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/base/process_usage.h"
#include "common/base/status_macros.h"
#include "common/engine/tds_engine.h"
#include "common/spec/proto_json.h"
#include "common/wire/federation_wire.h"
#include "common/wire/id_digests.h"
#include "common/wire/payload_chunks.h"
#include "common/wire/release_digests.h"
#include "common/wire/released_union.h"
#include "crypto/certificates.h"
#include "crypto/hash.h"
#include "crypto/sealed_box.h"
#include "google/protobuf/util/message_differencer.h"
#include "leader/payload_relay.h"
#include "leader/vertical_session.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;
using fedanon::v1::VerticalStepResult;

// 3. Release: every party's columns sealed for the recipient, joined there; the report.
absl::Status VerticalSession::Release(uint32_t round, const std::string& stop_reason,
                                      VerticalJobResult* result) {
  const auto& ring = options_.ring;
  // The first party of the ring draws the secret release order and seals its seed for each
  // other data party; they release their columns in that order (the leader relays the seeds).
  const auto start = std::chrono::steady_clock::now();
  fedanon::v1::VerticalStep first;
  first.mutable_release()->set_recipient(options_.recipient);
  std::vector<VerticalStepResult> released;
  ASSIGN_OR_RETURN(released.emplace_back(), Call(ring[0], round, first));
  std::map<std::string, fedanon::v1::SealedPayload> seeds;
  for (const auto& seed : released[0].released().order_seeds()) seeds[seed.receiver()] = seed;
  const std::vector<std::string> rest(ring.begin() + 1, ring.end());
  for (const auto& p : rest) {
    if (!seeds.count(p)) {
      return absl::InternalError(
          absl::StrCat("party '", ring[0], "' sent no release-order seed for '", p, "'"));
    }
  }
  ASSIGN_OR_RETURN(auto others, CallAll(rest, round, [&](size_t i) {
                     fedanon::v1::VerticalStep step;
                     step.mutable_release()->set_recipient(options_.recipient);
                     *step.mutable_release()->mutable_order_seed() = seeds.at(rest[i]);
                     return step;
                   }));
  for (auto& r : others) released.push_back(std::move(r));
  for (size_t i = 0; i < ring.size(); ++i) {
    RETURN_IF_ERROR(FetchReportPages(ring[i], round, released[i].mutable_released()));
  }
  for (size_t i = 0; i < ring.size(); ++i) {
    RETURN_IF_ERROR(LogReport(round, ring[i], released[i].released().report()));
  }
  RETURN_IF_ERROR(CheckReleaseDigests(released));
  RETURN_IF_ERROR(FillReport(released, stop_reason, &result->report));
  const std::string groups_digest = released[0].released().groups_digest();
  const double sealed_s = Since(start);
  // Every party's columns, sealed for the recipient (whole, or fetched chunk by chunk): from
  // every party at once (a chunk of tens of megabytes takes about a second on loopback, most of
  // it the transport's latency rather than anyone's CPU).
  std::vector<CarriedPayload> columns(ring.size());
  RETURN_IF_ERROR(ForEachList(ring.size(), [&](size_t i) -> absl::Status {
    ASSIGN_OR_RETURN(
        columns[i], relay_.Fetch(ring[i], round, options_.timeout, released[i].released().columns(),
                                 released[i].released().columns_ref()));
    return absl::OkStatus();
  }));
  released.clear();
  const double fetched_s = Since(start) - sealed_s;
  if (options_.recipient == options_.leader_name) {
    // The joined table is the job's result; the view log records its size.
    ASSIGN_OR_RETURN(const uint64_t rows,
                     JoinAtLeader(columns, round, result->report, groups_digest, &result->csv));
    spdlog::info(
        "job={} round={} release at the leader: parties' columns sealed {:.2f} s, fetched {:.2f} "
        "s, opened, checked, joined and stored {:.2f} s",
        options_.job_id, round, sealed_s, fetched_s, Since(start) - sealed_s - fetched_s);
    ViewEntry e;
    e.round = round;
    e.kind = kViewReleasedRows;
    e.counts = {rows};
    return Log(e);
  }
  fedanon::v1::VerticalStep step;
  for (auto& c : columns) {
    RETURN_IF_ERROR(HandInto(c, round, options_.timeout, step.mutable_assemble()->mutable_columns(),
                             step.mutable_assemble()->mutable_column_refs()));
    c = CarriedPayload();
  }
  for (const auto& h : options_.header) step.mutable_assemble()->add_header(h);
  ASSIGN_OR_RETURN(VerticalStepResult assembled, Call(options_.recipient, round, step));
  ViewEntry e;
  e.round = round;
  e.kind = kViewReleasedRows;
  e.party = options_.recipient;
  e.counts = {assembled.assembled().rows_written()};
  return Log(e);
}

// The owner's sealed instructions by receiver (whole, or fetched chunk by chunk): each a data
// party other than the owner, named once (over `seen` too, which collects them). Returns the
// receivers and their payloads.
absl::StatusOr<std::pair<std::vector<std::string>, std::vector<CarriedPayload>>>
VerticalSession::ByReceiver(const fedanon::v1::VerticalInstructions& instructions, int owner,
                            uint32_t round, std::set<std::string>* seen) const {
  const auto& ring = options_.ring;
  // At most one instruction for each other party: checked before any is fetched, so that a
  // party's count never sizes the leader's work.
  const size_t declared =
      static_cast<size_t>(instructions.for_parties_size()) + instructions.refs_size();
  if (declared > ring.size() - 1) {
    return absl::InternalError(absl::StrCat(kInstructionsAboveParties, ": party '", ring[owner],
                                            "' sent ", declared, " instructions for at most ",
                                            ring.size() - 1, " other parties"));
  }
  std::vector<CarriedPayload> carried;
  for (const auto& payload : instructions.for_parties()) {
    ASSIGN_OR_RETURN(carried.emplace_back(),
                     relay_.Fetch(ring[owner], round, options_.timeout, payload, {}));
  }
  for (const auto& ref : instructions.refs()) {
    ASSIGN_OR_RETURN(carried.emplace_back(),
                     relay_.Fetch(ring[owner], round, options_.timeout, {}, ref));
  }
  std::pair<std::vector<std::string>, std::vector<CarriedPayload>> out;
  for (auto& payload : carried) {
    const std::string to = payload.receiver();
    if (std::find(ring.begin(), ring.end(), to) == ring.end() || to == ring[owner] ||
        !seen->insert(to).second) {
      return absl::InternalError(
          absl::StrCat("party '", ring[owner], "' sent an instruction for '", to, "'"));
    }
    out.first.push_back(to);
    out.second.push_back(std::move(payload));
  }
  return out;
}

absl::Status VerticalSession::CheckReleaseDigests(
    const std::vector<VerticalStepResult>& released) const {
  const auto& ring = options_.ring;
  struct Digest {
    const char* what;
    const std::string& (fedanon::v1::VerticalReleased::*get)() const;
  };
  const Digest digests[] = {
      {"final partition of the common records", &fedanon::v1::VerticalReleased::partition_digest},
      {"final groups", &fedanon::v1::VerticalReleased::groups_digest},
      {"release-order seed", &fedanon::v1::VerticalReleased::order_seed_digest},
  };
  for (const Digest& d : digests) {
    const std::string& first = (released[0].released().*d.get)();
    for (size_t i = 0; i < released.size(); ++i) {
      const std::string& got = (released[i].released().*d.get)();
      if (got.size() != 32) {
        return absl::DataLossError(absl::StrCat(kReleasesDisagree, ": party '", ring[i],
                                                "' reports no digest of its ", d.what,
                                                "; nothing was released"));
      }
      if (got != first) {
        return absl::DataLossError(absl::StrCat(kReleasesDisagree, ": party '", ring[i],
                                                "' reports another ", d.what, " than '", ring[0],
                                                "'; nothing was released"));
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// What every replica of a vertical job computes alike: the steps, the cut, the groups and the
// records. The steps' scores (a replica may not know another party's) and the confidences and
// distribution figures only a holder of sensitive values knows are left out.
fedanon::v1::Report AgreedPart(const fedanon::v1::Report& report) {
  fedanon::v1::Report agreed;
  *agreed.mutable_steps() = report.steps();
  for (auto& step : *agreed.mutable_steps()) {  // scores: the owner's (below)
    step.clear_score();
    step.clear_info_gain();
  }
  *agreed.mutable_cut() = report.cut();
  agreed.set_groups(report.groups());
  agreed.set_smallest_group(report.smallest_group());
  agreed.set_records_out(report.records_out());
  agreed.set_constraints_checked(report.constraints_checked());
  return agreed;
}

}  // namespace

// The report: every replica must report the same steps, cut and group sizes (rather than one
// party's report taken whole, chosen by a figure that party states);
// the replica of a party that holds sensitive values knows the confidences too, so the one with
// the largest is taken for them, and each step's score is its owner's. Then every party's
// participation with its contribution (mu): the scores of the applied specializations, summed
// per owner.
absl::Status VerticalSession::FillReport(const std::vector<VerticalStepResult>& released,
                                         const std::string& stop_reason,
                                         fedanon::v1::Report* report) {
  const auto& ring = options_.ring;
  const fedanon::v1::Report agreed = AgreedPart(released[0].released().report());
  for (size_t i = 1; i < released.size(); ++i) {
    std::string differences;
    google::protobuf::util::MessageDifferencer differ;
    differ.ReportDifferencesToString(&differences);
    if (!differ.Compare(agreed, AgreedPart(released[i].released().report()))) {
      if (differences.size() > 300) differences.resize(300);
      return absl::DataLossError(absl::StrCat(kReportsDisagree, ": party '", ring[i],
                                              "' reports other steps, cut or group sizes than '",
                                              ring[0], "' (", differences,
                                              "); nothing was released"));
    }
  }
  *report = released[0].released().report();
  for (const auto& r : released) {
    if (r.released().report().largest_confidence() > report->largest_confidence()) {
      *report = r.released().report();
    }
  }
  // Each step's score as its attribute's owner states it (the replica that computed it).
  for (int i = 0; i < report->steps_size(); ++i) {
    auto* step = report->mutable_steps(i);
    auto owner = options_.attribute_party.find(step->attribute());
    if (owner == options_.attribute_party.end()) continue;
    const auto at = std::find(ring.begin(), ring.end(), owner->second);
    if (at == ring.end()) continue;
    const auto& stated = released[at - ring.begin()].released().report().steps(i);
    step->set_score(stated.score());
    step->set_info_gain(stated.info_gain());
  }
  report->set_stop_reason(stop_reason);
  for (const auto& step : report->steps()) {
    auto it = options_.attribute_party.find(step.attribute());
    if (it == options_.attribute_party.end()) continue;
    auto& p = participation_[it->second];
    p.set_contribution(p.contribution() + step.score());
  }
  for (const auto& party : options_.ring) *report->add_participation() = participation_[party];
  return absl::OkStatus();
}

// The leader is the recipient: opens every party's columns (freeing each sealed copy once
// open, reading the columns in place) and joins them into options_.store_result, or into *csv
// without one. Returns the number of rows.
absl::StatusOr<uint64_t> VerticalSession::JoinAtLeader(std::vector<CarriedPayload>& columns,
                                                       uint32_t round,
                                                       const fedanon::v1::Report& agreed,
                                                       const std::string& groups_digest,
                                                       std::string* csv) const {
  const auto start = std::chrono::steady_clock::now();
  // Every party's columns opened and parsed at once, each on its thread with its own keys.
  std::vector<wire::VerticalColumnsView> parts(columns.size());
  RETURN_IF_ERROR(ForEachList(columns.size(), [&](size_t i) -> absl::Status {
    ASSIGN_OR_RETURN(auto keys, crypto::SealKeyPairFromPem(options_.leader_seal_key_pem));
    CarriedPayload& payload = columns[i];
    ASSIGN_OR_RETURN(std::unique_ptr<crypto::SealPublicKey> sender_key,
                     SenderKey(payload.sender()));
    ASSIGN_OR_RETURN(
        std::string bytes,
        OpenCarriedAtLeader(payload, *keys, *sender_key, options_.job_id, options_.run_id, round,
                            options_.leader_name, wire::ReleasePurpose(options_.leader_name)));
    payload = CarriedPayload();
    ASSIGN_OR_RETURN(parts[i], wire::VerticalColumnsView::Parse(std::move(bytes)));
    return absl::OkStatus();
  }));
  const double opened_s = Since(start);
  if (absl::Status st = wire::CheckJoinedRelease(parts, agreed.cut(), groups_digest); !st.ok()) {
    return absl::Status(st.code(), absl::StrCat("the joined vertical release is refused: ",
                                                st.message(), "; nothing was stored"));
  }
  const double checked_s = Since(start) - opened_s;
  uint64_t rows = 0;
  for (const auto& part : parts) {
    if (!part.names().empty()) rows = part.rows();
  }
  auto produce = [&](const wire::CsvSink& sink) {
    return wire::JoinReleasedColumnsTo(parts, options_.header, sink);
  };
  if (options_.store_result) {
    RETURN_IF_ERROR(options_.store_result(produce));
  } else {
    csv->clear();
    RETURN_IF_ERROR(produce([csv](std::string_view piece) {
      csv->append(piece);
      return absl::OkStatus();
    }));
  }
  spdlog::info(
      "job={} round={} joined {} rows at the leader: opened {:.2f} s, checked against the agreed "
      "cut {:.2f} s, joined and stored {:.2f} s",
      options_.job_id, round, rows, opened_s, checked_s, Since(start) - opened_s - checked_s);
  return rows;
}

}  // namespace fedanon::leader
