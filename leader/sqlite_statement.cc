#include "leader/sqlite_statement.h"

#include "absl/strings/str_cat.h"

namespace fedanon::leader {

absl::Status SqliteStatus(sqlite3* db, int rc, std::string_view context) {
  const std::string msg = absl::StrCat("job store: ", std::string(context), ": ",
                                       db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc),
                                       " (sqlite code ", rc, ")");
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(msg);
    case SQLITE_CONSTRAINT:
      return absl::AlreadyExistsError(msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(msg);
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
      return absl::PermissionDeniedError(msg);
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::Status Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) return SqliteStatus(db, rc, sql);
  return absl::OkStatus();
}

}  // namespace fedanon::leader
