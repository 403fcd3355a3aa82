// Power-loss campaign for the cache's disk tier: a tier prefilled with
// durable blocks fills and evicts on a CrashingFileSystem that dies at a
// chosen step (every step of the run is a crash point). The power cut is
// modelled two ways, alternating: (a) FaultFileSystem::SimulateCrash drops
// every byte and name not synced; (b) harsher, what ext4 may do to files
// renamed without fsync: names survive but the blocks written by the dead
// process are torn (truncated, or a zeroed range). After either, the tier
// reopens without repair, every block it serves is byte-exact (never torn
// or another block's), and it takes new blocks.
//
// Short version in the default suite (one seed); the long one
// (STRATA_STRESS=1) runs several seeds for >= 200 crash points.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdlib>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/log.h"
#include "cache/disk_tier.h"
#include "io/crashing_file_system.h"
#include "io/durable.h"
#include "testing/stress.h"

namespace strata::cache {
namespace {

constexpr uint64_t kBlock = 16 << 10;

BlockId IdOf(int object, uint64_t index) {
  return BlockId{"mem://power", "obj-" + std::to_string(object), "etag-" + std::to_string(object), kBlock, index};
}

// The block's bytes are a function of its id: object 0..., two blocks each, the second short.
Buffer BytesOf(const BlockId& id) {
  const size_t n = id.index == 0 ? kBlock : 1000 + std::hash<std::string>{}(id.key) % (kBlock - 1000);
  std::string s(n, '\0');
  uint64_t x = std::hash<std::string>{}(id.key) * 31 + id.index + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    s[i] = static_cast<char>(x);
  }
  return Buffer::FromString(s);
}

Status WriteBlock(DiskTier& tier, const BlockId& id) {
  CachedBlock b;
  b.id = id;
  b.data = BytesOf(id);
  b.created_ms = 1000 + static_cast<int64_t>(id.index);
  return tier.Write(HashBlockId(id), b, /*pinned=*/false);
}

std::string FreshDir() {
  struct stat st {};
  if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) {
    char tmpl[] = "/dev/shm/strata-cache-power-XXXXXX";
    if (::mkdtemp(tmpl)) return tmpl;
  }
  return io::MakeTempDir("strata-cache-power-").value();
}

struct Figures {
  int points = 0;
  int torn_files = 0;    // block files damaged by the harsher model
  uint64_t dropped = 0;  // blocks found bad at reopen or read: dropped, not served
  uint64_t served = 0;   // blocks served after recovery
  uint64_t bytes_verified = 0;
  int wrong_bytes = 0;  // a served block that was not the block asked for, byte for byte
  int reopen_failures = 0;
};

DiskTierOptions Options(const std::string& dir, io::FileSystem* fs) {
  DiskTierOptions o;
  o.dir = dir;
  o.capacity_bytes = 8 * (kBlock + kBlockHeaderSize);  // the run evicts
  o.fs = fs;
  return o;
}

// Reads `id` and checks it: byte-exact, or not served at all.
void Check(DiskTier& tier, const BlockId& id, Figures* fig, const std::string& where) {
  const Buffer want = BytesOf(id);
  auto got = tier.Read(HashBlockId(id), id, want.size());
  if (!got.ok()) {
    if (got.status().code() != Code::kNotFound) ++fig->dropped;
    return;
  }
  ++fig->served;
  if (got->data != want || !(got->id == id)) {
    ++fig->wrong_bytes;
    ADD_FAILURE() << where << ": block " << id.index << " of " << id.key << " served with wrong bytes";
  } else {
    fig->bytes_verified += want.size();
  }
}

bool CrashPoint(const std::string& dir, uint64_t seed, int64_t crash_at, int writes, Figures* fig) {
  EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir).ok());
  const std::string where = "seed " + std::to_string(seed) + " crash point " + std::to_string(crash_at);
  std::mt19937_64 rng(seed * 1000003 + crash_at);
  std::vector<BlockId> ids;
  CacheMetrics metrics;
  {  // Durable blocks from an earlier run.
    auto tier = DiskTier::Open(Options(dir, nullptr), &metrics);
    EXPECT_TRUE(tier.ok()) << tier.status();
    if (!tier.ok()) return false;
    for (int o = 0; o < 3; ++o) {
      for (uint64_t i = 0; i < 2; ++i) {
        ids.push_back(IdOf(o, i));
        EXPECT_TRUE(WriteBlock(**tier, ids.back()).ok());
      }
    }
  }
  io::CrashingFileSystem fs(io::DefaultFileSystem());
  std::set<std::string> before;
  {
    auto tier = DiskTier::Open(Options(dir, &fs), &metrics);
    EXPECT_TRUE(tier.ok()) << tier.status();
    if (!tier.ok()) return false;
    for (const auto& b : (*tier)->List()) before.insert(b.path);
    fs.CrashAfter(crash_at);
    // Fill (and so evict), reading back as it goes; reads before the crash must be exact too.
    for (int k = 0; k < writes && !fs.crashed(); ++k) {
      const int object = 3 + static_cast<int>(rng() % (writes / 2 + 1));
      ids.push_back(IdOf(object, rng() % 2));
      WriteBlock(**tier, ids.back()).IgnoreError();
      Check(**tier, ids[rng() % ids.size()], fig, where + " (before the crash)");
      if (rng() % 5 == 0) (*tier)->RemoveObject(ObjectKeyOf("mem://power", ids[rng() % ids.size()].key));
    }
  }
  const bool finished = !fs.crashed();
  ++fig->points;
  if (crash_at % 2 == 0) {
    EXPECT_TRUE(fs.SimulateCrash().ok()) << where;
  } else {
    // Names survive, the dead process's unsynced bytes do not (in part).
    fs.MarkAllDurable();
    auto tier = DiskTier::Open(Options(dir, nullptr), &metrics);  // only to list the files
    if (tier.ok()) {
      for (const auto& b : (*tier)->List()) {
        if (before.count(b.path) || rng() % 2) continue;
        auto file = io::DefaultFileSystem().OpenForWrite(b.path, /*truncate=*/false);
        if (!file.ok()) continue;
        const uint64_t size = (*file)->Size();
        Status st;
        if (rng() % 2) {
          st = io::DefaultFileSystem().Truncate(b.path, rng() % size);
        } else {
          // Zeros over the data (the header's zero padding would hide them).
          const uint64_t at = kBlockHeaderSize + rng() % (size - kBlockHeaderSize);
          const uint64_t n = std::min<uint64_t>(size - at, 1 + rng() % 8192);
          st = (*file)->WriteAt(at, std::string(n, '\0').data(), n);
        }
        EXPECT_TRUE(st.ok()) << st;
        EXPECT_TRUE((*file)->Close().ok());
        ++fig->torn_files;
      }
    }
  }

  // Reopens without repair; serves only exact blocks; takes new ones.
  DiskOpenReport report;
  auto tier = DiskTier::Open(Options(dir, nullptr), &metrics, &report);
  if (!tier.ok()) {
    ++fig->reopen_failures;
    ADD_FAILURE() << where << ": reopening: " << tier.status();
    return !finished;
  }
  fig->dropped += report.invalid_blocks;
  for (const auto& id : ids) Check(**tier, id, fig, where);
  const BlockId fresh = IdOf(1000, 0);
  Status st = WriteBlock(**tier, fresh);
  auto back = (*tier)->Read(HashBlockId(fresh), fresh, BytesOf(fresh).size());
  if (!st.ok() || !back.ok() || back->data != BytesOf(fresh)) {
    ++fig->reopen_failures;
    ADD_FAILURE() << where << ": writing after recovery: " << st << " / " << back.status();
  }
  return !finished;
}

Figures RunCampaign(const std::vector<uint64_t>& seeds, int writes) {
  Figures fig;
  const std::string dir = FreshDir();
  SetLogLevel("error");  // every dropped block logs a warning
  for (uint64_t seed : seeds) {
    for (int64_t at = 0; CrashPoint(dir, seed, at, writes, &fig); ++at) {
      if (::testing::Test::HasFailure()) break;
    }
  }
  SetLogLevel("warn");
  EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), dir).ok());
  std::cout << "cache disk-tier power-loss campaign: seeds " << seeds.size() << ", writes per run " << writes
            << ", crash points " << fig.points << ", torn files " << fig.torn_files << ", blocks dropped "
            << fig.dropped << ", blocks served " << fig.served << ", bytes verified " << fig.bytes_verified
            << ", data lost 0 (a cache refetches), wrong bytes served " << fig.wrong_bytes << ", reopen failures "
            << fig.reopen_failures << "\n";
  EXPECT_EQ(fig.wrong_bytes, 0);
  EXPECT_EQ(fig.reopen_failures, 0);
  return fig;
}

TEST(CachePowerLoss, EveryCrashPointWhileFillingAndEvictingServesOnlyExactBlocks) {
  Figures fig = RunCampaign({1}, /*writes=*/16);
  EXPECT_GE(fig.points, 40);
  EXPECT_GT(fig.torn_files, 0);                                   // the harsher model did tear files...
  EXPECT_GE(fig.dropped, static_cast<uint64_t>(fig.torn_files));  // ...and every one was dropped, not served
  EXPECT_GT(fig.served, 0u);
}

TEST(CachePowerLoss, LongCampaign) {
  if (!strata::testing::StressRun()) GTEST_SKIP() << "long version: STRATA_STRESS=1";
  Figures fig = RunCampaign({2, 3, 4, 5}, /*writes=*/40);
  EXPECT_GE(fig.points, 200);
}

}  // namespace
}  // namespace strata::cache
