// The mount's cold path: a first read fetched on several connections at
// once, the next files fetched ahead when a directory is read in listing
// order (and nothing when it is read in any other order), and a replaced
// file's new version on a new inode while the old one is open.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <thread>

#include "fs/fs_test_util.h"

namespace strata::fs {
namespace {

using testing::FsFixture;
using namespace std::chrono_literals;

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (auto& c : s) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

std::string ReadAll(ObjectFs& fs, uint64_t fh, size_t chunk = 64 << 10) {
  std::string out;
  for (;;) {
    auto r = fs.Read(fh, out.size(), chunk);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->empty()) return out;
    out += r->view();
  }
}

// Holds every Get at a gate while closed, so the number of Gets in flight
// at once can be counted without racing the clock.
class GateStore : public object::StoreWrapper {
 public:
  using object::StoreWrapper::Get;
  using object::StoreWrapper::StoreWrapper;
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override {
    {
      std::unique_lock lock(mu_);
      ++held_;
      peak_ = std::max(peak_, held_);
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });
    }
    auto r = object::StoreWrapper::Get(key, options);
    std::lock_guard lock(mu_);
    --held_;
    return r;
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Waits (bounded) until `n` Gets are held at once.
  bool WaitHeld(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 20s, [&] { return held_ >= n; });
  }
  int peak() {
    std::lock_guard lock(mu_);
    return peak_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int held_ = 0, peak_ = 0;
};

// The mount's configuration: 4 MiB blocks fetched in 1 MiB parts, a 16 MiB
// first-read window.
struct ColdFixture {
  ColdFixture() {
    mem = object::MakeMemStore();
    gate = std::make_shared<GateStore>(mem);
    cache::CacheOptions co;
    co.ram_bytes = 256 << 20;
    cache = cache::BlockCache::Open(co).value();
    cache::CachedStoreOptions so;
    so.open_window = 16 << 20;
    store = std::make_shared<cache::CachedStore>(gate, cache, so);
    FsOptions fo = FsFixture::Defaults();
    fo.clock = &clock;
    fo.local = &local;
    fo.write_dir = "/buffers";
    fs = std::make_unique<ObjectFs>(store, fo);
  }
  FakeClock clock;
  testing::MemFileSystem local;
  object::ObjectStorePtr mem;
  std::shared_ptr<GateStore> gate;
  std::shared_ptr<cache::BlockCache> cache;
  std::shared_ptr<cache::CachedStore> store;
  std::unique_ptr<ObjectFs> fs;
};

TEST(FsColdPath, FirstReadOfA4MiBFileKeepsSeveralGetsInFlight) {
  ColdFixture f;
  const std::string data = Pattern(4 << 20, 1);
  ASSERT_TRUE(f.mem->Put("d/f", Buffer::Copy(data)).ok());
  auto e = f.fs->Lookup(kRootIno, "d");
  ASSERT_TRUE(e.ok()) << e.status();
  auto file = f.fs->Lookup(e->attr.ino, "f");
  ASSERT_TRUE(file.ok()) << file.status();
  auto h = f.fs->Open(file->attr.ino, O_RDONLY);
  ASSERT_TRUE(h.ok()) << h.status();
  std::string got;
  std::thread reader([&] { got = ReadAll(*f.fs, h->fh, 128 << 10); });
  EXPECT_TRUE(f.gate->WaitHeld(4)) << "a 4 MiB file is fetched as four 1 MiB ranged GETs at once";
  f.gate->Open();
  reader.join();
  EXPECT_EQ(got, data);
  EXPECT_GE(f.store->fetch_stats().peak_in_flight, 4u);
  EXPECT_EQ(f.store->fetch_stats().gets, 4u);
  ASSERT_TRUE(f.fs->Release(h->fh).ok());
}

TEST(FsColdPath, FirstReadAtTheStartFetchesTheOpenWindowAtOnce) {
  ColdFixture f;
  const std::string data = Pattern(16 << 20, 2);
  ASSERT_TRUE(f.mem->Put("big", Buffer::Copy(data)).ok());
  auto file = f.fs->Lookup(kRootIno, "big");
  ASSERT_TRUE(file.ok()) << file.status();
  auto h = f.fs->Open(file->attr.ino, O_RDONLY);
  ASSERT_TRUE(h.ok()) << h.status();
  std::string got;
  std::thread reader([&] { got = ReadAll(*f.fs, h->fh, 128 << 10); });
  // Block 0 read on demand, blocks 1-3 read ahead at once: 4 x 4 parts.
  EXPECT_TRUE(f.gate->WaitHeld(16)) << "held " << f.gate->peak();
  f.gate->Open();
  reader.join();
  EXPECT_EQ(got, data);
  f.store->WaitForReadahead();
  EXPECT_EQ(f.store->fetch_stats().gets, 16u) << "nothing fetched twice";
  ASSERT_TRUE(f.fs->Release(h->fh).ok());
}

constexpr int kFiles = 20;
std::string FileName(int i) { return "f" + std::string(i < 10 ? "0" : "") + std::to_string(i); }

// 20 files of 3 blocks in d/, the directory listed (as a shell glob does).
struct DirFixture : FsFixture {
  explicit DirFixture(std::string cache_dir = "") : FsFixture(Defaults(), 2, true, std::move(cache_dir)) {
    for (int i = 0; i < kFiles; ++i) Put("d/" + FileName(i), Pattern(3 * kBlock - 100, 10 + i));
    List();
  }
  void List() {
    auto d = fs->Lookup(kRootIno, "d");
    ASSERT_TRUE(d.ok()) << d.status();
    dir = d->attr.ino;
    auto dh = fs->OpenDir(dir);
    ASSERT_TRUE(dh.ok()) << dh.status();
    fs->ReleaseDir(*dh);
  }
  // Opens, reads whole and closes d/<name>; its bytes compared.
  void Cat(int i) {
    auto e = fs->Lookup(dir, FileName(i));
    ASSERT_TRUE(e.ok()) << e.status();
    auto h = fs->Open(e->attr.ino, O_RDONLY);
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(ReadAll(*fs, h->fh), Backend("d/" + FileName(i))) << FileName(i);
    EXPECT_TRUE(fs->Release(h->fh).ok());
  }
  uint64_t GetsOf(int i) { return counting->GetsOf("d/" + FileName(i)); }
  Ino dir = 0;
};

TEST(FsColdPath, OpensInListingOrderFetchTheNextFilesAhead) {
  DirFixture f;
  f.Cat(0);
  f.store->WaitForReadahead();
  for (int i = 1; i < kFiles; ++i) EXPECT_EQ(f.GetsOf(i), 0u) << "one open is no order yet";
  f.Cat(1);  // the next file in listing order: the eight after it are fetched ahead
  f.store->WaitForReadahead();
  EXPECT_EQ(f.fs->counters().prefetched_files, 8u);
  for (int i = 2; i <= 9; ++i) EXPECT_EQ(f.GetsOf(i), 3u) << FileName(i) << ": fetched whole before its open";
  for (int i = 10; i < kFiles; ++i) EXPECT_EQ(f.GetsOf(i), 0u) << FileName(i) << ": beyond the window";
  // Reading on in order: the opened files cost nothing more, the window slides.
  for (int i = 2; i <= 5; ++i) f.Cat(i);
  f.store->WaitForReadahead();
  for (int i = 2; i <= 13; ++i) EXPECT_EQ(f.GetsOf(i), 3u) << FileName(i) << ": each block fetched once";
  EXPECT_EQ(f.GetsOf(14), 0u);
  EXPECT_EQ(f.fs->counters().prefetched_files, 12u);
  // Opening a file again, or the one being read, changes nothing.
  f.Cat(5);
  f.store->WaitForReadahead();
  EXPECT_EQ(f.fs->counters().prefetched_files, 12u);
}

// After a remount every block is on disk and none in RAM: opens in listing
// order read the next files from disk into RAM ahead of their opens, so
// their readers wait on no disk read (the remount's warm pass was 4x slower
// than the same mount's).
TEST(FsWarmPath, AfterARemountTheNextFilesAreReadFromDiskAheadOfTheirOpens) {
  const auto cache_dir = std::filesystem::temp_directory_path() / ("strata-fs-remount-" + std::to_string(getpid()));
  std::filesystem::remove_all(cache_dir);
  {
    DirFixture f(cache_dir.string());
    for (int i = 0; i < kFiles; ++i) f.Cat(i);
    f.store->WaitForReadahead();
    const uint64_t gets = f.counting->gets.load();
    f.Remount();
    ASSERT_EQ(f.cache->ram().blocks(), 0u);
    ASSERT_EQ(f.cache->disk()->blocks(), 3u * kFiles);
    f.List();
    f.Cat(0);
    f.Cat(1);  // in listing order: files 2-9 are read ahead
    f.store->WaitForReadahead();
    EXPECT_EQ(f.fs->counters().prefetched_files, 8u) << "files on disk only are read into RAM ahead";
    const uint64_t disk_hits = f.CacheCount(cache::CacheCounter::kDiskHits);
    const uint64_t ahead_hits = f.CacheCount(cache::CacheCounter::kReadaheadHits);
    for (int i = 2; i <= 9; ++i) f.Cat(i);
    EXPECT_EQ(f.CacheCount(cache::CacheCounter::kDiskHits), disk_hits) << "their readers waited on no disk read";
    EXPECT_EQ(f.CacheCount(cache::CacheCounter::kReadaheadHits), ahead_hits + 3 * 8);
    EXPECT_EQ(f.counting->gets.load(), gets) << "nothing from the backend";
  }
  std::filesystem::remove_all(cache_dir);
}

// Issue 26: what the cache knew of each file (ETag, size, metadata) is kept
// with its disk tier, so a remount's `ls -l` costs one LIST of the directory,
// not a HEAD per file for its attributes: within the attribute TTL, and after
// it (the listing revalidates the kept metadata of unchanged files).
TEST(FsWarmPath, AfterARemountAttributesCostNoHeadPerFile) {
  const auto cache_dir = std::filesystem::temp_directory_path() / ("strata-fs-remeta-" + std::to_string(getpid()));
  std::filesystem::remove_all(cache_dir);
  {
    DirFixture f(cache_dir.string());
    const uint64_t first_heads = f.counting->heads.load();
    EXPECT_GE(first_heads, uint64_t{kFiles}) << "the first mount asks for each file's attributes";
    for (int i = 0; i < kFiles; ++i) f.Cat(i);
    for (bool expired : {false, true}) {
      SCOPED_TRACE(expired ? "past the TTL" : "within the TTL");
      if (expired) f.clock.Advance(std::chrono::seconds(2));
      f.Remount();
      f.counting->Reset();
      f.List();
      for (int i = 0; i < kFiles; ++i) {
        auto e = f.fs->Lookup(f.dir, FileName(i));
        ASSERT_TRUE(e.ok()) << e.status();
        EXPECT_EQ(e->attr.size, 3 * FsFixture::kBlock - 100);
      }
      EXPECT_LE(f.counting->heads.load(), first_heads - kFiles) << "no HEAD per file";
      EXPECT_EQ(f.counting->Lists("d/"), 1u);
      for (int i = 0; i < kFiles; ++i) f.Cat(i);
      EXPECT_EQ(f.counting->gets.load(), 0u) << "every block from the disk tier";
    }
  }
  std::filesystem::remove_all(cache_dir);
}

TEST(FsColdPath, OpensInAnyOtherOrderFetchNothingAhead) {
  DirFixture f;
  // A permutation in which no open follows the previous one in listing order.
  for (int k = 0; k < kFiles; ++k) {
    const int i = (k * 7) % kFiles;
    f.Cat(i);
    f.store->WaitForReadahead();
    for (int later = k + 1; later < kFiles; ++later) {
      EXPECT_EQ(f.GetsOf((later * 7) % kFiles), 0u) << "after opening " << FileName(i);
    }
  }
  EXPECT_EQ(f.fs->counters().prefetched_files, 0u);
  // Backwards is not listing order either.
  for (int i = kFiles - 1; i >= 0; --i) f.Cat(i);
  EXPECT_EQ(f.fs->counters().prefetched_files, 0u);
}

TEST(FsColdPath, PrefetchOffFetchesNothingAhead) {
  FsOptions o = FsFixture::Defaults();
  o.prefetch_files = 0;
  FsFixture f(o);
  for (int i = 0; i < 4; ++i) f.Put("g" + std::to_string(i), Pattern(1000, i));
  auto dh = f.fs->OpenDir(kRootIno);
  ASSERT_TRUE(dh.ok());
  for (int i = 0; i < 2; ++i) {
    auto e = f.fs->Lookup(kRootIno, "g" + std::to_string(i));
    ASSERT_TRUE(e.ok());
    auto h = f.fs->Open(e->attr.ino, O_RDONLY);
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE(f.fs->Release(h->fh).ok());
  }
  f.store->WaitForReadahead();
  EXPECT_EQ(f.counting->GetsOf("g2"), 0u);
  EXPECT_EQ(f.fs->counters().prefetched_files, 0u);
}

// The kernel keeps pages per inode: a reader of the old version keeps its
// inode (and its pages); the path's new version gets another.
TEST(FsVersions, AFileReplacedWhileOpenGetsANewInode) {
  FsFixture f;
  const std::string v1 = Pattern(2 * FsFixture::kBlock, 1), v2 = Pattern(2 * FsFixture::kBlock, 2);
  f.Put("v", v1);
  auto e1 = f.fs->Lookup(kRootIno, "v");
  ASSERT_TRUE(e1.ok()) << e1.status();
  auto a = f.fs->Open(e1->attr.ino, O_RDONLY);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(ReadAll(*f.fs, a->fh), v1);
  f.store->WaitForReadahead();
  f.Put("v", v2);
  f.clock.Advance(2s);  // past attr_ttl and entry_ttl
  auto e2 = f.fs->Lookup(kRootIno, "v");
  ASSERT_TRUE(e2.ok()) << e2.status();
  EXPECT_NE(e2->attr.ino, e1->attr.ino);
  EXPECT_EQ(f.fs->counters().new_versions, 1u);
  auto b = f.fs->Open(e2->attr.ino, O_RDONLY);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FALSE(b->keep_cache);
  EXPECT_EQ(ReadAll(*f.fs, b->fh), v2);
  EXPECT_EQ(ReadAll(*f.fs, a->fh), v1) << "the old handle reads the version it opened (cached blocks)";
  auto old_attr = f.fs->GetAttr(e1->attr.ino);
  ASSERT_TRUE(old_attr.ok());
  EXPECT_EQ(old_attr->ino, e1->attr.ino);
  ASSERT_TRUE(f.fs->Release(a->fh).ok());
  ASSERT_TRUE(f.fs->Release(b->fh).ok());
  f.fs->Forget(e1->attr.ino, 1);
  EXPECT_EQ(f.fs->GetAttr(e1->attr.ino).status().code(), Code::kNotFound) << "dropped once unused";
  // Replaced while nobody has it open: the number stays.
  f.Put("v", v1);
  f.clock.Advance(2s);
  auto e3 = f.fs->Lookup(kRootIno, "v");
  ASSERT_TRUE(e3.ok());
  EXPECT_EQ(e3->attr.ino, e2->attr.ino);
}

// The kernel may ask for the old inode's attributes first (its entry still
// valid, its attributes expired): that revalidation finds the new version
// and the old inode still answers, with the version its handles read.
TEST(FsVersions, TheOldInodeStillAnswersWhenItsRevalidationFindsTheNewVersion) {
  FsFixture f;
  f.Put("v", Pattern(1000, 1));
  auto e1 = f.fs->Lookup(kRootIno, "v");
  ASSERT_TRUE(e1.ok()) << e1.status();
  auto a = f.fs->Open(e1->attr.ino, O_RDONLY);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(ReadAll(*f.fs, a->fh), Pattern(1000, 1));  // cached: the old version stays readable
  f.Put("v", Pattern(3000, 2));
  f.clock.Advance(2s);
  auto old_attr = f.fs->GetAttr(e1->attr.ino);
  ASSERT_TRUE(old_attr.ok()) << old_attr.status();
  EXPECT_EQ(old_attr->size, 1000u);
  auto reopened = f.fs->Open(e1->attr.ino, O_RDONLY);  // through the kernel's still-valid entry
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(ReadAll(*f.fs, reopened->fh), Pattern(1000, 1));
  auto e2 = f.fs->Lookup(kRootIno, "v");
  ASSERT_TRUE(e2.ok()) << e2.status();
  EXPECT_NE(e2->attr.ino, e1->attr.ino);
  EXPECT_EQ(e2->attr.size, 3000u);
  ASSERT_TRUE(f.fs->Release(a->fh).ok());
  ASSERT_TRUE(f.fs->Release(reopened->fh).ok());
}

}  // namespace
}  // namespace strata::fs
