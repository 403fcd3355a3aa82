#include "base/coding.h"

#include <gtest/gtest.h>

#include <cstring>

namespace strata {
namespace {

TEST(Coding, EncodeWritesLittleEndianBytes) {
  uint8_t b[8];
  EncodeFixed16(b, 0x0102);
  EXPECT_EQ(b[0], 0x02);
  EXPECT_EQ(b[1], 0x01);
  EncodeFixed32(b, 0x01020304u);
  EXPECT_EQ(std::memcmp(b, "\x04\x03\x02\x01", 4), 0);
  EncodeFixed64(b, 0x0102030405060708ull);
  EXPECT_EQ(std::memcmp(b, "\x08\x07\x06\x05\x04\x03\x02\x01", 8), 0);
}

TEST(Coding, DecodeReadsWhatEncodeWrote) {
  for (uint64_t v : {0ull, 1ull, 0xffull, 0x8000000000000000ull, 0xfedcba9876543210ull, ~0ull}) {
    char b[8];
    EncodeFixed64(b, v);
    EXPECT_EQ(DecodeFixed64(b), v);
    EncodeFixed32(b, static_cast<uint32_t>(v));
    EXPECT_EQ(DecodeFixed32(b), static_cast<uint32_t>(v));
    EncodeFixed16(b, static_cast<uint16_t>(v));
    EXPECT_EQ(DecodeFixed16(b), static_cast<uint16_t>(v));
  }
  // High bytes decode without sign extension.
  const uint8_t ff[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80};
  EXPECT_EQ(DecodeFixed64(ff), 0x80ffffffffffffffull);
  EXPECT_EQ(DecodeFixed32(ff), 0xffffffffu);
}

TEST(Coding, PutAppendsAndGetConsumes) {
  std::string s = "x";
  PutFixed16(&s, 0xbeef);
  PutFixed32(&s, 0xdeadbeefu);
  PutFixed64(&s, 0x0123456789abcdefull);
  ASSERT_EQ(s.size(), 1u + 2 + 4 + 8);
  EXPECT_EQ(s.substr(1, 2), std::string("\xef\xbe", 2));

  std::string_view in(s);
  in.remove_prefix(1);
  uint16_t a = 0;
  uint32_t b = 0;
  uint64_t c = 0;
  ASSERT_TRUE(GetFixed16(&in, &a));
  ASSERT_TRUE(GetFixed32(&in, &b));
  ASSERT_TRUE(GetFixed64(&in, &c));
  EXPECT_EQ(a, 0xbeef);
  EXPECT_EQ(b, 0xdeadbeefu);
  EXPECT_EQ(c, 0x0123456789abcdefull);
  EXPECT_TRUE(in.empty());
}

TEST(Coding, GetRefusesShortInputAndLeavesItAlone) {
  std::string s(7, '\x01');
  std::string_view in(s);
  uint64_t v = 42;
  EXPECT_FALSE(GetFixed64(&in, &v));
  EXPECT_EQ(v, 42u);
  EXPECT_EQ(in.size(), 7u);
  uint32_t w = 0;
  EXPECT_TRUE(GetFixed32(&in, &w));
  EXPECT_EQ(w, 0x01010101u);
  EXPECT_FALSE(GetFixed32(&in, &w));
  EXPECT_EQ(in.size(), 3u);
  uint16_t h = 0;
  EXPECT_TRUE(GetFixed16(&in, &h));
  EXPECT_FALSE(GetFixed16(&in, &h));
  EXPECT_EQ(in.size(), 1u);
}

}  // namespace
}  // namespace strata
