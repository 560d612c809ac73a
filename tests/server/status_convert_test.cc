#include "server/runtime/status_convert.h"

#include <gtest/gtest.h>

namespace fedanon::server {
namespace {

TEST(StatusConvertTest, EveryCodeRoundTripsWithItsNumberAndMessage) {
  for (int code = 1; code <= 16; ++code) {
    const absl::Status status(static_cast<absl::StatusCode>(code),
                              "message " + std::to_string(code));
    const grpc::Status g = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(g.error_code()), code);
    EXPECT_EQ(g.error_message(), "message " + std::to_string(code));
    EXPECT_EQ(FromGrpcStatus(g), status) << "code " << code;
  }
}

TEST(StatusConvertTest, OkMapsToOk) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
}

TEST(StatusConvertTest, NamedCodesMatch) {
  EXPECT_EQ(ToGrpcStatus(absl::PermissionDeniedError("x")).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(ToGrpcStatus(absl::UnavailableError("x")).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "t")).code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(StatusConvertTest, OutOfRangeGrpcCodeBecomesUnknown) {
  // 20: not a canonical code, yet inside the enum's value range (0..31), so no UB in the test.
  const grpc::Status odd(static_cast<grpc::StatusCode>(20), "odd");
  const absl::Status converted = FromGrpcStatus(odd);
  EXPECT_EQ(converted.code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(converted.message(), "odd");
}

}  // namespace
}  // namespace fedanon::server
