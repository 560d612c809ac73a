#include "common/base/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace fedanon::base {

void AdviseHugePages(void* data, size_t bytes) {
  if (data == nullptr || bytes < kHugePageAdviceBytes) return;
  constexpr size_t kHuge = size_t{2} << 20;
  char* const begin = static_cast<char*>(data);
  // From the first 2 MiB boundary in the range, whole huge pages only.
  const size_t head = (kHuge - reinterpret_cast<uintptr_t>(begin) % kHuge) % kHuge;
  if (head >= bytes) return;
  const size_t length = (bytes - head) / kHuge * kHuge;
  if (length == 0) return;
  // A hint only: an error (no THP support, a range not of one mapping) changes nothing.
  (void)::madvise(begin + head, length, MADV_HUGEPAGE);
}

}  // namespace fedanon::base
