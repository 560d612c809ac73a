#include "common/base/process_usage.h"

#include <sys/resource.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace fedanon::base {

ProcessUsage CurrentProcessUsage() {
  ProcessUsage out;
  struct rusage ru {};
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    out.cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                      1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  }
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      out.peak_rss_mb = std::strtod(line.c_str() + 6, nullptr) / 1024.0;  // kB
    } else if (line.rfind("VmRSS:", 0) == 0) {
      out.rss_mb = std::strtod(line.c_str() + 6, nullptr) / 1024.0;
    }
  }
  return out;
}

}  // namespace fedanon::base
