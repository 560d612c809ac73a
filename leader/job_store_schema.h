// The job store's SQLite schema and its migrations: version 1 created whole, each later version
// one step (docs/leader.md lists them), applied in one transaction when the store opens.
// Internal to the leader library.
#pragma once

#include <sqlite3.h>

#include <string>

#include "absl/status/status.h"

namespace fedanon::leader {

// Creates the schema or migrates it to kJobStoreSchemaVersion, step by step in one transaction (a
// failed step leaves the database as it was); refuses databases from a newer leader.
absl::Status MigrateJobStore(sqlite3* db, const std::string& path);

}  // namespace fedanon::leader
