// The benchmarks' command lines: a bare --out name, an unwritable --out and a malformed number
// each end in a message and an exit code, never in an uncaught exception (std::terminate's
// SIGABRT). Each run is tiny: this checks the front door, not a speed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/subprocess.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

class BenchCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("STRATA_BINARY_DIR");
    ASSERT_NE(bin, nullptr) << "STRATA_BINARY_DIR not set (run through ctest)";
    bench_dir_ = fs::path(bin) / "bench";
    std::string pattern = (fs::temp_directory_path() / "strata-bench-cli-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Runs bench/<name> with `args` in the test's directory.
  testing::CommandResult Run(const std::string& name, std::vector<std::string> args) {
    args.insert(args.begin(), (bench_dir_ / name).string());
    testing::RunOptions options;
    options.cwd = dir_.string();
    options.timeout = std::chrono::minutes(2);
    auto result = testing::RunCommand(args, {}, std::nullopt, options);
    EXPECT_TRUE(result.ok()) << result.status();
    testing::CommandResult not_run;
    not_run.exit_code = -1;
    return result.value_or(not_run);
  }
  // The options of a cache_bench run that takes well under a second.
  std::vector<std::string> TinyCacheBench(const std::string& out) const {
    return {"--objects", "1", "--size-mib", "1", "--dir", (dir_ / "cache").string(), "--out", out};
  }

  fs::path bench_dir_, dir_;
};

TEST_F(BenchCliTest, BareOutNameIsWrittenInTheWorkingDirectory) {
  const auto run = Run("cache_bench", TinyCacheBench("cache.json"));
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  std::ifstream in(dir_ / "cache.json");
  ASSERT_TRUE(in) << "no cache.json in the working directory";
  const auto json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(json.is_discarded());
  EXPECT_EQ(json.value("bench", ""), "cache_bench");
  EXPECT_EQ(json.value("objects", 0), 1);
}

TEST_F(BenchCliTest, UnwritableOutIsAnErrorNotAnAbort) {
  std::ofstream(dir_ / "a-file") << "in the way\n";
  const auto run = Run("cache_bench", TinyCacheBench((dir_ / "a-file" / "cache.json").string()));
  EXPECT_EQ(run.exit_code, 1) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("cannot write the results"), std::string::npos) << run.stderr_text;
  std::ifstream in(dir_ / "a-file");
  std::string kept((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(kept, "in the way\n");
}

TEST_F(BenchCliTest, MalformedNumbersAreUsageErrorsNotAborts) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"cache_bench", {"--objects", "many"}},
      {"cache_bench", {"--size-mib", "4x"}},
      {"ckpt_bench", {"--gib", "big"}},
      {"ckpt_bench", {"--reps", "-"}},
      {"shards_bench", {"--shard-size-mib", "sixty-four"}},
      // The bad flag first (the message names it); the rest would make a valid run against a
      // port nothing listens on.
      {"gateway_bench",
       {"--clients", "many", "--endpoint", "http://127.0.0.1:1", "--bucket", "b", "--keys", "k",
        "--requests-per-client", "1"}},
      {"gateway_bench", {"--seconds", "1x", "--endpoint", "http://127.0.0.1:1", "--bucket", "b", "--keys", "k"}},
      {"gateway_bench",
       {"--requests-per-client", "-3", "--endpoint", "http://127.0.0.1:1", "--bucket", "b", "--keys", "k"}}};
  for (const auto& [name, args] : cases) {
    const auto run = Run(name, args);
    const std::string what = name + " " + args[0] + " " + args[1];
    EXPECT_GT(run.exit_code, 0) << what;
    EXPECT_LT(run.exit_code, 128) << what << " ended by a signal: " << run.stderr_text;
    EXPECT_NE(run.stderr_text.find(args[0]), std::string::npos) << what << ": " << run.stderr_text;
  }
}

}  // namespace
}  // namespace strata
