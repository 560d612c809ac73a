#include "crypto/secret_bytes.h"

#include <openssl/crypto.h>

#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace fedanon::crypto {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(SecretBytesTest, CopyAndAccess) {
  const SecretBytes s = SecretBytes::CopyFrom(std::string_view("key material"));
  EXPECT_EQ(s.size(), 12u);
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(s.AsStringView(), "key material");
  EXPECT_EQ(SecretBytes(4).AsStringView(), std::string(4, '\0'));
  EXPECT_TRUE(SecretBytes().empty());
}

TEST(SecretBytesTest, EqualityIsByContentAndLength) {
  const SecretBytes a = SecretBytes::CopyFrom(std::string_view("abcdef"));
  const SecretBytes b = SecretBytes::CopyFrom(std::string_view("abcdef"));
  const SecretBytes c = SecretBytes::CopyFrom(std::string_view("abcdeg"));
  const SecretBytes d = SecretBytes::CopyFrom(std::string_view("abcde"));
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a != b);
  EXPECT_TRUE(a != c);
  EXPECT_TRUE(a != d);
  EXPECT_TRUE(SecretBytes() == SecretBytes());
  EXPECT_TRUE(a.Clone() == a);
}

TEST(SecretBytesTest, MoveLeavesSourceEmpty) {
  SecretBytes a = SecretBytes::CopyFrom(std::string_view("secret"));
  SecretBytes b = std::move(a);
  EXPECT_EQ(b.AsStringView(), "secret");
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the contract under test
  EXPECT_EQ(a.data(), nullptr);
  SecretBytes c = SecretBytes::CopyFrom(std::string_view("other"));
  c = std::move(b);
  EXPECT_EQ(c.AsStringView(), "secret");
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move)
}

TEST(SecretBytesTest, NeverPrintsContents) {
  const SecretBytes s = SecretBytes::CopyFrom(std::string_view("hunter2hunter2"));
  std::ostringstream os;
  os << s;
  EXPECT_THAT(os.str(), Not(HasSubstr("hunter2")));
  EXPECT_THAT(os.str(), HasSubstr("redacted"));
  EXPECT_THAT(::testing::PrintToString(s), Not(HasSubstr("hunter2")));
  EXPECT_THAT(::testing::PrintToString(s), Not(HasSubstr("68 75 6E")));  // gtest byte dump
}

TEST(RandomTest, RandomBytes) {
  ASSERT_OK_AND_ASSIGN(const SecretBytes a, RandomBytes(32));
  ASSERT_OK_AND_ASSIGN(const SecretBytes b, RandomBytes(32));
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  ASSERT_OK_AND_ASSIGN(const SecretBytes empty, RandomBytes(0));
  EXPECT_TRUE(empty.empty());
}

TEST(RandomTest, RandomUint64Vector) {
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> v, RandomUint64Vector(1000));
  ASSERT_EQ(v.size(), 1000u);
  const std::set<uint64_t> distinct(v.begin(), v.end());
  EXPECT_EQ(distinct.size(), v.size());  // a collision has probability ~2^-45
  ASSERT_OK_AND_ASSIGN(const std::vector<uint64_t> none, RandomUint64Vector(0));
  EXPECT_TRUE(none.empty());
}

// The daemons' secure heap: after InitSecureHeap, OpenSSL's secure allocations (BN_secure_new
// for the ID-matching scalars) come from the separate arena.
TEST(SecureHeap, SecureAllocationsComeFromTheArena) {
  std::string warning;
  ASSERT_OK(InitSecureHeap(&warning));
  EXPECT_EQ(CRYPTO_secure_malloc_initialized(), 1);
  void* p = OPENSSL_secure_malloc(32);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(CRYPTO_secure_allocated(p), 1);
  EXPECT_GE(CRYPTO_secure_used(), 32u);
  OPENSSL_secure_clear_free(p, 32);
  void* ordinary = OPENSSL_malloc(32);
  EXPECT_EQ(CRYPTO_secure_allocated(ordinary), 0);
  OPENSSL_free(ordinary);
  // Idempotent.
  EXPECT_OK(InitSecureHeap(&warning));
}

}  // namespace
}  // namespace fedanon::crypto
