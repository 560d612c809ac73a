// ParallelFor: runs an absl::Status-returning function over an index range on all cores (at most
// eight threads) and returns the first error. Used where per-item work is independent and costly
// (sealing or opening rows, encrypting ids).
#pragma once

#include <cstddef>
#include <functional>

#include "absl/status/status.h"

namespace fedanon::base {

// Runs fn(i) for i in [0, n), each thread taking the next index from a shared counter; each
// thread stops at its first error; returns the first error.
absl::Status ParallelFor(size_t n, const std::function<absl::Status(size_t)>& fn);

}  // namespace fedanon::base
