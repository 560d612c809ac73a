// The OT extension of the secure comparison (crypto/ot_extension.h): the receiver gets exactly
// the label of its choice for every transfer; a receiver that uses different choice bits in
// different columns is caught by the consistency check; malformed messages are refused by name.
#include "crypto/ot_extension.h"

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "crypto/block.h"
#include "crypto/fixed_key_hash.h"
#include "crypto/random_stream.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace fedanon::crypto::mpc {
namespace {

using ::fedanon::testing::StatusIs;

const std::string kContext(32, 'c');

struct OtRun {
  std::unique_ptr<OtExtensionReceiver> receiver;
  std::unique_ptr<OtExtensionSender> sender;
  std::string answer;
};

OtRun Begin() {
  OtRun run;
  run.receiver = *OtExtensionReceiver::Create(kContext);
  run.sender = *OtExtensionSender::Create(kContext);
  run.answer = *run.sender->AnswerBase(run.receiver->first_message());
  return run;
}

TEST(OtExtensionTest, TheReceiverGetsTheLabelOfItsChoiceForEveryTransfer) {
  std::mt19937_64 rng(21);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<FixedKeyHash> hash, FixedKeyHash::Create());
  for (size_t m : {size_t{0}, size_t{1}, size_t{63}, size_t{1000}, size_t{5000}}) {
    OtRun run = Begin();
    std::vector<uint8_t> choices(m);
    for (uint8_t& c : choices) c = rng() & 1;
    ASSERT_OK_AND_ASSIGN(const std::string extension, run.receiver->Extend(run.answer, choices));
    EXPECT_EQ(extension.size(), ExtensionMessageBytes(m));
    const Block delta{rng() | 1, rng()};
    std::vector<Block> y;
    ASSERT_OK_AND_ASSIGN(const std::vector<Block> zero,
                         run.sender->Transfer(*hash, extension, m, delta, &y));
    ASSERT_EQ(y.size(), m);
    ASSERT_OK_AND_ASSIGN(const std::vector<Block> chosen,
                         run.receiver->ChosenLabels(*hash, y.data(), m));
    for (size_t i = 0; i < m; ++i) {
      EXPECT_EQ(chosen[i], zero[i] ^ SelectIf(choices[i] != 0, delta)) << m << ": " << i;
    }
  }
}

TEST(OtExtensionTest, AChangedMatrixOrCheckFailsTheCheck) {
  // A receiver that uses another choice bit in one column flips that row's bit of u there. The
  // check's coefficients are drawn from u itself, so whatever is changed after the receiver made
  // x and t (u, x or t, by the receiver or on the way) fails the check; a receiver that cheats
  // before drawing them is caught with probability 1/2 per column (Keller, Orsini and Scholl,
  // Lemma 1), not tested here.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<FixedKeyHash> hash, FixedKeyHash::Create());
  const size_t m = 300;
  const size_t column_bytes = ExtensionRows(m) / 8;
  for (const size_t at : {5 * column_bytes + 17, 127 * column_bytes, 128 * column_bytes,
                          128 * column_bytes + 16 + 31}) {
    OtRun run = Begin();
    ASSERT_OK_AND_ASSIGN(std::string extension,
                         run.receiver->Extend(run.answer, std::vector<uint8_t>(m, 1)));
    extension[at] ^= 0x04;
    std::vector<Block> y;
    EXPECT_THAT(run.sender->Transfer(*hash, extension, m, Block{1, 0}, &y),
                StatusIs(absl::StatusCode::kPermissionDenied, "consistency check failed"))
        << "byte " << at;
  }
}

TEST(OtExtensionTest, MalformedMessagesAreRefusedByName) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<FixedKeyHash> hash, FixedKeyHash::Create());
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<OtExtensionSender> sender,
                         OtExtensionSender::Create(kContext));
    std::string a(kPointBytes, '\xff');  // x = 2^256 - 1 >= p
    a[0] = '\x02';
    EXPECT_THAT(sender->AnswerBase(a),
                StatusIs(absl::StatusCode::kInvalidArgument, "A is not a point of P-256"));
    EXPECT_THAT(sender->AnswerBase("short"),
                StatusIs(absl::StatusCode::kInvalidArgument, "A is not a point of P-256"));
  }
  {
    OtRun run = Begin();
    std::string answer = run.answer;
    answer[3 * kPointBytes] = '\x05';  // B_3's prefix
    EXPECT_THAT(run.receiver->Extend(answer, {1, 0}),
                StatusIs(absl::StatusCode::kInvalidArgument, "B_3 is not a point of P-256"));
    EXPECT_THAT(run.receiver->Extend(run.answer.substr(1), {1, 0}),
                StatusIs(absl::StatusCode::kInvalidArgument, "base OT answer is"));
  }
  {
    OtRun run = Begin();
    ASSERT_OK_AND_ASSIGN(const std::string extension, run.receiver->Extend(run.answer, {1, 0}));
    EXPECT_THAT(run.receiver->Extend(run.answer, {1, 0}),
                StatusIs(absl::StatusCode::kFailedPrecondition, "already run"));
    std::vector<Block> y;
    EXPECT_THAT(run.sender->Transfer(*hash, extension, 300, Block{1, 0}, &y),
                StatusIs(absl::StatusCode::kInvalidArgument, "OT extension message is"));
    ASSERT_OK(run.sender->Transfer(*hash, extension, 2, Block{1, 0}, &y).status());
    EXPECT_THAT(run.sender->Transfer(*hash, extension, 2, Block{1, 0}, &y),
                StatusIs(absl::StatusCode::kFailedPrecondition, "not answered"));
    EXPECT_THAT(run.sender->AnswerBase(run.receiver->first_message()),
                StatusIs(absl::StatusCode::kFailedPrecondition, "already answered"));
  }
}

// Extending kept base OTs again: under new contexts the receiver still gets exactly the label of
// its choice, with matrices and labels unrelated to the first extension's (the seeds are derived
// per context); the kept keys are the ones both sides saw; a receiver of kept OTs takes no
// message 2, and a sender of kept OTs answers no base OTs.
TEST(OtExtensionTest, KeptBaseOtsExtendAgainUnderEachNewContext) {
  std::mt19937_64 rng(22);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<FixedKeyHash> hash, FixedKeyHash::Create());
  OtRun run = Begin();
  const size_t m = 700;
  std::vector<uint8_t> choices(m);
  for (uint8_t& c : choices) c = rng() & 1;
  ASSERT_OK_AND_ASSIGN(const std::string first, run.receiver->Extend(run.answer, choices));
  ASSERT_TRUE(run.receiver->base_keys().has_value());
  ASSERT_TRUE(run.sender->base_keys().has_value());
  const BaseOtReceiverKeys& r = *run.receiver->base_keys();
  const BaseOtSenderKeys& s = *run.sender->base_keys();
  for (size_t j = 0; j < kBaseOts; ++j) {  // the sender holds the seed of its choice bit s_j
    const bool bit = ((j < 64 ? s.s.lo >> j : s.s.hi >> (j - 64)) & 1) != 0;
    EXPECT_EQ(s.seeds[j], bit ? r.k1[j] : r.k0[j]) << j;
  }
  std::vector<std::vector<Block>> labels;
  for (const char c : {'d', 'e'}) {
    const std::string context(32, c);
    ASSERT_OK_AND_ASSIGN(auto receiver,
                         OtExtensionReceiver::Extending(context, *RandomStream::Fresh("t"), r));
    ASSERT_OK_AND_ASSIGN(auto sender,
                         OtExtensionSender::Extending(context, *RandomStream::Fresh("t"), s));
    EXPECT_TRUE(receiver->first_message().empty());
    EXPECT_THAT(receiver->Extend(run.answer, choices).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, "takes no base OT answer"));
    EXPECT_THAT(sender->AnswerBase(run.receiver->first_message()).status(),
                StatusIs(absl::StatusCode::kFailedPrecondition, "already answered"));
    ASSERT_OK_AND_ASSIGN(const std::string extension, receiver->Extend("", choices));
    EXPECT_NE(extension, first);
    EXPECT_THAT(receiver->Extend("", choices).status(),
                StatusIs(absl::StatusCode::kFailedPrecondition, "already run"));
    const Block delta{rng() | 1, rng()};
    std::vector<Block> y;
    ASSERT_OK_AND_ASSIGN(const std::vector<Block> zero,
                         sender->Transfer(*hash, extension, m, delta, &y));
    ASSERT_OK_AND_ASSIGN(const std::vector<Block> chosen,
                         receiver->ChosenLabels(*hash, y.data(), m));
    for (size_t i = 0; i < m; ++i) {
      ASSERT_EQ(chosen[i], zero[i] ^ SelectIf(choices[i] != 0, delta)) << c << ": " << i;
    }
    EXPECT_FALSE(receiver->base_keys().has_value());
    EXPECT_FALSE(sender->base_keys().has_value());
    labels.push_back(zero);
  }
  EXPECT_NE(labels[0], labels[1]);
  // A sender extending under another context than the receiver's: the check fails.
  ASSERT_OK_AND_ASSIGN(auto receiver, OtExtensionReceiver::Extending(std::string(32, 'f'),
                                                                     *RandomStream::Fresh("t"), r));
  ASSERT_OK_AND_ASSIGN(auto sender, OtExtensionSender::Extending(std::string(32, 'g'),
                                                                 *RandomStream::Fresh("t"), s));
  ASSERT_OK_AND_ASSIGN(const std::string extension, receiver->Extend("", choices));
  std::vector<Block> y;
  EXPECT_THAT(sender->Transfer(*hash, extension, m, Block{1, 0}, &y),
              StatusIs(absl::StatusCode::kPermissionDenied, "consistency check failed"));
}

}  // namespace
}  // namespace fedanon::crypto::mpc
