// The checks of a submitted job that need no party: its spec (common/spec), the round timeout,
// the admin's authorization being present, the parties (named once each, valid names, how many
// the partitioning needs: mohammed2010 §5.5's rule for a data-holding leader), the vertical
// attributes' owners and the recipient. The parties check the signed job again at Prepare.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "fedanon/v1/federation.pb.h"

namespace fedanon::leader {

// A round that takes longer than a day is a mistake or an attack on the leader's resources.
inline constexpr uint32_t kMaxRoundTimeoutSeconds = 86'400;

// InvalidArgument naming what is wrong; OK when the job may be sent to its parties.
absl::Status CheckJobRequest(const fedanon::v1::SubmitJobRequest& request);

}  // namespace fedanon::leader
