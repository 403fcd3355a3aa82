// `strata mount` over a backend that stops answering (issue 15, item 8): Ceph
// RGW behind the nginx cloud proxy, which the test freezes with SIGSTOP on its
// process group (connections accepted, nothing answered), thaws with SIGCONT,
// then halts (connections refused) and restarts on the same port. Real `cat`s,
// each in a child process with a deadline, read through the mount: a cached
// file whose attributes expired is served byte-exact within
// --revalidate-timeout, an uncached one fails with EIO within --read-timeout
// and at once right after (the failed-block backoff), the mount stays up, and
// the uncached file reads byte-exact once the backend answers again. One "mount hung backend ..."
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
    auto backend = testing::StartProxiedRgw({.ttfb_ms = 0, .rate = "0"});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = std::move(backend).value();
    // Seeded straight into RGW (past the proxy), with the server's credentials.
    for (const auto& [k, v] : backend_.rgw->ClientEnv()) v ? ::setenv(k.c_str(), v->c_str(), 1) : ::unsetenv(k.c_str());
    auto store = object::OpenStore(backend_.rgw->StoreUrl("hung"));
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
    if (backend_.proxy) {
      EXPECT_TRUE(backend_.proxy->Stop().ok());
    }
    if (backend_.rgw) {
      EXPECT_TRUE(backend_.rgw->Stop().ok());
    }
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
  }

  void Signal(int sig) {
    for (pid_t p : backend_.proxy->pids()) ::kill(-p, sig);  // nginx's process group: master and workers
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

  // `cat`s `name` until it reads byte-exact (each failure must be EIO) or `within`
  // seconds have passed since `since`, when the backend came back.
  struct Recovery {
    bool exact = false;
    double seconds = 0;
    int attempts = 0;
  };
  Recovery CatUntilExact(const std::string& name, const std::string& want, SteadyClock::time_point since,
                         double within) {
    Recovery r;
    while (SteadyClock::now() < since + std::chrono::milliseconds(static_cast<int64_t>(within * 1000))) {
      ++r.attempts;
      const Cat c = CatFile(name, 60);
      if (c.Exact(want)) {
        r.exact = true;
        break;
      }
      EXPECT_TRUE(c.Eio()) << "a read fails with EIO or is byte-exact: exit " << c.result.exit_code << " "
                           << c.result.stderr_text;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling the recovering mount
    }
    r.seconds = Seconds(SteadyClock::now() - since).count();
    return r;
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
  testing::ProxiedRgw backend_;
  std::unique_ptr<testing::BackgroundProcess> mount_;
};

TEST_F(MountHungBackendTest, FrozenThenRefusedBackendCachedReadsServedUncachedFailBoundedThenRecover) {
  const std::string url = backend_.StoreUrl("hung");
  auto secs = [](double s) { return std::to_string(static_cast<int>(s)) + "s"; };
  auto m = testing::BackgroundProcess::Start(
      {strata_, "mount", url, mnt_, "--foreground", "--read-only", "--cache-dir", (dir_ / "cache").string(),
       "--metadata-ttl", secs(kTtl), "--revalidate-timeout", secs(kRevalidate), "--read-timeout", secs(kReadTimeout),
       // Nothing fetched ahead: B and C stay uncached until read.
       "--prefetch-files", "0", "--dir-prefetch", "0"},
      (dir_ / "mount.log").string(), backend_.rgw->ClientEnv());
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
  const Recovery recovered = CatUntilExact("B", b_, SteadyClock::now(), 60);
  const double recovery = recovered.seconds;
  ASSERT_TRUE(recovered.exact) << "B never read byte-exact after SIGCONT\n" << mount_->Log();
  // B's blocks fail at once until the backoff that began at the first EIO ends (the
  // backend answering again does not cut it short): recovery takes about the backoff.
  EXPECT_LT(recovery, kBackoff + kSlack);
  EXPECT_TRUE(CatFile("A", 60).Exact(a_));
  std::cout << "mount hung backend (proxy frozen, SIGSTOP): cached 5 MiB file read byte-exact in "
            << Fmt(cached.seconds) << " (--revalidate-timeout " << kRevalidate << " s), uncached 3 MiB file EIO after "
            << Fmt(first.seconds) << " (--read-timeout " << kReadTimeout << " s), again EIO after "
            << Fmt(again.seconds) << " (backoff), recovered " << Fmt(recovery) << " after SIGCONT ("
            << recovered.attempts << " cat(s))" << std::endl;
  const std::string log = mount_->Log();
  EXPECT_NE(log.find("serving the cached version"), std::string::npos) << "the stale read is logged\n" << log;

  // --- Refused: nginx is gone, its port closed.
  ASSERT_TRUE(backend_.proxy->Halt().ok());
  const auto stopped = SteadyClock::now();
  WaitPastTtl(stopped);
  const Cat cached2 = CatFile("A", 60);
  EXPECT_TRUE(cached2.Exact(a_)) << "exit " << cached2.result.exit_code << " " << cached2.result.stderr_text;
  EXPECT_LT(cached2.seconds, kRevalidate + kSlack);
  const Cat first2 = CatFile("C", 60);
  const auto failed2 = SteadyClock::now();
  EXPECT_TRUE(first2.Eio()) << "exit " << first2.result.exit_code << ": " << first2.result.stderr_text;
  EXPECT_LT(first2.seconds, kReadTimeout + kRevalidate + kSlack);
  // Refused, the uncached read fails by itself (the client's 6 connection attempts), before
  // --read-timeout. The failed revalidation and the failed block are both remembered for
  // the backoff, so the next open serves the cached attributes and the read fails at once.
  const Cat again2 = CatFile("C", 60);
  EXPECT_TRUE(again2.Eio()) << "exit " << again2.result.exit_code << ": " << again2.result.stderr_text;
  EXPECT_LT(again2.seconds, kRevalidate + kSlack);
  EXPECT_FALSE(mount_->Exited()) << mount_->Log();

  // --- Back: nginx again on the same port (Restart() returns once it accepts).
  const auto restarting = SteadyClock::now();
  ASSERT_TRUE(backend_.proxy->Restart().ok());
  const auto accepting = SteadyClock::now();
  const Recovery recovered2 = CatUntilExact("C", c_, accepting, 60);
  const double since_eio = Seconds(SteadyClock::now() - failed2).count();
  ASSERT_TRUE(recovered2.exact) << "C never read byte-exact after the restart\n" << mount_->Log();
  // Nothing asks the backend while C's block (and its directory's failed revalidation) are
  // in their backoff, which began at the first EIO: recovery takes at most the rest of it
  // (less when a read still retrying its connection when the proxy came back filled the cache).
  EXPECT_LT(recovered2.seconds, kBackoff + kSlack);
  EXPECT_LT(since_eio, kBackoff + kSlack + Seconds(accepting - restarting).count());
  EXPECT_TRUE(CatFile("A", 60).Exact(a_));
  EXPECT_FALSE(mount_->Exited()) << mount_->Log();
  std::cout << "mount hung backend (proxy stopped, refused): cached file read byte-exact in " << Fmt(cached2.seconds)
            << ", uncached 1 MiB file EIO after " << Fmt(first2.seconds) << ", again EIO after " << Fmt(again2.seconds)
            << " (a revalidation each open, then the backoff), recovered " << Fmt(recovered2.seconds)
            << " after the proxy accepted again on its port (restart took "
            << Fmt(Seconds(accepting - restarting).count()) << "; " << Fmt(since_eio)
            << " after the first EIO, backoff " << kBackoff << " s; " << recovered2.attempts << " cat(s))" << std::endl;
}

}  // namespace
}  // namespace strata::fuse
