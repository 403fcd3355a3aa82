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

// Opens `sealed` in place (as the disk tier does) as it "lands" `step` bytes at a time.
Status OpenLanding(const BlockSealer& s, std::string_view aad, std::string& sealed, size_t step) {
  auto* p = reinterpret_cast<uint8_t*>(sealed.data());
  BlockSealer::Opening opening(s, std::string(aad), p, sealed.size(), p + kGcmNonceBytes);
  opening.Landed(0);
  for (size_t landed = step; landed < sealed.size(); landed += step) opening.Landed(landed);
  return opening.Finish();
}

std::string Plain(const std::string& sealed) {
  return sealed.substr(kGcmNonceBytes, sealed.size() - BlockSealer::kOverhead);
}

// Opened as it lands, in steps smaller than the nonce, odd ones, ones that
// end inside the tag, or all at once: the same bytes as Open.
TEST(BlockSealer, OpensInPlaceAsItLandsInAnySteps) {
  auto s = BlockSealer::FromKey(Key(7));
  std::string plain(300001, '\0');
  for (size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<char>(i % 253);
  const std::string sealed = Seal(*s, "header", plain);
  for (size_t step : {size_t{5}, size_t{12}, size_t{4096}, size_t{65537}, sealed.size() - 8, sealed.size()}) {
    std::string buf = sealed;
    ASSERT_TRUE(OpenLanding(*s, "header", buf, step).ok()) << step;
    EXPECT_TRUE(Plain(buf) == plain) << "step " << step;
  }
}

// Two blocks opened interleaved on one thread are both right; a tampered
// block is rejected after a good one, and a good one after it still opens.
TEST(BlockSealer, InterleavedOpeningsAndATamperedBlockBetweenGoodOnes) {
  auto s = BlockSealer::FromKey(Key(7));
  const std::string pa(200000, 'a'), pb(150000, 'b');
  const std::string sa = Seal(*s, "block 0", pa), sb = Seal(*s, "block 1", pb);
  std::string a = sa, b = sb;
  auto* ap = reinterpret_cast<uint8_t*>(a.data());
  auto* bp = reinterpret_cast<uint8_t*>(b.data());
  BlockSealer::Opening oa(*s, "block 0", ap, a.size(), ap + kGcmNonceBytes);
  BlockSealer::Opening ob(*s, "block 1", bp, b.size(), bp + kGcmNonceBytes);
  for (size_t landed = 0; landed < a.size() || landed < b.size(); landed += 32768) {
    oa.Landed(std::min(landed, a.size()));
    ob.Landed(std::min(landed, b.size()));
  }
  ASSERT_TRUE(oa.Finish().ok());
  ASSERT_TRUE(ob.Finish().ok());
  EXPECT_TRUE(Plain(a) == pa);
  EXPECT_TRUE(Plain(b) == pb);

  std::string good = sa, bad = sb, after = sa;
  bad[100000] ^= 0x01;
  EXPECT_TRUE(OpenLanding(*s, "block 0", good, 65536).ok());
  EXPECT_EQ(OpenLanding(*s, "block 1", bad, 65536).code(), Code::kCorruption);
  EXPECT_TRUE(OpenLanding(*s, "block 0", after, 65536).ok());
  EXPECT_TRUE(Plain(after) == pa);
  std::string short_item = sa.substr(0, BlockSealer::kOverhead - 1);
  EXPECT_EQ(OpenLanding(*s, "block 0", short_item, 4).code(), Code::kCorruption);
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
