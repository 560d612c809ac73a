// This process's CPU time and memory (current and peak resident set), for the daemons' log lines
// at phase boundaries (ID matching, rounds, release): bench/vertical_daemons.sh reads them to
// show where each party and the leader peak.
#pragma once

namespace fedanon::base {

struct ProcessUsage {
  double cpu_seconds = 0;  // user + system, every thread (getrusage)
  double peak_rss_mb = 0;  // VmHWM
  double rss_mb = 0;       // VmRSS, now
};
ProcessUsage CurrentProcessUsage();

}  // namespace fedanon::base
