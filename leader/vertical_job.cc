#include "leader/vertical_job.h"

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
#include "common/wire/released_union.h"
#include "crypto/certificates.h"
#include "crypto/hash.h"
#include "crypto/sealed_box.h"
#include "leader/payload_relay.h"
#include "leader/vertical_session.h"
#include "spdlog/spdlog.h"

namespace fedanon::leader {
namespace {

using fedanon::v1::LeaderMessage;
using fedanon::v1::PartyMessage;

// The calls of one vertical job, recorded and (after a leader restart) replayed: each call is
// the n-th to its party (the driver calls a party in a fixed order; calls to different parties
// may interleave), keyed by "party#n" with the digest of its request.
class RecordingChannel : public wire::PartyChannel {
 public:
  RecordingChannel(wire::PartyChannel* inner, const VerticalJobOptions& options)
      : inner_(inner), options_(options), next_index_(options.recorded.size()) {
    for (const RecordedCall& call : options.recorded) recorded_.emplace(SplitKey(call.digest));
    for (size_t i = 0; i < options.recorded.size(); ++i) {
      replies_[SplitKey(options.recorded[i].digest).first] = i;
    }
  }

  absl::StatusOr<PartyMessage> Call(const std::string& party, const LeaderMessage& request,
                                    absl::Duration timeout) override {
    uint64_t n = 0;
    {
      absl::MutexLock lock(&mu_);
      n = calls_[party]++;
    }
    const std::string key = absl::StrCat(party, "#", n);
    LeaderMessage bare = request;
    bare.clear_request_id();
    const std::string digest = wire::RequestDigest(request.round(), bare);
    if (auto it = recorded_.find(key); it != recorded_.end()) {
      if (it->second != digest) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the replayed call ", n, " to party '", party, "' (round ", request.round(),
            ") differs from the request recorded before the leader restarted"));
      }
      PartyMessage reply;
      if (!reply.ParseFromString(options_.recorded[replies_.at(key)].reply)) {
        return absl::DataLossError(absl::StrCat("the recorded reply of call ", n, " to party '",
                                                party, "' does not parse"));
      }
      absl::MutexLock lock(&mu_);
      ++replayed_;
      return reply;
    }
    ASSIGN_OR_RETURN(PartyMessage reply, inner_->Call(party, request, timeout));
    if (options_.record_reply && !reply.has_error()) {
      absl::MutexLock lock(&mu_);  // records numbered in the order they are written
      RETURN_IF_ERROR(options_.record_reply(next_index_, absl::StrCat(key, "\n", digest),
                                            reply.SerializeAsString()));
      ++next_index_;
    }
    return reply;
  }
  std::vector<wire::ConnectedParty> Parties() const override { return inner_->Parties(); }

  // True while recorded replies remain to be replayed.
  uint64_t replayed() const {
    absl::MutexLock lock(&mu_);
    return replayed_;
  }

 private:
  static std::pair<std::string, std::string> SplitKey(const std::string& key) {
    const size_t nl = key.find('\n');
    if (nl == std::string::npos) return {key, ""};
    return {key.substr(0, nl), key.substr(nl + 1)};
  }

  wire::PartyChannel* inner_;
  const VerticalJobOptions& options_;
  std::map<std::string, std::string> recorded_;  // "party#n" -> request digest
  std::map<std::string, size_t> replies_;        // "party#n" -> index in options_.recorded
  mutable absl::Mutex mu_;
  std::map<std::string, uint64_t> calls_ ABSL_GUARDED_BY(mu_);
  uint64_t next_index_ ABSL_GUARDED_BY(mu_);
  uint64_t replayed_ ABSL_GUARDED_BY(mu_) = 0;
};

// The leader's memory at a phase boundary (bench/vertical_daemons.sh prints these lines).
void LogUsage(const std::string& job_id, std::string_view phase) {
  const base::ProcessUsage usage = base::CurrentProcessUsage();
  spdlog::info("job={} leader memory at {}: RSS {:.0f} MB, peak RSS {:.0f} MB", job_id, phase,
               usage.rss_mb, usage.peak_rss_mb);
}

}  // namespace

absl::StatusOr<VerticalJobResult> RunVerticalJob(wire::PartyChannel* channel,
                                                 const VerticalJobOptions& options) {
  RecordingChannel recording(channel, options);
  VerticalSession driver(&recording, options);
  if (options.ring.size() < 2) {
    return absl::InvalidArgumentError("a vertical job needs at least 2 data parties");
  }
  VerticalJobResult result;

  auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(result.common_records, driver.MatchIds());
  result.id_matching_seconds = VerticalSession::Since(start);
  if (options.observer != nullptr) {
    options.observer->PhaseDone(Phase::kIdMatching, absl::Seconds(result.id_matching_seconds));
    options.observer->IdsMatched(result.common_records, absl::Seconds(result.id_matching_seconds));
  }
  spdlog::info("job={} round=0 ID matching done: {} common records ({:.2f} s)", options.job_id,
               result.common_records, result.id_matching_seconds);
  LogUsage(options.job_id, "ID matching done");

  start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(const std::string stop_reason, driver.RunRounds(&result));
  result.rounds_seconds = VerticalSession::Since(start);
  LogUsage(options.job_id, "rounds done");

  start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(driver.Release(result.rounds + 1, stop_reason, &result));
  result.release_seconds = VerticalSession::Since(start);
  LogUsage(options.job_id, "release done");
  result.replayed_calls = recording.replayed();
  return result;
}

}  // namespace fedanon::leader
