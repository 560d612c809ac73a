// base::ResizeWithHugePages / ReserveWithHugePages: the vector (or string) is what resize / reserve
// make (zeros, the size asked), and where the kernel offers transparent huge pages on request
// ("madvise" or "always"), a large array advised before it is touched is backed by them.
#include "common/base/huge_pages.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
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

// AnonHugePages (KiB) of the mapping of /proc/self/smaps that holds `p`.
int64_t AnonHugeKibAt(const void* p) {
  std::ifstream in("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::stoll(line.substr(std::string("AnonHugePages:").size()));
    }
  }
  return -1;
}

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

}  // namespace
}  // namespace fedanon::base
