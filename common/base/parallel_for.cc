#include "common/base/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "common/base/status_macros.h"

namespace fedanon::base {

absl::Status ParallelFor(size_t n, const std::function<absl::Status(size_t)>& fn) {
  const size_t threads =
      std::max<size_t>(1, std::min<size_t>(std::thread::hardware_concurrency(), 8));
  std::vector<absl::Status> status(threads);
  // Each thread takes the next index from a shared counter, so items of very different costs
  // stay balanced (a caller may order them largest first).
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t i = next.fetch_add(1); i < n && status[t].ok(); i = next.fetch_add(1)) {
        status[t] = fn(i);
      }
    });
  }
  for (auto& th : pool) th.join();
  for (const auto& st : status) RETURN_IF_ERROR(st);
  return absl::OkStatus();
}

}  // namespace fedanon::base
