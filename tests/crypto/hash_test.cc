#include "crypto/hash.h"

#include <gtest/gtest.h>

namespace fedanon::crypto {
namespace {

TEST(Sha256Test, KnownAnswers) {
  // FIPS 180-2 test vectors.
  EXPECT_EQ(ToHex(Sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ToHex(Sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(ToHex(Sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

// The streamed form in pieces of every size equals the one-shot digest (and FIPS 180-2's value
// for the one-million-'a' message).
TEST(Sha256StreamTest, PiecesGiveTheOneShotDigest) {
  const std::string text = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  for (size_t piece = 1; piece <= text.size(); ++piece) {
    Sha256Stream stream;
    for (size_t i = 0; i < text.size(); i += piece)
      stream.Update(std::string_view(text).substr(i, piece));
    EXPECT_EQ(stream.Finish(), Sha256(text)) << piece;
  }
  Sha256Stream million;
  const std::string thousand(1000, 'a');
  for (int i = 0; i < 1000; ++i) million.Update(thousand);
  EXPECT_EQ(ToHex(million.Finish()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
}  // namespace fedanon::crypto
