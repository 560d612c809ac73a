// libpq, loaded by the first PostgreSQL connection instead of by every fedanon process.
//
// libpq and what it brings (Kerberos, LDAP, SASL, GnuTLS and their own libraries: about twenty
// shared libraries) cost every process that links them about 3 ms of CPU time to map and relocate
// at start, a twentieth of a whole UCI Adult job (docs/performance.md), although only a job that
// reads or writes a PostgreSQL table uses them. So fedanon::table_postgres does not link libpq:
// libpq_loader.cc defines the libpq functions it calls, each forwarding to libpq's own, which
// LoadLibpq() opens (dlopen of libpq.so.5, once). Connection::Open calls it before any other
// libpq function, so that a machine without libpq gets an error for a PostgreSQL job and no
// other job needs it.
#pragma once

#include "absl/status/status.h"

namespace fedanon::table_postgres {

// Opens libpq.so.5 (once; later calls return the first outcome). FailedPrecondition naming the
// library and dlerror()'s message when it cannot be opened or lacks a function.
absl::Status LoadLibpq();

}  // namespace fedanon::table_postgres
