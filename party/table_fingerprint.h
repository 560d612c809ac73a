// A fingerprint of the table a party answers a job from: the SHA-256 of the table's bytes as the
// party read them (the text it keeps in memory — standard input, a FIFO, a PostgreSQL source
// read into memory — or the regular file, read again). Taken at Prepare and kept in the job's
// durable state, so that a party restarted during a job refuses to go on from a table that
// changed meanwhile (a refreshed or re-sorted file would make a repeated request's answer differ
// from the first, or attach released columns to other people), and checked again before a
// horizontal party re-reads its file for the released rows.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/table/dataset.h"

namespace fedanon::party {

// 64 lower-case hex digits. Errors name the file's problem (it stays in the party's log).
absl::StatusOr<std::string> TableFingerprint(const table::Dataset& data);

}  // namespace fedanon::party
