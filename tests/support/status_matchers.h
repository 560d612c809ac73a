// GoogleTest helpers for absl::Status / absl::StatusOr (tests only).
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define FEDANON_TEST_CONCAT_INNER_(a, b) a##b
#define FEDANON_TEST_CONCAT_(a, b) FEDANON_TEST_CONCAT_INNER_(a, b)

// Works for absl::Status and absl::StatusOr<T>, evaluates `expr` once, accepts `<< message`.
#define EXPECT_OK(expr) EXPECT_THAT(::fedanon::testing::ToStatus(expr), ::fedanon::testing::IsOk())
#define ASSERT_OK(expr)                                                    \
  do {                                                                     \
    const ::absl::Status fedanon_st_ = ::fedanon::testing::ToStatus(expr); \
    ASSERT_TRUE(fedanon_st_.ok()) << fedanon_st_;                          \
  } while (0)

#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  FEDANON_ASSERT_OK_AND_ASSIGN_IMPL_(FEDANON_TEST_CONCAT_(fedanon_so_, __LINE__), lhs, expr)
#define FEDANON_ASSERT_OK_AND_ASSIGN_IMPL_(so, lhs, expr) \
  auto so = (expr);                                       \
  ASSERT_TRUE(so.ok()) << so.status();                    \
  lhs = std::move(so).value()

namespace fedanon::testing {

inline absl::Status ToStatus(const absl::Status& s) { return s; }
template <typename T>
absl::Status ToStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

MATCHER(IsOk, "is OK") {
  if (!arg.ok()) *result_listener << "status is " << arg;
  return arg.ok();
}

// Matches an absl::Status or absl::StatusOr<T> whose code is `code` and whose message contains
// `substr` (empty: any message).
MATCHER_P2(StatusIs, code, substr, "") {
  const absl::Status st = ::fedanon::testing::ToStatus(arg);
  if (st.code() != code) {
    *result_listener << "status is " << st;
    return false;
  }
  if (std::string(substr).empty()) return true;
  if (std::string(st.message()).find(substr) == std::string::npos) {
    *result_listener << "message is \"" << st.message() << "\"";
    return false;
  }
  return true;
}

}  // namespace fedanon::testing
