#include "base/aead.h"

#include <gtest/gtest.h>

#include <string>

namespace strata {
namespace {

AesKey Key(uint8_t fill) {
  AesKey k;
  k.fill(fill);
  return k;
}

TEST(Aead, SealOpenRoundTripsInPlace) {
  const std::string plain = "the quick brown fox " + std::string(100000, 'x');
  auto nonce = RandomNonce();
  ASSERT_TRUE(nonce.ok());
  std::string buf = plain;
  GcmTag tag;
  auto* p = reinterpret_cast<uint8_t*>(buf.data());
  ASSERT_TRUE(AesGcmSeal(Key(1), *nonce, "header", p, p, buf.size(), &tag).ok());
  EXPECT_EQ(buf.find("quick brown"), std::string::npos) << "sealed bytes are not the plaintext";
  const std::string sealed = buf;
  ASSERT_TRUE(AesGcmOpen(Key(1), *nonce, "header", p, p, buf.size(), tag).ok());
  EXPECT_EQ(buf, plain);
}

// A wrong key, another header, altered bytes or tag: never plaintext, always Corruption.
TEST(Aead, AnythingWrongIsCorruption) {
  const std::string plain(4096, 'p');
  const GcmNonce nonce{};
  std::string sealed(plain.size(), '\0');
  GcmTag tag;
  ASSERT_TRUE(AesGcmSeal(Key(1), nonce, "aad", reinterpret_cast<const uint8_t*>(plain.data()),
                         reinterpret_cast<uint8_t*>(sealed.data()), plain.size(), &tag)
                  .ok());
  auto open = [&](const AesKey& key, const GcmNonce& n, std::string_view aad, std::string bytes, const GcmTag& t) {
    std::string out(bytes.size(), '\0');
    return AesGcmOpen(key, n, aad, reinterpret_cast<const uint8_t*>(bytes.data()),
                      reinterpret_cast<uint8_t*>(out.data()), bytes.size(), t)
        .code();
  };
  EXPECT_EQ(open(Key(1), nonce, "aad", sealed, tag), Code::kOk);
  EXPECT_EQ(open(Key(2), nonce, "aad", sealed, tag), Code::kCorruption);
  EXPECT_EQ(open(Key(1), nonce, "aaD", sealed, tag), Code::kCorruption);
  GcmNonce other = nonce;
  other[0] ^= 1;
  EXPECT_EQ(open(Key(1), other, "aad", sealed, tag), Code::kCorruption);
  std::string flipped = sealed;
  flipped[100] ^= 1;
  EXPECT_EQ(open(Key(1), nonce, "aad", flipped, tag), Code::kCorruption);
  GcmTag bad = tag;
  bad[15] ^= 1;
  EXPECT_EQ(open(Key(1), nonce, "aad", sealed, bad), Code::kCorruption);
}

TEST(Aead, GmacCoversEveryPartAndTheirBoundaries) {
  auto a = Gmac(Key(3), {"ab", "c"});
  auto b = Gmac(Key(3), {"abc"});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b) << "parts are concatenated: callers frame them";
  EXPECT_NE(*Gmac(Key(3), {"abd"}), *a);
  EXPECT_NE(*Gmac(Key(4), {"abc"}), *a);
  EXPECT_NE(*Gmac(Key(3), {"abc", std::string(1, '\0')}), *a) << "the length counts";
}

TEST(Aead, RandomBytesDiffer) {
  uint8_t x[16] = {}, y[16] = {};
  ASSERT_TRUE(RandomBytes(x, sizeof x).ok());
  ASSERT_TRUE(RandomBytes(y, sizeof y).ok());
  EXPECT_NE(std::string(reinterpret_cast<char*>(x), 16), std::string(reinterpret_cast<char*>(y), 16));
}

}  // namespace
}  // namespace strata
