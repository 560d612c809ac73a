// The job store's thin layer over SQLite's C API (leader/job_store.cc and its schema): result
// codes as absl::Status, prepared statements whose parameters are bound (never spliced), and
// write transactions that roll back unless committed. Internal to the leader library.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/base/status_macros.h"

namespace fedanon::leader {

// Maps an SQLite result code (with the connection's message) onto an absl::Status: busy or
// locked Unavailable, a constraint AlreadyExists, corruption DataLoss, no permission
// PermissionDenied, a full disk ResourceExhausted, anything else Internal.
absl::Status SqliteStatus(sqlite3* db, int rc, std::string_view context);

// A prepared statement (finalized on destruction). Parameters are bound, never spliced.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
    if (rc_ != SQLITE_OK) context_ = sql;
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& Bind(int i, const std::string& v) {
    return Check(
        sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  Stmt& BindBlob(int i, const std::string& v) {
    return Check(
        sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  Stmt& Bind(int i, int64_t v) { return Check(sqlite3_bind_int64(stmt_, i, v)); }
  Stmt& Bind(int i, double v) { return Check(sqlite3_bind_double(stmt_, i, v)); }

  // true: a row is available; false: done.
  absl::StatusOr<bool> Step() {
    if (rc_ != SQLITE_OK) return SqliteStatus(db_, rc_, context_);
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqliteStatus(db_, rc, sqlite3_sql(stmt_));
  }
  // Runs a statement that returns no rows.
  absl::Status Run() {
    ASSIGN_OR_RETURN(bool row, Step());
    (void)row;
    return absl::OkStatus();
  }

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p == nullptr ? std::string() : std::string(p, sqlite3_column_bytes(stmt_, col));
  }
  std::string Blob(int col) const {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, col));
    return p == nullptr ? std::string() : std::string(p, sqlite3_column_bytes(stmt_, col));
  }

 private:
  Stmt& Check(int rc) {
    if (rc_ == SQLITE_OK && rc != SQLITE_OK) {
      rc_ = rc;
      context_ = "bind";
    }
    return *this;
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
  std::string context_;
};

// Runs `sql` (one or more statements that return no rows).
absl::Status Exec(sqlite3* db, const char* sql);

// A write transaction (BEGIN IMMEDIATE: takes the write lock up front, so concurrent writers
// wait in the busy handler instead of failing on a read->write upgrade). Rolls back unless
// committed.
class WriteTxn {
 public:
  explicit WriteTxn(sqlite3* db) : db_(db) {}
  ~WriteTxn() {
    if (open_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  WriteTxn(const WriteTxn&) = delete;
  WriteTxn& operator=(const WriteTxn&) = delete;

  absl::Status Begin() {
    RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE"));
    open_ = true;
    return absl::OkStatus();
  }
  absl::Status Commit() {
    RETURN_IF_ERROR(Exec(db_, "COMMIT"));
    open_ = false;
    return absl::OkStatus();
  }

 private:
  sqlite3* db_;
  bool open_ = false;
};

}  // namespace fedanon::leader
