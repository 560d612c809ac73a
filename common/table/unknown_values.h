// How input checks list the values missing from a taxonomy or a declared domain: the most
// frequent first, with their record counts, at most 20 named. Shared by the CSV/row encoder
// (dataset.cc) and the PostgreSQL push-down checks (postgres_stats.cc) so both read alike.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace fedanon::table {

// "'x' (3 records), 'y' (1 record), and 4 more".
std::string FormatUnknownValues(const std::map<std::string, uint64_t>& unknown);

}  // namespace fedanon::table
