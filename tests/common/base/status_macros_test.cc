#include "common/base/status_macros.h"

#include <gtest/gtest.h>

#include "common/base/version.h"
#include "tests/support/status_matchers.h"

namespace fedanon::base {
namespace {

using ::fedanon::testing::StatusIs;

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

absl::Status CheckEven(int x) {
  RETURN_IF_ERROR(Half(x).status());
  return absl::OkStatus();
}

TEST(StatusMacrosTest, AssignOrReturnPropagatesErrorsAndValues) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_THAT(Quarter(6), StatusIs(absl::StatusCode::kInvalidArgument, "odd"));
  EXPECT_THAT(CheckEven(3), StatusIs(absl::StatusCode::kInvalidArgument, "odd"));
  EXPECT_TRUE(CheckEven(4).ok());
}

TEST(VersionTest, VersionLineNamesProgramVersionAndRevision) {
  const std::string line = VersionLine("fedanon");
  EXPECT_EQ(line.rfind("fedanon 0.", 0), 0u) << line;
  EXPECT_NE(line.find("(git "), std::string::npos) << line;
  EXPECT_FALSE(GitRevision().empty());
}

}  // namespace
}  // namespace fedanon::base
