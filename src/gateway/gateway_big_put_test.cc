// Large single PUTs are not held in memory: N concurrent put_object calls of
// SIZE bytes each (boto3) through `strata serve` over a file:// backend; the
// gateway's peak RSS (VmHWM) stays under the in-flight budget plus a fixed
// overhead, and every object reads back byte-exact (compared by SHA-256 in
// testdata/big_puts.py). 4 x 256 MiB by default; 16 x 1 GiB with
// STRATA_STRESS=1.
#include <gtest/gtest.h>

#include "gateway/serve_process_test_util.h"

namespace strata::gateway {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKey = "GWBIGPUTKEY";
constexpr const char* kSecret = "gw-big-put-secret";
constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kBudget = 128 * kMiB;    // --max-inflight
constexpr uint64_t kCacheRam = 32 * kMiB;   // --cache-ram (write-through blocks may land there)
constexpr uint64_t kOverhead = 128 * kMiB;  // code, threads' stacks and arenas, client buffers

TEST(GatewayBigPutTest, ConcurrentLargeSinglePutsStayUnderTheBudget) {
  bool stress = std::getenv("STRATA_STRESS") && std::string(std::getenv("STRATA_STRESS")) == "1";
  const int n = stress ? 16 : 4;
  const uint64_t size = stress ? 1024 * kMiB : 256 * kMiB;
  fs::path dir = fs::temp_directory_path() / ("strata-gwbig-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "data" / "big");
  fs::create_directories(dir / "spill");
  auto gw =
      ServeProcess::Start({"--backend", "file://" + (dir / "data").string(), "--listen", "127.0.0.1:0", "--access-key",
                           kKey, "--secret-key", kSecret, "--cache-ram", std::to_string(kCacheRam / kMiB) + "MiB",
                           "--max-inflight", std::to_string(kBudget / kMiB) + "MiB"},
                          {{"TMPDIR", (dir / "spill").string()}}, dir / "gateway.out");
  ASSERT_TRUE(gw.ok()) << gw.status();
  const char* src = std::getenv("STRATA_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run under ctest (STRATA_SOURCE_DIR)";
  testing::EnvOverrides env = testing::WithoutCaBundles();
  env.push_back({"AWS_CONFIG_FILE", "/dev/null"});
  env.push_back({"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"});
  testing::RunOptions ro;
  ro.timeout = std::chrono::minutes(stress ? 60 : 15);
  auto r = testing::RunCommand({"/usr/bin/python3", std::string(src) + "/src/gateway/testdata/big_puts.py",
                                (*gw)->url(), kKey, kSecret, "big", std::to_string(n), std::to_string(size)},
                               env, std::nullopt, ro);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->stdout_text << r->stderr_text << "\ngateway log:\n" << (*gw)->Log();
  EXPECT_EQ(r->stdout_text, std::to_string(n) + " object(s) ok\n");
  uint64_t hwm = (*gw)->StatusBytes("VmHWM");
  ASSERT_GT(hwm, 0u);
  std::printf("peak RSS (VmHWM) of strata serve: %.1f MiB for %d x %.0f MiB PUTs (budget %.0f MiB)\n",
              static_cast<double>(hwm) / kMiB, n, static_cast<double>(size) / kMiB,
              static_cast<double>(kBudget) / kMiB);
  EXPECT_LT(hwm, kBudget + kCacheRam + kOverhead) << "the bodies were held in memory";
  // The temp files went with their requests.
  EXPECT_TRUE(fs::is_empty(dir / "spill"));
  EXPECT_EQ((*gw)->Stop(), 0) << (*gw)->Log();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::gateway
