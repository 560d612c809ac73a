#include "common/base/printable.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fedanon::base {
namespace {

// Length of the well-formed UTF-8 sequence at text[i] and its code point; 0 when malformed.
size_t DecodeUtf8(std::string_view text, size_t i, uint32_t* code_point) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  size_t length = 0;
  uint32_t cp = 0;
  if (b0 < 0x80) {
    *code_point = b0;
    return 1;
  }
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    length = 2;
    cp = b0 & 0x1f;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    length = 3;
    cp = b0 & 0x0f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    length = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  // Overlong forms, surrogates and code points beyond U+10FFFF are malformed.
  if ((length == 3 && cp < 0x800) || (length == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
      (cp >= 0xd800 && cp <= 0xdfff)) {
    return 0;
  }
  *code_point = cp;
  return length;
}

bool Hidden(uint32_t cp) {
  return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) ||  // C0, DEL, C1
         cp == 0x2028 || cp == 0x2029 ||                           // line/paragraph separator
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||  // bidi controls
         cp == 0x200e || cp == 0x200f || cp == 0xfeff;  // direction marks, BOM
}

}  // namespace

std::string Printable(std::string_view text, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  while (i < text.size() && out.size() < max_bytes) {
    uint32_t cp = 0;
    const size_t length = DecodeUtf8(text, i, &cp);
    if (length == 0) {
      absl::StrAppendFormat(&out, "\\x%02x", static_cast<uint8_t>(text[i]));
      ++i;
    } else if (Hidden(cp)) {
      if (cp < 0x100) {
        absl::StrAppendFormat(&out, "\\x%02x", cp);
      } else {
        absl::StrAppendFormat(&out, "\\u{%04x}", cp);
      }
      i += length;
    } else {
      if (cp == '\\') out.push_back('\\');  // so that an escape in the input is not taken for ours
      out.append(text.substr(i, length));
      i += length;
    }
  }
  if (i < text.size()) absl::StrAppend(&out, "...(", text.size() - i, " more bytes)");
  return out;
}

}  // namespace fedanon::base
