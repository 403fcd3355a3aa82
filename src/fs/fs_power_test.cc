// Power-loss campaign for the mount's write path: files written through
// ObjectFs are buffered in write_dir and uploaded on close()/fsync(); here
// both the buffers and the bucket (a file:// store, FileStore) sit on one
// CrashingFileSystem that dies at a chosen step, so every durable-write step
// of a run (buffer create/write/truncate/remove, and the store's temp
// write, fsync, rename, directory fsync, multipart parts and completion) is a
// crash point. The cut is modelled two ways, alternating: (a) power loss,
// SimulateCrash drops every byte and name not synced; (b) the mount process
// killed, page cache intact. Then a new mount starts on the same write_dir
// and bucket. The promises checked (object_fs.h, "Consistency"):
//  - a file whose close() or fsync() returned is in the bucket byte-exact
//    with what it held then, unless a later upload of it was under way, in
//    which case it is that version or the later one, whole;
//  - no partial file is ever the committed object: every object is one whole
//    version some close()/fsync() tried to upload (or the file's old one);
//  - the new mount reads every file as the bucket holds it, sweeps the dead
//    mount's buffer directory, and (killed mount) keeps every unsaved
//    buffer's bytes whole in lost+found; it writes new files as before.
// Short version in the default suite (one seed); the long one
// (STRATA_STRESS=1) runs several seeds for >= 200 crash points.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "cache/block_cache.h"
#include "cache/cached_store.h"
#include "fs/object_fs.h"
#include "io/crashing_file_system.h"
#include "io/durable.h"
#include "object/file_store.h"
#include "testing/stress.h"

namespace strata::fs {
namespace {

constexpr int kFiles = 5;

std::string NameOf(int file) { return "f" + std::to_string(file); }

// Distinct bytes for every (file, version, length): a version is recognised by its bytes alone.
std::string Content(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

std::string FreshDir() {
  struct stat st {};
  if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) {
    char tmpl[] = "/dev/shm/strata-fs-power-XXXXXX";
    if (::mkdtemp(tmpl)) return tmpl;
  }
  return io::MakeTempDir("strata-fs-power-").value();
}

struct Figures {
  int points = 0;
  int power_cuts = 0, kills = 0;
  uint64_t promised = 0;        // files whose close()/fsync() had returned at the cut
  uint64_t in_flight = 0;       // ... of which a later upload was under way
  uint64_t unsaved = 0;         // files written but never saved at the cut
  uint64_t multipart = 0;       // uploads of the runs that went in parts
  uint64_t lost_found = 0;      // buffers the new mount kept in lost+found (kills)
  uint64_t bytes_verified = 0;  // bucket objects, and their reads through the new mount, compared
  int lost = 0;                 // a promised file missing or older in the bucket, or an unsaved buffer lost at a kill
  int wrong = 0;                // an object that is no whole version, or a read that differs from it
  int reopen_failures = 0;
};

struct Mount {
  std::shared_ptr<cache::CachedStore> store;
  std::unique_ptr<ObjectFs> fs;
};

struct Env {
  std::string root;
  FakeClock clock;
  std::string Bucket() const { return root + "/bucket"; }
  std::string WriteDir() const { return root + "/buffers"; }
  std::string LostFound() const { return WriteDir() + "/lost+found"; }
  Result<object::ObjectStorePtr> Store(io::FileSystem* fs) {
    object::FileStoreOptions o;
    o.fs = fs;
    o.min_part_size = 4 << 10;
    return object::OpenFileStore(Bucket(), o);
  }
  Result<Mount> Open(io::FileSystem* fs) {
    STRATA_ASSIGN_OR_RETURN(object::ObjectStorePtr bucket, Store(fs));
    cache::CacheOptions co;
    co.block_size = 16 << 10;
    co.ram_bytes = 4 << 20;
    co.clock = &clock;
    STRATA_ASSIGN_OR_RETURN(auto cache, cache::BlockCache::Open(co));
    cache::CachedStoreOptions so;
    so.clock = &clock;
    so.fetch_part_size = 0;
    Mount m;
    m.store = std::make_shared<cache::CachedStore>(bucket, cache, so);
    FsOptions fo;
    fo.clock = &clock;
    fo.local = fs;
    fo.write_dir = WriteDir();
    fo.multipart_threshold = 12 << 10;  // the larger files go in parts...
    fo.part_size = 4 << 10;             // ...of 4 KiB
    fo.upload_concurrency = 1;          // one step order per seed
    fo.dir_prefetch = 0;
    fo.prefetch_files = 0;
    m.fs = std::make_unique<ObjectFs>(m.store, fo);
    return m;
  }
};

// What the run did to one file, as the checks need it.
struct FileLog {
  std::optional<std::string> saved;  // the bytes at its last close()/fsync() that returned OK
  std::set<std::string> since;       // versions whose upload started after that (under way at the cut)
  std::set<std::string> all;         // every version an upload of it started with
  std::string buffered;              // the bytes written to the open buffer (its writes that returned)
  bool open = false, dirty = false;
};

// An upload of the buffered bytes starts (close or fsync).
void Tried(FileLog& l, Figures* fig) {
  l.since.insert(l.buffered);
  l.all.insert(l.buffered);
  if (l.buffered.size() > (12u << 10)) ++fig->multipart;
}
// ...and returned OK.
void Saved(FileLog& l) {
  l.saved = l.buffered;
  l.since.clear();
  l.dirty = false;
}

// One run of writes on `mount`, until it ends or the file system dies.
void Run(Mount& mount, io::CrashingFileSystem& fs, std::mt19937_64& rng, int ops, std::vector<FileLog>& log,
         Figures* fig) {
  for (int op = 0; op < ops && !fs.crashed(); ++op) {
    const int f = static_cast<int>(rng() % kFiles);
    FileLog& l = log[f];
    auto created = mount.fs->Create(kRootIno, NameOf(f), 0644, O_WRONLY | O_CREAT | O_TRUNC);
    if (!created.ok()) continue;
    const uint64_t fh = created->second.fh;
    l.open = true, l.dirty = true, l.buffered.clear();
    // Sizes from empty to multipart (12 KiB and more), written in chunks.
    const size_t size = rng() % 4 == 0 ? rng() % 64 : 1000 + rng() % (28 << 10);
    const std::string data = Content(rng, size);
    const bool fsync_midway = rng() % 3 == 0;
    for (size_t at = 0; at < size && !fs.crashed();) {
      const size_t n = std::min<size_t>(size - at, 1 + rng() % (8 << 10));
      if (!mount.fs->Write(fh, at, data.data() + at, n).ok()) break;
      l.buffered.append(data, at, n);
      l.dirty = true;
      at += n;
      if (fsync_midway && at >= size / 2 && at - n < size / 2) {
        Tried(l, fig);
        if (!mount.fs->Fsync(fh).ok()) break;
        Saved(l);
      }
    }
    if (fs.crashed()) return;      // the process is dead: no close
    if (rng() % 5 == 0) continue;  // left open, unsaved, when the cut comes
    const bool was_dirty = l.dirty;
    if (was_dirty) Tried(l, fig);
    if (mount.fs->Release(fh).ok()) {
      if (was_dirty) Saved(l);
      l.open = false;
    }
  }
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> names;
  auto entries = io::DefaultFileSystem().ListDir(dir);
  if (entries.ok())
    for (const auto& e : *entries) names.push_back(e.name);
  return names;
}

// Reads `name` through the new mount whole.
Result<std::string> ReadThrough(ObjectFs& fs, const std::string& name) {
  STRATA_ASSIGN_OR_RETURN(Entry e, fs.Lookup(kRootIno, name));
  STRATA_ASSIGN_OR_RETURN(OpenResult o, fs.Open(e.attr.ino, O_RDONLY));
  std::string out;
  while (true) {
    auto got = fs.Read(o.fh, out.size(), 64 << 10);
    if (!got.ok()) {
      fs.Release(o.fh).IgnoreError();
      return got.status();
    }
    if (got->size() == 0) break;
    out += got->ToString();
  }
  STRATA_RETURN_IF_ERROR(fs.Release(o.fh));
  return out;
}

bool CrashPoint(Env& env, uint64_t seed, int64_t crash_at, int ops, Figures* fig) {
  EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), env.root).ok());
  EXPECT_TRUE(io::DefaultFileSystem().CreateDirs(env.root).ok());
  const std::string where = "seed " + std::to_string(seed) + " crash point " + std::to_string(crash_at);
  std::mt19937_64 rng(seed * 1000003 + crash_at);
  std::vector<FileLog> log(kFiles);
  {  // Files saved by an earlier mount.
    auto bucket = env.Store(nullptr);
    EXPECT_TRUE(bucket.ok()) << bucket.status();
    if (!bucket.ok()) return false;
    for (int f = 0; f < 2; ++f) {
      std::string data = Content(rng, 3000 + f * 9000);
      EXPECT_TRUE((*bucket)->Put(NameOf(f), Buffer::FromString(data)).ok());
      log[f].saved = data, log[f].all.insert(data);
    }
  }
  io::CrashingFileSystem fs(io::DefaultFileSystem());
  {
    auto mount = env.Open(&fs);
    EXPECT_TRUE(mount.ok()) << mount.status();
    if (!mount.ok()) return false;
    fs.CrashAfter(crash_at);
    Run(*mount, fs, rng, ops, log, fig);
  }  // the mount dies: no Shutdown, nothing more uploaded
  const bool finished = !fs.crashed();
  ++fig->points;
  const bool power_cut = crash_at % 2 == 0;
  if (power_cut) {
    ++fig->power_cuts;
    EXPECT_TRUE(fs.SimulateCrash().ok()) << where;
  } else {
    ++fig->kills;
    fs.MarkAllDurable();
  }

  // The bucket: every promised file whole and current, nothing partial.
  auto bucket = env.Store(nullptr);
  EXPECT_TRUE(bucket.ok()) << bucket.status();
  if (!bucket.ok()) return false;
  std::map<int, std::string> objects;
  for (int f = 0; f < kFiles; ++f) {
    const FileLog& l = log[f];
    auto got = (*bucket)->Get(NameOf(f));
    if (l.saved) ++fig->promised;
    if (l.open && l.dirty && !l.buffered.empty()) ++fig->unsaved;
    if (!got.ok()) {
      if (l.saved) {
        ++fig->lost;
        ADD_FAILURE() << where << ": " << NameOf(f) << " was saved but is not in the bucket: " << got.status();
      }
      continue;
    }
    const std::string data = got->data.ToString();
    objects[f] = data;
    if (!l.all.count(data)) {
      ++fig->wrong;
      ADD_FAILURE() << where << ": " << NameOf(f) << " in the bucket is no whole version (" << data.size() << " bytes)";
      continue;
    }
    if (l.saved && data != *l.saved) {
      // Only a version whose upload started after the save (under way at the cut) may replace it.
      if (!l.since.count(data)) {
        ++fig->lost;
        ADD_FAILURE() << where << ": " << NameOf(f) << " went back to an older version after the cut";
        continue;
      }
      ++fig->in_flight;
    } else if (!l.saved && !l.since.count(data)) {
      ++fig->wrong;
      ADD_FAILURE() << where << ": " << NameOf(f) << " holds a version no upload under way had";
      continue;
    }
    fig->bytes_verified += data.size();
  }

  // The new mount: reopens, sweeps the dead one's buffers, serves the bucket's bytes, writes.
  auto mount = env.Open(nullptr);
  if (!mount.ok()) {
    ++fig->reopen_failures;
    ADD_FAILURE() << where << ": remounting: " << mount.status();
    return !finished;
  }
  for (const std::string& name : FilesIn(env.WriteDir())) {
    EXPECT_FALSE(name.starts_with("strata-mount-")) << where << ": the dead mount's " << name << " was not swept";
  }
  std::multiset<std::string> kept;
  for (const std::string& name : FilesIn(env.LostFound())) {
    auto data = io::ReadFileToString(io::DefaultFileSystem(), env.LostFound() + "/" + name, 1 << 20);
    EXPECT_TRUE(data.ok()) << data.status();
    if (data.ok()) kept.insert(*data);
  }
  fig->lost_found += kept.size();
  for (int f = 0; f < kFiles; ++f) {
    const FileLog& l = log[f];
    if (!power_cut && l.open && l.dirty && !l.buffered.empty() && !kept.count(l.buffered)) {
      ++fig->lost;
      ADD_FAILURE() << where << ": the unsaved buffer of " << NameOf(f) << " (" << l.buffered.size()
                    << " bytes) is not in lost+found whole";
    }
    auto it = objects.find(f);
    auto read = ReadThrough(*mount->fs, NameOf(f));
    if (it == objects.end()) {
      EXPECT_FALSE(read.ok()) << where << ": " << NameOf(f) << " is not in the bucket but the mount reads it";
      continue;
    }
    if (!read.ok() || *read != it->second) {
      ++fig->wrong;
      ADD_FAILURE() << where << ": the new mount reads " << NameOf(f) << " as "
                    << (read.ok() ? std::to_string(read->size()) + " other bytes" : read.status().ToString());
      continue;
    }
    fig->bytes_verified += read->size();
  }
  // Any kept buffer holds bytes some file was given (nothing invented).
  for (const std::string& k : kept) {
    bool known = false;
    for (const FileLog& l : log) known = known || k == l.buffered || l.all.count(k);
    EXPECT_TRUE(known) << where << ": lost+found holds " << k.size() << " bytes no file was written with";
  }
  auto fresh = mount->fs->Create(kRootIno, "fresh", 0644, O_WRONLY | O_CREAT | O_TRUNC);
  Status wrote = fresh.status();
  if (fresh.ok()) {
    wrote = mount->fs->Write(fresh->second.fh, 0, "after", 5).status();
    Status closed = mount->fs->Release(fresh->second.fh);
    if (wrote.ok()) wrote = closed;
  }
  auto back = (*bucket)->Get("fresh");
  if (!wrote.ok() || !back.ok() || back->data.ToString() != "after") {
    ++fig->reopen_failures;
    ADD_FAILURE() << where << ": writing after the cut: " << wrote << " / " << back.status();
  }
  EXPECT_TRUE(mount->fs->Shutdown().ok());
  return !finished;
}

Figures RunCampaign(const std::vector<uint64_t>& seeds, int ops) {
  Figures fig;
  Env env;
  env.root = FreshDir();
  SetLogLevel("error");  // every failed upload and kept buffer logs a warning
  for (uint64_t seed : seeds) {
    for (int64_t at = 0; CrashPoint(env, seed, at, ops, &fig); ++at) {
      if (::testing::Test::HasFailure()) break;
    }
  }
  SetLogLevel("warn");
  EXPECT_TRUE(io::RemoveAll(io::DefaultFileSystem(), env.root).ok());
  std::cout << "mount write-path power-loss campaign: seeds " << seeds.size() << ", opens per run " << ops
            << ", crash points " << fig.points << " (power cuts " << fig.power_cuts << ", kills " << fig.kills
            << "), saved files checked " << fig.promised << " (a later upload under way and landed: " << fig.in_flight
            << "), unsaved files " << fig.unsaved << ", multipart uploads " << fig.multipart
            << ", buffers kept in lost+found " << fig.lost_found << ", bytes verified " << fig.bytes_verified
            << ", lost " << fig.lost << ", wrong " << fig.wrong << ", remount failures " << fig.reopen_failures << "\n";
  EXPECT_EQ(fig.lost, 0);
  EXPECT_EQ(fig.wrong, 0);
  EXPECT_EQ(fig.reopen_failures, 0);
  return fig;
}

TEST(FsPowerLoss, SavedFilesSurviveWholeAndNoPartialFileIsEverCommitted) {
  Figures fig = RunCampaign({1}, /*ops=*/6);
  EXPECT_GE(fig.points, 60);
  EXPECT_GT(fig.promised, 0u);
  EXPECT_GT(fig.multipart, 0u);
  EXPECT_GT(fig.unsaved, 0u);
  EXPECT_GT(fig.lost_found, 0u);  // killed mounts' unsaved buffers were kept
}

TEST(FsPowerLoss, LongCampaign) {
  if (!strata::testing::StressRun()) GTEST_SKIP() << "long version: STRATA_STRESS=1";
  Figures fig = RunCampaign({2, 3, 4, 5}, /*ops=*/10);
  EXPECT_GE(fig.points, 200);
}

}  // namespace
}  // namespace strata::fs
