// `strata mount` over a backend that stops answering (issue 15, item 8): Ceph
// RGW behind the nginx cloud proxy, which the test freezes with SIGSTOP on its
// process group (connections accepted, nothing answered), thaws with SIGCONT,
// and finally stops (connections refused). Real `cat`s, each in a child
// process with a deadline, read through the mount: a cached file whose
// attributes expired is served byte-exact within --revalidate-timeout, an
// uncached one fails with EIO within --read-timeout and at once right after
// (the failed-block backoff), the mount stays up, and the uncached file reads
// byte-exact once the backend answers again. One "mount hung backend ..."
// line per case carries the figures quoted in the README.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "object/store_url.h"
#include "testing/background_process.h"
#include "testing/s3_server.h"

namespace strata::fuse {
namespace {

namespace stdfs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

// Short bounds so the test runs in seconds; the slack covers a loaded 2-core machine
// and stays far below the backend client's own 30 s stall timeout x 6 attempts.
constexpr double kTtl = 1, kRevalidate = 1, kReadTimeout = 5, kSlack = 4;
constexpr double kBackoff = 5;  // FsOptions::failed_read_backoff (no flag)

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::string Fmt(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", seconds);
  return buf;
}

struct Cat {
  bool finished = false;  // false: the child was killed at its deadline
  testing::CommandResult result;
  double seconds = 0;
  bool Exact(const std::string& want) const { return finished && result.exit_code == 0 && result.stdout_text == want; }
  bool Eio() const {
    return finished && result.exit_code != 0 && result.stderr_text.find("Input/output error") != std::string::npos;
  }
};

class MountHungBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("STRATA_BINARY_DIR");
    ASSERT_NE(bin, nullptr) << "run under ctest (STRATA_BINARY_DIR)";
    strata_ = std::string(bin) + "/src/cli/strata";
    ASSERT_TRUE(stdfs::exists(strata_)) << strata_;
    ASSERT_TRUE(stdfs::exists("/dev/fuse"));
    dir_ = stdfs::temp_directory_path() / ("strata-mounthung-" + std::to_string(::getpid()));
    stdfs::remove_all(dir_);
    stdfs::create_directories(dir_ / "mnt");
    mnt_ = (dir_ / "mnt").string();
    auto server = testing::S3TestServer::Start(testing::S3TestServer::Kind::kRgw);
    ASSERT_TRUE(server.ok()) << server.status();
    rgw_ = std::move(server).value();
    auto proxy = testing::CloudProxy::Start(rgw_->endpoint(), {.ttfb_ms = 0, .rate = "0"});
    ASSERT_TRUE(proxy.ok()) << proxy.status();
    proxy_ = std::move(proxy).value();
    // Seeded straight into RGW (past the proxy), with the server's credentials.
    for (const auto& [k, v] : rgw_->ClientEnv()) v ? ::setenv(k.c_str(), v->c_str(), 1) : ::unsetenv(k.c_str());
    auto store = object::OpenStore(rgw_->StoreUrl("hung"));
    ASSERT_TRUE(store.ok()) << store.status();
    a_ = RandomBytes((5 << 20) + 123, 1);  // two 4 MiB cache blocks
    b_ = RandomBytes((3 << 20) + 7, 2);
    c_ = RandomBytes((1 << 20) + 1, 3);
    for (const auto& [key, data] : {std::pair{"A", &a_}, {"B", &b_}, {"C", &c_}})
      ASSERT_TRUE((*store)->Put(key, Buffer::Copy(*data)).ok()) << key;
  }

  void TearDown() override {
    Thaw();  // whatever the test did, so everything stops normally
    if (mount_) {
      mount_->Stop();
      (void)testing::RunCommand({"fusermount3", "-u", "-z", mnt_});  // if SIGTERM left it mounted
    }
    if (proxy_) {
      EXPECT_TRUE(proxy_->Stop().ok());
    }
    if (rgw_) {
      EXPECT_TRUE(rgw_->Stop().ok());
    }
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
  }

  void Signal(int sig) {
    for (pid_t p : proxy_->pids()) ::kill(-p, sig);  // nginx's process group: master and workers
  }
  void Freeze() {
    Signal(SIGSTOP);
    frozen_ = true;
  }
  void Thaw() {
    if (frozen_) Signal(SIGCONT);
    frozen_ = false;
  }

  // `cat FILE` in a child process, killed after `deadline`.
  Cat CatFile(const std::string& name, double deadline) {
    Cat c;
    const auto t0 = SteadyClock::now();
    testing::RunOptions ro;
    ro.timeout = std::chrono::milliseconds(static_cast<int64_t>(deadline * 1000));
    auto r = testing::RunCommand({"cat", mnt_ + "/" + name}, {}, std::nullopt, ro);
    c.seconds = Seconds(SteadyClock::now() - t0).count();
    if (r.ok()) {
      c.finished = true;
      c.result = std::move(r).value();
    } else {
      c.result.stderr_text = r.status().ToString();
    }
    return c;
  }

  // Sleeps until every attribute cached before `since` has expired: the TTL is
  // a time requirement (the mount's clock), not a race.
  static void WaitPastTtl(SteadyClock::time_point since) {
    std::this_thread::sleep_until(since + std::chrono::milliseconds(static_cast<int64_t>(kTtl * 1000) + 300));
  }

  std::string strata_, mnt_;
  stdfs::path dir_;
  std::string a_, b_, c_;
  bool frozen_ = false;
  std::unique_ptr<testing::S3TestServer> rgw_;
  std::unique_ptr<testing::CloudProxy> proxy_;
  std::unique_ptr<testing::BackgroundProcess> mount_;
};

TEST_F(MountHungBackendTest, FrozenThenRefusedBackendCachedReadsServedUncachedFailBoundedThenRecover) {
  const std::string url =
      "s3://" + rgw_->bucket() + "/hung?endpoint=" + proxy_->endpoint() + "&region=" + rgw_->region() + "&path_style=1";
  auto secs = [](double s) { return std::to_string(static_cast<int>(s)) + "s"; };
  auto m = testing::BackgroundProcess::Start(
      {strata_, "mount", url, mnt_, "--foreground", "--read-only", "--cache-dir", (dir_ / "cache").string(),
       "--metadata-ttl", secs(kTtl), "--revalidate-timeout", secs(kRevalidate), "--read-timeout", secs(kReadTimeout),
       // Nothing fetched ahead: B and C stay uncached until read.
       "--prefetch-files", "0", "--dir-prefetch", "0"},
      (dir_ / "mount.log").string(), rgw_->ClientEnv());
  ASSERT_TRUE(m.ok()) << m.status();
  mount_ = std::move(m).value();
  auto mounted = mount_->WaitForLine("strata: mounted", std::chrono::seconds(60));
  ASSERT_TRUE(mounted.ok()) << mounted.status() << "\n" << mount_->Log();

  // Warm: every name known (ls), A read whole into the cache; B and C never read.
  auto ls = testing::RunCommand({"ls", "-l", mnt_});
  ASSERT_TRUE(ls.ok() && ls->exit_code == 0) << (ls.ok() ? ls->stderr_text : ls.status().ToString());
  ASSERT_NE(ls->stdout_text.find(" C\n"), std::string::npos) << ls->stdout_text;
  ASSERT_TRUE(CatFile("A", 60).Exact(a_));
  const auto warmed = SteadyClock::now();

  // --- Frozen: connections accepted, nothing answered.
  Freeze();
  WaitPastTtl(warmed);
  const Cat cached = CatFile("A", 60);
  EXPECT_TRUE(cached.Exact(a_)) << "the cached file, byte-exact, while the backend hangs: exit "
                                << cached.result.exit_code << " " << cached.result.stderr_text;
  EXPECT_LT(cached.seconds, kRevalidate + kSlack) << "a cached read waited on the frozen backend";
  const Cat first = CatFile("B", 60);
  EXPECT_TRUE(first.Eio()) << "exit " << first.result.exit_code << ": " << first.result.stderr_text;
  EXPECT_GE(first.seconds, kReadTimeout - 0.5) << "failed before the bound: was it the backend's answer?";
  EXPECT_LT(first.seconds, kReadTimeout + kRevalidate + kSlack);
  const Cat again = CatFile("B", 60);
  EXPECT_TRUE(again.Eio()) << "exit " << again.result.exit_code << ": " << again.result.stderr_text;
  EXPECT_LT(again.seconds, 2.0) << "the failed block must fail at once within its backoff";
  EXPECT_FALSE(mount_->Exited()) << "the mount must outlive a hung backend\n" << mount_->Log();

  Thaw();
  const auto thawed = SteadyClock::now();
  int attempts = 0;
  Cat recovered;
  while (SteadyClock::now() < thawed + std::chrono::seconds(60)) {
    ++attempts;
    recovered = CatFile("B", 60);
    if (recovered.Exact(b_)) break;
    EXPECT_TRUE(recovered.Eio()) << "a read fails with EIO or is byte-exact: exit " << recovered.result.exit_code << " "
                                 << recovered.result.stderr_text;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling the recovering mount
  }
  const double recovery = Seconds(SteadyClock::now() - thawed).count();
  ASSERT_TRUE(recovered.Exact(b_)) << "B never read byte-exact after SIGCONT\n" << mount_->Log();
  // B's blocks fail at once until the backoff that began at the first EIO ends (the
  // backend answering again does not cut it short): recovery takes about the backoff.
  EXPECT_LT(recovery, kBackoff + kSlack);
  EXPECT_TRUE(CatFile("A", 60).Exact(a_));
  std::cout << "mount hung backend (proxy frozen, SIGSTOP): cached 5 MiB file read byte-exact in "
            << Fmt(cached.seconds) << " (--revalidate-timeout " << kRevalidate << " s), uncached 3 MiB file EIO after "
            << Fmt(first.seconds) << " (--read-timeout " << kReadTimeout << " s), again EIO after "
            << Fmt(again.seconds) << " (backoff), recovered " << Fmt(recovery) << " after SIGCONT (" << attempts
            << " cat(s))" << std::endl;
  const std::string log = mount_->Log();
  EXPECT_NE(log.find("serving the cached version"), std::string::npos) << "the stale read is logged\n" << log;

  // --- Refused: the proxy is gone, its port closed.
  ASSERT_TRUE(proxy_->Stop().ok());
  const auto stopped = SteadyClock::now();
  WaitPastTtl(stopped);
  const Cat cached2 = CatFile("A", 60);
  EXPECT_TRUE(cached2.Exact(a_)) << "exit " << cached2.result.exit_code << " " << cached2.result.stderr_text;
  EXPECT_LT(cached2.seconds, kRevalidate + kSlack);
  const Cat first2 = CatFile("C", 60);
  EXPECT_TRUE(first2.Eio()) << "exit " << first2.result.exit_code << ": " << first2.result.stderr_text;
  EXPECT_LT(first2.seconds, kReadTimeout + kRevalidate + kSlack);
  // Refused, the uncached read fails by itself (the client's 6 connection attempts), before
  // --read-timeout. A refused revalidation is not remembered, so each open of an expired
  // file tries the listing again, up to --revalidate-timeout; the read then fails at once.
  const Cat again2 = CatFile("C", 60);
  EXPECT_TRUE(again2.Eio()) << "exit " << again2.result.exit_code << ": " << again2.result.stderr_text;
  EXPECT_LT(again2.seconds, kRevalidate + kSlack);
  EXPECT_FALSE(mount_->Exited()) << mount_->Log();
  std::cout
      << "mount hung backend (proxy stopped, refused): cached file read byte-exact in " << Fmt(cached2.seconds)
      << ", uncached 1 MiB file EIO after " << Fmt(first2.seconds) << ", again EIO after " << Fmt(again2.seconds)
      << " (a revalidation each open, then the backoff; recovery not measured: the proxy cannot restart on its port)"
      << std::endl;
}

}  // namespace
}  // namespace strata::fuse
