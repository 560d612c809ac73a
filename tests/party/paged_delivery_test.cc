// PagedDelivery: the page-by-page receipt of a signed list relayed by the leader (a vertical
// local job's proposals and verdicts), each refusal a leader's deviation by name.
#include "party/paged_delivery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "crypto/hash.h"

namespace fedanon::party {
namespace {

using ::testing::HasSubstr;

const PagedDelivery::Names kNames{"verdict", "verdicts", "pages, size, digest or signature"};

// Two pages as a party cuts them: at least 1 KiB each but the last (wire::MostPagesFor).
constexpr uint64_t kTotal = 1026;
struct List {
  std::string page0 = std::string(1024, 'a');
  std::string page1 = "ef";
  std::string whole() const { return page0 + page1; }
  std::string digest() const { return crypto::Sha256(whole()); }
};

TEST(PagedDelivery, PagesInAnyOrderMakeTheWholeListOnceTheLastArrives) {
  const List l;
  PagedDelivery d;
  auto a = d.Add(kNames, "judge", 3, "head", 1, 2, kTotal, l.page1, l.digest());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, PagedDelivery::Added::kAdded);
  auto b = d.Add(kNames, "judge", 3, "head", 0, 2, kTotal, l.page0, l.digest());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, PagedDelivery::Added::kComplete);
  EXPECT_EQ(d.Whole(), l.whole());
  EXPECT_EQ(d.pages_received(), 2u);
  EXPECT_EQ(d.pages_declared(), 2u);
}

TEST(PagedDelivery, TheSamePageAgainIsARepeatAndOtherContentForItIsRefused) {
  const List l;
  PagedDelivery d;
  ASSERT_TRUE(d.Add(kNames, "judge", 3, "head", 0, 2, kTotal, l.page0, l.digest()).ok());
  auto again = d.Add(kNames, "judge", 3, "head", 0, 2, kTotal, l.page0, l.digest());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, PagedDelivery::Added::kRepeated);
  auto other = d.Add(kNames, "judge", 3, "head", 0, 2, kTotal, std::string(1024, 'z'), l.digest());
  EXPECT_TRUE(absl::IsPermissionDenied(other.status()));
  EXPECT_THAT(other.status().message(),
              HasSubstr("different content for page 0 of the verdicts of 'judge'"));
}

TEST(PagedDelivery, AChangedDescriptionBetweenPagesIsRefused) {
  const List l;
  PagedDelivery d;
  ASSERT_TRUE(d.Add(kNames, "judge", 3, "head", 0, 2, kTotal, l.page0, l.digest()).ok());
  auto st = d.Add(kNames, "judge", 3, "other head", 1, 2, kTotal, l.page1, l.digest());
  EXPECT_THAT(st.status().message(),
              HasSubstr("the description of the verdicts of 'judge' (pages, size, digest or "
                        "signature) changed between pages of wave 3"));
}

TEST(PagedDelivery, PagesOutOfRangeOrOverTheBoundAreRefused) {
  const List l;
  PagedDelivery d;
  EXPECT_THAT(
      d.Add(kNames, "judge", 3, "head", 2, 2, kTotal, l.page0, l.digest()).status().message(),
      HasSubstr("page 2 of 2 of the verdicts of 'judge' (1026 bytes) is out of range"));
  EXPECT_THAT(
      d.Add(kNames, "judge", 3, "head", 0, 0, kTotal, l.page0, l.digest()).status().message(),
      HasSubstr("out of range"));
  // More pages than a party cuts: a page holds at least 1 KiB but the last.
  EXPECT_THAT(
      d.Add(kNames, "judge", 3, "head", 0, 3, kTotal, l.page0, l.digest()).status().message(),
      HasSubstr("out of range"));
  EXPECT_THAT(d.Add(kNames, "judge", 3, "head", 0, 1, uint64_t{1} << 40, l.page0, l.digest())
                  .status()
                  .message(),
              HasSubstr("over the bound of"));
}

TEST(PagedDelivery, PagesOverOrUnderTheDeclaredSizeAreRefused) {
  const List l;
  PagedDelivery over;
  ASSERT_TRUE(over.Add(kNames, "judge", 3, "head", 0, 2, 1025, l.page0, l.digest()).ok());
  EXPECT_THAT(
      over.Add(kNames, "judge", 3, "head", 1, 2, 1025, l.page1, l.digest()).status().message(),
      HasSubstr("the verdict pages of 'judge' exceed their declared size of 1025 bytes"));
  PagedDelivery under;
  ASSERT_TRUE(under.Add(kNames, "judge", 3, "head", 0, 2, 1027, l.page0, l.digest()).ok());
  EXPECT_THAT(
      under.Add(kNames, "judge", 3, "head", 1, 2, 1027, l.page1, l.digest()).status().message(),
      HasSubstr("the verdict pages of 'judge' hold 1026 bytes, not the declared 1027"));
}

TEST(PagedDelivery, AWholeListThatDoesNotMatchItsDigestIsAnAlteredPage) {
  const List l;
  PagedDelivery d;
  ASSERT_TRUE(d.Add(kNames, "judge", 3, "head", 0, 2, kTotal, l.page0, l.digest()).ok());
  EXPECT_THAT(d.Add(kNames, "judge", 3, "head", 1, 2, kTotal, "xy", l.digest()).status().message(),
              HasSubstr("an altered verdict page: the verdicts of 'judge' as delivered by the "
                        "leader do not match their digest"));
}

}  // namespace
}  // namespace fedanon::party
