#include "base/hash.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata {
namespace {

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32cHex(Crc32c("123456789")), "e3069283");  // big-endian, as S3 sends it (base64 there)
  EXPECT_EQ(Crc32c(""), 0u);
  // RFC 3720 (iSCSI) B.4 vectors: 32 bytes, long enough for the 8-byte fast path.
  std::string zeros(32, '\0'), ones(32, '\xff'), inc(32, '\0');
  for (int i = 0; i < 32; ++i) inc[i] = char(i);
  EXPECT_EQ(Crc32c(zeros), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ones), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(inc), 0x46DD794Eu);
}

TEST(Crc32cTest, IncrementalMatchesOneShotAtEverySplit) {
  std::string data;
  for (int i = 0; i < 100; ++i) data += char(i * 7 + 3);
  uint32_t whole = Crc32c(data);
  for (size_t split = 0; split <= data.size(); ++split) {
    uint32_t first = Crc32c(data.data(), split);
    EXPECT_EQ(Crc32c(data.data() + split, data.size() - split, first), whole) << split;
  }
}

// Whichever implementation runs (SSE4.2 or slicing-by-8) agrees with the
// bitwise definition at every alignment and length around its 8-byte steps.
TEST(Crc32cTest, MatchesBitwiseDefinitionAtEveryAlignment) {
  auto bitwise = [](const uint8_t* p, size_t n) {
    uint32_t crc = ~0u;
    for (size_t i = 0; i < n; ++i) {
      crc ^= p[i];
      for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
  };
  std::vector<uint8_t> buf(300);
  uint32_t x = 12345;
  for (auto& b : buf) b = uint8_t((x = x * 1103515245u + 12345u) >> 16);
  for (size_t off = 0; off < 9; ++off) {
    for (size_t len : {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 255, 291}) {
      EXPECT_EQ(Crc32c(buf.data() + off, len), bitwise(buf.data() + off, len)) << off << "+" << len;
    }
  }
}

// Long inputs take the interleaved path (three streams joined): the same
// CRC as fed in short pieces, at several alignments and lengths.
TEST(Crc32cTest, LongInputsMatchShortPieces) {
  std::vector<uint8_t> buf(200000);
  uint32_t x = 99;
  for (auto& b : buf) b = uint8_t((x = x * 1103515245u + 12345u) >> 16);
  for (size_t off : {0, 3, 8}) {
    for (size_t len : {24575, 24576, 24577, 49152 + 100, 199990}) {
      uint32_t pieces = 0;
      for (size_t at = 0; at < len; at += 97)
        pieces = Crc32c(buf.data() + off + at, std::min<size_t>(97, len - at), pieces);
      EXPECT_EQ(Crc32c(buf.data() + off, len), pieces) << off << "+" << len;
    }
  }
}

TEST(Crc32cTest, MaskRoundTripAndDiffers) {
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu, 0x80000000u}) {
    uint32_t masked = MaskCrc32c(crc);
    EXPECT_EQ(UnmaskCrc32c(masked), crc);
  }
  EXPECT_NE(MaskCrc32c(0xE3069283u), 0xE3069283u);
  // TFRecord's definition, spelled out.
  uint32_t crc = 0x12345678u;
  EXPECT_EQ(MaskCrc32c(crc), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(ToHex(Sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ToHex(Sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256Test, IncrementalMatchesOneShot) {
  std::string msg = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  Sha256Hasher h;
  h.Update(msg.substr(0, 10));
  h.Update(msg.data() + 10, 0);
  h.Update(msg.substr(10));
  EXPECT_EQ(ToHex(h.Finish()), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(HmacSha256Test, Rfc4231Cases) {
  // Test case 1.
  EXPECT_EQ(ToHex(HmacSha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Test case 2.
  EXPECT_EQ(ToHex(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 6: a key longer than the block size is hashed first.
  EXPECT_EQ(ToHex(HmacSha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(HmacSha256Test, EmptyKeyAndMessage) {
  EXPECT_EQ(ToHex(HmacSha256("", "")), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(Md5Test, KnownVectors) {
  EXPECT_EQ(ToHex(Md5("")), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(ToHex(Md5("abc")), "900150983cd24fb0d6963f7d28e17f72");
  Md5Hasher h;
  h.Update("a", 1);
  h.Update("bc", 2);
  EXPECT_EQ(ToHex(h.Finish()), "900150983cd24fb0d6963f7d28e17f72");
}

TEST(XxHash3Test, DeterministicAndSensitive) {
  EXPECT_EQ(XxHash3(""), 0x2D06800538D394C2ull);  // xxHash's own sanity vector
  std::string a(1000, 'a');
  EXPECT_EQ(XxHash3(a), XxHash3(a.data(), a.size()));
  EXPECT_EQ(XxHash3(a), XxHash3(std::string(1000, 'a')));
  std::string b = a;
  b[500] = 'b';
  EXPECT_NE(XxHash3(a), XxHash3(b));
  EXPECT_NE(XxHash3(a.data(), a.size(), 1), XxHash3(a.data(), a.size(), 2));
  EXPECT_NE(XxHash3("abc"), XxHash3("abd"));
}

TEST(XxHash3Test, IncrementalEqualsOneShot) {
  std::string data(3 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + (i >> 9));
  for (size_t piece : {size_t{7}, size_t{4096}, size_t{1} << 20, data.size()}) {
    XxHash3Hasher h;
    for (size_t off = 0; off < data.size(); off += piece)
      h.Update(data.data() + off, std::min(piece, data.size() - off));
    EXPECT_EQ(h.Digest(), XxHash3(data)) << "pieces of " << piece;
  }
  EXPECT_EQ(XxHash3Hasher().Digest(), XxHash3(""));
}

TEST(HexTest, EncodeDecodeRoundTrip) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += char(i);
  std::string hex = ToHex(all.data(), all.size());
  EXPECT_EQ(hex.substr(0, 8), "00010203");
  EXPECT_EQ(hex.substr(hex.size() - 4), "feff");
  std::string back;
  ASSERT_TRUE(HexDecode(hex, &back));
  EXPECT_EQ(back, all);
  ASSERT_TRUE(HexDecode("DEADbeef", &back));
  EXPECT_EQ(back, "\xde\xad\xbe\xef");
  ASSERT_TRUE(HexDecode("", &back));
  EXPECT_EQ(back, "");
}

TEST(HexTest, RejectsMalformed) {
  std::string out;
  EXPECT_FALSE(HexDecode("abc", &out));  // odd length
  EXPECT_FALSE(HexDecode("zz", &out));
  EXPECT_FALSE(HexDecode("0g", &out));
  EXPECT_FALSE(HexDecode(" 0", &out));
  EXPECT_FALSE(HexDecode(std::string_view("0\0", 2), &out));
}

TEST(Base64Test, Rfc4648Vectors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, encoded] : cases) {
    EXPECT_EQ(Base64Encode(plain.data(), plain.size()), encoded);
    std::string back;
    ASSERT_TRUE(Base64Decode(encoded, &back)) << encoded;
    EXPECT_EQ(back, plain);
  }
  // Content-MD5 style: base64 of a digest.
  EXPECT_EQ(Base64Encode(Md5("")), "1B2M2Y8AsgTpgAmY7PhCfg==");
}

TEST(Base64Test, BinaryRoundTrip) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += char(255 - i);
  for (size_t n = 0; n <= all.size(); n += 37) {
    std::string back;
    ASSERT_TRUE(Base64Decode(Base64Encode(all.data(), n), &back));
    EXPECT_EQ(back, all.substr(0, n));
  }
}

TEST(Base64Test, RejectsMalformed) {
  std::string out;
  EXPECT_FALSE(Base64Decode("Zg=", &out));   // length not a multiple of 4
  EXPECT_FALSE(Base64Decode("Z===", &out));  // too much padding
  EXPECT_FALSE(Base64Decode("====", &out));
  EXPECT_FALSE(Base64Decode("Zg==Zm9v", &out));  // padding before the end
  EXPECT_FALSE(Base64Decode("Zm=v", &out));      // data after padding
  EXPECT_FALSE(Base64Decode("Zm9*", &out));      // not in the alphabet
  EXPECT_FALSE(Base64Decode("Zm9v\n", &out));
  EXPECT_FALSE(Base64Decode("Zm-_", &out));  // URL-safe alphabet is not accepted
  EXPECT_FALSE(Base64Decode(std::string_view("Zm9\0", 4), &out));
}

}  // namespace
}  // namespace strata
