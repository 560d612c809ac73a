// The digests that tie a vertical release to what the replicas agreed, and the recipient's check
// of the joined table against them (common/wire/release_digests.h; issue 49, finding 4).
#include "common/wire/release_digests.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/support/status_matchers.h"

namespace fedanon::wire {
namespace {

using ::fedanon::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

// One party's released columns: `names`, then the rows' cells record-major.
VerticalColumnsView Part(const std::vector<std::string>& names,
                         const std::vector<std::vector<std::string>>& rows) {
  fedanon::v1::VerticalColumns c;
  for (const auto& n : names) c.add_names(n);
  for (const auto& row : rows) {
    for (const auto& cell : row) c.add_cells(cell);
  }
  auto view = VerticalColumnsView::Parse(c.SerializeAsString());
  EXPECT_TRUE(view.ok()) << view.status();
  return *std::move(view);
}

google::protobuf::RepeatedPtrField<fedanon::v1::AttributeCut> Cut() {
  google::protobuf::RepeatedPtrField<fedanon::v1::AttributeCut> cut;
  auto* sex = cut.Add();
  sex->set_attribute("Sex");
  sex->add_values("ANY_Sex");
  auto* job = cut.Add();
  job->set_attribute("Job");
  job->add_values("Blue-collar");
  job->add_values("White-collar");
  return cut;
}

// The replicas' groups digest: (ANY_Sex, Blue-collar) x 3, (ANY_Sex, White-collar) x 2.
std::string AgreedGroups() {
  ReleaseGroupTally tally;
  std::string blue, white;
  AppendGroupLabel("ANY_Sex", &blue);
  AppendGroupLabel("Blue-collar", &blue);
  AppendGroupLabel("ANY_Sex", &white);
  AppendGroupLabel("White-collar", &white);
  tally.Add(blue, 3);
  tally.Add(white, 2);
  return tally.Digest();
}

std::vector<VerticalColumnsView> Parts(const std::vector<std::string>& jobs) {
  std::vector<std::vector<std::string>> a, b;
  for (size_t r = 0; r < jobs.size(); ++r) {
    a.push_back({"ANY_Sex", r % 2 ? "Y" : "N"});
    b.push_back({jobs[r]});
  }
  std::vector<VerticalColumnsView> parts;
  parts.push_back(Part({"Sex", "Class"}, a));
  parts.push_back(Part({"Job"}, b));
  return parts;
}

TEST(CheckJoinedRelease, TheAgreedGroupsInAnyRowOrderPass) {
  EXPECT_OK(CheckJoinedRelease(
      Parts({"Blue-collar", "White-collar", "Blue-collar", "White-collar", "Blue-collar"}), Cut(),
      AgreedGroups()));
  EXPECT_OK(CheckJoinedRelease(
      Parts({"White-collar", "White-collar", "Blue-collar", "Blue-collar", "Blue-collar"}), Cut(),
      AgreedGroups()));
}

TEST(CheckJoinedRelease, ACellOutsideTheCutIsNamedByAttributeAndRowNotByValue) {
  const absl::Status st = CheckJoinedRelease(
      Parts({"Blue-collar", "White-collar", "Janitor", "White-collar", "Blue-collar"}), Cut(),
      AgreedGroups());
  EXPECT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument,
                           "attribute 'Job' holds, in row 3, a value outside the cut"));
  EXPECT_THAT(std::string(st.message()), Not(HasSubstr("Janitor")));
}

TEST(CheckJoinedRelease, GroupsOtherThanTheAgreedOnesAreRefused) {
  // Every cell is in the cut, but one record moved to the other group.
  EXPECT_THAT(
      CheckJoinedRelease(
          Parts({"Blue-collar", "White-collar", "Blue-collar", "Blue-collar", "Blue-collar"}),
          Cut(), AgreedGroups()),
      StatusIs(absl::StatusCode::kDataLoss, "differ from the groups every replica agreed on"));
  // A record too few.
  EXPECT_THAT(
      CheckJoinedRelease(Parts({"Blue-collar", "White-collar", "Blue-collar", "White-collar"}),
                         Cut(), AgreedGroups()),
      StatusIs(absl::StatusCode::kDataLoss, ""));
}

TEST(CheckJoinedRelease, AQidColumnMissingOrTwiceIsRefused) {
  std::vector<VerticalColumnsView> parts;
  parts.push_back(Part({"Sex"}, {{"ANY_Sex"}}));
  EXPECT_THAT(
      CheckJoinedRelease(parts, Cut(), AgreedGroups()),
      StatusIs(absl::StatusCode::kInvalidArgument, "has no column for the QID attribute 'Job'"));
  parts.push_back(Part({"Job"}, {{"Blue-collar"}}));
  parts.push_back(Part({"Job"}, {{"Blue-collar"}}));
  EXPECT_THAT(CheckJoinedRelease(parts, Cut(), AgreedGroups()),
              StatusIs(absl::StatusCode::kInvalidArgument, "more than one column"));
}

// A cut whose value combinations do not fit 64 bits (five attributes of 8,192 values: 2^65) is
// checked by its rows' keys of labels instead of packed indices: the same verdicts either way.
TEST(CheckJoinedRelease, ACutOfMoreCombinationsThan64BitsIsCheckedAlike) {
  google::protobuf::RepeatedPtrField<fedanon::v1::AttributeCut> cut;
  std::vector<std::string> names;
  for (int a = 0; a < 5; ++a) {
    auto* attribute = cut.Add();
    attribute->set_attribute("A" + std::to_string(a));
    names.push_back(attribute->attribute());
    for (int v = 0; v < 8192; ++v) attribute->add_values("v" + std::to_string(v));
  }
  // Indices near the top of each attribute: packed, these rows would wrap around 2^64.
  const std::vector<std::vector<std::string>> rows = {{"v8191", "v8190", "v3", "v4", "v8191"},
                                                      {"v8191", "v8190", "v3", "v4", "v8191"},
                                                      {"v8000", "v0", "v0", "v0", "v0"}};
  ReleaseGroupTally tally;
  for (const auto& row : rows) {
    std::string key;
    for (const auto& cell : row) AppendGroupLabel(cell, &key);
    tally.Add(key);
  }
  std::vector<VerticalColumnsView> parts;
  parts.push_back(Part(names, rows));
  EXPECT_OK(CheckJoinedRelease(parts, cut, tally.Digest()));
  std::vector<VerticalColumnsView> moved;
  moved.push_back(Part(names, {rows[0], rows[2], rows[2]}));
  EXPECT_THAT(CheckJoinedRelease(moved, cut, tally.Digest()),
              StatusIs(absl::StatusCode::kDataLoss, "differ from the groups"));
  std::vector<VerticalColumnsView> outside;
  outside.push_back(Part(names, {rows[0], {"v1", "v2", "v3", "v4", "v8192"}, rows[2]}));
  EXPECT_THAT(CheckJoinedRelease(outside, cut, tally.Digest()),
              StatusIs(absl::StatusCode::kInvalidArgument, "attribute 'A4' holds, in row 2"));
}

// Groups are told apart by every attribute's value, whichever column it is in: rows that trade
// values between two attributes (so that each attribute keeps its counts) change the groups.
TEST(CheckJoinedRelease, GroupsAreTheCombinationsOfValuesNotEachAttributesCounts) {
  google::protobuf::RepeatedPtrField<fedanon::v1::AttributeCut> cut;
  for (const char* name : {"X", "Y"}) {
    auto* attribute = cut.Add();
    attribute->set_attribute(name);
    attribute->add_values("a");
    attribute->add_values("b");
  }
  ReleaseGroupTally tally;
  for (const auto& [x, y] :
       std::vector<std::pair<std::string, std::string>>{{"a", "a"}, {"b", "b"}}) {
    std::string key;
    AppendGroupLabel(x, &key);
    AppendGroupLabel(y, &key);
    tally.Add(key);
  }
  std::vector<VerticalColumnsView> same;
  same.push_back(Part({"X"}, {{"b"}, {"a"}}));
  same.push_back(Part({"Y"}, {{"b"}, {"a"}}));
  EXPECT_OK(CheckJoinedRelease(same, cut, tally.Digest()));
  std::vector<VerticalColumnsView> crossed;
  crossed.push_back(Part({"X"}, {{"a"}, {"b"}}));
  crossed.push_back(Part({"Y"}, {{"b"}, {"a"}}));
  EXPECT_THAT(CheckJoinedRelease(crossed, cut, tally.Digest()),
              StatusIs(absl::StatusCode::kDataLoss, "differ from the groups"));
}

// Two records that trade groups leave the groups' sizes, and so the groups digest, unchanged; the
// partition digest (records in the canonical order) tells them apart. This is what shows an
// owner that gave one party other members for the same children.
TEST(ReleaseDigests, ThePartitionDigestSeesRecordsThatTradeGroups) {
  std::string blue, white;
  AppendGroupLabel("Blue-collar", &blue);
  AppendGroupLabel("White-collar", &white);
  auto digests = [&](const std::vector<const std::string*>& group_of) {
    ReleasePartitionHasher partition;
    ReleaseGroupTally groups;
    for (const std::string* key : group_of) {
      partition.Add(*key);
      groups.Add(*key);
    }
    return std::make_pair(partition.Finish(), groups.Digest());
  };
  const auto honest = digests({&blue, &white, &blue});
  const auto traded = digests({&white, &blue, &blue});
  EXPECT_EQ(honest.first.size(), 32u);
  EXPECT_NE(honest.first, traded.first);
  EXPECT_EQ(honest.second, traded.second);
  // Labels are length-prefixed: ("ab", "c") and ("a", "bc") are different keys.
  std::string k1, k2;
  AppendGroupLabel("ab", &k1);
  AppendGroupLabel("c", &k1);
  AppendGroupLabel("a", &k2);
  AppendGroupLabel("bc", &k2);
  EXPECT_NE(k1, k2);
}

TEST(ReleaseDigests, TheOrderSeedDigestBindsTheSeedAndTheJob) {
  const std::string seed(32, 'x');
  std::string other = seed;
  other[0] = 'y';
  EXPECT_EQ(OrderSeedDigest("job-1", seed), OrderSeedDigest("job-1", seed));
  EXPECT_NE(OrderSeedDigest("job-1", seed), OrderSeedDigest("job-1", other));
  EXPECT_NE(OrderSeedDigest("job-1", seed), OrderSeedDigest("job-2", seed));
  EXPECT_EQ(OrderSeedDigest("job-1", seed).size(), 32u);
}

}  // namespace
}  // namespace fedanon::wire
