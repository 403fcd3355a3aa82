// libfuse3 low-level adapter. Every reply goes through Reply*/Fail below, so
// Status -> errno happens in ErrnoFor only.
#define FUSE_USE_VERSION 312
#include "fuse/mount.h"

#include <fuse3/fuse_lowlevel.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "base/executor.h"
#include "base/log.h"
#include "fuse/access_log.h"
#include "fuse/errno_map.h"

namespace strata::fuse {
namespace {

using fs::Attr;
using fs::Ino;
using fs::ObjectFs;
using fs::Owner;

struct Context {
  ObjectFs* fs;
  const MountOptions* options;
  std::once_flag tune_once;
  AccessLog access_log;  // on only while `strata profile` watches the mount
};

Context& Ctx(fuse_req_t req) { return *static_cast<Context*>(fuse_req_userdata(req)); }
ObjectFs& Fs(fuse_req_t req) { return *Ctx(req).fs; }

// The owner of what the caller creates: the caller where other users share
// the mount; else the mount's --uid/--gid (the only user is its owner).
std::optional<Owner> Caller(fuse_req_t req) {
  if (!Ctx(req).options->allow_other) return std::nullopt;
  const fuse_ctx* c = fuse_req_ctx(req);
  return Owner{static_cast<uint32_t>(c->uid), static_cast<uint32_t>(c->gid)};
}

double Secs(Duration d) { return std::chrono::duration<double>(d).count(); }

struct stat ToStat(const Attr& a) {
  struct stat st {};
  st.st_ino = a.ino;
  st.st_mode = a.mode;
  st.st_nlink = a.nlink;
  st.st_uid = a.uid;
  st.st_gid = a.gid;
  st.st_rdev = static_cast<dev_t>(a.rdev);
  st.st_size = static_cast<off_t>(a.size);
  st.st_blocks = static_cast<blkcnt_t>((a.size + 511) / 512);
  st.st_blksize = 1 << 20;  // tools size their buffers from it (cat, cp: 1 MiB reads)
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(a.mtime.time_since_epoch()).count();
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  st.st_mtim = st.st_ctim = st.st_atim = ts;  // noatime: access never changes it
  return st;
}

fuse_entry_param ToEntry(const fs::Entry& e) {
  fuse_entry_param p{};
  p.ino = e.attr.ino;
  p.generation = 1;  // inode numbers are never reused within a mount
  p.attr = ToStat(e.attr);
  p.attr_timeout = Secs(e.attr_ttl);
  p.entry_timeout = Secs(e.entry_ttl);
  return p;
}

void Fail(fuse_req_t req, const Status& st, FsOp op = FsOp::kOther) { fuse_reply_err(req, ErrnoFor(st, op)); }

// The kernel caps read-ahead at what INIT negotiated; raising the mount's
// bdi read_ahead_kb afterwards lets sequential readers send 1 MiB requests.
void TuneReadahead(Context& ctx) {
  uint32_t kb = ctx.options->kernel_readahead_kb;
  if (kb == 0) return;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    if (point != ctx.options->mountpoint) continue;
    std::ofstream out("/sys/class/bdi/" + dev + "/read_ahead_kb");
    out << kb;
    if (!out.flush()) STRATA_LOG_DEBUG("mount: could not set read_ahead_kb of bdi {}", dev);
  }
}

void MaybeTune(fuse_req_t req) {
  Context& ctx = Ctx(req);
  std::call_once(ctx.tune_once, [&] { TuneReadahead(ctx); });
}

// ---- operations ----

void OpInit(void* userdata, fuse_conn_info* conn) {
  auto* ctx = static_cast<Context*>(userdata);
  conn->max_write = ctx->options->max_io;
  conn->max_read = ctx->options->max_io;
  conn->max_readahead = ctx->options->max_io;
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
  conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;  // always plus: `ls -l` and `find` need no per-entry lookups
  if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
  if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;  // writes must reach us to be uploaded on close
}

void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  MaybeTune(req);
  auto e = Fs(req).Lookup(parent, name);
  if (e.ok()) {
    fuse_entry_param p = ToEntry(*e);
    if (fuse_reply_entry(req, &p) != 0) Fs(req).Forget(e->attr.ino, 1);
  } else if (e.status().code() == Code::kNotFound) {
    fuse_entry_param p{};  // a negative entry the kernel may cache
    p.entry_timeout = Secs(Fs(req).options().entry_ttl);
    fuse_reply_entry(req, &p);
  } else {
    Fail(req, e.status());
  }
}

void OpForget(fuse_req_t req, fuse_ino_t ino, uint64_t n) {
  Fs(req).Forget(ino, n);
  fuse_reply_none(req);
}

void OpForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) Fs(req).Forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void OpGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  MaybeTune(req);
  auto a = Fs(req).GetAttr(ino);
  if (!a.ok()) return Fail(req, a.status());
  struct stat st = ToStat(*a);
  fuse_reply_attr(req, &st, Secs(Fs(req).options().attr_ttl));
}

void OpSetattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi) {
  fs::SetAttrRequest r;
  if (to_set & FUSE_SET_ATTR_MODE) r.mode = attr->st_mode & 07777;
  if (to_set & FUSE_SET_ATTR_UID) r.uid = attr->st_uid;
  if (to_set & FUSE_SET_ATTR_GID) r.gid = attr->st_gid;
  if (to_set & FUSE_SET_ATTR_SIZE) r.size = static_cast<uint64_t>(attr->st_size);
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
    r.mtime = std::chrono::system_clock::now();
  } else if (to_set & FUSE_SET_ATTR_MTIME) {
    r.mtime = WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::seconds(attr->st_mtim.tv_sec) +
                                                                      std::chrono::nanoseconds(attr->st_mtim.tv_nsec)));
  }
  std::optional<uint64_t> fh;
  if (fi) fh = fi->fh;
  auto a = Fs(req).SetAttr(ino, r, fh);
  if (!a.ok()) return Fail(req, a.status());
  struct stat st = ToStat(*a);
  fuse_reply_attr(req, &st, Secs(Fs(req).options().attr_ttl));
}

void OpOpendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto dh = Fs(req).OpenDir(ino);
  if (!dh.ok()) return Fail(req, dh.status());
  fi->fh = *dh;
  if (fuse_reply_open(req, fi) != 0) Fs(req).ReleaseDir(*dh);
}

void ReadDirCommon(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi, bool plus) {
  auto snap = Fs(req).ReadDir(fi->fh);
  if (!snap.ok()) return Fail(req, snap.status());
  const auto& items = (*snap)->items;
  std::vector<char> buf(size);
  size_t used = 0;
  std::vector<Ino> counted;
  for (size_t i = static_cast<size_t>(off); i < items.size(); ++i) {
    const auto& item = items[i];
    size_t n;
    if (plus) {
      fs::Entry e{item.attr, Fs(req).options().attr_ttl, Fs(req).options().entry_ttl};
      fuse_entry_param p = ToEntry(e);
      bool dots = item.name == "." || item.name == "..";
      if (dots) p.ino = 0;  // the kernel takes no reference for these
      n = fuse_add_direntry_plus(req, buf.data() + used, size - used, item.name.c_str(), &p, i + 1);
      if (n > size - used) break;
      if (!dots) counted.push_back(item.attr.ino);
    } else {
      struct stat st = ToStat(item.attr);
      n = fuse_add_direntry(req, buf.data() + used, size - used, item.name.c_str(), &st, i + 1);
      if (n > size - used) break;
    }
    used += n;
  }
  for (Ino ino : counted) Fs(req).AddLookup(ino);
  fuse_reply_buf(req, buf.data(), used);
}

void OpReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  ReadDirCommon(req, ino, size, off, fi, false);
}

void OpReaddirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  ReadDirCommon(req, ino, size, off, fi, true);
}

void OpReleasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  Fs(req).ReleaseDir(fi->fh);
  fuse_reply_err(req, 0);
}

void FillOpen(fuse_file_info* fi, const fs::OpenResult& r) {
  fi->fh = r.fh;
  fi->keep_cache = r.keep_cache;
  fi->noflush = !r.writable;  // nothing to upload: spare the kernel a FLUSH round trip per close
}

// While profiled: every read of the program must reach the mount (no page
// cache), and the open names the file for the read records that follow.
void LogOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  AccessLog& log = Ctx(req).access_log;
  if (!log.on()) return;
  fi->direct_io = 1;
  fi->keep_cache = 0;
  auto path = Fs(req).PathOf(ino);
  auto attr = Fs(req).GetAttr(ino);
  log.Open(static_cast<uint32_t>(fuse_req_ctx(req)->pid), fi->fh, attr.ok() ? attr->size : 0,
           path.ok() ? *path : std::string("?"));
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  MaybeTune(req);
  auto r = Fs(req).Open(ino, fi->flags);
  if (!r.ok()) return Fail(req, r.status());
  FillOpen(fi, *r);
  LogOpen(req, ino, fi);
  if (fuse_reply_open(req, fi) != 0) Fs(req).Release(r->fh).IgnoreError();
}

void OpCreate(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  auto r = Fs(req).Create(parent, name, mode, fi->flags, Caller(req));
  if (!r.ok()) return Fail(req, r.status());
  FillOpen(fi, r->second);
  LogOpen(req, r->first.attr.ino, fi);
  fuse_entry_param p = ToEntry(r->first);
  if (fuse_reply_create(req, &p, fi) != 0) {
    Fs(req).Release(r->second.fh).IgnoreError();
    Fs(req).Forget(r->first.attr.ino, 1);
  }
}

void OpRead(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  AccessLog& log = Ctx(req).access_log;
  const int64_t start = log.on() ? AccessLog::NowNs() : 0;
  auto data = Fs(req).Read(fi->fh, static_cast<uint64_t>(off), size);
  if (!data.ok()) return Fail(req, data.status());
  if (start != 0 && !data->empty()) {
    log.Read(static_cast<uint32_t>(fuse_req_ctx(req)->pid), fi->fh, static_cast<uint64_t>(off), data->size(), start,
             AccessLog::NowNs());
  }
  fuse_reply_buf(req, reinterpret_cast<const char*>(data->data()), data->size());
}

void OpWrite(fuse_req_t req, fuse_ino_t, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  auto n = Fs(req).Write(fi->fh, static_cast<uint64_t>(off), buf, size);
  if (!n.ok()) return Fail(req, n.status());
  fuse_reply_write(req, *n);
}

void OpFlush(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) { Fail(req, Fs(req).Flush(fi->fh)); }

void OpFsync(fuse_req_t req, fuse_ino_t, int, fuse_file_info* fi) { Fail(req, Fs(req).Fsync(fi->fh)); }

void OpRelease(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  Status st = Fs(req).Release(fi->fh);
  if (!st.ok()) STRATA_LOG_WARN("mount: release: {}", st.ToString());
  fuse_reply_err(req, 0);  // the kernel ignores it; close() already got flush's answer
}

void OpUnlink(fuse_req_t req, fuse_ino_t parent, const char* name) { Fail(req, Fs(req).Unlink(parent, name)); }

void OpRmdir(fuse_req_t req, fuse_ino_t parent, const char* name) { Fail(req, Fs(req).Rmdir(parent, name)); }

void OpMkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  auto e = Fs(req).Mkdir(parent, name, mode, Caller(req));
  if (!e.ok()) return Fail(req, e.status());
  fuse_entry_param p = ToEntry(*e);
  if (fuse_reply_entry(req, &p) != 0) Fs(req).Forget(e->attr.ino, 1);
}

void OpRename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent, const char* newname,
              unsigned int flags) {
  Fail(req, Fs(req).Rename(parent, name, newparent, newname, flags), FsOp::kRename);
}

void OpLink(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname) {
  Fail(req, Fs(req).Link(ino, newparent, newname));
}

void OpSymlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name) {
  auto e = Fs(req).Symlink(parent, name, link, Caller(req));
  if (!e.ok()) return Fail(req, e.status());
  fuse_entry_param p = ToEntry(*e);
  if (fuse_reply_entry(req, &p) != 0) Fs(req).Forget(e->attr.ino, 1);
}

void OpReadlink(fuse_req_t req, fuse_ino_t ino) {
  auto target = Fs(req).Readlink(ino);
  if (!target.ok()) return Fail(req, target.status());
  fuse_reply_readlink(req, target->c_str());
}

void OpMknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  auto e = Fs(req).Mknod(parent, name, mode, rdev, Caller(req));
  if (!e.ok()) return Fail(req, e.status());
  fuse_entry_param p = ToEntry(*e);
  if (fuse_reply_entry(req, &p) != 0) Fs(req).Forget(e->attr.ino, 1);
}

// The profiling switch (access_log.h): only kProfileXattr on the root, only
// by root or the mount's owner (the daemon appends to the named file). Replies
// the refusal itself when it is not allowed.
bool ProfileSwitchAllowed(fuse_req_t req, fuse_ino_t ino, const char* name) {
  if (ino != FUSE_ROOT_ID || std::strcmp(name, kProfileXattr) != 0) {
    fuse_reply_err(req, EOPNOTSUPP);
    return false;
  }
  const uid_t uid = fuse_req_ctx(req)->uid;
  if (uid != 0 && uid != ::getuid()) {
    fuse_reply_err(req, EPERM);
    return false;
  }
  return true;
}

void OpSetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size, int) {
  if (!ProfileSwitchAllowed(req, ino, name)) return;
  AccessLog& log = Ctx(req).access_log;
  const std::string path(value, size);
  if (path.empty()) {
    log.Stop();
    fuse_reply_err(req, 0);
    return;
  }
  Status st = log.Start(path);
  if (st.ok()) STRATA_LOG_INFO("mount: access log on: {}", path);
  fuse_reply_err(req, st.ok() ? 0 : st.code() == Code::kUnavailable ? EBUSY : ErrnoFor(st, FsOp::kOther));
}

void OpRemovexattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  if (!ProfileSwitchAllowed(req, ino, name)) return;
  Ctx(req).access_log.Stop();
  fuse_reply_err(req, 0);
}

void OpStatfs(fuse_req_t req, fuse_ino_t) {
  struct statvfs st {};
  st.f_bsize = 4096;
  st.f_frsize = 4096;
  st.f_blocks = st.f_bfree = st.f_bavail = (1ull << 50) / 4096;  // a bucket has no fixed size: say 1 PiB
  st.f_files = st.f_ffree = st.f_favail = 1ull << 32;
  st.f_namemax = 255;
  fuse_reply_statfs(req, &st);
}

// Each request's boundary (libfuse's threads call the ops from C): an
// exception fails that request with EIO, logged, instead of ending the mount.
template <auto Op, bool kReplyNone = false>
struct Guarded;
template <typename... Args, void (*Op)(fuse_req_t, Args...), bool kReplyNone>
struct Guarded<Op, kReplyNone> {
  static void Call(fuse_req_t req, Args... args) {
    Status st = RunGuarded("mount: a request", [&] { Op(req, args...); });
    if (st.ok()) return;
    if constexpr (kReplyNone) {
      fuse_reply_none(req);
    } else {
      fuse_reply_err(req, EIO);
    }
  }
};

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops{};
  ops.init = OpInit;
  ops.lookup = Guarded<OpLookup>::Call;
  ops.forget = Guarded<OpForget, true>::Call;
  ops.forget_multi = Guarded<OpForgetMulti, true>::Call;
  ops.getattr = Guarded<OpGetattr>::Call;
  ops.setattr = Guarded<OpSetattr>::Call;
  ops.opendir = Guarded<OpOpendir>::Call;
  ops.readdir = Guarded<OpReaddir>::Call;
  ops.readdirplus = Guarded<OpReaddirplus>::Call;
  ops.releasedir = Guarded<OpReleasedir>::Call;
  ops.open = Guarded<OpOpen>::Call;
  ops.create = Guarded<OpCreate>::Call;
  ops.read = Guarded<OpRead>::Call;
  ops.write = Guarded<OpWrite>::Call;
  ops.flush = Guarded<OpFlush>::Call;
  ops.fsync = Guarded<OpFsync>::Call;
  ops.release = Guarded<OpRelease>::Call;
  ops.unlink = Guarded<OpUnlink>::Call;
  ops.rmdir = Guarded<OpRmdir>::Call;
  ops.mkdir = Guarded<OpMkdir>::Call;
  ops.rename = Guarded<OpRename>::Call;
  ops.link = Guarded<OpLink>::Call;
  ops.symlink = Guarded<OpSymlink>::Call;
  ops.readlink = Guarded<OpReadlink>::Call;
  ops.mknod = Guarded<OpMknod>::Call;
  ops.statfs = Guarded<OpStatfs>::Call;
  // Only the profiling switch; no getxattr/listxattr: libfuse answers ENOSYS
  // and the kernel stops asking.
  ops.setxattr = Guarded<OpSetxattr>::Call;
  ops.removexattr = Guarded<OpRemovexattr>::Call;
  return ops;
}

std::string SafeFsname(std::string s) {
  for (char& c : s)
    if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\\') c = '_';
  return s;
}

// The session the stop signals end. A shell starts background jobs with
// SIGINT ignored, and libfuse leaves ignored signals alone, so the handlers
// are installed here unconditionally.
fuse_session* g_session = nullptr;

extern "C" void OnStopSignal(int) {
  if (g_session) fuse_session_exit(g_session);  // sets a flag; the loop's sem_wait returns EINTR
}

void InstallStopHandlers(bool install) {
  struct sigaction sa {};
  sa.sa_handler = install ? OnStopSignal : SIG_DFL;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, nullptr);
}

}  // namespace

void BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

bool IsMounted(const std::string& mountpoint) {
  std::ifstream in("/proc/self/mounts");
  std::string dev, point, rest;
  while (in >> dev >> point && std::getline(in, rest)) {
    if (point == mountpoint) return true;
  }
  return false;
}

Status ServeMount(ObjectFs& fs, const MountOptions& options) {
  struct stat st {};
  if (stat(options.mountpoint.c_str(), &st) != 0) return ErrnoToStatus(errno, "mount point " + options.mountpoint);
  if (!S_ISDIR(st.st_mode)) return InvalidArgumentError("mount point " + options.mountpoint + " is not a directory");

  std::string opts = "fsname=" + SafeFsname(options.fsname) +
                     ",subtype=strata,default_permissions,noatime,max_read=" + std::to_string(options.max_io);
  if (options.read_only) opts += ",ro";
  if (options.allow_other) opts += ",allow_other";
  std::vector<std::string> argv_s = {"strata", "-o", opts};
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());

  Context ctx{&fs, &options, {}, {}};
  fuse_lowlevel_ops ops = MakeOps();
  fuse_session* se = fuse_session_new(&args, &ops, sizeof(ops), &ctx);
  if (se == nullptr) return IOError("could not create a FUSE session (bad mount options: " + opts + ")");
  g_session = se;
  InstallStopHandlers(true);
  if (fuse_session_mount(se, options.mountpoint.c_str()) != 0) {
    InstallStopHandlers(false);
    g_session = nullptr;
    fuse_session_destroy(se);
    return IOError("could not mount at " + options.mountpoint,
                   "is /dev/fuse available and fusermount3 installed? is it already mounted?");
  }
  if (options.on_mounted) options.on_mounted();
  // Stop signals reach this thread only (others block them; libfuse's workers block all).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);

  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_max_threads(cfg, options.max_threads);
  fuse_loop_cfg_set_idle_threads(cfg, 8);
  fuse_loop_cfg_set_clone_fd(cfg, 0);
  int rc = fuse_session_loop_mt(se, cfg);
  fuse_loop_cfg_destroy(cfg);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  fuse_session_unmount(se);
  InstallStopHandlers(false);
  g_session = nullptr;
  fuse_session_destroy(se);
  // A signal ends the loop with rc = the signal number; that is a clean stop.
  if (rc < 0) return IOError("the FUSE session at " + options.mountpoint + " failed", std::strerror(-rc));
  return Status::Ok();
}

Status Unmount(const std::string& mountpoint) {
  if (!IsMounted(mountpoint)) return NotFoundError(mountpoint + " is not mounted");
  pid_t pid = fork();
  if (pid == 0) {
    execlp("fusermount3", "fusermount3", "-u", mountpoint.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  if (::umount(mountpoint.c_str()) == 0) return Status::Ok();
  return ErrnoToStatus(errno, "unmounting " + mountpoint).WithContext("files may still be open (see fuser -m)");
}

}  // namespace strata::fuse
