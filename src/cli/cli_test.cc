// Integration tests: run the built `strata` binary over file:// stores in a
// temporary directory and check outputs, bytes and exit codes.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "testing/s3_server.h"
#include "testing/strata_binary.h"

namespace {
namespace fs = std::filesystem;

using strata::testing::CliRun;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const fs::path& path, const std::string& data) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << data;
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(gen() & 0xff);  // includes NULs: binary-safe paths
  return s;
}

// Every regular file under dir, by relative path, with its contents.
std::map<std::string, std::string> Tree(const fs::path& dir) {
  std::map<std::string, std::string> tree;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) tree[fs::relative(entry.path(), dir).string()] = ReadFile(entry.path());
  }
  return tree;
}

class CliTest : public strata::testing::StrataBinaryTest {
 protected:
  CliRun Strata(const std::vector<std::string>& args) { return RunStrata(args, std::chrono::minutes(2)); }

  std::string Url(const std::string& rel) { return "file://" + (dir_ / rel).string(); }

  // A source tree with binary files, nesting, an empty file and one file
  // large enough for parallel ranged GETs and a multipart PUT.
  std::map<std::string, std::string> MakeSourceTree() {
    std::map<std::string, std::string> files = {
        {"a.bin", RandomBytes(100 << 10, 1)},
        {"e.txt", ""},
        {"sub/b.txt", "hello strata\n"},
        {"sub/deep/c.bin", RandomBytes(3 << 20, 2)},
        {"sub/deep/big.bin", RandomBytes(12 << 20, 3)},
    };
    for (const auto& [rel, data] : files) WriteFile(dir_ / "src" / rel, data);
    return files;
  }
};

TEST_F(CliTest, CopiesATreeInAndOutByteExact) {
  auto files = MakeSourceTree();
  CliRun in = Strata({"cp", "-r", (dir_ / "src").string(), Url("bucket/"), "--part-size", "1MiB", "-j", "4"});
  ASSERT_EQ(in.code, 0) << in.err;
  EXPECT_NE(in.out.find("copied 5 objects"), std::string::npos) << in.out;
  EXPECT_EQ(in.err, "");  // no progress bar when stderr is not a terminal
  CliRun out = Strata({"cp", "--recursive", Url("bucket"), (dir_ / "out").string(), "--part-size", "1MiB"});
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_EQ(Tree(dir_ / "out"), files);

  // Single objects: into a directory (trailing '/') and to an exact name.
  ASSERT_EQ(Strata({"cp", Url("bucket/sub/deep/big.bin"), (dir_ / "one").string() + "/"}).code, 0);
  EXPECT_EQ(ReadFile(dir_ / "one" / "big.bin"), files["sub/deep/big.bin"]);
  ASSERT_EQ(Strata({"cp", "-q", Url("bucket/a.bin"), (dir_ / "one" / "renamed").string()}).code, 0);
  EXPECT_EQ(ReadFile(dir_ / "one" / "renamed"), files["a.bin"]);
}

// Large objects through a real S3 server (Ceph RGW): a local file up as a
// parallel multipart upload, s3 -> s3 as ranged GETs feeding a multipart
// upload, s3 -> local file as ranges written in place; the aws CLI reads
// strata's upload byte-exact, and no temp file is left anywhere.
TEST_F(CliTest, CopiesLargeObjectsThroughRgwInParts) {
  auto server = strata::testing::S3TestServer::Start(strata::testing::S3TestServer::Kind::kRgw);
  ASSERT_TRUE(server.ok()) << server.status();
  const strata::testing::EnvOverrides env = (*server)->ClientEnv();
  auto run = [&](const std::vector<std::string>& args) { return RunStrata(args, std::chrono::minutes(2), env); };
  const std::string data = RandomBytes(21 << 20, 7);
  WriteFile(dir_ / "up" / "big.bin", data);
  const std::string up = (*server)->StoreUrl("in/big.bin"), copy = (*server)->StoreUrl("copy/big.bin");

  CliRun put = run({"cp", "-q", (dir_ / "up" / "big.bin").string(), up, "--part-size", "5MiB", "-j", "3"});
  ASSERT_EQ(put.code, 0) << put.err;
  CliRun stat = run({"stat", up});
  ASSERT_EQ(stat.code, 0) << stat.err;
  std::string etag = stat.out.substr(stat.out.find("etag:"));
  etag = etag.substr(0, etag.find('\n'));
  etag.erase(std::remove(etag.begin(), etag.end(), '"'), etag.end());
  EXPECT_TRUE(etag.size() > 2 && etag.substr(etag.size() - 2) == "-5") << stat.out;  // multipart: 5 parts
  CliRun s3s3 = run({"cp", "-q", up, copy, "--part-size", "5MiB", "-j", "3"});
  ASSERT_EQ(s3s3.code, 0) << s3s3.err;
  CliRun down = run({"cp", "-q", copy, (dir_ / "down" / "big.bin").string(), "--part-size", "1MiB", "-j", "8"});
  ASSERT_EQ(down.code, 0) << down.err;
  EXPECT_TRUE(ReadFile(dir_ / "down" / "big.bin") == data);
  EXPECT_EQ(Tree(dir_ / "down").size(), 1u);  // the temp file was renamed, not left beside it

  auto aws = strata::testing::RunCommand(
      {"/usr/bin/aws", "--endpoint-url", (*server)->endpoint(), "s3", "cp", "--only-show-errors",
       "s3://" + (*server)->bucket() + "/in/big.bin", (dir_ / "aws.bin").string()},
      env, std::nullopt, {});
  ASSERT_TRUE(aws.ok()) << aws.status();
  ASSERT_EQ(aws->exit_code, 0) << aws->stderr_text;
  EXPECT_TRUE(ReadFile(dir_ / "aws.bin") == data);

  CliRun missing = run({"cp", "-q", (*server)->StoreUrl("in/nope.bin"), (dir_ / "down" / "nope").string()});
  EXPECT_EQ(missing.code, 3) << missing.err;
  EXPECT_FALSE(fs::exists(dir_ / "down" / "nope"));
  EXPECT_TRUE((*server)->Stop().ok());
}

TEST_F(CliTest, ListsStatsAndCatsRanges) {
  auto files = MakeSourceTree();
  ASSERT_EQ(Strata({"cp", "-r", "-q", (dir_ / "src").string(), Url("bucket")}).code, 0);

  CliRun ls = Strata({"ls", Url("bucket")});
  ASSERT_EQ(ls.code, 0) << ls.err;
  EXPECT_EQ(ls.out, "a.bin\ne.txt\nsub/\n");
  CliRun lsr = Strata({"ls", "-r", Url("bucket/sub/")});
  ASSERT_EQ(lsr.code, 0) << lsr.err;
  // A local directory is the store root: keys are relative to it.
  EXPECT_EQ(lsr.out, "b.txt\ndeep/big.bin\ndeep/c.bin\n");
  CliRun lsl = Strata({"ls", "--long", Url("bucket/sub/deep/c")});
  ASSERT_EQ(lsl.code, 0) << lsl.err;
  EXPECT_NE(lsl.out.find(std::to_string(3 << 20) + "  "), std::string::npos) << lsl.out;
  EXPECT_NE(lsl.out.find("  c.bin\n"), std::string::npos) << lsl.out;

  CliRun stat = Strata({"stat", Url("bucket/a.bin")});
  ASSERT_EQ(stat.code, 0) << stat.err;
  EXPECT_NE(stat.out.find("size:  102400 (100.0 KiB)"), std::string::npos) << stat.out;
  EXPECT_NE(stat.out.find("etag:  "), std::string::npos);
  EXPECT_NE(stat.out.find("mtime: 20"), std::string::npos);

  const std::string& a = files["a.bin"];
  CliRun range = Strata({"cat", "--range", "1000-1999", Url("bucket/a.bin")});
  ASSERT_EQ(range.code, 0) << range.err;
  EXPECT_EQ(range.out, a.substr(1000, 1000));
  CliRun suffix = Strata({"cat", "--range=-7", Url("bucket/a.bin")});
  ASSERT_EQ(suffix.code, 0) << suffix.err;
  EXPECT_EQ(suffix.out, a.substr(a.size() - 7));
  CliRun whole = Strata({"cat", Url("bucket/sub/deep/big.bin")});  // crosses the 8 MiB chunking
  ASSERT_EQ(whole.code, 0) << whole.err;
  EXPECT_EQ(whole.out, files["sub/deep/big.bin"]);
  CliRun past = Strata({"cat", "--range", "200000-", Url("bucket/a.bin")});
  EXPECT_EQ(past.code, 2) << past.err;  // OutOfRange: starts past the end
}

TEST_F(CliTest, RemovesRecursivelyAndSingly) {
  MakeSourceTree();
  ASSERT_EQ(Strata({"cp", "-r", "-q", (dir_ / "src").string(), Url("bucket")}).code, 0);
  CliRun rm = Strata({"rm", "-r", Url("bucket/sub")});
  ASSERT_EQ(rm.code, 0) << rm.err;
  EXPECT_NE(rm.out.find("deleted 3 objects"), std::string::npos) << rm.out;
  EXPECT_EQ(Strata({"ls", "-r", Url("bucket")}).out, "a.bin\ne.txt\n");
  ASSERT_EQ(Strata({"rm", Url("bucket/a.bin")}).code, 0);
  EXPECT_EQ(Strata({"stat", Url("bucket/a.bin")}).code, 3);
  EXPECT_EQ(Strata({"rm", Url("bucket/a.bin")}).code, 3);  // already gone
  EXPECT_EQ(Strata({"rm", "-r", Url("bucket/sub")}).code, 3);
}

TEST_F(CliTest, MissingKeysExitThreeWithTheName) {
  fs::create_directories(dir_ / "bucket");
  for (const char* cmd : {"stat", "cat"}) {
    CliRun run = Strata({cmd, Url("bucket/nope.bin")});
    EXPECT_EQ(run.code, 3) << cmd << ": " << run.err;
    EXPECT_NE(run.err.find(std::string("strata: ") + cmd + ": "), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("nope.bin"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("hint:"), std::string::npos) << run.err;
  }
  EXPECT_EQ(Strata({"cp", Url("bucket/nope.bin"), (dir_ / "x").string()}).code, 3);
  EXPECT_EQ(Strata({"ls", Url("bucket/nothing-here")}).code, 3);
  EXPECT_EQ(Strata({"ls", (dir_ / "no-such-dir/").string()}).code, 3);
}

TEST_F(CliTest, BadUsageExitsTwo) {
  EXPECT_EQ(Strata({}).code, 2);
  EXPECT_EQ(Strata({"frobnicate"}).code, 2);
  EXPECT_EQ(Strata({"cp", "only-one-arg"}).code, 2);
  EXPECT_EQ(Strata({"ls", "--no-such-flag", "/tmp"}).code, 2);
  WriteFile(dir_ / "f", "0123456789");
  CliRun range = Strata({"cat", "--range", "x-y", (dir_ / "f").string()});
  EXPECT_EQ(range.code, 2);
  EXPECT_NE(range.err.find("bad --range"), std::string::npos) << range.err;
  EXPECT_EQ(Strata({"cp", "--part-size", "lots", (dir_ / "f").string(), (dir_ / "g").string()}).code, 2);
  CliRun dir = Strata({"stat", dir_.string()});
  EXPECT_EQ(dir.code, 2);
  EXPECT_NE(dir.err.find("is a directory"), std::string::npos) << dir.err;
}

// `strata warm` through the cache flag set (cli/cache_flags.h): the old
// spelling --cache-size still sets the disk bound (its warning names the new
// flag and the value), with one deprecation line; a flag warm cannot honour
// and a value outside the grammar are refused, naming the flag.
TEST_F(CliTest, WarmTakesTheCacheFlagsAndTheOldSpelling) {
  MakeSourceTree();
  CliRun warm = Strata({"warm", (dir_ / "src").string(), "--cache-dir", (dir_ / "cache").string(), "--cache-size",
                        "1MiB", "--block-size", "1M"});
  ASSERT_EQ(warm.code, 0) << warm.err;
  const std::string deprecated = "strata: warm: --cache-size is deprecated; use --cache-disk (the same value)\n";
  EXPECT_EQ(warm.err.rfind(deprecated, 0), 0u) << warm.err;
  EXPECT_EQ(warm.err.find("deprecated"), warm.err.rfind("deprecated")) << warm.err;  // one line
  EXPECT_NE(warm.err.find("exceeds --cache-disk 1.0 MiB"), std::string::npos) << warm.err;
  EXPECT_NE(warm.out.find("warming 5 objects"), std::string::npos) << warm.out;
  EXPECT_NE(warm.out.find(" of 1.0 MiB ("), std::string::npos) << warm.out;

  CliRun ram = Strata({"warm", (dir_ / "src").string(), "--cache-dir", (dir_ / "cache").string(), "--cache-ram", "1G"});
  EXPECT_EQ(ram.code, 2);
  EXPECT_NE(ram.err.find("strata: warm: --cache-ram: not supported by warm: warm fills the disk tier"),
            std::string::npos)
      << ram.err;
  CliRun bad =
      Strata({"warm", (dir_ / "src").string(), "--cache-dir", (dir_ / "cache").string(), "--cache-disk", "1Gb"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("strata: warm: --cache-disk: expected a size such as"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("got \"1Gb\" (Gb reads as bits; write GB or GiB)"), std::string::npos) << bad.err;
}

// A real small file system (tmpfs, 16 MiB) under the cache: warm fills it
// only to its --cache-free-space floor, whatever --cache-disk allows.
TEST_F(CliTest, WarmLeavesTheFreeSpaceFloorOfASmallFileSystem) {
  MakeSourceTree();  // 15.1 MB
  const fs::path small = dir_ / "small";
  fs::create_directories(small);
  if (::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=16m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  struct Unmount {
    fs::path path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{small};
  const auto free_bytes = [&] {
    struct statvfs st {};
    EXPECT_EQ(::statvfs(small.c_str(), &st), 0);
    return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  };
  CliRun warm = Strata({"warm", (dir_ / "src").string(), "--cache-dir", (small / "cache").string(), "--cache-disk",
                        "1GiB", "--block-size", "1M", "--cache-free-space", "50%"});
  ASSERT_EQ(warm.code, 0) << warm.err;
  EXPECT_GE(free_bytes(), 8ull << 20);  // half of 16 MiB left free
  EXPECT_NE(warm.err.find("the file system of " + (small / "cache").string() +
                          " has above the 8.0 MiB it keeps "
                          "free (--cache-free-space 50%); older blocks will be evicted"),
            std::string::npos)
      << warm.err;
  EXPECT_NE(warm.out.find("warming 5 objects"), std::string::npos) << warm.out;

  // Without the floor the same warm fills the file system to the brim (and then fails to write, not to warm).
  fs::remove_all(small / "cache");
  CliRun brim = Strata({"warm", (dir_ / "src").string(), "--cache-dir", (small / "cache").string(), "--cache-disk",
                        "1GiB", "--block-size", "1M", "--cache-free-space", "0"});
  ASSERT_EQ(brim.code, 0) << brim.err;
  EXPECT_LT(free_bytes(), 2ull << 20);

  CliRun bad = Strata(
      {"warm", (dir_ / "src").string(), "--cache-dir", (small / "cache").string(), "--cache-free-space", "120%"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("strata: warm: --cache-free-space: expected a share of the file system such as 2% or "
                         "0.5%, or a size such as 20GiB, got \"120%\" (more than 100%)"),
            std::string::npos)
      << bad.err;
}

TEST_F(CliTest, MalformedUrlsGetAClearMessage) {
  struct Case {
    std::string url, expect;
  };
  for (const Case& c : std::vector<Case>{{"s3:/bucket/key", "expected \"://\""},
                                         {"ftp://host/key", "unsupported scheme \"ftp\""},
                                         {"s3:///key", "no bucket name"},
                                         {"s3://bad bucket/key", "bucket name may contain only"},
                                         {"file://relative/path", "absolute path"}}) {
    CliRun run = Strata({"stat", c.url});
    EXPECT_EQ(run.code, 2) << c.url << ": " << run.err;
    EXPECT_NE(run.err.find("malformed URL \"" + c.url + "\""), std::string::npos) << run.err;
    EXPECT_NE(run.err.find(c.expect), std::string::npos) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 2) << run.err;  // message + hint
  }
}

TEST_F(CliTest, HelpDocumentsExitCodes) {
  CliRun help = Strata({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("Exit codes: 0 ok"), std::string::npos) << help.out;
  for (const char* cmd : {"ls", "stat", "cat", "cp", "rm", "demo"}) {
    CliRun sub = Strata({cmd, "--help"});
    EXPECT_EQ(sub.code, 0) << cmd;
    EXPECT_NE(sub.out.find("Exit codes"), std::string::npos) << cmd << ": " << sub.out;
  }
}

TEST_F(CliTest, QuickDemoPrintsItsFigures) {
  CliRun demo = Strata({"demo", "--quick", "--out", (dir_ / "out").string()});
  ASSERT_EQ(demo.code, 0) << demo.out << demo.err;
  EXPECT_NE(demo.out.find("parallel ranged GETs"), std::string::npos) << demo.out;
  EXPECT_NE(demo.out.find("MB/s"), std::string::npos);
  EXPECT_NE(demo.out.find("files/s"), std::string::npos);
  EXPECT_NE(demo.out.find("demo finished in"), std::string::npos);
  std::string json = ReadFile(dir_ / "out" / "demo.json");
  EXPECT_NE(json.find("\"get_parallel_ranged_MBps\""), std::string::npos) << json;
}

// The names of the files a job reads are not always UTF-8; the report is written anyway (they
// become U+FFFD), by temp + rename into directories it creates, and a --json that cannot be
// replaced is an error that leaves no temp file behind.
TEST_F(CliTest, ProfileWritesItsReportWholeWhateverTheNames) {
  if (geteuid() != 0) GTEST_SKIP() << "strata profile outside a strata mount uses fanotify, which needs root";
  const fs::path data = dir_ / "data";
  const std::string odd = (data / "\xff\xfe.bin").string();
  WriteFile(odd, "bytes");
  const fs::path report = dir_ / "out" / "deeper" / "p.json";
  CliRun run = Strata({"profile", "--path", data.string(), "--json", report.string(), "-q", "--", "/bin/cat", odd});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "bytes");
  const auto json = nlohmann::json::parse(ReadFile(report), nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(json.is_object()) << ReadFile(report);
  ASSERT_TRUE(json["command"].is_array() && json["command"].size() == 2) << json.dump();
  EXPECT_NE(json["command"][1].get<std::string>().find("\xEF\xBF\xBD.bin"), std::string::npos) << json.dump();
  EXPECT_EQ(json.value("files", 0), 1) << json.dump();
  EXPECT_EQ(Tree(report.parent_path()).size(), 1u) << "a temp file was left beside the report";

  fs::create_directories(dir_ / "in-the-way");
  CliRun refused =
      Strata({"profile", "--path", data.string(), "--json", (dir_ / "in-the-way").string(), "-q", "--", "/bin/true"});
  EXPECT_EQ(refused.code, 1) << refused.err;
  EXPECT_NE(refused.err.find("in-the-way"), std::string::npos) << refused.err;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().find("in-the-way."), std::string::npos)
        << "left behind: " << entry.path();
  }
}

}  // namespace
