// Transparent huge pages for large arrays that are filled once: the first touch of fresh memory
// costs one page fault per 4 KiB page (about 8 µs each on the project's virtual machines, where
// a first memset runs at 0.5 GB/s against 20 GB/s for the second), one per 2 MiB with huge pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace fedanon::base {

// Below this many bytes nothing is asked: a huge page would be mostly empty.
inline constexpr size_t kHugePageAdviceBytes = size_t{4} << 20;

// Asks the kernel to back the whole 2 MiB pages inside [data, data + bytes) with transparent
// huge pages (madvise MADV_HUGEPAGE) before they are touched. A hint: nothing happens where
// transparent huge pages are off, and nothing is asked below kHugePageAdviceBytes.
void AdviseHugePages(void* data, size_t bytes);

// v.resize(n) of an empty vector, its memory advised first (AdviseHugePages) so that the
// zeroing resize touches it in huge pages.
template <typename T>
void ResizeWithHugePages(std::vector<T>& v, size_t n) {
  if (v.empty() && n * sizeof(T) >= kHugePageAdviceBytes) {
    v.reserve(n);
    AdviseHugePages(v.data(), n * sizeof(T));
  }
  v.resize(n);
}

// c.reserve(n) for a vector or a string about to be filled, its new room advised likewise
// (nothing is done when c has the room already).
template <typename Container>
void ReserveWithHugePages(Container& c, size_t n) {
  if (c.capacity() >= n) return;
  c.reserve(n);
  AdviseHugePages(c.data(), c.capacity() * sizeof(typename Container::value_type));
}

// From this many bytes up, HugePageAllocator gives an array a mapping of its own: one huge page.
inline constexpr size_t kHugePageArrayBytes = size_t{2} << 20;

// A mapping of its own for an array of `bytes` (>= kHugePageArrayBytes), 2 MiB-aligned and
// advised for transparent huge pages from its first byte: every whole 2 MiB page of the array,
// and its last, partial one when that is at least half full (the mapping then reaches the next
// boundary); a smaller remainder stays in 4 KiB pages. Null when the kernel refuses the mapping.
// Free it with UnmapHugePageArray(p, bytes).
void* MapHugePageArray(size_t bytes);
void UnmapHugePageArray(void* p, size_t bytes);

// From this many bytes up to kHugePageArrayBytes, HugePageAllocator gives an array a mapping of
// its own whose pages the kernel provides at once (MAP_POPULATE): a page fault per 4 KiB page
// costs about twice as much CPU on the project's virtual machines (14 arrays of 180 KiB, UCI
// Adult's columns: 7.4–9.7 ms faulted page by page, 3.6–5.4 ms populated).
inline constexpr size_t kPopulatedArrayBytes = size_t{64} << 10;
// A mapping of its own for an array of `bytes`, its pages provided before it returns; null when
// the kernel refuses it. Free it with UnmapPopulatedArray(p, bytes).
void* MapPopulatedArray(size_t bytes);
void UnmapPopulatedArray(void* p, size_t bytes);

// An allocator for large arrays that are filled once (a table's columns): from
// kHugePageArrayBytes up, each array gets a mapping of its own (MapHugePageArray), so that all of
// it can be backed by huge pages — a malloc'd array starts anywhere in a 2 MiB page, and what lies
// before the first boundary stays in 4 KiB pages (at 1M records, a 4 MB column's first 2 MiB or
// all of it); from kPopulatedArrayBytes up to that, a populated mapping of its own
// (MapPopulatedArray): its memory is touched at once, so an array reserved and not filled costs
// all of it. Smaller arrays come from std::allocator. Throws std::bad_alloc as std::allocator
// does.
template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;

  HugePageAllocator() = default;
  template <typename U>
  explicit HugePageAllocator(const HugePageAllocator<U>& /*other*/) noexcept {}

  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    const size_t bytes = n * sizeof(T);
    if (bytes < kPopulatedArrayBytes) return std::allocator<T>().allocate(n);
    void* p = bytes < kHugePageArrayBytes ? MapPopulatedArray(bytes) : MapHugePageArray(bytes);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kPopulatedArrayBytes) {
      std::allocator<T>().deallocate(p, n);
    } else if (bytes < kHugePageArrayBytes) {
      UnmapPopulatedArray(p, bytes);
    } else {
      UnmapHugePageArray(p, bytes);
    }
  }

  friend bool operator==(const HugePageAllocator& /*a*/, const HugePageAllocator& /*b*/) {
    return true;
  }
};

// A vector whose large buffers are huge-page mappings of their own (HugePageAllocator).
template <typename T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace fedanon::base
