// Power-loss campaign for checkpoint saves (local persist and commit). The
// writer runs on a CrashingFileSystem that dies at a chosen durable-write
// step; SimulateCrash then drops every byte and name not synced, as a power
// cut would (the page cache does not survive it, unlike SIGKILL in
// ckpt_crash_test). Every step of a run of saves is a crash point. After each
// recovery: Latest() is the newest step whose save returned (or the one in
// flight, if it was already durable), byte-exact; every other step that opens
// loads byte-exact too (nothing torn is ever loaded); a new writer saves on
// the same directory without repair.
//
// Short version in the default suite (one seed, every step of two saves); the
// long one (STRATA_STRESS=1) runs several seeds for >= 200 crash points.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "base/log.h"
#include "ckpt/reader.h"
#include "ckpt/test_util.h"
#include "ckpt/writer.h"
#include "io/crashing_file_system.h"
#include "io/durable.h"
#include "testing/stress.h"

namespace strata::ckpt {
namespace {

// Small deterministic state: sizes picked by the seed, bytes by (step, seed).
testing::OwnedState SmallState(int64_t step, uint64_t seed) {
  std::mt19937_64 rng(seed);
  testing::OwnedState s;
  const int n = 3 + static_cast<int>(rng() % 4);
  s.bytes.reserve(n);
  for (int i = 0; i < n; ++i) {
    const int64_t elems = 1 + static_cast<int64_t>(rng() % 20000);
    std::vector<uint8_t> data(elems * 4);
    for (size_t k = 0; k < data.size(); k += 8) {
      const uint64_t w = testing::Mix(seed * 7777 + step * 1000003 + i * 131 + k);
      std::memcpy(data.data() + k, &w, std::min<size_t>(8, data.size() - k));
    }
    s.bytes.push_back(std::move(data));
    s.views.push_back({"t" + std::to_string(i), "F32", {elems}, s.bytes.back().data(), s.bytes.back().size()});
  }
  return s;
}

uint64_t StateBytes(const testing::OwnedState& s) {
  uint64_t n = 0;
  for (const auto& v : s.views) n += v.size;
  return n;
}

// tmpfs when there is one: fsyncs cost nothing there, and the crash model is
// FaultFileSystem's (what was not synced through it is dropped), not the disk's.
std::string FreshDir() {
  struct stat st {};
  if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) {
    char tmpl[] = "/dev/shm/strata-ckpt-power-XXXXXX";
    if (::mkdtemp(tmpl)) return tmpl;
  }
  return io::MakeTempDir("strata-ckpt-power-").value();
}

struct Figures {
  int points = 0;
  int in_flight_durable = 0;  // Latest() was the save in flight: it had become durable before the crash
  uint64_t bytes_verified = 0;
  int data_lost = 0;    // a step whose save returned was not Latest() afterwards
  int wrong_bytes = 0;  // a step that opened did not load byte-exact
  int reopen_failures = 0;
};

WriterOptions Options(const std::string& dir, uint64_t seed, io::FileSystem* fs) {
  WriterOptions o;
  o.dir = dir;
  o.fs = fs;
  o.shard_bytes = 16 << 10 << (seed % 3);  // 16..64 KiB: several shards per save
  o.io_threads = 1 + seed % 3;
  o.keep_local = 2;  // retention runs (and is crashed) too
  o.attempt = "run-" + std::to_string(seed);
  return o;
}

// One crash point: `saves` saves from step 1, the file system dying at step
// `crash_at`. Returns false once crash_at is past the run's last step.
bool CrashPoint(const std::string& dir, uint64_t seed, int64_t crash_at, int saves, Figures* fig) {
  EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir).ok());
  io::CrashingFileSystem fs(io::DefaultFileSystem());
  int64_t returned = -1, attempted = -1;
  {
    auto w = CheckpointWriter::Open(Options(dir, seed, &fs));
    if (!w.ok()) {
      ADD_FAILURE() << w.status();
      return false;
    }
    fs.CrashAfter(crash_at);
    for (int64_t step = 1; step <= saves && !fs.crashed(); ++step) {
      testing::OwnedState s = SmallState(step, seed);
      auto h = (*w)->Save(step, s.views, "{\"step\":" + std::to_string(step) + "}");
      if (!h.ok()) break;
      attempted = step;
      if (h->Wait().ok()) returned = step;
    }
  }  // the writer is gone (the process died) before the power is cut
  const bool finished = !fs.crashed();
  EXPECT_TRUE(fs.SimulateCrash().ok());
  ++fig->points;

  const std::string where = "seed " + std::to_string(seed) + " crash point " + std::to_string(crash_at);
  auto loc = std::move(OpenLocalLocation(io::DefaultFileSystem(), dir)).value();
  auto latest = Latest(*loc, VerifyLevel::kBytes);
  if (!latest.ok()) {
    EXPECT_EQ(latest.status().code(), Code::kNotFound) << where << ": " << latest.status();
    if (returned != -1) {
      ++fig->data_lost;
      ADD_FAILURE() << where << ": step " << returned << " was committed, none found: " << latest.status();
    }
  } else if (latest->step < returned || latest->step > attempted) {
    ++fig->data_lost;
    ADD_FAILURE() << where << ": latest is " << latest->step << ", the newest committed " << returned;
  } else if (latest->step > returned) {
    ++fig->in_flight_durable;
  }
  // Every step that opens loads byte-exact: nothing torn passes as committed.
  for (int64_t step : loc->ListSteps().value_or(std::vector<int64_t>{})) {
    if (!OpenCheckpoint(*loc, step).ok()) continue;
    auto loaded = Load(*loc, step);
    const testing::OwnedState want = SmallState(step, seed);
    if (!loaded.ok() || testing::Compare(*loaded, want) != "" ||
        loaded->metadata != "{\"step\":" + std::to_string(step) + "}") {
      ++fig->wrong_bytes;
      ADD_FAILURE() << where << ": step " << step << " opens but does not load byte-exact: "
                    << (loaded.ok() ? testing::Compare(*loaded, want) : loaded.status().ToString());
    } else {
      fig->bytes_verified += StateBytes(want);
    }
  }
  // Recovery needs no repair: a new writer saves the next step over the debris.
  {
    const int64_t next = saves + 1;
    WriterOptions o = Options(dir, seed, nullptr);
    o.attempt = "after-" + std::to_string(crash_at);
    auto w = CheckpointWriter::Open(o);
    testing::OwnedState s = SmallState(next, seed);
    Status st = w.ok() ? Status::Ok() : w.status();
    if (st.ok()) {
      auto h = (*w)->Save(next, s.views, "{\"step\":" + std::to_string(next) + "}");
      st = h.ok() ? h->Wait() : h.status();
    }
    auto after = st.ok() ? Latest(*loc, VerifyLevel::kBytes) : Result<CheckpointInfo>(st);
    if (!after.ok() || after->step != next) {
      ++fig->reopen_failures;
      ADD_FAILURE() << where
                    << ": saving after recovery: " << (after.ok() ? "wrong latest" : after.status().ToString());
    }
  }
  return !finished;
}

Figures RunCampaign(const std::vector<uint64_t>& seeds, int saves, int stride) {
  Figures fig;
  const std::string dir = FreshDir();
  SetLogLevel("error");  // every crashed save logs its cleanup warnings
  for (uint64_t seed : seeds) {
    // The points are every step (stride 1) of the run; a seed-chosen offset
    // spreads a strided short run over the whole save.
    const int64_t first = stride > 1 ? static_cast<int64_t>(seed % stride) : 0;
    for (int64_t at = first; CrashPoint(dir, seed, at, saves, &fig); at += stride) {
      if (::testing::Test::HasFatalFailure()) break;
    }
  }
  SetLogLevel("warn");
  EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir).ok());
  std::cout << "ckpt power-loss campaign: seeds " << seeds.size() << ", saves per run " << saves << ", crash points "
            << fig.points << ", in-flight save found durable " << fig.in_flight_durable << ", bytes verified "
            << fig.bytes_verified << ", data lost " << fig.data_lost << ", wrong bytes served " << fig.wrong_bytes
            << ", reopen failures " << fig.reopen_failures << "\n";
  EXPECT_EQ(fig.data_lost, 0);
  EXPECT_EQ(fig.wrong_bytes, 0);
  EXPECT_EQ(fig.reopen_failures, 0);
  return fig;
}

TEST(CkptPowerLoss, EveryCrashPointOfTwoSavesKeepsTheNewestCommittedStep) {
  Figures fig = RunCampaign({1}, /*saves=*/2, /*stride=*/1);
  EXPECT_GE(fig.points, 20);
  EXPECT_GT(fig.bytes_verified, 0u);
}

TEST(CkptPowerLoss, LongCampaign) {
  if (!strata::testing::StressRun()) GTEST_SKIP() << "long version: STRATA_STRESS=1";
  Figures fig = RunCampaign({2, 3, 4, 5}, /*saves=*/4, /*stride=*/1);
  EXPECT_GE(fig.points, 200);
}

}  // namespace
}  // namespace strata::ckpt
