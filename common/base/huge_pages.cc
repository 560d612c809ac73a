#include "common/base/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace fedanon::base {
namespace {

constexpr size_t kPage = size_t{4} << 10;
constexpr size_t kHugePage = size_t{2} << 20;

size_t RoundUpToHugePages(size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }
size_t RoundUpToPages(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

// The bytes of a mapping for an array of `bytes`: whole 4 KiB pages, or whole huge pages when
// the last one would be at least half full.
size_t MappingBytes(size_t bytes) {
  return bytes % kHugePage >= kHugePage / 2 ? RoundUpToHugePages(bytes) : RoundUpToPages(bytes);
}

}  // namespace

void AdviseHugePages(void* data, size_t bytes) {
  if (data == nullptr || bytes < kHugePageAdviceBytes) return;
  char* const begin = static_cast<char*>(data);
  // From the first 2 MiB boundary in the range, whole huge pages only.
  const size_t head = (kHugePage - reinterpret_cast<uintptr_t>(begin) % kHugePage) % kHugePage;
  if (head >= bytes) return;
  const size_t length = (bytes - head) / kHugePage * kHugePage;
  if (length == 0) return;
  // A hint only: an error (no THP support, a range not of one mapping) changes nothing.
  (void)::madvise(begin + head, length, MADV_HUGEPAGE);
}

void* MapHugePageArray(size_t bytes) {
  if (bytes > SIZE_MAX - 2 * kHugePage) return nullptr;
  const size_t length = MappingBytes(bytes);
  // One huge page more than the array needs, so that a 2 MiB boundary lies within the first;
  // what comes before that boundary and after the array's pages is given back at once.
  void* const mapped = ::mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return nullptr;
  char* const begin = static_cast<char*>(mapped);
  const size_t head = (kHugePage - reinterpret_cast<uintptr_t>(begin) % kHugePage) % kHugePage;
  char* const aligned = begin + head;
  if (head > 0) (void)::munmap(begin, head);
  (void)::munmap(aligned + length, kHugePage - head);
  // A hint only, as in AdviseHugePages; a last huge page less than half full stays in 4 KiB pages.
  (void)::madvise(aligned, length / kHugePage * kHugePage, MADV_HUGEPAGE);
  return aligned;
}

void UnmapHugePageArray(void* p, size_t bytes) {
  if (p != nullptr) (void)::munmap(p, MappingBytes(bytes));
}

void* MapPopulatedArray(size_t bytes) {
  if (bytes == 0 || bytes > SIZE_MAX - kPage) return nullptr;
  void* const mapped = ::mmap(nullptr, RoundUpToPages(bytes), PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  return mapped == MAP_FAILED ? nullptr : mapped;
}

void UnmapPopulatedArray(void* p, size_t bytes) {
  if (p != nullptr) (void)::munmap(p, RoundUpToPages(bytes));
}

}  // namespace fedanon::base
