// Unit tests for `strata profile`'s analysis: synthetic recordings with known
// counts give known totals, re-reads, request counts and verdicts.
#include <gtest/gtest.h>

#include "profile/model.h"
#include "profile/mountlog.h"

namespace strata::profile {
namespace {

ProfileData SmallFiles(int files, uint64_t size, uint64_t reads, double duration_s) {
  ProfileData d;
  d.duration_s = duration_s;
  for (int i = 0; i < files; ++i) {
    FileRecord f;
    f.path = "/data/f" + std::to_string(i);
    f.size = size;
    f.opens = f.read_opens = reads;
    f.read_events = reads;
    d.files.push_back(f);
  }
  return d;
}

bool HasVerdict(const nlohmann::json& r, const std::string& v) {
  for (const auto& x : r["verdicts"]) {
    if (x["verdict"] == v) return true;
  }
  return false;
}

TEST(ProfileAnalyzeTest, BucketsArePowersOfTwo) {
  EXPECT_EQ(BucketUpper(0), 0u);
  EXPECT_EQ(BucketUpper(1), 1u);
  EXPECT_EQ(BucketUpper(4096), 4096u);
  EXPECT_EQ(BucketUpper(4097), 8192u);
}

// 10,000 files of 100 KiB read whole twice in 100 s: 20,000 GETs (200/s);
// as 16 MiB ranged reads of shards, 1.95 GB / 16 MiB = 123 requests.
TEST(ProfileAnalyzeTest, ManySmallFilesReadTwice) {
  auto r = Analyze(SmallFiles(10000, 100 << 10, 2, 100));
  EXPECT_EQ(r["files"], 10000);
  EXPECT_EQ(r["unique_bytes"].get<double>(), 10000.0 * (100 << 10));
  EXPECT_EQ(r["bytes_read_estimate"].get<double>(), 20000.0 * (100 << 10));
  EXPECT_EQ(r["object_store"]["requests"].get<double>(), 20000);
  EXPECT_NEAR(r["object_store"]["requests_per_s"].get<double>(), 200, 1e-9);
  EXPECT_NEAR(r["object_store"]["in_flight_at_100ms_first_byte"].get<double>(), 20, 1e-9);  // Little's law
  EXPECT_EQ(r["object_store"]["requests_if_sharded"].get<double>(), std::ceil(20000.0 * 100 / (16 * 1024)));
  EXPECT_NEAR(r["rereads"]["fraction"].get<double>(), 0.5, 1e-12);
  EXPECT_EQ(r["reads_per_file"]["mean"].get<double>(), 2);
  ASSERT_EQ(r["size_histogram"].size(), 1u);
  EXPECT_EQ(r["size_histogram"][0]["le"], 128u << 10);
  EXPECT_EQ(r["size_histogram"][0]["count"], 10000);
  EXPECT_TRUE(HasVerdict(r, "pack into shards")) << r["verdicts"];
  EXPECT_TRUE(HasVerdict(r, "cache locally")) << r["verdicts"];
  EXPECT_FALSE(HasVerdict(r, "large files: ranged reads"));
  EXPECT_NE(FormatProfile(r).find("pack into shards"), std::string::npos);
}

TEST(ProfileAnalyzeTest, LargeFilesReadOnce) {
  auto d = SmallFiles(4, 1ull << 30, 1, 10);
  d.files[0].read_events = 5000;
  auto r = Analyze(d);
  EXPECT_EQ(r["object_store"]["requests"].get<double>(), 4 * 64);  // 1 GiB in 16 MiB parts
  EXPECT_TRUE(HasVerdict(r, "large files: ranged reads"));
  EXPECT_FALSE(HasVerdict(r, "pack into shards"));
  EXPECT_FALSE(HasVerdict(r, "cache locally"));
  EXPECT_NE(r["verdicts"][0]["reason"].get<std::string>().find("block cache"), std::string::npos);
}

TEST(ProfileAnalyzeTest, NothingReadAndOpenedOnly) {
  ProfileData d;
  d.duration_s = 1;
  FileRecord f;
  f.path = "/data/x";
  f.size = 10;
  f.opens = 3;  // opened, never read
  d.files.push_back(f);
  auto r = Analyze(d);
  EXPECT_EQ(r["files"], 0);
  EXPECT_EQ(r["files_opened_not_read"], 1);
  EXPECT_TRUE(HasVerdict(r, "nothing to plan"));
  EXPECT_EQ(r["rereads"]["fraction"].get<double>(), 0);
  // A zero-length run does not divide by zero.
  d.duration_s = 0;
  EXPECT_TRUE(std::isfinite(Analyze(d)["opens_per_s"].get<double>()));
}

TEST(ProfileAnalyzeTest, FewMediumFilesAreFine) {
  auto r = Analyze(SmallFiles(8, 8 << 20, 1, 10));
  EXPECT_TRUE(HasVerdict(r, "fine as is")) << r["verdicts"];
}

// The mount's log, parsed: an open then reads at 0, 100 (sequential), 50
// (random, 50 bytes re-read); a read of an unknown handle and a bad line.
TEST(ProfileMountLogTest, ParsesLogAndCountsExactReads) {
  MountLog log("/mnt", {"/mnt/data"}, 1000000000);
  const auto all = [](pid_t) { return true; };
  log.Feed("O 1000000000 7 3 1000 data/a\\nb\nR 1100000000 7 3 0 100 5000\nR 12", all);
  log.Feed("00000000 7 3 100 100 5000\nR 1300000000 7 3 50 100 5000\nR 1 7 99 0 1 1\ngarbage\n", all);
  log.Feed("O 1000000000 7 4 10 other/x\nR 1400000000 7 4 0 10 1\n", all);  // not under --path
  ProfileData d;
  d.exact_reads = true;
  d.duration_s = 1;
  log.MoveInto(&d);
  EXPECT_EQ(d.bad_log_lines, 1u);
  ASSERT_EQ(d.files.size(), 1u);
  EXPECT_EQ(d.files[0].path, "/mnt/data/a\nb");  // the log escapes the newline
  EXPECT_EQ(d.files[0].read_opens, 1u);
  ASSERT_EQ(d.reads.size(), 3u);
  auto r = Analyze(d);
  EXPECT_EQ(r["bytes_read"].get<double>(), 300);
  EXPECT_EQ(r["reads"]["sequential"]["reads"].get<double>(), 2);
  EXPECT_EQ(r["reads"]["random"]["reads"].get<double>(), 1);
  EXPECT_EQ(r["reads"]["reread_bytes"].get<double>(), 100);  // [50,150) over [0,200)
  EXPECT_NEAR(r["reads"]["io_wait_s"].get<double>(), 15e-6, 1e-12);
  EXPECT_EQ(r["object_store"]["requests"].get<double>(), 2);  // one random + one sequential run
}

}  // namespace
}  // namespace strata::profile
