// Integration tests for `strata bench train`: run the built binary on tiny
// generated datasets in a temporary directory and check the JSON it writes
// (every sample delivered once per epoch, AU's invariants, a slow data path
// starving the accelerators, the run rules' verdicts: a dataset that fits in
// the loaders' memory is not valid, a small run under small budgets is) and
// its exit codes on bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "testing/strata_binary.h"

namespace {
namespace fs = std::filesystem;

using strata::testing::CliRun;

class BenchTrainTest : public strata::testing::StrataBinaryTest {
 protected:
  CliRun Strata(std::vector<std::string> args) {
    args.insert(args.begin(), {"bench", "train"});
    return RunStrata(args, std::chrono::seconds(60), {{"TMPDIR", dir_.string()}});
  }

  nlohmann::json ReadJson(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  }

  // 96 samples of 4 KiB in shards of 16, batch 8 per accelerator.
  std::vector<std::string> Tiny(const std::string& json, const std::string& compute,
                                const std::string& per_shard = "16") {
    return {"--workload",    "resnet50", "--samples",          "96",
            "--record-size", "4KiB",     "--samples-per-file", per_shard,
            "--batch",       "8",        "--compute-time",     compute,
            "--json",        json,       "--cache-dir",        (dir_ / "cache").string()};
  }
};

TEST_F(BenchTrainTest, EveryEpochDeliversTheDatasetAndAuIsAFraction) {
  const std::string json = (dir_ / "au.json").string();
  auto args = Tiny(json, "0.01");
  for (const char* a : {"--accelerators", "1,2,4", "--epochs", "2", "--no-stop", "--emulate", "none", "--quick"})
    args.push_back(a);
  CliRun run = Strata(args);
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("largest N with AU >= 90%"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--quick: a smoke run on 96 samples; its figures are not valid"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("reproduce: strata bench train --workload resnet50"), std::string::npos) << run.out;

  nlohmann::json doc = ReadJson(json);
  ASSERT_TRUE(doc.is_object()) << "not JSON: " << json;
  EXPECT_EQ(doc["tool"], "strata");
  EXPECT_EQ(doc["dataset"]["samples"], 96);
  EXPECT_EQ(doc["dataset"]["shards"], 6);
  EXPECT_EQ(doc["workload"]["batch"], 8);
  ASSERT_EQ(doc["results"].size(), 6u);  // 3 N x 2 epochs, none skipped with --no-stop
  const size_t expect_n[] = {1, 1, 2, 2, 4, 4};
  for (size_t i = 0; i < 6; ++i) {
    const auto& r = doc["results"][i];
    SCOPED_TRACE(r.dump());
    const size_t n = r["accelerators"].get<size_t>();
    EXPECT_EQ(n, expect_n[i]);
    EXPECT_EQ(r["epoch"], i % 2 + 1);
    EXPECT_EQ(r["samples"], 96);  // every sample exactly once per epoch, across ranks
    EXPECT_EQ(r["bytes"], 96 * 4096);
    EXPECT_EQ(r["steps"], 96 / 8 / n);
    EXPECT_DOUBLE_EQ(r["record_size"].get<double>(), 4096.0);
    EXPECT_EQ(r["cold"], i % 2 == 0);
    // A smoke run is never valid (and these epochs are far too short anyway).
    EXPECT_EQ(r["valid"], false);
    EXPECT_EQ(r["not_valid"][0], "--quick smoke run");
    // Every step holds one full compute sleep, so AU can never exceed 1.
    const double au = r["au"].get<double>();
    EXPECT_GT(au, 0.0);
    EXPECT_LE(au, 1.0 + 1e-9);
    EXPECT_NEAR(r["mib_per_s"].get<double>(), r["samples_per_s"].get<double>() * 4096 / 1048576, 1e-6);
    EXPECT_EQ(r["sources"].size(), n);
    EXPECT_GE(r["au_dlio"].get<double>(), 0.0);
    EXPECT_TRUE(r["realtime_accelerators"].is_boolean()) << r.dump();  // best effort: reported either way
  }
  // Epoch 1 at each N starts from an empty cache; epoch 2 is served by the
  // cache directory the N ranks share (the node's local disk).
  for (size_t i = 0; i < 6; ++i) {
    int fetched = 0, cached = 0;
    for (const auto& s : doc["results"][i]["sources"]) {
      fetched += s["shards_fetched"].get<int>();
      // (a warm epoch's first shards may have come through the cache while the epoch before ended)
      cached += s["shards_from_cache"].get<int>() + s["shards_from_previous_epoch"].get<int>();
    }
    if (i % 2 == 0) {
      EXPECT_GE(fetched, 6) << "cold epoch " << i;
    } else {
      EXPECT_EQ(fetched, 0) << "warm epoch " << i;
      EXPECT_GE(cached, 6) << "warm epoch " << i;
    }
  }
  EXPECT_EQ(doc["max_accelerators"].size(), 2u);
  EXPECT_EQ(doc["max_accelerators"]["1"], 0);
  EXPECT_EQ(doc["max_accelerators"]["2"], 0);
  EXPECT_EQ(doc["quick"], true);
}

// 1 KiB samples, batch 2, 2 ms of compute: 2400 samples are 1200 steps
// (2.4 s) at N=1, long enough; an emulated store with a little latency.
std::vector<std::string> RuleSized(const std::string& json) {
  return {"--workload", "resnet50", "--record-size",  "1KiB",  "--samples-per-file", "8",
          "--batch",    "2",        "--compute-time", "0.002", "--accelerators",     "1",
          "--epochs",   "1",        "--threshold",    "1",     "--emulate",          "ttfb=1ms,bw=1GB/s",
          "--json",     json};
}

// With the default budgets (a 1 GiB prefetch per rank) the 2.4 MB dataset
// fits in the loaders' memory: whatever its AU, the result is not valid and
// not counted toward the largest N.
TEST_F(BenchTrainTest, ADatasetThatFitsInMemoryIsNotValid) {
  const std::string json = (dir_ / "fits.json").string();
  auto args = RuleSized(json);
  for (const char* a : {"--samples", "2400"}) args.push_back(a);
  CliRun run = Strata(args);
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("not valid: fits in memory"), std::string::npos) << run.out;
  nlohmann::json doc = ReadJson(json);
  ASSERT_TRUE(doc.is_object()) << "not JSON: " << json;
  ASSERT_EQ(doc["results"].size(), 1u);
  const auto& r = doc["results"][0];
  SCOPED_TRACE(r.dump());
  EXPECT_GE(r["au"].get<double>(), 0.01);  // it passes the threshold ...
  EXPECT_EQ(r["valid"], false);            // ... but only the memory rule fails, and it is not counted
  ASSERT_EQ(r["not_valid"].size(), 1u);
  EXPECT_EQ(r["not_valid"][0].get<std::string>().rfind("fits in memory", 0), 0u);
  EXPECT_GE(r["steps"].get<int>(), 100);
  EXPECT_EQ(doc["max_accelerators"]["1"], 0);
  EXPECT_NE(run.out.find("epoch 1 (cold): 0"), std::string::npos) << run.out;
}

// The same workload with small budgets, and --samples left to the rules: a
// valid run, counted.
TEST_F(BenchTrainTest, ASmallRunWithSmallBudgetsIsValid) {
  const std::string json = (dir_ / "valid.json").string();
  auto args = RuleSized(json);
  for (const char* a : {"--prefetch-bytes", "16KiB", "--cache-ram", "16KiB"}) args.push_back(a);
  CliRun run = Strata(args);
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  nlohmann::json doc = ReadJson(json);
  ASSERT_TRUE(doc.is_object()) << "not JSON: " << json;
  // 2 s of 2 ms steps = 1000 steps of 2; the loaders' 5 x 34 KiB is less.
  EXPECT_EQ(doc["dataset"]["samples"], 2000);
  EXPECT_EQ(doc["rules"]["min_steps"], 100);
  EXPECT_EQ(doc["rules"]["memory_factor"], 5.0);
  ASSERT_EQ(doc["results"].size(), 1u);
  const auto& r = doc["results"][0];
  SCOPED_TRACE(r.dump());
  EXPECT_EQ(r["valid"], true);
  EXPECT_TRUE(r["not_valid"].empty());
  EXPECT_EQ(r["steps"], 1000);
  EXPECT_GE(r["measured_s"].get<double>(), 2.0);
  EXPECT_EQ(r["cold"], true);
  EXPECT_GE(r["store_bytes_in_window"].get<uint64_t>(), r["bytes"].get<uint64_t>());
  EXPECT_GE(r["bytes"].get<uint64_t>() / r["loader_memory_bytes"].get<uint64_t>(), 5u);
  EXPECT_EQ(doc["max_accelerators"]["1"], 1);
  EXPECT_NE(run.out.find("epoch 1 (cold): 1"), std::string::npos) << run.out;
}

// The disk is checked before anything is written, and the error names the sizes.
TEST_F(BenchTrainTest, ADatasetLargerThanTheDiskFailsUpFront) {
  CliRun run = Strata({"--samples", "1000000000", "--record-size", "1MiB", "--accelerators", "1"});
  EXPECT_EQ(run.code, 1) << run.out << run.err;
  EXPECT_NE(run.err.find("needs"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("available"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("1000000000 samples of 1.0 MiB"), std::string::npos) << run.err;
  EXPECT_EQ(run.out.find("generated"), std::string::npos) << run.out;
}

// --no-cache: every epoch reads every shard from the store, none from a cache.
TEST_F(BenchTrainTest, NoCacheMakesEveryEpochCold) {
  const std::string json = (dir_ / "nocache.json").string();
  auto args = Tiny(json, "0.001");
  for (const char* a : {"--accelerators", "1,2", "--epochs", "3", "--no-stop", "--emulate", "none", "--no-cache"})
    args.push_back(a);
  CliRun run = Strata(args);
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_EQ(run.out.find("(warm cache)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--no-cache"), std::string::npos) << run.out;  // in the reproduce line
  nlohmann::json doc = ReadJson(json);
  ASSERT_TRUE(doc.is_object()) << "not JSON: " << json;
  EXPECT_EQ(doc["loader"]["cache"], "none (--no-cache)");
  ASSERT_EQ(doc["results"].size(), 6u);
  for (const auto& r : doc["results"]) {
    SCOPED_TRACE(r.dump());
    EXPECT_EQ(r["samples"], 96);
    int fetched = 0, cached = 0;
    for (const auto& s : r["sources"]) {
      fetched += s["shards_fetched"].get<int>();
      cached += s["shards_from_cache"].get<int>();
    }
    // Each of the 6 shards from the store at least once per epoch; ranks of one
    // epoch may share a fetch (one RAM cache per epoch), never an earlier epoch's.
    EXPECT_GE(fetched, 6);
    if (r["accelerators"] == 1) {
      EXPECT_EQ(cached, 0);
    }
  }
}

TEST_F(BenchTrainTest, ASlowDataPathStarvesTheAccelerators) {
  // One shard per batch, one shard prefetched, 150 ms to first byte per
  // request: each 2 ms step waits for a fetch, so AU stays far below 50%.
  const std::string slow = (dir_ / "slow.json").string();
  auto args = Tiny(slow, "0.002", "8");
  for (const char* a :
       {"--accelerators", "1", "--epochs", "1", "--prefetch-shards", "1", "--emulate", "ttfb=150ms,bw=1MB/s"}) {
    args.push_back(a);
  }
  CliRun run = Strata(args);
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  nlohmann::json doc = ReadJson(slow);
  ASSERT_EQ(doc["results"].size(), 1u) << doc.dump();
  EXPECT_LT(doc["results"][0]["au"].get<double>(), 0.5) << doc.dump();
  EXPECT_EQ(doc["max_accelerators"]["1"], 0);
  EXPECT_NE(run.out.find("epoch 1 (cold): 0"), std::string::npos) << run.out;
}

TEST_F(BenchTrainTest, GeneratesFilesAndShardsThenReadsAnExistingDataset) {
  const fs::path data = dir_ / "data";
  auto gen = Strata({"--workload", "cosmoflow", "--samples", "12", "--record-size", "3000", "--generate-to",
                     data.string() + "/", "--generate-only"});
  ASSERT_EQ(gen.code, 0) << gen.out << gen.err;
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(data / "files")) files += e.path().extension() == ".bin";
  EXPECT_EQ(files, 12u);
  EXPECT_TRUE(fs::exists(data / "shards" / "manifest.json"));
  // The same parameters again: the dataset is reused, not written again.
  const auto written = fs::last_write_time(data / "shards" / "manifest.json");
  auto again = Strata({"--workload", "cosmoflow", "--samples", "12", "--record-size", "3000", "--generate-to",
                       data.string() + "/", "--generate-only"});
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("reusing the dataset"), std::string::npos) << again.out;
  EXPECT_EQ(fs::last_write_time(data / "shards" / "manifest.json"), written);

  const std::string json = (dir_ / "url.json").string();
  auto run = Strata({"--workload", "cosmoflow", "--url", (data / "shards").string() + "/", "--compute-time", "0.001",
                     "--accelerators", "1,2", "--epochs", "1", "--json", json});
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  nlohmann::json doc = ReadJson(json);
  EXPECT_EQ(doc["dataset"]["samples"], 12);
  EXPECT_EQ(doc["dataset"]["shards"], 12);  // cosmoflow: one sample per file
  ASSERT_GE(doc["results"].size(), 1u);
  EXPECT_EQ(doc["results"][0]["samples"], 12);
  EXPECT_EQ(doc["results"][0]["record_size"], 3000.0);
}

// The cache flag set (cli/cache_flags.h): the old spellings --ram-cache and
// --cache-limit still work, with one deprecation line each, and the
// reproduce line spells the new flag; block and group flags are refused.
TEST_F(BenchTrainTest, TakesTheCacheFlagsAndTheOldSpellings) {
  auto args = Tiny((dir_ / "old.json").string(), "0.001");
  for (const char* a :
       {"--accelerators", "1", "--epochs", "1", "--emulate", "none", "--ram-cache", "64MiB", "--cache-limit", "1GiB"})
    args.push_back(a);
  CliRun run = Strata(args);
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_NE(run.err.find("strata: bench train: --ram-cache is deprecated; use --cache-ram (the same value)\n"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("strata: bench train: --cache-limit is deprecated; use --cache-disk (the same value)\n"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.out.find("RAM cache 64.0 MiB)"), std::string::npos) << run.out;  // the peak RSS line
  EXPECT_NE(run.out.find(" --cache-ram 64MiB "), std::string::npos) << run.out;  // the reproduce line
  EXPECT_EQ(run.out.find("--ram-cache"), std::string::npos) << run.out;

  for (const char* flag : {"--block-size", "--cache-group"}) {
    CliRun refused = Strata({flag, "1MiB"});
    EXPECT_EQ(refused.code, 2) << flag;
    EXPECT_NE(refused.err.find(std::string("strata: bench train: ") + flag + ": not supported by bench train"),
              std::string::npos)
        << refused.err;
  }
}

TEST_F(BenchTrainTest, RejectsBadInputWithUsageAndNotFoundCodes) {
  EXPECT_EQ(Strata({"--workload", "bert"}).code, 2);
  EXPECT_EQ(Strata({"--accelerator", "tpu"}).code, 2);
  EXPECT_EQ(Strata({"--accelerators", "1,x", "--samples", "8"}).code, 2);
  EXPECT_EQ(Strata({"--threshold", "150"}).code, 2);
  CliRun small = Strata({"--samples", "6", "--record-size", "1KiB", "--batch", "8", "--emulate", "none"});
  EXPECT_EQ(small.code, 2) << small.out << small.err;
  EXPECT_NE(small.err.find("needs at least 8 samples"), std::string::npos) << small.err;
  CliRun missing = Strata({"--url", (dir_ / "nothing-here").string()});
  EXPECT_EQ(missing.code, 3) << missing.out << missing.err;
}

}  // namespace
