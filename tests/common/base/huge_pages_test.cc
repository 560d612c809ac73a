// base::ResizeWithHugePages / ReserveWithHugePages: the vector (or string) is what resize / reserve
// make (zeros, the size asked), and where the kernel offers transparent huge pages on request
// ("madvise" or "always"), a large array advised before it is touched is backed by them.
// base::HugePageVector: holds what a vector holds; a large one is a 2 MiB-aligned mapping of its
// own, as long as the array (its last huge page when half full), given back when freed; a
// mid-size one a mapping of its own whose pages are there before they are written.
#include "common/base/huge_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace fedanon::base {
namespace {

// The kernel's THP mode ("always", "madvise" or "never"), "" when unknown.
std::string ThpMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos) return "";
  return line.substr(open + 1, close - open - 1);
}

// The mapping of /proc/self/smaps that holds an address: its range and AnonHugePages (KiB).
struct Mapping {
  uintptr_t lo = 0, hi = 0;
  int64_t anon_huge_kib = -1;  // -1: no such mapping, or no AnonHugePages line
};

Mapping MappingAt(const void* p) {
  std::ifstream in("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  Mapping found;
  bool inside = false;
  while (std::getline(in, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
      if (inside) found = {lo, hi, -1};
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      found.anon_huge_kib = std::stoll(line.substr(std::string("AnonHugePages:").size()));
      return found;
    }
  }
  return found;
}

int64_t AnonHugeKibAt(const void* p) { return MappingAt(p).anon_huge_kib; }

// Whether the page holding `p` is mapped at all (mincore fails with ENOMEM where it is not).
bool Mapped(const void* p) {
  const uintptr_t page = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{4095};
  unsigned char resident = 0;
  return ::mincore(reinterpret_cast<void*>(page), 4096, &resident) == 0;
}

constexpr size_t kMiB = size_t{1} << 20;

TEST(HugePages, ResizeAndReserveMakeWhatResizeAndReserveMake) {
  for (size_t n : {size_t{0}, size_t{10}, size_t{1} << 20, (size_t{3} << 20) + 17}) {
    std::vector<uint32_t> v;
    ResizeWithHugePages(v, n);
    ASSERT_EQ(v.size(), n);
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](uint32_t x) { return x == 0; }));
    std::vector<uint32_t> w;
    ReserveWithHugePages(w, n);
    EXPECT_TRUE(w.empty());
    EXPECT_GE(w.capacity(), n);
  }
  // A vector that already holds values is resized as resize does (nothing advised).
  std::vector<int32_t> held = {7, 8, 9};
  ResizeWithHugePages(held, 5);
  EXPECT_EQ(held, (std::vector<int32_t>{7, 8, 9, 0, 0}));
  // A string keeps what it holds and only grows (a release block's room, kept between blocks).
  std::string text = "rows so far";
  ReserveWithHugePages(text, size_t{6} << 20);
  EXPECT_EQ(text, "rows so far");
  EXPECT_GE(text.capacity(), size_t{6} << 20);
  const size_t room = text.capacity();
  ReserveWithHugePages(text, 100);
  EXPECT_EQ(text.capacity(), room);
  // Any range, aligned or not, small or null, is only a hint.
  char small[64];
  AdviseHugePages(small, sizeof(small));
  AdviseHugePages(nullptr, size_t{64} << 20);
}

TEST(HugePages, ALargeAdvisedArrayIsBackedByHugePagesWhereTheKernelOffersThem) {
  const std::string mode = ThpMode();
  if (mode != "madvise" && mode != "always") {
    GTEST_SKIP() << "transparent huge pages are '" << mode << "' here";
  }
  std::vector<uint64_t> v;
  ResizeWithHugePages(v, size_t{64} << 20 >> 3);  // 64 MiB of zeros, touched by the resize
  const int64_t kib = AnonHugeKibAt(v.data() + v.size() / 2);
  ASSERT_GE(kib, 0) << "no AnonHugePages line for the array's mapping";
  // The kernel may fall short of huge pages (fragmented memory), but not of every one.
  EXPECT_GT(kib, 0);
}

TEST(HugePageVector, HoldsWhatAVectorHoldsOnEitherSideOfTheThreshold) {
  // Element counts around kHugePageArrayBytes (2 MiB of int32: 524,288) and a large one.
  const size_t at = kHugePageArrayBytes / sizeof(int32_t);
  for (size_t n : {size_t{0}, size_t{1}, at - 1, at, at + 1, 5 * at / 4, size_t{1000001}}) {
    HugePageVector<int32_t> v(n);
    ASSERT_EQ(v.size(), n);
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](int32_t x) { return x == 0; })) << n;
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>(i * 7);
    const HugePageVector<int32_t> copy = v;
    ASSERT_EQ(copy.size(), n);
    for (size_t i = 0; i < n; i += 997) ASSERT_EQ(copy[i], static_cast<int32_t>(i * 7)) << n;
  }
  // Growing one element at a time crosses from the small arrays' allocator to mappings of their
  // own and keeps every value on the way.
  HugePageVector<uint16_t> grown;
  for (size_t i = 0; i < 3 * kHugePageArrayBytes / sizeof(uint16_t); ++i) {
    grown.push_back(static_cast<uint16_t>(i % 65521));
  }
  for (size_t i = 0; i < grown.size(); ++i) {
    ASSERT_EQ(grown[i], static_cast<uint16_t>(i % 65521)) << i;
  }
}

TEST(HugePageVector, ALargeArrayIsAMappingOfItsOwnFreedWithIt) {
  // 4,000,004 bytes (a column of 1,000,001 records): its last huge page is more than half full,
  // so the mapping is two whole huge pages, starting where the array starts.
  auto column = std::make_unique<HugePageVector<int32_t>>(1000001);
  const void* data = column->data();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % (2 * kMiB), 0U);
  const Mapping whole = MappingAt(data);
  EXPECT_EQ(whole.lo, reinterpret_cast<uintptr_t>(data));
  EXPECT_EQ(whole.hi - whole.lo, 4 * kMiB);
  // 2 MiB and 100 KiB: one huge page advised (a mapping of its own flags, exactly that long),
  // the remainder in 4 KiB pages after it; freed, none of it is mapped.
  auto short_tail = std::make_unique<HugePageVector<char>>(2 * kMiB + 100 * 1024);
  const char* tail_data = short_tail->data();
  const Mapping advised = MappingAt(tail_data);
  EXPECT_EQ(advised.lo, reinterpret_cast<uintptr_t>(tail_data));
  EXPECT_EQ(advised.hi - advised.lo, 2 * kMiB);
  EXPECT_TRUE(Mapped(tail_data + 2 * kMiB + 100 * 1024 - 1));
  short_tail.reset();
  EXPECT_FALSE(Mapped(tail_data));
  EXPECT_FALSE(Mapped(tail_data + 2 * kMiB + 100 * 1024 - 1));
  // Freeing the vector gives the mapping back.
  ASSERT_TRUE(Mapped(data));
  column.reset();
  EXPECT_FALSE(Mapped(data));
}

// Whether every 4 KiB page of [p, p + bytes) is resident (mincore), false where any is not mapped.
bool Resident(const void* p, size_t bytes) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = at / 4096 * 4096;
  const size_t pages = (at + bytes - first + 4095) / 4096;
  std::vector<unsigned char> in_core(pages);
  if (::mincore(reinterpret_cast<void*>(first), pages * 4096, in_core.data()) != 0) return false;
  return std::all_of(in_core.begin(), in_core.end(), [](unsigned char c) { return (c & 1) != 0; });
}

TEST(HugePageVector, AMidSizeArrayIsProvidedAtOnceAndFreedWithIt) {
  // Reserved, never touched: from kPopulatedArrayBytes (64 KiB) up to the huge pages, a mapping
  // of its own whose pages are all there before the first write (an array that malloc maps has
  // none but its first until written); freed, none of it is mapped.
  for (size_t bytes : {kPopulatedArrayBytes, 180 * size_t{1024} + 4, kHugePageArrayBytes - 4}) {
    auto reserved = std::make_unique<HugePageVector<int32_t>>();
    reserved->reserve(bytes / sizeof(int32_t));
    const int32_t* data = reserved->data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % 4096, 0U) << bytes;
    EXPECT_TRUE(Resident(data, bytes)) << bytes;
    reserved->resize(bytes / sizeof(int32_t), 7);
    EXPECT_EQ((*reserved)[bytes / sizeof(int32_t) - 1], 7) << bytes;
    reserved.reset();
    EXPECT_FALSE(Mapped(data)) << bytes;
  }
}

TEST(HugePageVector, IsBackedByHugePagesFromItsFirstByteWhereTheKernelOffersThem) {
  const std::string mode = ThpMode();
  if (mode != "madvise" && mode != "always") {
    GTEST_SKIP() << "transparent huge pages are '" << mode << "' here";
  }
  // Zeroed by the resize, so touched: both huge pages of the 1,000,001-record column. A malloc'd
  // array of that size starts inside a huge page and had none (it was below the advice's 4 MiB).
  HugePageVector<int32_t> column(1000001);
  const int64_t kib = AnonHugeKibAt(column.data());
  ASSERT_GE(kib, 0) << "no AnonHugePages line for the array's mapping";
  // Both, as the kernel gives them on request (defrag "madvise" compacts for them); more than one
  // at least, which malloc's mapping for such an array cannot have: it is under 4 MiB and does
  // not start at a 2 MiB boundary, so one whole huge page at most fits in it.
  EXPECT_GT(kib, 2048);
  EXPECT_LE(kib, 4096);
}

}  // namespace
}  // namespace fedanon::base
