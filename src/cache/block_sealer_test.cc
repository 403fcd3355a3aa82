// Unit tests of the cache's encryption at rest codec (no disk).
#include "cache/block_sealer.h"

#include <gtest/gtest.h>

#include <string>

namespace strata::cache {
namespace {

AesKey Key(uint8_t fill) {
  AesKey k;
  k.fill(fill);
  return k;
}

std::string Seal(const BlockSealer& s, std::string_view aad, const std::string& plain) {
  std::string out(plain.size() + BlockSealer::kOverhead, '\0');
  EXPECT_TRUE(
      s.Seal(aad, reinterpret_cast<const uint8_t*>(plain.data()), plain.size(), reinterpret_cast<uint8_t*>(out.data()))
          .ok());
  return out;
}

Status Open(const BlockSealer& s, std::string_view aad, const std::string& sealed, std::string* plain) {
  plain->assign(sealed.size() >= BlockSealer::kOverhead ? sealed.size() - BlockSealer::kOverhead : 0, '\0');
  return s.Open(aad, reinterpret_cast<const uint8_t*>(sealed.data()), sealed.size(),
                reinterpret_cast<uint8_t*>(plain->data()));
}

TEST(BlockSealer, RoundTripsWithAFreshNoncePerItem) {
  auto s = BlockSealer::FromKey(Key(7));
  const std::string plain = "PLAINTEXT-MARKER " + std::string(70000, 'x');
  const std::string a = Seal(*s, "header", plain), b = Seal(*s, "header", plain);
  EXPECT_EQ(a.size(), plain.size() + 28);
  EXPECT_EQ(a.find("PLAINTEXT-MARKER"), std::string::npos);
  EXPECT_NE(a, b) << "the same bytes sealed twice must not look alike (fresh nonce)";
  std::string back;
  ASSERT_TRUE(Open(*s, "header", a, &back).ok());
  EXPECT_EQ(back, plain);
  ASSERT_TRUE(Open(*s, "header", b, &back).ok());
  EXPECT_EQ(back, plain);
}

// A wrong key, another header, a flipped byte, a short item: Corruption, never other bytes.
TEST(BlockSealer, AnythingElseIsCorruption) {
  auto s = BlockSealer::FromKey(Key(7));
  const std::string sealed = Seal(*s, "block 3 of k, etag e", std::string(4096, 'p'));
  std::string out;
  EXPECT_EQ(Open(*BlockSealer::FromKey(Key(8)), "block 3 of k, etag e", sealed, &out).code(), Code::kCorruption);
  EXPECT_EQ(Open(*s, "block 4 of k, etag e", sealed, &out).code(), Code::kCorruption);
  for (size_t at : {size_t{0}, size_t{12}, sealed.size() / 2, sealed.size() - 1}) {
    std::string bad = sealed;
    bad[at] ^= 0x01;
    EXPECT_EQ(Open(*s, "block 3 of k, etag e", bad, &out).code(), Code::kCorruption) << at;
  }
  EXPECT_EQ(Open(*s, "block 3 of k, etag e", sealed.substr(0, 27), &out).code(), Code::kCorruption);
  EXPECT_TRUE(Open(*s, "block 3 of k, etag e", Seal(*s, "block 3 of k, etag e", ""), &out).ok());
}

TEST(BlockSealer, KeyIdNamesTheKeyWithoutShowingIt) {
  auto a = BlockSealer::FromKey(Key(1)), b = BlockSealer::FromKey(Key(2));
  EXPECT_EQ(a->key_id().size(), 16u);
  EXPECT_EQ(a->key_id(), BlockSealer::FromKey(Key(1))->key_id());
  EXPECT_NE(a->key_id(), b->key_id());
  EXPECT_EQ(a->key_id().find("0101"), std::string::npos);
}

}  // namespace
}  // namespace strata::cache
