#include "common/table_postgres/libpq_loader.h"

#include <dlfcn.h>
#include <libpq-fe.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

namespace fedanon::table_postgres {
namespace {

constexpr const char* kLibpq = "libpq.so.5";

struct Library {
  void* handle = nullptr;
  absl::Status status;
};

const Library& Libpq() {
  static const Library library = [] {
    Library l;
    l.handle = ::dlopen(kLibpq, RTLD_NOW | RTLD_LOCAL);
    if (l.handle == nullptr) {
      const char* error = ::dlerror();
      l.status = absl::FailedPreconditionError(absl::StrCat(
          "PostgreSQL needs libpq, which cannot be loaded: ", error != nullptr ? error : kLibpq));
    }
    return l;
  }();
  return library;
}

// libpq's own `name`, of the type of the declaration in libpq-fe.h. Reached only after LoadLibpq()
// succeeded (every call goes through a Connection); anything else is a bug, and aborts.
template <typename F>
F Real(const char* name) {
  const Library& l = Libpq();
  void* fn = l.handle != nullptr ? ::dlsym(l.handle, name) : nullptr;
  if (fn == nullptr) std::abort();
  return reinterpret_cast<F>(fn);
}

}  // namespace

absl::Status LoadLibpq() {
  const Library& l = Libpq();
  if (!l.status.ok()) return l.status;
  for (const char* name : {"PQconnectdb", "PQexecParams", "PQgetCopyData", "PQputCopyData"}) {
    if (::dlsym(l.handle, name) == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("PostgreSQL needs libpq, and ", kLibpq, " has no ", name));
    }
  }
  return absl::OkStatus();
}

}  // namespace fedanon::table_postgres

// The libpq functions fedanon calls, each forwarding to libpq's (resolved once).
#define FEDANON_LIBPQ(ret, name, params, args)                                        \
  extern "C" ret name params {                                                        \
    static const auto real = fedanon::table_postgres::Real<decltype(&::name)>(#name); \
    return real args;                                                                 \
  }

FEDANON_LIBPQ(void, PQclear, (PGresult * res), (res))
FEDANON_LIBPQ(PGconn*, PQconnectdb, (const char* conninfo), (conninfo))
FEDANON_LIBPQ(char*, PQdb, (const PGconn* conn), (conn))
FEDANON_LIBPQ(PGresult*, PQdescribePrepared, (PGconn * conn, const char* stmt), (conn, stmt))
FEDANON_LIBPQ(char*, PQerrorMessage, (const PGconn* conn), (conn))
FEDANON_LIBPQ(char*, PQescapeIdentifier, (PGconn * conn, const char* str, size_t len),
              (conn, str, len))
FEDANON_LIBPQ(char*, PQescapeLiteral, (PGconn * conn, const char* str, size_t len),
              (conn, str, len))
FEDANON_LIBPQ(PGresult*, PQexec, (PGconn * conn, const char* query), (conn, query))
FEDANON_LIBPQ(PGresult*, PQexecParams,
              (PGconn * conn, const char* command, int nParams, const Oid* paramTypes,
               const char* const* paramValues, const int* paramLengths, const int* paramFormats,
               int resultFormat),
              (conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats,
               resultFormat))
FEDANON_LIBPQ(void, PQfinish, (PGconn * conn), (conn))
FEDANON_LIBPQ(char*, PQfname, (const PGresult* res, int field_num), (res, field_num))
FEDANON_LIBPQ(void, PQfreemem, (void* ptr), (ptr))
FEDANON_LIBPQ(Oid, PQftype, (const PGresult* res, int field_num), (res, field_num))
FEDANON_LIBPQ(int, PQgetCopyData, (PGconn * conn, char** buffer, int async), (conn, buffer, async))
FEDANON_LIBPQ(PGresult*, PQgetResult, (PGconn * conn), (conn))
FEDANON_LIBPQ(int, PQgetisnull, (const PGresult* res, int tup_num, int field_num),
              (res, tup_num, field_num))
FEDANON_LIBPQ(int, PQgetlength, (const PGresult* res, int tup_num, int field_num),
              (res, tup_num, field_num))
FEDANON_LIBPQ(char*, PQgetvalue, (const PGresult* res, int tup_num, int field_num),
              (res, tup_num, field_num))
FEDANON_LIBPQ(char*, PQhost, (const PGconn* conn), (conn))
FEDANON_LIBPQ(int, PQnfields, (const PGresult* res), (res))
FEDANON_LIBPQ(int, PQntuples, (const PGresult* res), (res))
FEDANON_LIBPQ(char*, PQport, (const PGconn* conn), (conn))
FEDANON_LIBPQ(PGresult*, PQprepare,
              (PGconn * conn, const char* stmtName, const char* query, int nParams,
               const Oid* paramTypes),
              (conn, stmtName, query, nParams, paramTypes))
FEDANON_LIBPQ(int, PQputCopyData, (PGconn * conn, const char* buffer, int nbytes),
              (conn, buffer, nbytes))
FEDANON_LIBPQ(int, PQputCopyEnd, (PGconn * conn, const char* errormsg), (conn, errormsg))
FEDANON_LIBPQ(char*, PQresultErrorMessage, (const PGresult* res), (res))
FEDANON_LIBPQ(ExecStatusType, PQresultStatus, (const PGresult* res), (res))
FEDANON_LIBPQ(int, PQsetClientEncoding, (PGconn * conn, const char* encoding), (conn, encoding))
FEDANON_LIBPQ(PQnoticeProcessor, PQsetNoticeProcessor,
              (PGconn * conn, PQnoticeProcessor proc, void* arg), (conn, proc, arg))
FEDANON_LIBPQ(ConnStatusType, PQstatus, (const PGconn* conn), (conn))
FEDANON_LIBPQ(char*, PQuser, (const PGconn* conn), (conn))
