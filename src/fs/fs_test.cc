// Unit tests of the mount's namespace over mem stores and a FakeClock.
#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "fs/fs_test_util.h"

namespace strata::fs {
namespace {

using testing::FsFixture;
using namespace std::chrono_literals;

std::string Pattern(size_t n, uint32_t seed = 1) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (auto& c : s) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

std::string ReadAll(ObjectFs& fs, uint64_t fh, size_t chunk = 7000) {
  std::string out;
  for (;;) {
    auto r = fs.Read(fh, out.size(), chunk);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->empty()) return out;
    out += r->view();
  }
}

std::vector<std::string> Names(ObjectFs& fs, Ino dir) {
  auto dh = fs.OpenDir(dir);
  EXPECT_TRUE(dh.ok()) << dh.status();
  if (!dh.ok()) return {};
  std::vector<std::string> names;
  for (const auto& item : (*fs.ReadDir(*dh))->items) names.push_back(item.name + (item.attr.is_dir ? "/" : ""));
  fs.ReleaseDir(*dh);
  return names;
}

TEST(FsTest, ListingGivesNamesTypesAndSizes) {
  FsFixture f;
  f.Put("a/1.txt", "one");
  f.Put("a/2.txt", "two!");
  f.Put("a/sub/x", "x");
  f.Put("a/", "");  // a directory marker is not an entry
  f.Put("top", "t");
  EXPECT_EQ(Names(*f.fs, kRootIno), (std::vector<std::string>{"./", "../", "a/", "top"}));
  auto a = f.fs->Lookup(kRootIno, "a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->attr.is_dir);
  EXPECT_EQ(a->attr.mode, S_IFDIR | 0755u);
  EXPECT_EQ(Names(*f.fs, a->attr.ino), (std::vector<std::string>{"./", "../", "1.txt", "2.txt", "sub/"}));
  uint64_t lists = f.fs->counters().lists;
  auto two = f.fs->Lookup(a->attr.ino, "2.txt");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->attr.size, 4u);
  EXPECT_EQ(two->attr.mode, S_IFREG | 0644u);
  EXPECT_EQ(two->attr.uid, 1000u);
  EXPECT_EQ(f.fs->Lookup(a->attr.ino, "nope").status().code(), Code::kNotFound);
  EXPECT_EQ(f.fs->counters().lists, lists) << "a fresh listing answers lookups, positive and negative";
}

TEST(FsTest, InodeNumbersAreStable) {
  FsFixture f;
  f.Put("d/f", "x");
  auto d = f.fs->Lookup(kRootIno, "d");
  auto file = f.fs->Lookup(d->attr.ino, "f");
  ASSERT_TRUE(file.ok());
  f.fs->Forget(file->attr.ino, 1);
  f.fs->Forget(d->attr.ino, 1);
  f.clock.Advance(1h);  // every cache expired: the names are probed again
  auto d2 = f.fs->Lookup(kRootIno, "d");
  auto file2 = f.fs->Lookup(d2->attr.ino, "f");
  ASSERT_TRUE(file2.ok());
  EXPECT_EQ(d2->attr.ino, d->attr.ino);
  EXPECT_EQ(file2->attr.ino, file->attr.ino);
  EXPECT_NE(file->attr.ino, d->attr.ino);
}

TEST(FsTest, LookupWithoutListingProbesOnce) {
  FsFixture f;
  f.Put("dir/file", "abc");
  f.Put("dir.txt", "sibling sorting before dir/");
  auto d = f.fs->Lookup(kRootIno, "dir");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->attr.is_dir);
  auto file = f.fs->Lookup(d->attr.ino, "file");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->attr.size, 3u);
  EXPECT_EQ(f.fs->counters().lists, 2u);
  EXPECT_EQ(f.fs->Lookup(kRootIno, "missing").status().code(), Code::kNotFound);
}

TEST(FsTest, TtlsBoundStaleness) {
  FsFixture f;  // attr/entry 1 s, dir 5 s
  f.Put("d/old", "1");
  auto d = f.fs->Lookup(kRootIno, "d");
  ASSERT_EQ(Names(*f.fs, d->attr.ino).size(), 3u);
  f.Put("d/new", "22");  // another writer, behind the cache's back
  f.clock.Advance(2s);
  EXPECT_EQ(f.fs->Lookup(d->attr.ino, "new").status().code(), Code::kNotFound) << "listing still fresh";
  EXPECT_EQ(Names(*f.fs, d->attr.ino).size(), 3u);
  f.clock.Advance(4s);
  EXPECT_EQ(Names(*f.fs, d->attr.ino), (std::vector<std::string>{"./", "../", "new", "old"}));
  // Attributes: cached for attr_ttl, then refreshed.
  auto old = f.fs->Lookup(d->attr.ino, "old");
  f.Put("d/old", "longer");
  EXPECT_EQ(f.fs->GetAttr(old->attr.ino)->size, 1u);
  f.clock.Advance(1500ms);
  EXPECT_EQ(f.fs->GetAttr(old->attr.ino)->size, 6u);
  // A name deleted elsewhere disappears once its entry expires.
  ASSERT_TRUE(f.mem->Delete("d/old").ok());
  f.clock.Advance(10s);
  EXPECT_EQ(f.fs->GetAttr(old->attr.ino).status().code(), Code::kNotFound);
  EXPECT_EQ(f.fs->Lookup(d->attr.ino, "old").status().code(), Code::kNotFound);
}

// The warm path: once the attributes expired, re-reading a directory's files
// costs one LIST per 1,000 of them (shared by concurrent opens), no HEAD per
// file and no GET of a cached byte; a changed ETag in the listing is seen.
TEST(FsTest, ExpiredAttributesAreRevalidatedByOneListingPerDirectory) {
  FsFixture f;
  constexpr int kFiles = 1200;  // two listing pages
  for (int i = 0; i < kFiles; ++i) f.Put("d/f" + std::to_string(i), "v1-" + std::to_string(i));
  auto d = f.fs->Lookup(kRootIno, "d");
  ASSERT_TRUE(d.ok()) << d.status();
  const Ino dir = d->attr.ino;
  auto read_all = [&](int threads, bool replaced) {
    std::vector<std::thread> pool;
    std::atomic<int> next{0};
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        for (int i; (i = next++) < kFiles;) {
          const std::string name = "f" + std::to_string(i);
          auto e = f.fs->Lookup(dir, name);
          ASSERT_TRUE(e.ok()) << e.status();
          auto h = f.fs->Open(e->attr.ino, O_RDONLY);
          ASSERT_TRUE(h.ok()) << h.status();
          // Revalidated unchanged: the kernel keeps the pages it read in the cold pass.
          if (replaced) {
            EXPECT_EQ(h->keep_cache, i != 7) << name;
          }
          const std::string want = (i == 7 && replaced ? "version two-" : "v1-") + std::to_string(i);
          EXPECT_EQ(ReadAll(*f.fs, h->fh), want) << name;
          ASSERT_TRUE(f.fs->Release(h->fh).ok());
          f.fs->Forget(e->attr.ino, 1);
        }
      });
    }
    for (auto& th : pool) th.join();
  };
  read_all(1, false);  // cold: names probed one by one, bytes fetched
  f.store->WaitForReadahead();
  f.Put("d/f7", "version two-7");  // replaced behind the mount's back

  f.clock.Advance(1h);  // every attribute, entry and listing expired
  f.counting->Reset();
  read_all(8, true);
  EXPECT_EQ(f.counting->Lists("d/"), 2u) << "one listing of the directory (two pages), shared by the opens";
  // At most the replaced one's: its attributes' HEAD is answered by the cache when another
  // thread's read of it fetched the new version first.
  EXPECT_LE(f.counting->heads.load(), 1u) << "no HEAD per file; only the replaced one's attributes are read";
  EXPECT_EQ(f.fs->counters().meta_heads, static_cast<uint64_t>(kFiles + 2))
      << "cold: one per file and the directory marker; warm: the replaced one";
  EXPECT_EQ(f.counting->gets.load(), 1u) << "cached blocks served; only the replaced object is fetched";
  EXPECT_EQ(f.fs->counters().heads, 0u);
}

TEST(FsTest, ReadsAreByteExact) {
  FsFixture f;
  std::string data = Pattern(5 * FsFixture::kBlock + 123);
  f.Put("big", data);
  auto e = f.fs->Lookup(kRootIno, "big");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->attr.size, data.size());
  auto h = f.fs->Open(e->attr.ino, O_RDONLY);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(ReadAll(*f.fs, h->fh), data);
  auto mid = f.fs->Read(h->fh, FsFixture::kBlock - 10, 20);
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(mid->ToString(), data.substr(FsFixture::kBlock - 10, 20));
  EXPECT_TRUE(f.fs->Read(h->fh, data.size() + 5, 10)->empty());
  EXPECT_TRUE(f.fs->Release(h->fh).ok());
}

TEST(FsTest, ReadaheadIsPerHandle) {
  FsFixture f;
  std::string data = Pattern(64 * FsFixture::kBlock);
  f.Put("seq", data);
  auto e = f.fs->Lookup(kRootIno, "seq");
  auto random = f.fs->Open(e->attr.ino, O_RDONLY);
  auto seq = f.fs->Open(e->attr.ino, O_RDONLY);
  ASSERT_TRUE(random.ok() && seq.ok());
  // A random reader interleaved with a sequential one on the same file...
  for (uint64_t i : {40, 3, 61, 17, 29, 8}) {
    ASSERT_TRUE(f.fs->Read(random->fh, i * FsFixture::kBlock + 5, 100).ok());
  }
  f.store->WaitForReadahead();
  EXPECT_EQ(f.CacheCount(cache::CacheCounter::kReadaheadIssued), 0u) << "random reads never trigger read-ahead";
  std::string got;
  for (int i = 0; i < 8; ++i) {
    got += f.fs->Read(seq->fh, got.size(), FsFixture::kBlock)->ToString();
    ASSERT_TRUE(f.fs->Read(random->fh, (50 - 3 * i) * FsFixture::kBlock, 10).ok());
  }
  f.store->WaitForReadahead();
  // ...does not break the sequential handle's detection.
  EXPECT_GT(f.CacheCount(cache::CacheCounter::kReadaheadIssued), 4u);
  EXPECT_EQ(got, data.substr(0, got.size()));
  uint64_t misses = f.CacheCount(cache::CacheCounter::kMisses);
  got += f.fs->Read(seq->fh, got.size(), FsFixture::kBlock)->ToString();
  EXPECT_EQ(f.CacheCount(cache::CacheCounter::kMisses), misses) << "the next block was read ahead";
  f.fs->Release(random->fh).IgnoreError();
  f.fs->Release(seq->fh).IgnoreError();
}

TEST(FsTest, KeepCacheOnlyWhileUnchanged) {
  FsFixture f;
  f.Put("k", "version one");
  auto e = f.fs->Lookup(kRootIno, "k");
  auto h1 = f.fs->Open(e->attr.ino, O_RDONLY);
  EXPECT_FALSE(h1->keep_cache);
  f.fs->Release(h1->fh).IgnoreError();
  auto h2 = f.fs->Open(e->attr.ino, O_RDONLY);
  EXPECT_TRUE(h2->keep_cache) << "unchanged: the kernel may keep its pages";
  f.fs->Release(h2->fh).IgnoreError();
  f.Put("k", "version two!!");
  f.clock.Advance(2s);
  auto h3 = f.fs->Open(e->attr.ino, O_RDONLY);
  EXPECT_FALSE(h3->keep_cache);
  EXPECT_EQ(ReadAll(*f.fs, h3->fh), "version two!!");
  EXPECT_EQ(f.fs->GetAttr(e->attr.ino)->size, 13u);
  f.fs->Release(h3->fh).IgnoreError();
}

TEST(FsTest, WritesUploadOnClose) {
  FsFixture f;
  auto c = f.fs->Create(kRootIno, "new.bin", 0640, O_WRONLY | O_CREAT);
  ASSERT_TRUE(c.ok()) << c.status();
  auto [entry, open] = *c;
  EXPECT_EQ(entry.attr.mode, S_IFREG | 0640u);
  std::string data = Pattern(300000, 7);
  for (size_t off = 0; off < data.size(); off += 65536) {
    size_t n = std::min<size_t>(65536, data.size() - off);
    ASSERT_EQ(*f.fs->Write(open.fh, off, data.data() + off, n), n);
  }
  EXPECT_EQ(f.Backend("new.bin").substr(0, 1), "<") << "nothing uploaded before close";
  EXPECT_EQ(f.fs->GetAttr(entry.attr.ino)->size, data.size());
  EXPECT_EQ(Names(*f.fs, kRootIno), (std::vector<std::string>{"./", "../", "new.bin"}));
  // Readable through the mount while still open for writing.
  auto r = f.fs->Open(entry.attr.ino, O_RDONLY);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ReadAll(*f.fs, r->fh), data);
  f.fs->Release(r->fh).IgnoreError();
  ASSERT_TRUE(f.fs->Flush(open.fh).ok());
  EXPECT_EQ(f.Backend("new.bin"), data);
  ASSERT_TRUE(f.fs->Release(open.fh).ok());
  EXPECT_EQ(f.fs->counters().uploads, 1u) << "flush then release uploads once";
  EXPECT_EQ(f.local.FileCount(), 0u) << "write buffer removed";
  // Random writes within a new file are fine (it is local until uploaded).
  auto c2 = f.fs->Create(kRootIno, "patched", 0644, O_RDWR | O_CREAT);
  ASSERT_TRUE(f.fs->Write(c2->second.fh, 0, "hello world", 11).ok());
  ASSERT_TRUE(f.fs->Write(c2->second.fh, 6, "WORLD", 5).ok());
  ASSERT_TRUE(f.fs->Release(c2->second.fh).ok());
  EXPECT_EQ(f.Backend("patched"), "hello WORLD");
  // An empty created file becomes an empty object (touch).
  auto c3 = f.fs->Create(kRootIno, "empty", 0644, O_WRONLY | O_CREAT);
  ASSERT_TRUE(f.fs->Release(c3->second.fh).ok());
  EXPECT_EQ(f.Backend("empty"), "");
}

FsOptions SharedDirOptions(FsFixture& f) {
  FsOptions options = FsFixture::Defaults();
  options.clock = &f.clock;
  options.local = &f.local;
  options.write_dir = "/buffers";
  return options;
}

// The files under `dir` (flat names).
std::vector<std::string> FilesUnder(FsFixture& f, const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& p : f.local.Paths())
    if (p.starts_with(dir + "/")) out.push_back(p.substr(dir.size() + 1));
  return out;
}

TEST(FsTest, WriteBuffersOfDeadMountsAreSweptAtStartAndLiveOnesKept) {
  FsFixture f;
  auto put = [&](const std::string& path, std::string_view bytes) {
    auto out = f.local.OpenForWrite(path, true);
    ASSERT_TRUE(out.ok() && (*out)->Append(bytes).ok());
  };
  // A dead mount (its lock is free) and a live one (its lock is held), PIDs alike.
  put("/buffers/strata-mount-1-dead/lock", "");
  put("/buffers/strata-mount-1-dead/w-1", "unuploaded");
  put("/buffers/strata-mount-1-dead/w-2", "");
  put("/buffers/strata-mount-1-live/w-1", "being written");
  auto held = f.local.LockFile("/buffers/strata-mount-1-live/lock");
  ASSERT_TRUE(held.ok());
  put("/buffers/unrelated", "x");
  ObjectFs second(f.store, SharedDirOptions(f));
  EXPECT_FALSE(*f.local.Exists("/buffers/strata-mount-1-dead/w-2")) << "an empty buffer of a dead mount is removed";
  EXPECT_FALSE(*f.local.Exists("/buffers/strata-mount-1-dead/w-1"));
  auto lost = FilesUnder(f, "/buffers/lost+found");
  ASSERT_EQ(lost.size(), 1u) << "a dead mount's bytes are kept, not deleted";
  EXPECT_NE(lost[0].find("strata-mount-1-dead%2Fw-1"), std::string::npos) << lost[0];
  EXPECT_EQ(f.local.Contents("/buffers/lost+found/" + lost[0]), "unuploaded");
  EXPECT_EQ(f.local.Contents("/buffers/strata-mount-1-live/w-1"), "being written") << "a live mount's buffer is kept";
  EXPECT_TRUE(*f.local.Exists("/buffers/unrelated"));
}

TEST(FsTest, TwoMountsSharingAWriteDirNeverShareABuffer) {
  FsFixture f;
  ObjectFs other(f.store, SharedDirOptions(f));  // same process, same write dir, same key
  auto a = f.fs->Create(kRootIno, "x", 0644, O_RDWR | O_CREAT);
  auto b = other.Create(kRootIno, "y", 0644, O_RDWR | O_CREAT);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(f.fs->Write(a->second.fh, 0, "from the first", 14).ok());
  ASSERT_TRUE(other.Write(b->second.fh, 0, "2nd", 3).ok());
  // A third mount starting meanwhile sweeps neither.
  { ObjectFs third(f.store, SharedDirOptions(f)); }
  EXPECT_EQ(f.fs->Read(a->second.fh, 0, 100)->ToString(), "from the first");
  EXPECT_EQ(other.Read(b->second.fh, 0, 100)->ToString(), "2nd");
  ASSERT_TRUE(f.fs->Release(a->second.fh).ok());
  ASSERT_TRUE(other.Release(b->second.fh).ok());
  EXPECT_EQ(f.Backend("x"), "from the first");
  EXPECT_EQ(f.Backend("y"), "2nd");
  ASSERT_TRUE(f.fs->Shutdown().ok());
  ASSERT_TRUE(other.Shutdown().ok());
  EXPECT_TRUE(FilesUnder(f, "/buffers").empty()) << "each mount removes its own directory on the way out";
}

TEST(FsTest, UnuploadedBytesSurviveShutdownInLostAndFound) {
  FsFixture f;
  f.Put("d/", "");
  auto d = f.fs->Lookup(kRootIno, "d");
  auto c = f.fs->Create(d->attr.ino, "data.bin", 0644, O_WRONLY | O_CREAT);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(f.fs->Write(c->second.fh, 0, "precious", 8).ok());
  f.fault->FailKey("d/data.bin", UnavailableError("injected"), -1, object::FaultOp::kPut);
  EXPECT_EQ(f.fs->Release(c->second.fh).code(), Code::kIOError);
  Status st = f.fs->Shutdown();
  EXPECT_EQ(st.code(), Code::kIOError) << st;
  auto lost = FilesUnder(f, "/buffers/lost+found");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_TRUE(lost[0].ends_with("-d%2Fdata.bin")) << lost[0];
  EXPECT_EQ(f.local.Contents("/buffers/lost+found/" + lost[0]), "precious");
  EXPECT_EQ(f.Backend("d/data.bin").front(), '<') << "nothing uploaded";
}

TEST(FsTest, ShortReadOfAWriteBufferIsAnErrorNeverUploaded) {
  FsFixture f;
  auto c = f.fs->Create(kRootIno, "f", 0644, O_RDWR | O_CREAT);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(f.fs->Write(c->second.fh, 0, "0123456789", 10).ok());
  std::string buffer;
  for (const auto& p : f.local.Paths())
    if (p.find("/w-") != std::string::npos) buffer = p;
  ASSERT_FALSE(buffer.empty());
  ASSERT_TRUE(f.local.Truncate(buffer, 4).ok());  // cut underneath
  EXPECT_EQ(f.fs->Read(c->second.fh, 0, 10).status().code(), Code::kIOError);
  EXPECT_EQ(f.fs->Flush(c->second.fh).code(), Code::kIOError);
  EXPECT_EQ(f.Backend("f").front(), '<') << "no stale memory uploaded";
  EXPECT_EQ(f.fs->counters().uploads, 0u);
  f.fs->Release(c->second.fh).IgnoreError();
}

TEST(FsTest, LargeFilesUseMultipart) {
  FsOptions o = FsFixture::Defaults();
  o.multipart_threshold = 256 << 10;
  o.part_size = 96 << 10;
  FsFixture f(o);
  auto c = f.fs->Create(kRootIno, "large", 0644, O_WRONLY | O_CREAT);
  std::string data = Pattern(1000000, 3);
  ASSERT_TRUE(f.fs->Write(c->second.fh, 0, data.data(), data.size()).ok());
  ASSERT_TRUE(f.fs->Fsync(c->second.fh).ok());
  EXPECT_EQ(f.fs->counters().multipart_uploads, 1u);
  EXPECT_EQ(f.Backend("large"), data);
  auto head = f.mem->Head("large");
  EXPECT_NE(head->etag.find('-'), std::string::npos) << "a multipart ETag: " << head->etag;
  ASSERT_TRUE(f.fs->Release(c->second.fh).ok());
  EXPECT_EQ(f.fs->counters().uploads, 1u);
}

TEST(FsTest, UploadFailureIsReportedAndRetried) {
  FsFixture f;
  auto c = f.fs->Create(kRootIno, "f", 0644, O_WRONLY | O_CREAT);
  ASSERT_TRUE(f.fs->Write(c->second.fh, 0, "data", 4).ok());
  f.fault->FailKey("f", UnavailableError("injected"), 1, object::FaultOp::kPut);
  Status st = f.fs->Flush(c->second.fh);
  EXPECT_EQ(st.code(), Code::kIOError) << st;
  EXPECT_NE(st.message().find("/f"), std::string::npos) << st;
  EXPECT_TRUE(f.fs->Release(c->second.fh).ok()) << "the retry at release succeeds";
  EXPECT_EQ(f.Backend("f"), "data");
}

TEST(FsTest, OverwritingNeedsTruncate) {
  FsFixture f;
  f.Put("existing", "old content");
  auto e = f.fs->Lookup(kRootIno, "existing");
  EXPECT_EQ(f.fs->Open(e->attr.ino, O_WRONLY).status().code(), Code::kNotSupported);
  EXPECT_EQ(f.fs->Open(e->attr.ino, O_RDWR | O_APPEND).status().code(), Code::kNotSupported);
  EXPECT_EQ(f.Backend("existing"), "old content") << "nothing touched";
  auto h = f.fs->Open(e->attr.ino, O_WRONLY | O_TRUNC);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(f.fs->GetAttr(e->attr.ino)->size, 0u);
  ASSERT_TRUE(f.fs->Write(h->fh, 0, "new", 3).ok());
  ASSERT_TRUE(f.fs->Release(h->fh).ok());
  EXPECT_EQ(f.Backend("existing"), "new");
  // Truncating to zero is a whole-object replacement; other sizes are refused.
  SetAttrRequest shrink;
  shrink.size = 1;
  EXPECT_EQ(f.fs->SetAttr(e->attr.ino, shrink).status().code(), Code::kNotSupported);
  SetAttrRequest zero;
  zero.size = 0;
  ASSERT_TRUE(f.fs->SetAttr(e->attr.ino, zero).ok());
  EXPECT_EQ(f.Backend("existing"), "");
}

TEST(FsTest, UnlinkMkdirRmdir) {
  FsFixture f;
  f.Put("gone", "x");
  ASSERT_TRUE(f.fs->Unlink(kRootIno, "gone").ok());
  EXPECT_EQ(f.Backend("gone").substr(0, 10), "<NotFound:");
  EXPECT_EQ(f.fs->Lookup(kRootIno, "gone").status().code(), Code::kNotFound);
  EXPECT_EQ(f.fs->Unlink(kRootIno, "gone").code(), Code::kNotFound);

  auto d = f.fs->Mkdir(kRootIno, "d", 0755);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->attr.is_dir);
  EXPECT_EQ(f.Backend("d/"), "") << "marker object";
  EXPECT_EQ(f.fs->Mkdir(kRootIno, "d", 0755).status().code(), Code::kAlreadyExists);
  EXPECT_EQ(Names(*f.fs, d->attr.ino).size(), 2u);
  auto c = f.fs->Create(d->attr.ino, "child", 0644, O_WRONLY | O_CREAT);
  EXPECT_EQ(f.fs->Rmdir(kRootIno, "d").code(), Code::kPreconditionFailed) << "a pending child counts";
  ASSERT_TRUE(f.fs->Release(c->second.fh).ok());
  EXPECT_EQ(f.fs->Rmdir(kRootIno, "d").code(), Code::kPreconditionFailed);
  ASSERT_TRUE(f.fs->Unlink(d->attr.ino, "child").ok());
  ASSERT_TRUE(f.fs->Rmdir(kRootIno, "d").ok());
  EXPECT_EQ(f.Backend("d/").substr(0, 10), "<NotFound:");
  EXPECT_EQ(f.fs->Lookup(kRootIno, "d").status().code(), Code::kNotFound);

  // Unlinking a file still being written: nothing is ever uploaded.
  auto t = f.fs->Create(kRootIno, "tmp", 0644, O_WRONLY | O_CREAT);
  ASSERT_TRUE(f.fs->Write(t->second.fh, 0, "zz", 2).ok());
  ASSERT_TRUE(f.fs->Unlink(kRootIno, "tmp").ok());
  ASSERT_TRUE(f.fs->Release(t->second.fh).ok());
  EXPECT_EQ(f.Backend("tmp").substr(0, 10), "<NotFound:");
  EXPECT_EQ(f.local.FileCount(), 0u);
}

TEST(FsTest, MkdirOnBackendWithoutMarkers) {
  // As file://: "dir/" keys are refused (InvalidArgument), and Capabilities says so up front.
  FsFixture f(FsFixture::Defaults(), 2, /*markers=*/false);
  auto d = f.fs->Mkdir(kRootIno, "local", 0755);
  ASSERT_TRUE(d.ok()) << d.status();
  f.clock.Advance(1h);
  EXPECT_EQ(Names(*f.fs, kRootIno), (std::vector<std::string>{"./", "../", "local/"})) << "kept across relisting";
  auto c = f.fs->Create(d->attr.ino, "file", 0644, O_WRONLY | O_CREAT);
  ASSERT_TRUE(f.fs->Write(c->second.fh, 0, "z", 1).ok());
  ASSERT_TRUE(f.fs->Release(c->second.fh).ok());
  EXPECT_EQ(f.Backend("local/file"), "z");
  ASSERT_TRUE(f.fs->Unlink(d->attr.ino, "file").ok());
  ASSERT_TRUE(f.fs->Mkdir(kRootIno, "empty", 0755).ok());
  ASSERT_TRUE(f.fs->Rename(kRootIno, "empty", kRootIno, "moved", 0).ok());
  ASSERT_TRUE(f.fs->Rmdir(kRootIno, "moved").ok());
  ASSERT_TRUE(f.fs->Rmdir(kRootIno, "local").ok());
  EXPECT_EQ(f.fs->Lookup(kRootIno, "local").status().code(), Code::kNotFound);
}

TEST(FsTest, RenameFilesAndEmptyDirs) {
  FsFixture f;
  f.Put("src/a", "payload");
  f.Put("dst/b", "old");
  auto src = f.fs->Lookup(kRootIno, "src");
  auto dst = f.fs->Lookup(kRootIno, "dst");
  auto a = f.fs->Lookup(src->attr.ino, "a");
  ASSERT_TRUE(f.fs->Rename(src->attr.ino, "a", dst->attr.ino, "b", 1).code() == Code::kAlreadyExists);
  ASSERT_TRUE(f.fs->Rename(src->attr.ino, "a", dst->attr.ino, "b", 0).ok());
  EXPECT_EQ(f.Backend("dst/b"), "payload");
  EXPECT_EQ(f.Backend("src/a").substr(0, 10), "<NotFound:");
  auto b = f.fs->Lookup(dst->attr.ino, "b");
  EXPECT_EQ(b->attr.ino, a->attr.ino) << "a renamed file keeps its inode";
  EXPECT_EQ(f.fs->Lookup(src->attr.ino, "a").status().code(), Code::kNotFound);
  EXPECT_EQ(f.fs->Rename(kRootIno, "dst", kRootIno, "dst2", 0).code(), Code::kNotSupported)
      << "non-empty directories are not renamed";
  ASSERT_TRUE(f.fs->Mkdir(kRootIno, "e", 0755).ok());
  ASSERT_TRUE(f.fs->Rename(kRootIno, "e", kRootIno, "e2", 0).ok());
  EXPECT_EQ(f.Backend("e2/"), "");
  EXPECT_EQ(f.Backend("e/").substr(0, 10), "<NotFound:");
  EXPECT_EQ(f.fs->Rename(kRootIno, "e2", kRootIno, "x", 2).code(), Code::kInvalidArgument);
  // A file not yet uploaded is renamed locally, then uploaded under its new name.
  auto c = f.fs->Create(kRootIno, "part.tmp", 0644, O_WRONLY | O_CREAT);
  ASSERT_TRUE(f.fs->Write(c->second.fh, 0, "abc", 3).ok());
  ASSERT_TRUE(f.fs->Rename(kRootIno, "part.tmp", kRootIno, "final", 0).ok());
  ASSERT_TRUE(f.fs->Release(c->second.fh).ok());
  EXPECT_EQ(f.Backend("final"), "abc");
  EXPECT_EQ(f.Backend("part.tmp").substr(0, 10), "<NotFound:");
}

TEST(FsTest, UnsupportedOperationsAreRefused) {
  FsFixture f;
  f.Put("file", "x");
  auto e = f.fs->Lookup(kRootIno, "file");
  SetAttrRequest same;
  same.mode = 0644;
  same.uid = 1000;
  EXPECT_TRUE(f.fs->SetAttr(e->attr.ino, same).ok()) << "a no-op chmod/chown succeeds";
  EXPECT_EQ(f.fs->counters().meta_copies, 0u) << "and stores nothing";
  EXPECT_EQ(f.fs->Link(e->attr.ino, kRootIno, "hard").code(), Code::kPermissionDenied);
  EXPECT_EQ(f.fs->Mknod(kRootIno, "dir", S_IFDIR | 0755).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(f.fs->counters().refused, 1u);
  EXPECT_EQ(f.fs->Lookup(kRootIno, "a/b").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(f.fs->Lookup(kRootIno, std::string(300, 'n')).status().code(), Code::kOutOfRange);
  EXPECT_EQ(f.Backend("file"), "x");
}

TEST(FsTest, ReadOnlyMountRefusesWrites) {
  FsOptions o = FsFixture::Defaults();
  o.read_only = true;
  FsFixture f(o);
  f.Put("r", "data");
  auto e = f.fs->Lookup(kRootIno, "r");
  EXPECT_EQ(f.fs->Create(kRootIno, "w", 0644, O_WRONLY | O_CREAT).status().code(), Code::kPermissionDenied);
  EXPECT_EQ(f.fs->Open(e->attr.ino, O_WRONLY | O_TRUNC).status().code(), Code::kPermissionDenied);
  EXPECT_EQ(f.fs->Unlink(kRootIno, "r").code(), Code::kPermissionDenied);
  EXPECT_EQ(f.fs->Mkdir(kRootIno, "d", 0755).status().code(), Code::kPermissionDenied);
  EXPECT_EQ(f.Backend("r"), "data");
}

TEST(FsTest, BackendFaultsBecomeIoErrorsAndTheMountStaysUp) {
  FsFixture f;
  std::string data = Pattern(3 * FsFixture::kBlock);
  f.Put("d/obj", data);
  auto d = f.fs->Lookup(kRootIno, "d");
  auto e = f.fs->Lookup(d->attr.ino, "obj");
  auto h = f.fs->Open(e->attr.ino, O_RDONLY);
  ASSERT_TRUE(h.ok());
  f.fault->FailKey("d/obj", UnavailableError("injected 503"), -1, object::FaultOp::kGet);
  auto r = f.fs->Read(h->fh, 0, 4096);
  EXPECT_EQ(r.status().code(), Code::kIOError);
  EXPECT_NE(r.status().message().find("/d/obj"), std::string::npos) << r.status();
  EXPECT_EQ(f.fs->counters().read_errors, 1u);
  f.fault->ClearRules();
  // The kernel's next requests for the block that just failed fail at once...
  const uint64_t requests = f.fault->counters().requests;
  EXPECT_EQ(f.fs->Read(h->fh, 0, 4096).status().code(), Code::kIOError);
  EXPECT_EQ(f.fault->counters().requests, requests) << "no new wait on the backend";
  EXPECT_EQ(f.fs->counters().fast_failed_reads, 1u);
  f.clock.Advance(FsOptions{}.failed_read_backoff);  // ...until a short backoff has passed
  EXPECT_EQ(f.fs->Read(h->fh, 0, 4096)->ToString(), data.substr(0, 4096)) << "the next read works";
  f.fs->Release(h->fh).IgnoreError();
  // Listing failures: IOError, then recovery.
  f.clock.Advance(1h);
  f.fault->FailKey("d/", UnavailableError("injected"), 1, object::FaultOp::kList);
  EXPECT_EQ(f.fs->OpenDir(d->attr.ino).status().code(), Code::kIOError);
  EXPECT_EQ(Names(*f.fs, d->attr.ino).size(), 3u);
  // A vanished object: open reports NotFound, not garbage.
  ASSERT_TRUE(f.mem->Delete("d/obj").ok());
  f.clock.Advance(1h);
  EXPECT_EQ(f.fs->Open(e->attr.ino, O_RDONLY).status().code(), Code::kNotFound);
}

TEST(FsTest, ListingKeepsLocalFilesAndOddNames) {
  FsFixture f;
  f.Put("d/x", "1");
  f.Put("d//weird", "empty component");
  f.Put("d/both", "file and prefix");
  f.Put("d/both/inner", "2");
  auto d = f.fs->Lookup(kRootIno, "d");
  auto c = f.fs->Create(d->attr.ino, "pending", 0644, O_WRONLY | O_CREAT);
  f.clock.Advance(1h);  // the listing is redone; the pending file must survive it
  EXPECT_EQ(Names(*f.fs, d->attr.ino), (std::vector<std::string>{"./", "../", "both/", "pending", "x"}));
  ASSERT_TRUE(f.fs->Release(c->second.fh).ok());
}

TEST(FsTest, SubdirectoryListingsArePrefetched) {
  FsOptions o = FsFixture::Defaults();
  o.dir_prefetch = 4;
  FsFixture f(o);
  for (int i = 0; i < 6; ++i) f.Put("s" + std::to_string(i) + "/f", "x");
  ASSERT_EQ(Names(*f.fs, kRootIno).size(), 8u);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (f.fs->counters().prefetched_dirs < 6 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_EQ(f.fs->counters().prefetched_dirs, 6u);
  uint64_t lists = f.fs->counters().lists;
  auto s3 = f.fs->Lookup(kRootIno, "s3");
  EXPECT_EQ(Names(*f.fs, s3->attr.ino).size(), 3u);
  EXPECT_EQ(f.fs->counters().lists, lists) << "already listed ahead";
}

// Issue 15, item 8. The backend refuses (a stopped proxy): cached data is
// served from the cached version, an uncached read fails fast and its block
// fails at once for a short backoff; all recovers when the backend is back.
TEST(FsBoundedWaitTest, RefusingBackendServesCachedDataAndRecovers) {
  FsFixture f;
  const std::string warm = Pattern(2 * FsFixture::kBlock + 100, 2), cold = Pattern(3000, 3);
  f.Put("d/warm", warm);
  f.Put("d/cold", cold);
  auto d = f.fs->Lookup(kRootIno, "d");
  auto w = f.fs->Lookup(d->attr.ino, "warm");
  auto c = f.fs->Lookup(d->attr.ino, "cold");
  auto h = f.fs->Open(w->attr.ino, O_RDONLY);
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(ReadAll(*f.fs, h->fh), warm);
  ASSERT_TRUE(f.fs->Release(h->fh).ok());
  f.store->WaitForReadahead();

  f.fault->FailKey("", UnavailableError("connection refused"));
  f.clock.Advance(1h);  // every attribute, entry and listing expired
  auto attr = f.fs->GetAttr(w->attr.ino);
  ASSERT_TRUE(attr.ok()) << attr.status();
  EXPECT_EQ(attr->size, warm.size());
  // The failed revalidation is remembered for the backoff: the lookup and
  // open below serve the cached version without asking the backend again.
  const uint64_t refused = f.fault->counters().requests;
  auto again = f.fs->Lookup(d->attr.ino, "warm");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->attr.ino, w->attr.ino);
  h = f.fs->Open(w->attr.ino, O_RDONLY);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(ReadAll(*f.fs, h->fh), warm) << "cached bytes, byte-exact, with the backend refusing";
  ASSERT_TRUE(f.fs->Release(h->fh).ok());
  EXPECT_EQ(f.fault->counters().requests, refused);
  EXPECT_GE(f.fs->counters().stale_served, 3u);

  auto ch = f.fs->Open(c->attr.ino, O_RDONLY);
  ASSERT_TRUE(ch.ok()) << ch.status();
  EXPECT_EQ(f.fs->Read(ch->fh, 0, 4096).status().code(), Code::kIOError);
  const uint64_t requests = f.fault->counters().requests;
  EXPECT_EQ(f.fs->Read(ch->fh, 0, 4096).status().code(), Code::kIOError);
  EXPECT_EQ(f.fault->counters().requests, requests);
  EXPECT_EQ(f.fs->counters().fast_failed_reads, 1u);

  // Strict freshness: the same expired attribute fails instead.
  FsOptions strict = FsFixture::Defaults();
  strict.strict_revalidate = true;
  FsFixture s(strict);
  s.Put("x", "1");
  auto x = s.fs->Lookup(kRootIno, "x");
  s.fault->FailKey("", UnavailableError("connection refused"));
  s.clock.Advance(1h);
  EXPECT_EQ(s.fs->GetAttr(x->attr.ino).status().code(), Code::kIOError);
  EXPECT_EQ(s.fs->counters().stale_served, 0u);

  f.fault->ClearRules();  // back: recovers by itself once the backoff has passed
  f.clock.Advance(FsOptions{}.failed_read_backoff);
  EXPECT_EQ(ReadAll(*f.fs, ch->fh), cold);
  ASSERT_TRUE(f.fs->Release(ch->fh).ok());
  f.Put("d/warm", "replaced");
  f.clock.Advance(1h);
  EXPECT_EQ(f.fs->GetAttr(w->attr.ino)->size, 8u) << "revalidation works again";
}

// Every stalled request is asleep on the fake clock: let them all go.
void Unfreeze(FsFixture& f) {
  f.fault->SetConfig({});  // no new stall
  const uint64_t stalls = f.fault->counters().stalls;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (f.clock.TotalSlept() < stalls * 1h && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_GE(f.clock.TotalSlept(), stalls * 1h);
  f.clock.Advance(2h);
}

// The backend hangs (a SIGSTOPped proxy: nothing answers). Cached data is
// served after revalidate_timeout at most; an uncached read gives up after
// read_timeout; none of them waits for the backend.
TEST(FsBoundedWaitTest, HangingBackendNeverHoldsCachedReadsAndBoundsUncachedOnes) {
  FsOptions o = FsFixture::Defaults();
  o.revalidate_timeout = 100ms;
  o.read_timeout = 300ms;
  FsFixture f(o);
  const std::string warm = Pattern(2 * FsFixture::kBlock + 100, 4), cold = Pattern(5000, 5);
  f.Put("d/warm", warm);
  f.Put("d/cold", cold);
  auto d = f.fs->Lookup(kRootIno, "d");
  auto w = f.fs->Lookup(d->attr.ino, "warm");
  auto c = f.fs->Lookup(d->attr.ino, "cold");
  auto h = f.fs->Open(w->attr.ino, O_RDONLY);
  ASSERT_EQ(ReadAll(*f.fs, h->fh), warm);
  ASSERT_TRUE(f.fs->Release(h->fh).ok());
  f.store->WaitForReadahead();

  f.fault->SetConfig({.stall_rate = 1.0, .stall = 1h});  // every request waits for a fake hour
  f.clock.Advance(2s);
  const auto start = std::chrono::steady_clock::now();
  auto attr = f.fs->GetAttr(w->attr.ino);
  ASSERT_TRUE(attr.ok()) << attr.status();
  EXPECT_EQ(attr->size, warm.size());
  h = f.fs->Open(w->attr.ino, O_RDONLY);  // the revalidation is overdue already: not waited for again
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(ReadAll(*f.fs, h->fh), warm);
  ASSERT_TRUE(f.fs->Release(h->fh).ok());
  const auto cached_time = std::chrono::steady_clock::now() - start;
  EXPECT_LT(cached_time, 20s);  // (a loaded machine's margin; the bound is 100 ms per revalidation)

  auto ch = f.fs->Open(c->attr.ino, O_RDONLY);
  ASSERT_TRUE(ch.ok()) << ch.status();
  auto r = f.fs->Read(ch->fh, 0, 4096);
  EXPECT_EQ(r.status().code(), Code::kIOError);
  EXPECT_NE(r.status().message().find("no answer"), std::string::npos) << r.status();
  EXPECT_EQ(f.fs->counters().read_timeouts, 1u);
  EXPECT_EQ(f.fs->Read(ch->fh, 4096, 904).status().code(), Code::kIOError);  // same block: at once
  EXPECT_EQ(f.fs->counters().fast_failed_reads, 1u);
  EXPECT_GE(f.fault->counters().stalls, 2u);

  Unfreeze(f);  // the proxy resumes
  f.clock.Advance(FsOptions{}.failed_read_backoff);
  EXPECT_EQ(ReadAll(*f.fs, ch->fh), cold);
  ASSERT_TRUE(f.fs->Release(ch->fh).ok());
}

}  // namespace
}  // namespace strata::fs
