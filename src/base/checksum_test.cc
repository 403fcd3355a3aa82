#include "base/checksum.h"

#include <gtest/gtest.h>

#include "base/hash.h"

namespace strata {
namespace {

constexpr std::string_view kCheck = "123456789";  // the CRC catalogue's check input

std::string Hex(const std::string& raw) { return ToHex(raw.data(), raw.size()); }

TEST(ChecksumTest, KnownVectorsForEveryAlgorithm) {
  EXPECT_EQ(Crc32(kCheck.data(), kCheck.size()), 0xcbf43926u);
  EXPECT_EQ(Crc64Nvme(kCheck.data(), kCheck.size()), 0xae8b14860a799888ull);
  EXPECT_EQ(Hex(ComputeChecksum(ChecksumAlgorithm::kCrc32, kCheck)), "cbf43926");
  EXPECT_EQ(Hex(ComputeChecksum(ChecksumAlgorithm::kCrc32c, kCheck)), "e3069283");
  EXPECT_EQ(Hex(ComputeChecksum(ChecksumAlgorithm::kCrc64Nvme, kCheck)), "ae8b14860a799888");
  EXPECT_EQ(Hex(ComputeChecksum(ChecksumAlgorithm::kSha1, kCheck)), "f7c3bc1d808e04732adf679965ccc34ca7ae3441");
  EXPECT_EQ(Hex(ComputeChecksum(ChecksumAlgorithm::kSha256, kCheck)),
            "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225");
  // Empty input: the CRCs are 0; SHA1 of "" is da39a3ee...
  EXPECT_EQ(ChecksumBase64(ChecksumAlgorithm::kCrc32, ""), "AAAAAA==");
  EXPECT_EQ(ChecksumBase64(ChecksumAlgorithm::kCrc64Nvme, ""), "AAAAAAAAAAA=");
  EXPECT_EQ(ChecksumBase64(ChecksumAlgorithm::kSha1, ""), "2jmj7l5rSw0yVb/vlWAYkK/YBwk=");
  // The base64 S3 prints for the check input (big-endian bytes).
  EXPECT_EQ(ChecksumBase64(ChecksumAlgorithm::kCrc32, kCheck), "y/Q5Jg==");
  EXPECT_EQ(ChecksumBase64(ChecksumAlgorithm::kCrc32c, kCheck), "4waSgw==");
}

TEST(ChecksumTest, RunningCrcsContinueAcrossPieces) {
  uint64_t c = Crc64Nvme(kCheck.data(), 4);
  EXPECT_EQ(Crc64Nvme(kCheck.data() + 4, kCheck.size() - 4, c), 0xae8b14860a799888ull);
  uint32_t d = Crc32(kCheck.data(), 5);
  EXPECT_EQ(Crc32(kCheck.data() + 5, kCheck.size() - 5, d), 0xcbf43926u);
}

TEST(ChecksumTest, HasherFedInPiecesEqualsTheWholeDigest) {
  const std::string payload = std::string(kCheck) + std::string(3000, 'x');
  for (ChecksumAlgorithm a : kAllChecksumAlgorithms) {
    ChecksumHasher h(a);
    for (size_t off = 0; off < payload.size(); off += 7) h.Update(std::string_view(payload).substr(off, 7));
    EXPECT_EQ(h.Finish(), ComputeChecksum(a, payload)) << ChecksumName(a);
  }
  ChecksumHasher sha(ChecksumAlgorithm::kSha256);  // and the known vector, so both cannot be wrong alike
  sha.Update("ab");
  sha.Update("c");
  const std::string digest = sha.Finish();
  EXPECT_EQ(ToHex(digest.data(), digest.size()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ChecksumTest, NamesHeadersAndDecoding) {
  for (ChecksumAlgorithm a : kAllChecksumAlgorithms) {
    EXPECT_EQ(ParseChecksumAlgorithm(ChecksumName(a)), a);
    EXPECT_EQ(ComputeChecksum(a, kCheck).size(), ChecksumSize(a));
    auto raw = DecodeChecksum(a, ChecksumBase64(a, kCheck));
    ASSERT_TRUE(raw.has_value());
    EXPECT_EQ(*raw, ComputeChecksum(a, kCheck));
  }
  EXPECT_EQ(ParseChecksumAlgorithm("crc64nvme"), ChecksumAlgorithm::kCrc64Nvme);
  EXPECT_FALSE(ParseChecksumAlgorithm("MD5").has_value());
  EXPECT_EQ(ChecksumHeader(ChecksumAlgorithm::kCrc32c), "x-amz-checksum-crc32c");
  EXPECT_FALSE(DecodeChecksum(ChecksumAlgorithm::kCrc32, "AAAAAAAAAAA=").has_value());  // 8 bytes, not 4
  EXPECT_FALSE(DecodeChecksum(ChecksumAlgorithm::kCrc32, "not base64!").has_value());
}

TEST(ChecksumTest, CombinedCrcsEqualTheCrcOfTheWhole) {
  std::string a(1000, 'a'), b = "a second, shorter piece";
  for (ChecksumAlgorithm alg : {ChecksumAlgorithm::kCrc32, ChecksumAlgorithm::kCrc32c, ChecksumAlgorithm::kCrc64Nvme}) {
    EXPECT_EQ(Hex(CombineCrc(alg, ComputeChecksum(alg, a), ComputeChecksum(alg, b), b.size())),
              Hex(ComputeChecksum(alg, a + b)))
        << ChecksumName(alg);
    auto full = CombinePartChecksums(alg, ChecksumType::kFullObject,
                                     {{ComputeChecksum(alg, a), a.size()}, {ComputeChecksum(alg, b), b.size()}});
    ASSERT_TRUE(full.ok());
    EXPECT_EQ(*full, ChecksumBase64(alg, a + b));
  }
}

TEST(ChecksumTest, CompositeIsTheChecksumOfThePartChecksums) {
  auto sha = ChecksumAlgorithm::kSha256;
  std::string r1 = ComputeChecksum(sha, "one"), r2 = ComputeChecksum(sha, "two");
  auto c = CombinePartChecksums(sha, ChecksumType::kComposite, {{r1, 3}, {r2, 3}});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, ChecksumBase64(sha, r1 + r2) + "-2");
  // Types S3 refuses: SHA full-object, CRC64NVME composite.
  EXPECT_FALSE(CombinePartChecksums(sha, ChecksumType::kFullObject, {{r1, 3}}).ok());
  EXPECT_FALSE(CombinePartChecksums(ChecksumAlgorithm::kCrc64Nvme, ChecksumType::kComposite, {}).ok());
  EXPECT_FALSE(CombinePartChecksums(ChecksumAlgorithm::kCrc32, ChecksumType::kComposite, {{r1, 3}}).ok());
  EXPECT_EQ(DefaultChecksumType(ChecksumAlgorithm::kCrc64Nvme), ChecksumType::kFullObject);
  EXPECT_EQ(DefaultChecksumType(ChecksumAlgorithm::kCrc32), ChecksumType::kComposite);
}

}  // namespace
}  // namespace strata
