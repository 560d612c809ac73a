#include "crypto/secure_sum_masks.h"

#include "absl/strings/str_cat.h"
#include "crypto/secret_bytes.h"

namespace fedanon::crypto {
namespace {

absl::Status CheckSizes(absl::Span<uint64_t> acc, absl::Span<const uint64_t> v) {
  if (acc.size() != v.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("vector size mismatch: ", acc.size(), " vs ", v.size()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<uint64_t>> MaskVector(size_t n) { return RandomUint64Vector(n); }

absl::Status AddInPlace(absl::Span<uint64_t> acc, absl::Span<const uint64_t> v) {
  if (absl::Status st = CheckSizes(acc, v); !st.ok()) return st;
  // Unsigned overflow is defined (wraps mod 2^64).
  for (size_t i = 0; i < acc.size(); ++i) acc[i] += v[i];
  return absl::OkStatus();
}

absl::Status SubtractInPlace(absl::Span<uint64_t> acc, absl::Span<const uint64_t> v) {
  if (absl::Status st = CheckSizes(acc, v); !st.ok()) return st;
  for (size_t i = 0; i < acc.size(); ++i) acc[i] -= v[i];
  return absl::OkStatus();
}

}  // namespace fedanon::crypto
