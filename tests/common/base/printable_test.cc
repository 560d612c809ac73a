#include "common/base/printable.h"

#include <gtest/gtest.h>

#include <string>

namespace fedanon::base {
namespace {

TEST(Printable, KeepsPlainTextAndUtf8) {
  EXPECT_EQ(Printable("fedanon 0.1.0 (git abc)"), "fedanon 0.1.0 (git abc)");
  EXPECT_EQ(Printable("h\xc3\xb4pital Z\xc3\xbcrich \xe2\x82\xac \xf0\x9f\x8f\xa5"),
            "h\xc3\xb4pital Z\xc3\xbcrich \xe2\x82\xac \xf0\x9f\x8f\xa5");
}

TEST(Printable, EscapesWhatCouldForgeOrHideALogLine) {
  // A forged second log line, a terminal escape, a NUL.
  EXPECT_EQ(Printable("1.0\n2026-01-01 info leader: job done"),
            "1.0\\x0a2026-01-01 info leader: job done");
  EXPECT_EQ(Printable("\x1b[2Jx"), "\\x1b[2Jx");
  EXPECT_EQ(Printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(Printable("a\rb\tc\x7f"), "a\\x0db\\x09c\\x7f");
  // C1 control (U+0085 NEL), line separator, right-to-left override, BOM.
  EXPECT_EQ(Printable("a\xc2\x85z"), "a\\x85z");
  EXPECT_EQ(Printable("a\xe2\x80\xa8z"), "a\\u{2028}z");
  EXPECT_EQ(Printable("a\xe2\x80\xaez"), "a\\u{202e}z");
  EXPECT_EQ(Printable("\xef\xbb\xbfz"), "\\u{feff}z");
  // Our escapes cannot be faked: a backslash in the input is doubled.
  EXPECT_EQ(Printable("\\x0a"), "\\\\x0a");
}

TEST(Printable, EscapesMalformedUtf8ByteByByte) {
  EXPECT_EQ(Printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(Printable("\xc3"), "\\xc3");                             // truncated sequence
  EXPECT_EQ(Printable("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(Printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // surrogate
  EXPECT_EQ(Printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // beyond U+10FFFF
}

TEST(Printable, TruncatesAndSaysHowMuchWasCut) {
  const std::string long_text(5000, 'a');
  const std::string shown = Printable(long_text, 100);
  EXPECT_EQ(shown, std::string(100, 'a') + "...(4900 more bytes)");
  EXPECT_EQ(Printable("abc", 3), "abc");
}

}  // namespace
}  // namespace fedanon::base
