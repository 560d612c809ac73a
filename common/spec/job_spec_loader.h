// Loads and validates a job spec (YAML) into the fedanon.v1.JobSpec message.
//
// YAML keys map one-to-one onto proto field names; enum values onto the lower-case suffix of the
// enum value names (`role: qid` -> ROLE_QID, `score: infogain_privloss` ->
// SCORE_FUNCTION_INFOGAIN_PRIVLOSS). Unknown keys, wrong types and unknown enum values are errors
// with the spec's path, line and column. Defaults are filled in (score infogain, missing drop,
// missing_token "?", suppression_token "*", type categorical).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "fedanon/v1/job.pb.h"

namespace fedanon::spec {

// Parses YAML text. `source_name` appears in error messages.
absl::StatusOr<fedanon::v1::JobSpec> ParseJobSpecYaml(std::string_view yaml,
                                                      std::string_view source_name);
// Reads and parses a spec file; relative taxonomy paths (and the `values` files of the hierarchy
// section) are resolved against the file's directory (the returned spec holds the resolved
// paths).
absl::StatusOr<fedanon::v1::JobSpec> LoadJobSpec(const std::string& path);

// Checks the spec on its own (no data): attribute names unique and non-empty; exactly one class
// attribute for infogain / gainratio / infogain_privloss scores; at least one QID; LKC: L >= 1,
// L <= |QID|, K >= 1, 0 < C <= 1, sensitive values given only with a sensitive attribute;
// templates: every template names known QID attributes, k >= 1, confidence max in (0, 1];
// continuous range has two values with range[0] < range[1]; the risk section has at most one
// population input and a threshold in [0, 1]; each hierarchy definition names a QID with a
// taxonomy path, once, with one kind. Errors name the offending field.
absl::Status ValidateJobSpec(const fedanon::v1::JobSpec& spec);

// `recoding: local` runs centralized (`fedanon anonymize`), in horizontal federated jobs, and in
// vertical federated jobs; with a confidence bound the holders of the bounded sensitive values
// judge every wave's winning splits per group (docs/vertical.md "Local recoding"). One vertical
// combination is refused, at the leader's submission check and at every party's Prepare: score
// infogain_privloss without an anonymity threshold (k > 1) and a confidence bound, unless one
// party holds every QID attribute and every bounded sensitive attribute — PrivLoss is then the
// rise of the confidence, which a proposer cannot compute without the sensitive values.
inline constexpr char kLocalPrivLossNeedsSensitive[] =
    "recoding: local in a vertical job cannot score infogain_privloss without an anonymity "
    "threshold when a confidence bound's sensitive values are at another party than a QID "
    "attribute (PrivLoss is the rise of the confidence, which needs the sensitive values): use "
    "another score (infogain, gainratio, discernibility), or add an anonymity threshold (k > 1)";
// The judges of a vertical `recoding: local` job: the parties holding a sensitive attribute some
// confidence bound (< 1) covers, sorted by name; empty when no bound (no verdicts are needed).
std::vector<std::string> VerticalLocalJudges(const fedanon::v1::JobSpec& spec);
// A party whose table is pushed down to PostgreSQL (party.yaml `mode: push-down`) refuses it:
// local recoding runs on the compact in-memory form only.
inline constexpr char kLocalRecodingNotPushdown[] =
    "recoding: local is not supported on a push-down table (it runs on the records in memory; "
    "push-down covers global recoding only)";
absl::Status CheckFederatedRecoding(const fedanon::v1::JobSpec& spec);

// Federated jobs: the most records any one party holds — `max_records_per_party`, or this default
// when the spec leaves it out (0). A party refuses the job at Prepare when its own table or ID
// list is larger; the leader refuses a party's word implying more (a summed root count above
// parties × this, more ID batches than this many ids need). Part of the signed job.
inline constexpr uint64_t kDefaultMaxRecordsPerParty = 100'000'000;
uint64_t MaxRecordsPerParty(const fedanon::v1::JobSpec& spec);

// Writes the spec back as YAML (for generated specs and round-trip tests).
std::string JobSpecToYaml(const fedanon::v1::JobSpec& spec);

}  // namespace fedanon::spec
