// One horizontal job at the leader, from its first round to its report (mohammed2010 §5): the
// centralized engine on the public schema (global recoding: top-down specialization; local
// recoding: leader/local_job.h) fed by ring secure sums (leader/secure_sum_source.h), then the
// final check around the ring without the leader (leader/final_check_ring.h), then the release:
// one secure sum of the released counts when the leader is the recipient and every released value
// is declared, otherwise the secure set union of sealed rows. Global and local recoding differ
// only in their rounds; the check, the release and the report are shared.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/engine/hierarchy.h"
#include "common/engine/privacy_model.h"
#include "common/engine/tds_engine.h"
#include "common/table/dataset.h"
#include "crypto/sealed_box.h"
#include "leader/job_run.h"
#include "leader/local_job.h"
#include "leader/payload_relay.h"
#include "leader/rejoining_channel.h"
#include "leader/secure_sum_source.h"

namespace fedanon::leader {

class HorizontalDriver {
 public:
  // Runs `job` (its parties prepared, its view log open) over `schema`, the public schema of the
  // signed job; ends with the report stored and the parties told (EndJob).
  static absl::Status Run(const JobHost& host, const JobRun& job, const table::Dataset& schema);

 private:
  // What the rounds leave for the final check, the release and the report.
  struct Rounds {
    double start = 0;  // job.elapsed() when the rounds began
    double end = 0;    // and when they ended
    uint64_t total_records = 0;
    size_t groups = 0;  // the final groups
    // Group g's released value of every QID attribute.
    std::function<std::vector<std::string>(size_t)> labels_of;
    // The engine's part of the report (steps, stop reason, groups).
    std::function<void(fedanon::v1::Report*)> fill_report;
    // The final check's words and what they re-check, worded for the report.
    std::function<absl::StatusOr<std::pair<uint64_t, std::string>>()> final_check_layout;
    // The report's words when two parties skip the final check.
    std::string final_check_skipped;
    // Whether the released counts fit one secure sum (when the leader is the recipient), and
    // that sum: per final group, every value combination's count.
    std::function<bool()> counts_apply;
    std::function<absl::StatusOr<std::vector<uint64_t>>()> collect_counts;
    // Per final group (labels_of's order): [size, count of each tracked sensitive value] as the
    // rounds summed them, which the released counts must add up to; empty: not known.
    std::function<std::vector<std::vector<uint64_t>>()> group_totals;
    // The leader as the union's recipient: its check of the rows it opened (the released
    // attributes in `header` order) against the cut and the counts the parties summed
    // (common/engine/released_table_check.h), fed block by block as the table is written, then
    // its verdict.
    struct TableCheck {
      std::function<absl::Status(const std::vector<std::string>& rows)> add_rows;
      std::function<absl::Status()> finish;
    };
    std::function<absl::StatusOr<TableCheck>(const std::vector<std::string>& header)>
        start_table_check;
  };

  HorizontalDriver(const JobHost& host, const JobRun& job, const table::Dataset& schema,
                   engine::PrivacyModel model);
  // The secure sums' source: its journal (durable jobs), view log and sealing keys.
  absl::Status SetUpSums();
  engine::EngineOptions EngineOptions();
  // Each step taken: the round stamped on later messages, the progress recorded and logged.
  std::function<void(const fedanon::v1::SpecializationStep&, size_t)> OnStep();
  absl::StatusOr<Rounds> RunGlobalRounds();
  absl::StatusOr<Rounds> RunLocalRounds();
  // Every data party re-checks the signed privacy model on the summed counts (3+ parties); the
  // report's words.
  absl::StatusOr<std::string> RunFinalCheck(const Rounds& rounds);
  absl::Status Release(const Rounds& rounds);
  // The secure set union of the parties' sealed rows, opened by (or delivered to) the recipient.
  absl::Status RunSecureUnion(const Rounds& rounds);
  absl::Status StoreUnionAtLeader(const Rounds& rounds, const std::vector<std::string>& header,
                                  const PayloadRelay& relay,
                                  const fedanon::v1::UnionStepResult& last_hop);
  // The report and the final progress; then EndJob at every party.
  // `check_end`: the job's clock when the final check ended (the report's final_check and union
  // timings).
  absl::Status Finish(const Rounds& rounds, const std::string& final_check, double check_end);

  const JobHost& host_;
  const JobRun& job_;
  const table::Dataset& schema_;
  const fedanon::v1::JobSpec& spec_;
  const engine::PrivacyModel model_;
  std::vector<engine::AttributeHierarchy> hier_;  // the leader's copy of the public hierarchies
  uint32_t round_ = 0;                            // stamped on every message
  // A party whose connection drops is waited for and asked the same request again.
  RejoiningChannel channel_;
  size_t sum_chunk_words_;
  std::unique_ptr<crypto::SealKeyPair> leader_keys_;
  std::unique_ptr<crypto::SealPublicKey> first_party_key_;
  std::unique_ptr<crypto::SealPublicKey> last_party_key_;
  std::unique_ptr<SecureSumCountSource> sums_;
  std::unique_ptr<engine::TopDownSpecializer> global_;  // global recoding's engine
  std::optional<LocalRounds> local_;                    // local recoding's engine
};

}  // namespace fedanon::leader
