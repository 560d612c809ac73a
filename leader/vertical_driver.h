// One vertical job at the leader as the job service starts it: the options of the vertical
// protocol (leader/vertical_job.h) from the signed job and the leader's settings, progress and
// durability wired to the job store, and the report once the joined table is released.
#pragma once

#include "absl/status/status.h"
#include "leader/job_run.h"

namespace fedanon::leader {

// Runs `job` (its parties prepared, its view log open); ends with the report stored and the
// parties told (EndJob).
absl::Status RunVerticalDriver(const JobHost& host, const JobRun& job);

}  // namespace fedanon::leader
