// ObjectFs POSIX attributes in object metadata (s3fs's keys) and symlinks,
// over mem stores; a second ObjectFs on the same store stands for a remount.
#include <sys/stat.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "fs/fs_test_util.h"
#include "fs/posix_meta.h"

namespace strata::fs {
namespace {

using testing::FsFixture;

WallTime At(int64_t secs, int64_t nanos = 0) {
  return WallTime(
      std::chrono::duration_cast<WallTime::duration>(std::chrono::seconds(secs) + std::chrono::nanoseconds(nanos)));
}

std::map<std::string, std::string> UserMeta(FsFixture& f, const std::string& key) {
  auto h = f.mem->Head(key);
  return h.ok() ? h->metadata.user : std::map<std::string, std::string>{{"<error>", h.status().ToString()}};
}

void PutWithMeta(FsFixture& f, const std::string& key, const std::string& data,
                 std::map<std::string, std::string> user) {
  object::PutOptions po;
  po.metadata.user = std::move(user);
  ASSERT_TRUE(f.mem->Put(key, Buffer::Copy(data), po).ok()) << key;
}

// A fresh mount of the same store: nothing of the first one's memory.
std::unique_ptr<ObjectFs> Remount(FsFixture& f) {
  FsOptions o = FsFixture::Defaults();
  o.clock = &f.clock;
  o.local = &f.local;
  o.write_dir = "/buffers2";
  return std::make_unique<ObjectFs>(f.store, o);
}

TEST(FsAttrTest, ChmodChownUtimensAreStoredByACopyOntoItself) {
  FsFixture f;
  f.Put("d/file", "payload");
  auto d = f.fs->Lookup(kRootIno, "d");
  auto e = f.fs->Lookup(d->attr.ino, "file");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->attr.mode, S_IFREG | 0644u) << "no metadata: the defaults";
  EXPECT_EQ(e->attr.uid, 1000u);
  SetAttrRequest r;
  r.mode = 0750;
  r.uid = 42;
  r.gid = 43;
  r.mtime = At(1577836800, 5);
  auto a = f.fs->SetAttr(e->attr.ino, r);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->mode, S_IFREG | 0750u);
  EXPECT_EQ(a->uid, 42u);
  EXPECT_EQ(a->mtime, At(1577836800, 5));
  EXPECT_EQ(f.fs->counters().meta_copies, 1u);
  auto user = UserMeta(f, "d/file");
  EXPECT_EQ(user["mode"], std::to_string(S_IFREG | 0750));
  EXPECT_EQ(user["uid"], "42");
  EXPECT_EQ(user["gid"], "43");
  EXPECT_EQ(user["mtime"], "1577836800.000000005");
  EXPECT_EQ(f.Backend("d/file"), "payload");

  auto again = Remount(f);
  auto d2 = again->Lookup(kRootIno, "d");
  auto e2 = again->Lookup(d2->attr.ino, "file");
  ASSERT_TRUE(e2.ok());
  EXPECT_EQ(e2->attr.mode, S_IFREG | 0750u);
  EXPECT_EQ(e2->attr.uid, 42u);
  EXPECT_EQ(e2->attr.gid, 43u);
  EXPECT_EQ(e2->attr.mtime, At(1577836800, 5));
  EXPECT_EQ(e2->attr.size, 7u);
}

TEST(FsAttrTest, ReadsObjectsWrittenByS3fsAndRclone) {
  FsFixture f;
  PutWithMeta(f, "exe", "#!/bin/sh\n", {{"mode", "33261"}, {"uid", "5"}, {"gid", "6"}, {"mtime", "1577836800"}});
  PutWithMeta(f, "link", "exe", {{"mode", "41471"}, {"mtime", "1577836801"}});
  PutWithMeta(f, "rclone", "r", {{"mtime", "1577836800.25"}});
  PutWithMeta(f, "junk", "j", {{"mode", "-1"}, {"uid", "x"}, {"gid", "99999999999"}, {"mtime", "soon"}});
  PutWithMeta(f, "sub/", "", {{"mode", "16832"}, {"uid", "7"}});  // an s3fs directory marker, 0700
  f.Put("sub/inner", "i");
  auto dh = f.fs->OpenDir(kRootIno);
  ASSERT_TRUE(dh.ok());
  std::map<std::string, Attr> seen;
  for (const auto& item : (*f.fs->ReadDir(*dh))->items) seen[item.name] = item.attr;
  f.fs->ReleaseDir(*dh);
  EXPECT_EQ(seen["exe"].mode, S_IFREG | 0755u);
  EXPECT_EQ(seen["exe"].uid, 5u);
  EXPECT_EQ(seen["exe"].gid, 6u);
  EXPECT_EQ(seen["exe"].mtime, At(1577836800));
  EXPECT_EQ(seen["link"].mode, S_IFLNK | 0777u);
  EXPECT_EQ(seen["rclone"].mtime, At(1577836800, 250000000));
  EXPECT_EQ(seen["rclone"].mode, S_IFREG | 0644u);
  EXPECT_EQ(seen["junk"].mode, S_IFREG | 0644u) << "bad values: the defaults";
  EXPECT_EQ(seen["junk"].uid, 1000u);
  EXPECT_EQ(seen["junk"].gid, 1000u);
  EXPECT_EQ(seen["sub"].mode, S_IFDIR | 0700u);
  EXPECT_EQ(seen["sub"].uid, 7u);
  EXPECT_EQ(f.fs->counters().meta_heads, 5u) << "one HEAD per object and marker";
  EXPECT_EQ(*f.fs->Readlink(seen["link"].ino), "exe");
  EXPECT_EQ(f.fs->Readlink(seen["exe"].ino).status().code(), Code::kInvalidArgument);
  // Listed again after the TTL: versions unchanged, no HEAD.
  f.clock.Advance(std::chrono::seconds(10));
  ASSERT_TRUE(f.fs->GetAttr(seen["exe"].ino).ok());
  dh = f.fs->OpenDir(kRootIno);
  f.fs->ReleaseDir(*dh);
  EXPECT_EQ(f.fs->counters().meta_heads, 5u) << "attributes of known versions are not read again";
  // Another client's chmod (a copy onto itself) is seen once the TTLs pass.
  object::CopyOptions co;
  co.directive = object::MetadataDirective::kReplace;
  co.metadata.user = {{"mode", "33152"}};  // 0600
  f.clock.Advance(std::chrono::seconds(2));
  ASSERT_TRUE(f.mem->Copy("exe", "exe", co).ok());
  f.clock.Advance(std::chrono::seconds(10));
  auto attr = f.fs->GetAttr(seen["exe"].ino);
  ASSERT_TRUE(attr.ok());
  EXPECT_EQ(attr->mode, S_IFREG | 0600u);
  EXPECT_EQ(attr->uid, 1000u);
}

TEST(FsAttrTest, SymlinksAreStoredAsS3fsStoresThem) {
  FsFixture f;
  auto s = f.fs->Symlink(kRootIno, "ln", "../some/target");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->attr.mode, S_IFLNK | 0777u);
  EXPECT_EQ(s->attr.size, 14u);
  EXPECT_EQ(f.Backend("ln"), "../some/target");
  EXPECT_EQ(UserMeta(f, "ln")["mode"], "41471");
  EXPECT_EQ(*f.fs->Readlink(s->attr.ino), "../some/target");
  EXPECT_EQ(f.fs->Symlink(kRootIno, "ln", "x").status().code(), Code::kAlreadyExists);
  EXPECT_EQ(f.fs->Symlink(kRootIno, "long", std::string(5000, 'a')).status().code(), Code::kInvalidArgument);
  auto again = Remount(f);
  auto e = again->Lookup(kRootIno, "ln");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->attr.mode, S_IFLNK | 0777u);
  EXPECT_EQ(*again->Readlink(e->attr.ino), "../some/target");
  // A renamed symlink stays one (the copy keeps the metadata).
  ASSERT_TRUE(again->Rename(kRootIno, "ln", kRootIno, "ln2", 0).ok());
  auto third = Remount(f);
  auto moved = third->Lookup(kRootIno, "ln2");
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(moved->attr.mode, S_IFLNK | 0777u);
}

TEST(FsAttrTest, SpecialFilesAreEmptyObjectsWhoseModeSaysTheirType) {
  FsFixture f;
  auto fifo = f.fs->Mknod(kRootIno, "fifo", S_IFIFO | 0640);
  ASSERT_TRUE(fifo.ok()) << fifo.status();
  EXPECT_EQ(fifo->attr.mode, S_IFIFO | 0640u);
  auto sock = f.fs->Mknod(kRootIno, "sock", S_IFSOCK | 0755);
  ASSERT_TRUE(sock.ok()) << sock.status();
  auto dev = f.fs->Mknod(kRootIno, "dev", S_IFCHR | 0600, 0x0103);
  ASSERT_TRUE(dev.ok()) << dev.status();
  EXPECT_EQ(dev->attr.rdev, 0x0103u);
  auto blk = f.fs->Mknod(kRootIno, "blk", S_IFBLK | 0660, 0x0801);
  ASSERT_TRUE(blk.ok()) << blk.status();
  EXPECT_EQ(f.fs->Mknod(kRootIno, "fifo", S_IFIFO | 0644).status().code(), Code::kAlreadyExists);
  // As s3fs stores them: empty bodies, the type in x-amz-meta-mode, a device's number in rdev.
  EXPECT_EQ(f.Backend("fifo"), "");
  EXPECT_EQ(UserMeta(f, "fifo")["mode"], std::to_string(S_IFIFO | 0640));
  EXPECT_EQ(UserMeta(f, "fifo").count("rdev"), 0u);
  EXPECT_EQ(UserMeta(f, "sock")["mode"], std::to_string(S_IFSOCK | 0755));
  EXPECT_EQ(UserMeta(f, "dev")["mode"], std::to_string(S_IFCHR | 0600));
  EXPECT_EQ(UserMeta(f, "dev")["rdev"], "259");
  EXPECT_EQ(UserMeta(f, "blk")["rdev"], "2049");
  // Read back by another mount, and still themselves after a rename and a chmod.
  auto again = Remount(f);
  ASSERT_TRUE(again->Rename(kRootIno, "dev", kRootIno, "dev2", 0).ok());
  auto d = again->Lookup(kRootIno, "dev2");
  ASSERT_TRUE(d.ok()) << d.status();
  SetAttrRequest chmod;
  chmod.mode = 0644;
  ASSERT_TRUE(again->SetAttr(d->attr.ino, chmod).ok());
  auto third = Remount(f);
  std::map<std::string, Attr> seen;
  for (const char* name : {"fifo", "sock", "dev2", "blk"}) {
    auto e = third->Lookup(kRootIno, name);
    ASSERT_TRUE(e.ok()) << name << ": " << e.status();
    seen[name] = e->attr;
  }
  EXPECT_EQ(seen["fifo"].mode, S_IFIFO | 0640u);
  EXPECT_EQ(seen["sock"].mode, S_IFSOCK | 0755u);
  EXPECT_EQ(seen["dev2"].mode, S_IFCHR | 0644u);
  EXPECT_EQ(seen["dev2"].rdev, 0x0103u);
  EXPECT_EQ(seen["blk"].mode, S_IFBLK | 0660u);
  EXPECT_EQ(seen["blk"].rdev, 0x0801u);
  EXPECT_EQ(seen["fifo"].rdev, 0u);
  EXPECT_EQ(third->Readlink(seen["fifo"].ino).status().code(), Code::kInvalidArgument);
  // s3fs's own FIFO (no rdev key) and its device nodes (s3fs 1.90 keeps no rdev: 0).
  PutWithMeta(f, "s3fs-fifo", "", {{"mode", "4516"}, {"uid", "0"}, {"gid", "0"}});
  PutWithMeta(f, "s3fs-dev", "", {{"mode", "8612"}});
  auto fourth = Remount(f);
  EXPECT_EQ(fourth->Lookup(kRootIno, "s3fs-fifo")->attr.mode, S_IFIFO | 0644u);
  EXPECT_EQ(fourth->Lookup(kRootIno, "s3fs-dev")->attr.rdev, 0u);
  EXPECT_TRUE(fourth->Unlink(kRootIno, "s3fs-fifo").ok());
  EXPECT_EQ(f.Backend("s3fs-fifo").substr(0, 10), "<NotFound:");
}

TEST(FsAttrTest, AttributesOfAFileBeingWrittenGoWithItsUpload) {
  FsFixture f;
  auto c = f.fs->Create(kRootIno, "new", 0600, O_WRONLY | O_CREAT);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(f.fs->Write(c->second.fh, 0, "abc", 3).ok());
  SetAttrRequest r;  // cp -p: fchmod, fchown, futimens before close
  r.mode = 0755;
  r.uid = 9;
  r.mtime = At(1500000000);
  ASSERT_TRUE(f.fs->SetAttr(c->first.attr.ino, r, c->second.fh).ok());
  ASSERT_TRUE(f.fs->Release(c->second.fh).ok());
  EXPECT_EQ(f.fs->counters().meta_copies, 0u) << "no copy: the upload carried them";
  auto user = UserMeta(f, "new");
  EXPECT_EQ(user["mode"], std::to_string(S_IFREG | 0755));
  EXPECT_EQ(user["uid"], "9");
  EXPECT_EQ(user["gid"], "1000");
  EXPECT_EQ(user["mtime"], "1500000000");
  // A new file's own attributes are stored too (s3fs stores them on every file).
  auto plain = f.fs->Create(kRootIno, "plain", 0640, O_WRONLY | O_CREAT);
  ASSERT_TRUE(f.fs->Release(plain->second.fh).ok());
  EXPECT_EQ(UserMeta(f, "plain")["mode"], std::to_string(S_IFREG | 0640));
  auto again = Remount(f);
  auto e = again->Lookup(kRootIno, "new");
  EXPECT_EQ(e->attr.mode, S_IFREG | 0755u);
  EXPECT_EQ(e->attr.mtime, At(1500000000));
}

TEST(FsAttrTest, DirectoriesKeepTheirsOnTheirMarker) {
  FsFixture f;
  auto m = f.fs->Mkdir(kRootIno, "made", 0700);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(UserMeta(f, "made/")["mode"], std::to_string(S_IFDIR | 0700));
  f.Put("prefix/only", "x");  // a directory with no marker
  auto p = f.fs->Lookup(kRootIno, "prefix");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->attr.mode, S_IFDIR | 0755u);
  SetAttrRequest r;
  r.mode = 0711;
  r.mtime = At(1600000000);
  ASSERT_TRUE(f.fs->SetAttr(p->attr.ino, r).ok());
  EXPECT_EQ(f.Backend("prefix/"), "") << "the marker was created";
  EXPECT_EQ(UserMeta(f, "prefix/")["mode"], std::to_string(S_IFDIR | 0711));
  auto again = Remount(f);
  auto p2 = again->Lookup(kRootIno, "prefix");
  EXPECT_EQ(p2->attr.mode, S_IFDIR | 0711u);
  EXPECT_EQ(p2->attr.mtime, At(1600000000));
  EXPECT_EQ(again->Lookup(kRootIno, "made")->attr.mode, S_IFDIR | 0700u);
}

TEST(FsAttrTest, WithoutMarkersOnlyWhatTheMountMadeKeepsADirectoryMode) {
  FsFixture f(FsFixture::Defaults(), 2, /*markers=*/false);
  f.Put("d/x", "x");
  auto d = f.fs->Lookup(kRootIno, "d");
  SetAttrRequest r;
  r.mode = 0700;
  EXPECT_EQ(f.fs->SetAttr(d->attr.ino, r).status().code(), Code::kPermissionDenied);
  auto made = f.fs->Mkdir(kRootIno, "m", 0755);
  EXPECT_EQ(f.fs->SetAttr(made->attr.ino, r)->mode, S_IFDIR | 0700u);
  // Files still keep theirs in metadata.
  auto x = f.fs->Lookup(d->attr.ino, "x");
  EXPECT_EQ(f.fs->SetAttr(x->attr.ino, r)->mode, S_IFREG | 0700u);
  EXPECT_EQ(UserMeta(f, "d/x")["mode"], std::to_string(S_IFREG | 0700));
}

TEST(FsAttrTest, AFailedCopyLeavesTheStoredAttributes) {
  FsFixture f;
  f.Put("f", "data");
  auto e = f.fs->Lookup(kRootIno, "f");
  f.fault->FailKey("f", UnavailableError("injected 503"), -1, object::FaultOp::kCopy);
  SetAttrRequest r;
  r.mode = 0700;
  EXPECT_EQ(f.fs->SetAttr(e->attr.ino, r).status().code(), Code::kIOError);
  f.fault->ClearRules();
  auto a = f.fs->GetAttr(e->attr.ino);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->mode, S_IFREG | 0644u) << "what the store holds, not what failed to be stored";
}

// Holds HEADs of one key until opened; counts those that arrive.
class HeadGate : public object::StoreWrapper {
 public:
  HeadGate(object::ObjectStorePtr inner, std::string key) : StoreWrapper(std::move(inner)), key_(std::move(key)) {}
  Result<object::ObjectInfo> Head(std::string_view key) override {
    if (key == key_) {
      std::unique_lock lock(mu_);
      ++arrived_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });
    }
    return StoreWrapper::Head(key);
  }
  // Waits up to 10 s for `done` (checked every millisecond: it may look elsewhere).
  template <class Pred>
  bool WaitFor(Pred done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::unique_lock lock(mu_);
    while (!done(arrived_)) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      cv_.wait_for(lock, std::chrono::milliseconds(1));
    }
    return true;
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  int arrived() {
    std::lock_guard lock(mu_);
    return arrived_;
  }

 private:
  const std::string key_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  bool open_ = false;
};

// A listing reads its new entries' attributes by HEAD; a lookup of one of
// them meanwhile waits for that HEAD rather than sending its own. (The
// cache below joins concurrent HEADs of a key into one backend request, so
// the mount's own count tells.)
TEST(FsAttrTest, ALookupRacingAListingsAttributeReadWaitsForIt) {
  FsFixture f;
  PutWithMeta(f, "d/f", "x", {{"mode", std::to_string(S_IFREG | 0600)}});
  auto gate = std::make_shared<HeadGate>(f.mem, "d/f");
  FsOptions o = FsFixture::Defaults();
  o.clock = &f.clock;
  o.local = &f.local;
  o.write_dir = "/buffers2";
  ObjectFs fs(std::make_shared<cache::CachedStore>(gate, f.cache, f.so), o);
  auto d = fs.Lookup(kRootIno, "d");
  ASSERT_TRUE(d.ok()) << d.status();
  const uint64_t heads_before = fs.counters().meta_heads;
  std::thread listing([&] {
    auto dh = fs.OpenDir(d->attr.ino);  // lists d, then HEADs d/f: held at the gate
    EXPECT_TRUE(dh.ok()) << dh.status();
    if (dh.ok()) fs.ReleaseDir(*dh);
  });
  EXPECT_TRUE(gate->WaitFor([](int arrived) { return arrived >= 1; })) << "the listing's HEAD never came";
  Result<Entry> looked_up = InternalError("not run");
  std::thread lookup([&] { looked_up = fs.Lookup(d->attr.ino, "f"); });
  EXPECT_TRUE(gate->WaitFor([&](int) { return fs.counters().meta_waits >= 1; })) << "the lookup did not wait";
  gate->Open();
  listing.join();
  lookup.join();
  EXPECT_EQ(fs.counters().meta_heads - heads_before, 1u) << "one HEAD of d/f";
  EXPECT_EQ(gate->arrived(), 1);
  ASSERT_TRUE(looked_up.ok()) << looked_up.status();
  EXPECT_EQ(looked_up->attr.mode, S_IFREG | 0600u) << "the lookup sees what the listing's HEAD read";
}

}  // namespace
}  // namespace strata::fs
