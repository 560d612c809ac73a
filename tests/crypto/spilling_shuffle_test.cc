#include "crypto/spilling_shuffle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace fedanon::crypto {
namespace {

class SpillingShuffleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("spilling_shuffle_", ::testing::UnitTest::GetInstance()->random_seed(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Shuffles `records` with buckets of `bucket_bytes`; the emitted order.
  std::vector<std::string> Shuffled(const std::vector<std::string>& records, uint64_t bucket_bytes,
                                    size_t* buckets = nullptr) {
    uint64_t total = 0;
    for (const auto& r : records) total += r.size();
    auto s = SpillingShuffle::Create(dir_.string(), total, bucket_bytes);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return {};
    for (const auto& r : records) EXPECT_TRUE((*s)->Add(r).ok());
    if (buckets != nullptr) *buckets = (*s)->buckets();
    std::vector<std::string> out;
    EXPECT_TRUE((*s)->Finish([&](std::string_view r) {
                      out.emplace_back(r);
                      return absl::OkStatus();
                    })
                    .ok());
    return out;
  }

  std::filesystem::path dir_;
};

TEST_F(SpillingShuffleTest, EmitsEveryRecordOnceInMemoryAndAcrossBucketFiles) {
  std::vector<std::string> records;
  for (int i = 0; i < 5000; ++i)
    records.push_back(absl::StrCat("row ", i, std::string(i % 37, 'x')));
  records.emplace_back();  // an empty record survives too
  for (uint64_t bucket_bytes : {uint64_t{1} << 30, uint64_t{4096}, uint64_t{1}}) {
    SCOPED_TRACE(bucket_bytes);
    size_t buckets = 0;
    std::vector<std::string> out = Shuffled(records, bucket_bytes, &buckets);
    uint64_t total = 0;
    for (const auto& r : records) total += r.size();
    EXPECT_EQ(buckets, std::min<uint64_t>((total + bucket_bytes - 1) / bucket_bytes,
                                          SpillingShuffle::kMaxBuckets));
    EXPECT_GT(buckets, bucket_bytes < total ? 1u : 0u);
    EXPECT_NE(out, records) << "5001 records came out in their order";
    std::sort(out.begin(), out.end());
    std::vector<std::string> sorted = records;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(out, sorted);
  }
  // The bucket files were unlinked as soon as they were made.
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

TEST_F(SpillingShuffleTest, EveryOrderIsEquallyLikelyAcrossBuckets) {
  // Four one-byte records in two buckets: all 24 orders, each about 1/24 (chi-square over 23
  // degrees of freedom below 60: p < 0.0001 for a uniform shuffle to exceed it).
  const std::vector<std::string> records = {"a", "b", "c", "d"};
  constexpr int kTrials = 3000;
  std::map<std::string, int> seen;
  for (int t = 0; t < kTrials; ++t) {
    size_t buckets = 0;
    std::vector<std::string> out = Shuffled(records, /*bucket_bytes=*/2, &buckets);
    ASSERT_EQ(buckets, 2u);
    std::string order;
    for (const auto& r : out) order += r;
    ++seen[order];
  }
  ASSERT_EQ(seen.size(), 24u);
  const double expected = kTrials / 24.0;
  double chi2 = 0;
  for (const auto& [order, n] : seen) chi2 += (n - expected) * (n - expected) / expected;
  EXPECT_LT(chi2, 60.0);
}

TEST_F(SpillingShuffleTest, RefusingDuplicatesFindsEqualRecordsInAnyBucket) {
  for (uint64_t bucket_bytes : {uint64_t{1} << 30, uint64_t{64}}) {
    SCOPED_TRACE(bucket_bytes);
    const SpillingShuffle::Options options{.bucket_bytes = bucket_bytes, .refuse_duplicates = true};
    std::vector<std::string> records;
    for (int i = 0; i < 3000; ++i) records.push_back(absl::StrCat("sealed row ", i));
    // Distinct records: all out, in another order.
    auto distinct = SpillingShuffle::Create(dir_.string(), 40000, options);
    ASSERT_TRUE(distinct.ok()) << distinct.status();
    EXPECT_EQ((*distinct)->buckets(), bucket_bytes == 64 ? SpillingShuffle::kMaxBuckets : 1u);
    for (const auto& r : records) ASSERT_TRUE((*distinct)->Add(r).ok());
    std::vector<std::string> out;
    ASSERT_TRUE((*distinct)
                    ->Finish([&](std::string_view r) {
                      out.emplace_back(r);
                      return absl::OkStatus();
                    })
                    .ok());
    EXPECT_NE(out, records);
    std::sort(out.begin(), out.end());
    std::sort(records.begin(), records.end());
    EXPECT_EQ(out, records);
    // One record twice, far apart: refused.
    auto repeated = SpillingShuffle::Create(dir_.string(), 40000, options);
    ASSERT_TRUE(repeated.ok()) << repeated.status();
    for (const auto& r : records) ASSERT_TRUE((*repeated)->Add(r).ok());
    ASSERT_TRUE((*repeated)->Add(records[17]).ok());
    const absl::Status st = (*repeated)->Finish([](std::string_view) { return absl::OkStatus(); });
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  }
}

TEST_F(SpillingShuffleTest, NothingToShuffleAndFinishingTwice) {
  auto s = SpillingShuffle::Create(dir_.string(), 0);
  ASSERT_TRUE(s.ok()) << s.status();
  int emitted = 0;
  const auto count = [&](std::string_view) {
    ++emitted;
    return absl::OkStatus();
  };
  EXPECT_TRUE((*s)->Finish(count).ok());
  EXPECT_EQ(emitted, 0);
  EXPECT_EQ((*s)->Finish(count).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*s)->Add("late").code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(SpillingShuffleTest, AnEmitErrorStopsTheShuffle) {
  std::vector<std::string> records(100, "r");
  auto s = SpillingShuffle::Create(dir_.string(), 100, 10);
  ASSERT_TRUE(s.ok()) << s.status();
  for (const auto& r : records) ASSERT_TRUE((*s)->Add(r).ok());
  int emitted = 0;
  const absl::Status st = (*s)->Finish([&](std::string_view) {
    return ++emitted == 7 ? absl::CancelledError("stop") : absl::OkStatus();
  });
  EXPECT_EQ(st.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(emitted, 7);
}

TEST_F(SpillingShuffleTest, ABucketDirectoryThatCannotHoldFilesIsNamed) {
  auto s = SpillingShuffle::Create((dir_ / "missing").string(), 100, 10);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cannot create a shuffle bucket"), std::string::npos)
      << s.status();
}

}  // namespace
}  // namespace fedanon::crypto
