#include "base/utf8.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace strata {
namespace {

std::string Encode(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += char(0xE0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  } else {
    s += char(0xF0 | (cp >> 18));
    s += char(0x80 | ((cp >> 12) & 0x3F));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

TEST(Utf8Test, EveryScalarValueIsValidAndEverySurrogateIsNot) {
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
    ASSERT_EQ(IsValidUtf8(Encode(cp)), !surrogate) << std::hex << cp;
  }
}

TEST(Utf8Test, RejectsMalformedSequences) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\x88"));              // stray continuation byte
  EXPECT_FALSE(IsValidUtf8("\xc3"));              // truncated at the end
  EXPECT_FALSE(IsValidUtf8("\xe6\x97"));          // truncated at the end
  EXPECT_FALSE(IsValidUtf8("\xc3("));             // bad continuation
  EXPECT_FALSE(IsValidUtf8("\xc0\x80"));          // overlong NUL
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xf0\x80\x80\xaf"));  // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // U+110000
  EXPECT_FALSE(IsValidUtf8("\xf5\x80\x80\x80"));
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_TRUE(IsValidUtf8(std::string("a\0b", 3)));  // NUL is a valid code point
}

}  // namespace
}  // namespace strata
