// The released table as the leader writes it to the job store when it is the recipient: from the
// summed counts per (final group, value combination) of a horizontal job, one row per record in
// a random order (OpenSSL CSPRNG), or from rows that arrived whole (the secure union), in pieces
// of about 4 MiB so that no table is ever held whole as text.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/table/dataset.h"
#include "fedanon/v1/job.pb.h"
#include "leader/job_store.h"

namespace fedanon::leader {

// Hands `write` the bytes of a table in pieces of about 4 MiB: the header line, then `line(i)` for
// i = 0 .. n-1.
absl::Status WriteTableBuffered(const std::string& header_line, size_t n,
                                const std::function<std::string_view(size_t)>& line,
                                const JobStore::ResultWriter& write);

// Writes the released table rebuilt from the summed counts per (group, value combination), in a
// random order, with columns in spec order (the record id excluded). Each distinct row is
// formatted once and a record costs 12 bytes (its row's number and its place in the
// permutation). `groups` groups; `labels_of(g)` gives group g's released value of every QID
// attribute (global recoding: the cut's labels of its key; local recoding: its LocalValue
// labels). DataLoss, nothing written, when the counts do not add up to `total_records`, or
// (with `group_totals`: per group, [size, count of each tracked sensitive value] as the rounds
// summed them) when a group's counts do not add up to its own: a party moved records between
// groups or values.
absl::Status WriteReleasedTableFromCounts(
    const fedanon::v1::JobSpec& spec, const table::Dataset& schema, size_t groups,
    const std::function<std::vector<std::string>(size_t)>& labels_of,
    const std::vector<uint64_t>& counts, uint64_t total_records,
    const JobStore::ResultWriter& write,
    const std::vector<std::vector<uint64_t>>* group_totals = nullptr);

}  // namespace fedanon::leader
