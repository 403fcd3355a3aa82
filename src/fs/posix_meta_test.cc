#include "fs/posix_meta.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

namespace strata::fs {
namespace {

WallTime At(int64_t secs, int64_t nanos = 0) {
  return WallTime(
      std::chrono::duration_cast<WallTime::duration>(std::chrono::seconds(secs) + std::chrono::nanoseconds(nanos)));
}

TEST(PosixMetaTest, ReadsWhatS3fsAndRcloneWrite) {
  // s3fs: decimal st_mode with its type bits, integer seconds.
  PosixMeta m = DecodePosixMeta({{"mode", "33261"}, {"uid", "1000"}, {"gid", "100"}, {"mtime", "1577836800"}});
  EXPECT_EQ(m.mode, S_IFREG | 0755u);
  EXPECT_EQ(m.uid, 1000u);
  EXPECT_EQ(m.gid, 100u);
  EXPECT_EQ(m.mtime, At(1577836800));
  EXPECT_EQ(DecodePosixMeta({{"mode", "41471"}}).mode, S_IFLNK | 0777u) << "an s3fs symlink";
  EXPECT_EQ(DecodePosixMeta({{"mode", "16877"}}).mode, S_IFDIR | 0755u) << "an s3fs directory";
  EXPECT_EQ(DecodePosixMeta({{"mode", "493"}}).mode, 0755u) << "permission bits only";
  // s3fs's special files: empty objects whose mode carries the type.
  EXPECT_EQ(DecodePosixMeta({{"mode", "4516"}}).mode, S_IFIFO | 0644u) << "an s3fs FIFO";
  EXPECT_EQ(DecodePosixMeta({{"mode", "49645"}}).mode, S_IFSOCK | 0755u) << "an s3fs socket";
  PosixMeta dev = DecodePosixMeta({{"mode", "8576"}, {"rdev", "259"}});
  EXPECT_EQ(dev.mode, S_IFCHR | 0600u);
  EXPECT_EQ(dev.rdev, 259u);
  EXPECT_EQ(DecodePosixMeta({{"mode", "25008"}}).mode, S_IFBLK | 0660u);
  EXPECT_EQ(DecodePosixMeta({{"rdev", "-1"}}).rdev, std::nullopt);
  // rclone: float seconds (nanoseconds); RFC 3339 too.
  EXPECT_EQ(ParseMtime("1577836800.123456789"), At(1577836800, 123456789));
  EXPECT_EQ(ParseMtime("1577836800.5"), At(1577836800, 500000000));
  EXPECT_EQ(ParseMtime("2020-01-01T00:00:00Z"), At(1577836800));
  EXPECT_EQ(ParseMtime("2020-01-01T01:00:00.25+01:00"), At(1577836800, 250000000));
  EXPECT_EQ(ParseMtime("2019-12-31T19:00:00-05:00"), At(1577836800));
}

TEST(PosixMetaTest, BadValuesAreLeftUnset) {
  for (const char* bad : {"", "-1", "+5", "12a", "0x10", " 33188", "33188 ", "99999999999999999999999", "65536",
                          "12708" /* 0030644: no such type */, "61860" /* 0170644 */}) {
    EXPECT_EQ(ParseMode(bad), std::nullopt) << bad;
  }
  PosixMeta m = DecodePosixMeta({{"mode", "junk"}, {"uid", "4294967295"}, {"gid", "-3"}, {"mtime", "yesterday"}});
  EXPECT_EQ(m, PosixMeta{}) << "every field bad: all defaults";
  const std::string hundred_digits(100, '1');  // outlives the list (a temporary's c_str() would dangle)
  for (const char* bad :
       {"", ".", "1.", "1.x", "x.1", "1e9", "2020-13-01T00:00:00Z", "2020-01-01T00:00:00", "2020-01-01T00:00:00+0100",
        "2020-01-01T24:00:00Z", "99999999999999999", "17310000009", "1969-12-31T23:59:59Z", hundred_digits.c_str()}) {
    EXPECT_EQ(ParseMtime(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(ParseDecimal("18446744073709551615", UINT64_MAX), UINT64_MAX);
  EXPECT_EQ(ParseDecimal("18446744073709551616", UINT64_MAX), std::nullopt);
}

TEST(PosixMetaTest, EncodesAsS3fsDoesAndRoundTrips) {
  std::map<std::string, std::string> user = {{"other", "kept"}, {"mode", "1"}};
  PosixMeta m{S_IFREG | 0640, 7, 8, At(1700000000), std::nullopt};
  EncodePosixMeta(m, &user);
  EXPECT_EQ(user["mode"], "33184");
  EXPECT_EQ(user["uid"], "7");
  EXPECT_EQ(user["gid"], "8");
  EXPECT_EQ(user["mtime"], "1700000000") << "whole seconds as s3fs writes them";
  EXPECT_EQ(user["other"], "kept");
  EXPECT_EQ(DecodePosixMeta(user), m);
  m.mtime = At(1700000000, 42);
  EncodePosixMeta(m, &user);
  EXPECT_EQ(user["mtime"], "1700000000.000000042");
  EXPECT_EQ(DecodePosixMeta(user), m);
  std::map<std::string, std::string> only;
  EncodePosixMeta(PosixMeta{std::nullopt, 5, std::nullopt, std::nullopt, std::nullopt}, &only);
  EXPECT_EQ(only.size(), 1u) << "unset fields are not written";
  PosixMeta dev{S_IFBLK | 0660, 0, 0, At(1), 2049};
  EncodePosixMeta(dev, &only);
  EXPECT_EQ(only["mode"], "25008");
  EXPECT_EQ(only["rdev"], "2049");
  EXPECT_EQ(DecodePosixMeta(only), dev);
}

}  // namespace
}  // namespace strata::fs
