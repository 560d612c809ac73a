// Adapts leader::Leader onto the Admin service's AdminBackend (plain forwarding). Kept in its own
// file so that server/ code and tests that do not need a leader do not link one.
#pragma once

#include <memory>

#include "leader/leader.h"
#include "server/admin/admin_service.h"

namespace fedanon::leader_daemon {

// `leader` is not owned and must outlive the backend.
std::unique_ptr<admin::AdminBackend> NewLeaderAdminBackend(leader::Leader* leader);

}  // namespace fedanon::leader_daemon
