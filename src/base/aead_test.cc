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

// Seals `plain` under `nonce` for the opener tests.
std::string SealForTest(const AesKey& key, const GcmNonce& nonce, std::string_view aad, const std::string& plain,
                        GcmTag* tag) {
  std::string sealed(plain.size(), '\0');
  EXPECT_TRUE(AesGcmSeal(key, nonce, aad, reinterpret_cast<const uint8_t*>(plain.data()),
                         reinterpret_cast<uint8_t*>(sealed.data()), plain.size(), tag)
                  .ok());
  return sealed;
}

// Feeds `sealed` to `opener` in place, from `at` to `to`.
void Feed(GcmOpener& opener, std::string& sealed, size_t at, size_t to) {
  auto* p = reinterpret_cast<uint8_t*>(sealed.data());
  ASSERT_TRUE(opener.Update(p + at, p + at, to - at).ok());
}

// Opened piece by piece, in any split (pieces of 0, 1, odd and whole-block
// sizes), a message reads as it was sealed.
TEST(Aead, OpenerInPiecesMatchesTheWhole) {
  std::string plain(200003, '\0');
  for (size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<char>(i * 7 + i / 251);
  const GcmNonce nonce = *RandomNonce();
  GcmTag tag;
  const std::string sealed = SealForTest(Key(5), nonce, "aad", plain, &tag);
  for (size_t piece : {size_t{1}, size_t{15}, size_t{16}, size_t{4097}, size_t{65536}, plain.size()}) {
    std::string buf = sealed;
    auto opener = GcmOpener::Start(Key(5), nonce, "aad");
    ASSERT_TRUE(opener.ok()) << opener.status();
    Feed(*opener, buf, 0, 0);
    for (size_t at = 0; at < buf.size(); at += piece) Feed(*opener, buf, at, std::min(buf.size(), at + piece));
    ASSERT_TRUE(opener->Finish(tag).ok()) << piece;
    EXPECT_TRUE(buf == plain) << "piece " << piece;
  }
}

// Each opener keeps its own state: two messages opened interleaved on one
// thread both come out right, and a tampered message between good ones is
// rejected without tainting the ones after it.
TEST(Aead, InterleavedOpenersDoNotShareState) {
  const std::string plain_a(100000, 'a'), plain_b(70001, 'b');
  const GcmNonce na = *RandomNonce(), nb = *RandomNonce();
  GcmTag ta, tb;
  std::string a = SealForTest(Key(1), na, "A", plain_a, &ta);
  std::string b = SealForTest(Key(1), nb, "B", plain_b, &tb);
  const std::string sealed_a = a, sealed_b = b;
  auto oa = GcmOpener::Start(Key(1), na, "A");
  auto ob = GcmOpener::Start(Key(1), nb, "B");
  ASSERT_TRUE(oa.ok() && ob.ok());
  for (size_t at = 0; at < a.size() || at < b.size(); at += 4099) {
    if (at < a.size()) Feed(*oa, a, at, std::min(a.size(), at + 4099));
    if (at < b.size()) Feed(*ob, b, at, std::min(b.size(), at + 4099));
  }
  ASSERT_TRUE(ob->Finish(tb).ok());
  ASSERT_TRUE(oa->Finish(ta).ok());
  EXPECT_TRUE(a == plain_a);
  EXPECT_TRUE(b == plain_b);

  auto open_whole = [&](const std::string& sealed, const GcmNonce& n, std::string_view aad, const GcmTag& t) {
    std::string buf = sealed;
    auto o = GcmOpener::Start(Key(1), n, aad);
    EXPECT_TRUE(o.ok());
    Feed(*o, buf, 0, buf.size());
    return o->Finish(t).code();
  };
  std::string tampered = sealed_b;
  tampered[50000] ^= 0x20;
  EXPECT_EQ(open_whole(sealed_a, na, "A", ta), Code::kOk);
  EXPECT_EQ(open_whole(tampered, nb, "B", tb), Code::kCorruption);
  EXPECT_EQ(open_whole(sealed_b, nb, "B", tb), Code::kOk);
  EXPECT_EQ(open_whole(sealed_a, na, "B", ta), Code::kCorruption) << "another message's AAD";
  // A spent opener opens nothing more.
  auto spent = GcmOpener::Start(Key(1), na, "A");
  std::string buf = sealed_a;
  Feed(*spent, buf, 0, buf.size());
  ASSERT_TRUE(spent->Finish(ta).ok());
  EXPECT_FALSE(spent->Finish(ta).ok());
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
