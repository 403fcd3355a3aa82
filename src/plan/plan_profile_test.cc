// `strata profile` and `strata plan` end to end: a small Python reader over a
// local directory with known access patterns, profiled through fanotify (needs
// root), the report's counts and verdicts checked, then `strata plan
// --from-profile`; plan's input files and their errors.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "testing/strata_binary.h"

namespace strata::plan {

using testing::StrataBinaryTest;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ProfileTest : public StrataBinaryTest {
 protected:
  void SetUp() override {
    StrataBinaryTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "strata profile needs root (fanotify)";
    if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no python3";
  }
  void Write(const fs::path& p, size_t size) {
    fs::create_directories(p.parent_path());
    std::ofstream f(p, std::ios::binary);
    f << std::string(size, 'x');
  }
  json Profile(const std::vector<std::string>& command) {
    std::vector<std::string> args{"profile", "--path", (dir_ / "data").string(), "--json", (dir_ / "p.json").string(),
                                  "--"};
    args.insert(args.end(), command.begin(), command.end());
    auto run = RunStrata(args, std::chrono::seconds(120));
    EXPECT_EQ(run.code, 0) << run.out << run.err;
    std::ifstream f(dir_ / "p.json");
    return json::parse(f, nullptr, false);
  }
};

// 120 small files in two directories, each read whole in 3 epochs; one file
// opened and never read; one file outside the watched directory.
TEST_F(ProfileTest, SmallFilesReadWholeOverEpochs) {
  uint64_t total = 0;
  for (int i = 0; i < 120; ++i) {
    const size_t size = 3000 + size_t(i) * 10;
    Write(dir_ / "data" / (i % 2 ? "a" : "b") / ("s" + std::to_string(i)), size);
    total += size;
  }
  Write(dir_ / "data" / "unread", 100);
  Write(dir_ / "outside", 100);
  const std::string script =
      "import os, sys\n"
      "root = sys.argv[1]\n"
      "files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.startswith('s'))\n"
      "open(os.path.join(root, 'unread'), 'rb').close()\n"
      "open(sys.argv[2], 'rb').read()\n"
      "for epoch in range(3):\n"
      "    for p in files:\n"
      "        with open(p, 'rb') as fh: fh.read()\n";
  std::ofstream(dir_ / "reader.py") << script;
  json r = Profile({"python3", (dir_ / "reader.py").string(), (dir_ / "data").string(), (dir_ / "outside").string()});
  ASSERT_FALSE(r.is_discarded());
  EXPECT_EQ(r["files"], 120);
  EXPECT_EQ(r["files_opened_not_read"], 1);
  EXPECT_EQ(r["unique_bytes"].get<double>(), double(total));
  EXPECT_EQ(r["read_opens"].get<double>(), 360);  // opens are exact
  EXPECT_EQ(r["reads_per_file"]["mean"].get<double>(), 3);
  EXPECT_EQ(r["reads_per_file"]["max"], 3);
  EXPECT_NEAR(r["rereads"]["fraction"].get<double>(), 2.0 / 3, 1e-9);
  EXPECT_EQ(r["object_store"]["requests"].get<double>(), 360);
  uint64_t in_histogram = 0;
  for (const auto& b : r["size_histogram"]) in_histogram += b["count"].get<uint64_t>();
  EXPECT_EQ(in_histogram, 120u);
  std::vector<std::string> verdicts;
  for (const auto& v : r["verdicts"]) verdicts.push_back(v["verdict"]);
  EXPECT_NE(std::find(verdicts.begin(), verdicts.end(), "pack into shards"), verdicts.end()) << r["verdicts"];
  EXPECT_NE(std::find(verdicts.begin(), verdicts.end(), "cache locally"), verdicts.end()) << r["verdicts"];

  // The plan takes the dataset from the profile.
  auto plan = RunStrata({"plan", "--from-profile", (dir_ / "p.json").string(), "--accelerators", "1", "--json"},
                        std::chrono::seconds(30));
  ASSERT_EQ(plan.code, 0) << plan.err;
  json p = json::parse(plan.out, nullptr, false);
  ASSERT_FALSE(p.is_discarded()) << plan.out;
  EXPECT_EQ(p["input"]["dataset"]["bytes"].get<double>(), double(total));
  EXPECT_EQ(p["input"]["dataset"]["objects"], 120);
}

// One large (sparse) file read at random offsets: one open, no shard verdict.
TEST_F(ProfileTest, LargeFileReadAtRandomOffsets) {
  fs::create_directories(dir_ / "data");
  { std::ofstream f(dir_ / "data" / "big.bin"); }
  fs::resize_file(dir_ / "data" / "big.bin", 128ull << 20);
  const std::string script =
      "import os, random, sys\n"
      "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
      "for _ in range(500): os.pread(fd, 4096, random.randrange(0, (128 << 20) - 4096))\n"
      "os.close(fd)\n";
  std::ofstream(dir_ / "reader.py") << script;
  json r = Profile({"python3", (dir_ / "reader.py").string(), (dir_ / "data" / "big.bin").string()});
  ASSERT_FALSE(r.is_discarded());
  EXPECT_EQ(r["files"], 1);
  EXPECT_EQ(r["read_opens"].get<double>(), 1);
  EXPECT_GE(r["read_events"].get<double>(), 1);
  ASSERT_FALSE(r["verdicts"].empty());
  EXPECT_EQ(r["verdicts"][0]["verdict"], "large files: ranged reads") << r["verdicts"];
  for (const auto& v : r["verdicts"]) EXPECT_NE(v["verdict"], "pack into shards");
}

TEST_F(ProfileTest, DurationEndsALongCommandAndKeepsTheReport) {
  Write(dir_ / "data" / "s0", 1000);
  const std::string script =
      "import sys, time\n"
      "while True:\n"
      "    open(sys.argv[1], 'rb').read()\n"
      "    time.sleep(0.01)\n";
  std::ofstream(dir_ / "reader.py") << script;
  auto run = RunStrata({"profile", "--path", (dir_ / "data").string(), "--duration", "1s", "--json", "-", "--",
                        "python3", (dir_ / "reader.py").string(), (dir_ / "data" / "s0").string()},
                       std::chrono::seconds(60));
  ASSERT_EQ(run.code, 0) << run.err;
  json r = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << run.out;
  EXPECT_TRUE(r["interrupted"].get<bool>());
  EXPECT_EQ(r["files"], 1);
  EXPECT_GE(r["read_opens"].get<double>(), 2);
}

TEST_F(ProfileTest, MissingPathAndCommandAreErrors) {
  auto run = RunStrata({"profile", "--path", (dir_ / "nope").string(), "--", "true"}, std::chrono::seconds(30));
  EXPECT_EQ(run.code, 3) << run.err;  // not found
  EXPECT_NE(run.err.find("not a directory"), std::string::npos) << run.err;
  fs::create_directories(dir_ / "data");
  run = RunStrata({"profile", "--path", (dir_ / "data").string(), "--", "/nonexistent/cmd"}, std::chrono::seconds(30));
  EXPECT_NE(run.code, 0);
}

class PlanCommandTest : public StrataBinaryTest {};

TEST_F(PlanCommandTest, ConfigFileFlagsAndJson) {
  std::ofstream(dir_ / "plan.json") << R"({"dataset": {"samples": 100000},
      "accelerators": {"count": 8, "workload": "resnet50", "price_per_hour": 2},
      "store": {"preset": "r2"}, "epochs": 3})";
  // The flag wins over the file: 16 accelerators.
  auto run = RunStrata({"plan", "-c", (dir_ / "plan.json").string(), "--accelerators", "16", "--json"},
                       std::chrono::seconds(30));
  ASSERT_EQ(run.code, 0) << run.err;
  json p = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(p.is_discarded()) << run.out;
  EXPECT_EQ(p["input"]["accelerators"]["count"], 16);
  EXPECT_EQ(p["input"]["store"]["preset"], "r2");
  EXPECT_EQ(p["input"]["store"]["egress_per_gb"], 0);
  ASSERT_EQ(p["options"].size(), 4u);
  EXPECT_NEAR(p["needed_bytes_s"].get<double>(), 16 * 400 / 0.224 * 114660, 1e3);
  run = RunStrata({"plan", "-c", (dir_ / "plan.json").string()}, std::chrono::seconds(30));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("recommendation:"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("list prices of"), std::string::npos) << run.out;
}

// The same plan as YAML and as JSON: the same report.
TEST_F(PlanCommandTest, YamlConfigEqualsJsonConfig) {
  std::ofstream(dir_ / "plan.json") << R"({"dataset": {"bytes": "50GB", "samples": 100000,
      "histogram": [{"le": "512KiB", "count": 100000}]},
      "accelerators": {"count": 8, "workload": "resnet50", "price_per_hour": 2},
      "store": {"preset": "r2", "first_byte_latency": "80ms", "in_region": true},
      "checkpoint": {"bytes": "10GB", "interval": "1h", "bandwidth": "2GB/s", "mtbf": "24h"}, "epochs": 3})";
  std::ofstream(dir_ / "plan.yaml") << "# the same plan\n"
                                       "dataset:\n"
                                       "  bytes: 50GB\n"
                                       "  samples: 100000\n"
                                       "  histogram:\n"
                                       "    - {le: 512KiB, count: 100000}\n"
                                       "accelerators: {count: 8, workload: resnet50, price_per_hour: 2}\n"
                                       "store:\n"
                                       "  preset: 'r2'   # quoted or not\n"
                                       "  first_byte_latency: 80ms\n"
                                       "  in_region: true\n"
                                       "checkpoint: {bytes: 10GB, interval: 1h, bandwidth: 2GB/s, mtbf: 24h}\n"
                                       "epochs: 3\n";
  auto from_json = RunStrata({"plan", "-c", (dir_ / "plan.json").string(), "--json"}, std::chrono::seconds(30));
  auto from_yaml = RunStrata({"plan", "-c", (dir_ / "plan.yaml").string(), "--json"}, std::chrono::seconds(30));
  ASSERT_EQ(from_json.code, 0) << from_json.err;
  ASSERT_EQ(from_yaml.code, 0) << from_yaml.err;
  json j = json::parse(from_json.out, nullptr, false), y = json::parse(from_yaml.out, nullptr, false);
  ASSERT_FALSE(y.is_discarded()) << from_yaml.out;
  EXPECT_EQ(y["input"]["store"]["preset"], "r2");
  EXPECT_EQ(y["input"]["accelerators"]["count"], 8);
  EXPECT_EQ(j, y);
}

TEST_F(PlanCommandTest, BadYamlNamesTheLineAndField) {
  std::ofstream(dir_ / "bad.yaml") << "dataset:\n  samples: 1000\nstore:\n  preset: r2\n  first_byte_latency: fast\n";
  auto run = RunStrata({"plan", "-c", (dir_ / "bad.yaml").string()}, std::chrono::seconds(30));
  EXPECT_EQ(run.code, 2) << run.err;
  EXPECT_NE(run.err.find("bad.yaml: line 5: store.first_byte_latency: expected a duration"), std::string::npos)
      << run.err;
  std::ofstream(dir_ / "broken.yaml") << "store:\n  preset: r2\n   bad: [1, 2\n";
  run = RunStrata({"plan", "-c", (dir_ / "broken.yaml").string()}, std::chrono::seconds(30));
  EXPECT_EQ(run.code, 2) << run.err;
  EXPECT_NE(run.err.find("not valid YAML"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("line 3"), std::string::npos) << run.err;
  std::ofstream(dir_ / "twice.yaml") << "epochs: 2\nepochs: 3\n";
  run = RunStrata({"plan", "-c", (dir_ / "twice.yaml").string()}, std::chrono::seconds(30));
  EXPECT_EQ(run.code, 2) << run.err;
  EXPECT_NE(run.err.find("line 2: epochs: given twice"), std::string::npos) << run.err;
}

TEST_F(PlanCommandTest, BadInputsNameTheFieldAndExitWithUsage) {
  std::ofstream(dir_ / "bad.json") << R"({"store": {"first_byte_latency": "fast"}})";
  auto run = RunStrata({"plan", "-c", (dir_ / "bad.json").string()}, std::chrono::seconds(30));
  EXPECT_EQ(run.code, 2) << run.err;
  EXPECT_NE(run.err.find("bad.json: store.first_byte_latency: expected a duration"), std::string::npos) << run.err;
  std::ofstream(dir_ / "broken.json") << R"({"store": )";
  run = RunStrata({"plan", "-c", (dir_ / "broken.json").string()}, std::chrono::seconds(30));
  EXPECT_EQ(run.code, 2) << run.err;
  EXPECT_NE(run.err.find("not valid JSON"), std::string::npos) << run.err;
  run = RunStrata({"plan", "-c", (dir_ / "missing.json").string()}, std::chrono::seconds(30));
  EXPECT_EQ(run.code, 3) << run.err;
  run = RunStrata({"plan", "--samples", "100", "--workload", "resnet50", "--nvme", "lots"}, std::chrono::seconds(30));
  EXPECT_EQ(run.code, 2) << run.err;
  EXPECT_NE(run.err.find("node.nvme: expected a size"), std::string::npos) << run.err;
  std::ofstream(dir_ / "notbench.json") << R"({"results": []})";
  run = RunStrata({"plan", "--from-bench", (dir_ / "notbench.json").string()}, std::chrono::seconds(30));
  EXPECT_EQ(run.code, 2) << run.err;
  EXPECT_NE(run.err.find("workload: missing"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace strata::plan
