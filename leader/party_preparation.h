// The start of every federated job at the leader: the PrepareJob each data party receives (the
// signed spec, the participants with their sealing certificates, the ring, the recipient, the
// message limit) and the parallel round of Prepare calls whose answers must carry the digest of
// the submitted job (the same schema and taxonomies at every party).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fedanon/v1/federation.pb.h"
#include "leader/job_run.h"

namespace fedanon::leader {

// The PrepareJob every party of the ring receives (Unavailable when a party of the ring is not
// connected); each party's data path is added per call.
absl::StatusOr<fedanon::v1::PrepareJob> MakePrepare(const JobHost& host, const JobRun& job);

// Sends PrepareJob to every party at once and checks that each loaded the submitted job (its
// digest equals `expected_digest`); the first failure in ring order is the job's.
absl::Status PrepareParties(const JobHost& host, const JobRun& job,
                            const std::string& expected_digest);

}  // namespace fedanon::leader
