#include "common/table/label_index.h"

#include <gtest/gtest.h>

#include <string>

namespace fedanon::table {
namespace {

TEST(LabelIndexTest, FindsWhatWasAddedAndNothingElse) {
  LabelIndex index;
  EXPECT_EQ(index.Find("x"), nullptr);
  // Every length from 0 to 40 (the hash reads 1-3, 4-7 and 8-byte pieces), and labels that
  // differ only in one byte in the middle.
  for (int i = 0; i <= 40; ++i) index.Add(std::string(static_cast<size_t>(i), 'a'), i);
  for (int i = 0; i < 200; ++i) index.Add("prefix-" + std::to_string(i) + "-suffix", 100 + i);
  index.Add("aaa", 999);  // already there: keeps its first value
  EXPECT_EQ(index.size(), 241u);
  for (int i = 0; i <= 40; ++i) {
    const int32_t* v = index.Find(std::string(static_cast<size_t>(i), 'a'));
    ASSERT_NE(v, nullptr) << i;
    EXPECT_EQ(*v, i);
  }
  for (int i = 0; i < 200; ++i) {
    const int32_t* v = index.Find("prefix-" + std::to_string(i) + "-suffix");
    ASSERT_NE(v, nullptr) << i;
    EXPECT_EQ(*v, 100 + i);
  }
  EXPECT_EQ(index.Find(std::string(41, 'a')), nullptr);
  EXPECT_EQ(index.Find("prefix-200-suffix"), nullptr);
  EXPECT_EQ(index.Find("b"), nullptr);
  EXPECT_EQ(index.Find(std::string("a\0", 2)), nullptr);
}

}  // namespace
}  // namespace fedanon::table
