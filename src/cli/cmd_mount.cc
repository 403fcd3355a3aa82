// strata mount BACKEND_URL MOUNTPOINT: a POSIX view of a bucket through the
// block cache (fs/ + fuse/). Daemonises once the mount exists unless
// --foreground; SIGINT/SIGTERM/SIGHUP, `strata umount` and `fusermount3 -u`
// unmount cleanly. strata umount MOUNTPOINT: unmount.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/json_text.h"
#include "base/log.h"
#include "base/units.h"
#include "cache/block_cache.h"
#include "cache/cached_store.h"
#include "cli/cache_flags.h"
#include "cli/command.h"
#include "cli/util.h"
#include "fs/object_fs.h"
#include "fuse/mount.h"
#include "group/member.h"
#include "object/cloud_store.h"
#include "object/store_url.h"

namespace strata::cli {
namespace {

struct MountArgs {
  std::string url, mountpoint;
  std::string attr_ttl = "10s", entry_ttl = "10s", dir_ttl = "60s";
  bool attr_ttl_set = false, entry_ttl_set = false, dir_ttl_set = false;
  std::string read_timeout = "60s", revalidate_timeout = "2s";
  bool strict_revalidate = false;
  std::string emulate, write_dir, log_file, log_level;
  std::string part_size = "16MiB", readahead_max = "64MiB";
  // Cold path: files fetched ahead when a directory is read in order, and
  // the bytes all read-ahead may have in flight at once.
  int prefetch_files = 8;
  std::string prefetch_file_max = "16MiB", prefetch_budget = "256MiB";
  bool read_only = false, foreground = false, allow_other = false;
  int upload_concurrency = 4, max_threads = 64, dir_prefetch = 8;
  // Shown for objects that carry no attributes of their own (default: the mounting user, 0644, 0755).
  std::optional<uint32_t> uid, gid;
  std::string file_mode = "0644", dir_mode = "0755";
  int secrets_fd = -1;                        // KEY=VALUE lines from an inherited descriptor (`strata csi`)
  std::string publish_dataset, publish_node;  // the cached bytes published in etcd for the scheduler extender
};

// Credentials and the group secret from an inherited descriptor (the CSI driver's
// memfd), so they are on no command line and in no environment block: only the
// names below are taken, into this process's environment, where the store and the
// group read them. The descriptor stays open: a restarted driver reads the secrets
// back from it (root only) to remount the volume should this process die.
void ReadSecretsFd(int fd) {
  static const char* const kNames[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                                       "STRATA_GROUP_SECRET"};
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = pread(fd, buf, sizeof buf, static_cast<off_t>(text.size()))) > 0 && text.size() < (64 << 10)) {
    text.append(buf, static_cast<size_t>(n));
  }
  if (n < 0) Fail("mount", "--secrets-fd", ErrnoToStatus(errno, "read the secrets descriptor"));
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    start = nl == std::string::npos ? text.size() : nl + 1;
    size_t eq = line.find('=');
    if (line.empty()) continue;
    bool known = false;
    for (const char* k : kNames)
      known = known || (eq != std::string::npos && line.compare(0, eq, k) == 0 && k[eq] == 0);
    if (!known) Fail("mount", "--secrets-fd", InvalidArgumentError("a line that is not NAME=VALUE of a known secret"));
    setenv(line.substr(0, eq).c_str(), line.substr(eq + 1).c_str(), 1);
  }
}

// An octal permission mode ("0644", "755").
uint32_t ParseModeArg(const std::string& s, const char* flag) {
  uint32_t v = 0;
  bool ok = !s.empty() && s.size() <= 5;
  for (char c : s) {
    if (c < '0' || c > '7') ok = false;
    v = v * 8 + static_cast<uint32_t>(c - '0');
  }
  if (!ok || v > 07777) Fail("mount", flag, InvalidArgumentError("expected an octal mode such as 0644, got " + s));
  return v;
}

std::string Absolute(const std::string& path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) {
    Fail("mount", path, ErrnoToStatus(errno, "mount point " + path));
  }
  return buf;
}

// Forks; the parent waits until the child reports the mount up (a byte on
// the pipe) or exits, and mirrors its outcome. Returns the write end in the child.
int Daemonize() {
  int fds[2];
  if (pipe(fds) != 0) Fail("mount", "daemon", ErrnoToStatus(errno, "pipe"));
  pid_t pid = fork();
  if (pid < 0) Fail("mount", "daemon", ErrnoToStatus(errno, "fork"));
  if (pid > 0) {
    close(fds[1]);
    char c = 0;
    ssize_t n;
    do n = read(fds[0], &c, 1);
    while (n < 0 && errno == EINTR);
    if (n == 1 && c == 'K') throw QuietExit{kExitOk};
    int status = 0;
    waitpid(pid, &status, 0);  // the child printed its own error
    throw QuietExit{WIFEXITED(status) ? WEXITSTATUS(status) : kExitFailure};
  }
  close(fds[0]);
  setsid();
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) dup2(null, STDIN_FILENO), close(null);
  return fds[1];
}

// Daemon: stdout/stderr go to the log file (or nowhere) once mounted.
void DetachOutput(const std::string& log_file) {
  int fd = log_file.empty() ? open("/dev/null", O_WRONLY) : open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  dup2(fd, STDOUT_FILENO);
  dup2(fd, STDERR_FILENO);
  close(fd);
}

// The TTL flags: a TTL may be "forever" (a dataset that never changes).
Duration ParseTtl(const std::string& text, const char* flag) {
  return Check(ParseDuration(text, {.allow_forever = true}), "mount", flag);
}

// The file system's options from the flags (the cache's TTL flag sets the three TTLs not given).
fs::FsOptions FsOptionsFrom(const MountArgs& a, const CacheFlags& cache_flags, const CacheSettings& c) {
  const char* cmd = "mount";
  fs::FsOptions fo;
  fo.attr_ttl = ParseTtl(a.attr_ttl, "--attr-ttl");
  fo.entry_ttl = ParseTtl(a.entry_ttl, "--entry-ttl");
  fo.dir_ttl = ParseTtl(a.dir_ttl, "--dir-ttl");
  if (cache_flags.given(kMetadataTtl)) {
    // "forever": after the first look nothing is asked of the store again.
    if (!a.attr_ttl_set) fo.attr_ttl = c.metadata_ttl;
    if (!a.entry_ttl_set) fo.entry_ttl = c.metadata_ttl;
    if (!a.dir_ttl_set) fo.dir_ttl = c.metadata_ttl;
  }
  fo.read_only = a.read_only;
  fo.strict_revalidate = a.strict_revalidate;
  fo.read_timeout = Check(ParseDuration(a.read_timeout), cmd, "--read-timeout");
  fo.revalidate_timeout = Check(ParseDuration(a.revalidate_timeout), cmd, "--revalidate-timeout");
  fo.part_size = Check(ParseSize(a.part_size), cmd, "--part-size");
  fo.upload_concurrency = static_cast<size_t>(std::max(1, a.upload_concurrency));
  fo.dir_prefetch = static_cast<size_t>(std::max(0, a.dir_prefetch));
  fo.prefetch_files = static_cast<size_t>(std::max(0, a.prefetch_files));
  fo.prefetch_file_bytes = Check(ParseSize(a.prefetch_file_max), cmd, "--prefetch-file-max");
  fo.uid = a.uid.value_or(getuid());
  fo.gid = a.gid.value_or(getgid());
  fo.file_mode = ParseModeArg(a.file_mode, "--file-mode");
  fo.dir_mode = ParseModeArg(a.dir_mode, "--dir-mode");
  fo.write_dir = !a.write_dir.empty() ? a.write_dir : !c.dir.empty() ? c.dir + "/writes" : "/tmp";
  // Bytes that could not be uploaded outlive the mount beside the cache.
  if (!c.dir.empty()) fo.lost_found_dir = c.dir + "/lost+found";
  return fo;
}

// The bucket, checked with one LIST (a clear message now rather than EIO on
// the first ls), behind the cloud emulation when asked.
object::ObjectStorePtr OpenBackend(const MountArgs& a, const object::CloudProfile& profile) {
  object::ObjectStorePtr backend = Check(object::OpenStore(a.url), "mount", a.url);
  object::ListOptions probe;
  probe.max_keys = 1;
  Check(backend->List(probe).status(), "mount", a.url);
  if (!a.emulate.empty()) backend = object::EmulateCloud(backend, profile);
  return backend;
}

std::shared_ptr<cache::CachedStore> OpenCachedStore(const MountArgs& a, const fs::FsOptions& fo,
                                                    object::ObjectStorePtr backend,
                                                    std::shared_ptr<cache::BlockCache> cache) {
  const char* cmd = "mount";
  cache::CachedStoreOptions so;
  so.metadata_ttl = fo.attr_ttl;  // one staleness bound for attributes, whichever layer answers
  so.readahead_max_window = Check(ParseSize(a.readahead_max), cmd, "--readahead-max");
  so.readahead_global_bytes = Check(ParseSize(a.prefetch_budget), cmd, "--prefetch-budget");
  // A file read from its start is fetched in parallel blocks up to here at once.
  so.open_window = std::min<uint64_t>(so.readahead_max_window, 16ull << 20);
  return std::make_shared<cache::CachedStore>(std::move(backend), std::move(cache), so);
}

// Joins the cache group, if one is given, and serves `store`'s blocks to it.
std::unique_ptr<group::GroupMember> JoinGroup(const MountArgs& a, const CacheSettings& c,
                                              const std::shared_ptr<cache::BlockCache>& cache,
                                              const std::shared_ptr<cache::CachedStore>& store) {
  if (c.group.empty()) return nullptr;
  const char* cmd = "mount";
  group::JoinOptions jo;
  jo.url = c.group;
  jo.listen = c.peer_listen;
  jo.secret = Check(group::ReadGroupSecret(c.group_secret_file), cmd, "--group-secret-file");
  jo.deadline = std::chrono::duration_cast<std::chrono::milliseconds>(c.peer_deadline);
  if (!a.publish_dataset.empty()) {
    // The bytes of this dataset this member caches, for the scheduler extender (src/csi/extender.h).
    jo.record = [cache, dataset = a.publish_dataset, node = a.publish_node.empty() ? jo.listen : a.publish_node] {
      const cache::CacheStats s = cache->Stats();
      // Runs on the group's thread: names from flags that are not UTF-8 must not throw there.
      return DumpJson(nlohmann::json{{"node", node}, {"datasets", {{dataset, std::max(s.disk_bytes, s.ram_bytes)}}}});
    };
  }
  auto member = Check(group::GroupMember::Join(jo), cmd, c.group);
  member->Attach(store);
  STRATA_LOG_INFO("mount: joined cache group {} as {}", c.group, member->address());
  return member;
}

// Once mounted: a daemon tells its parent (which exits) and detaches its output;
// in the foreground, how to unmount.
std::function<void()> OnMounted(const MountArgs& a, const std::string& mountpoint, int ready_fd) {
  return [&a, mountpoint, ready_fd] {
    if (ready_fd >= 0) {
      std::cout << "strata: mounted " << a.url << " at " << mountpoint << " (pid " << getpid() << ")" << std::endl;
      DetachOutput(a.log_file);
      char ok = 'K';
      if (write(ready_fd, &ok, 1) != 1) STRATA_LOG_WARN("mount: could not notify the parent process");
      close(ready_fd);
    } else {
      std::cerr << "strata: mounted " << a.url << " at " << mountpoint << "; Ctrl-C or `strata umount " << mountpoint
                << "` to unmount" << std::endl;
    }
  };
}

void RunMount(const MountArgs& a, const CacheFlags& cache_flags) {
  const char* cmd = "mount";
  if (a.secrets_fd >= 0) ReadSecretsFd(a.secrets_fd);
  const CacheSettings c = cache_flags.Settings();
  const std::string mountpoint = Absolute(a.mountpoint);
  if (fuse::IsMounted(mountpoint)) Fail(cmd, mountpoint, AlreadyExistsError("already a mount point"));
  const fs::FsOptions fo = FsOptionsFrom(a, cache_flags, c);
  cache::CacheOptions co;
  co.ram_bytes = c.ram_bytes;
  co.dir = c.dir;
  co.disk_bytes = c.disk_bytes;
  co.disk_min_free = c.min_free;
  co.block_size = c.block_size;
  co.sealer = CacheSealer(cmd, c, c.dir);
  object::CloudProfile profile;
  if (!a.emulate.empty()) profile = Check(object::ParseCloudProfile(a.emulate), cmd, "--emulate");
  if (!a.log_level.empty()) SetLogLevel(a.log_level);

  int ready_fd = a.foreground ? -1 : Daemonize();
  // From here on threads may start: they must not take the stop signals.
  fuse::BlockStopSignals();
  object::ObjectStorePtr backend = OpenBackend(a, profile);
  if (!fo.read_only) Check(io::DefaultFileSystem().CreateDirs(fo.write_dir), cmd, fo.write_dir);
  auto cache = Check(cache::BlockCache::Open(co), cmd, c.dir.empty() ? "cache" : c.dir);
  auto store = OpenCachedStore(a, fo, backend, cache);
  // Destroyed after the file system stops reading.
  std::unique_ptr<group::GroupMember> member = JoinGroup(a, c, cache, store);
  fs::ObjectFs filesystem(store, fo);

  fuse::MountOptions mo;
  mo.mountpoint = mountpoint;
  mo.fsname = "strata:" + backend->Url();
  mo.read_only = a.read_only;
  mo.allow_other = a.allow_other;
  mo.max_threads = static_cast<unsigned>(std::max(2, a.max_threads));
  mo.on_mounted = OnMounted(a, mountpoint, ready_fd);
  Status served = fuse::ServeMount(filesystem, mo);
  Status saved = filesystem.Shutdown();
  {
    const fs::FsCounters c = filesystem.counters();
    const cache::CachedStore::FetchStats f = store->fetch_stats();
    STRATA_LOG_INFO("mount: backend GETs {} (at most {} in flight at once), files prefetched {}, lists {}, heads {}",
                    f.gets, f.peak_in_flight, c.prefetched_files, c.lists, c.heads + c.meta_heads);
  }
  if (!saved.ok())
    STRATA_LOG_ERROR("mount: files open for writing at unmount could not be uploaded: {}", saved.ToString());
  Check(served, cmd, mountpoint);
  Check(saved, cmd, mountpoint);
  if (a.foreground) std::cerr << "strata: unmounted " << mountpoint << std::endl;
}

void RunUmount(const std::string& path, bool lazy) {
  const std::string mountpoint = Absolute(path);
  if (lazy) {
    if (!fuse::IsMounted(mountpoint)) Fail("umount", mountpoint, NotFoundError("not mounted"));
    if (umount2(mountpoint.c_str(), MNT_DETACH) != 0) Fail("umount", mountpoint, ErrnoToStatus(errno, "umount2"));
    return;
  }
  Check(fuse::Unmount(mountpoint), "umount", mountpoint);
}

CommandRegistrar mount_registrar("mount", [](CLI::App& root) {
  auto a = std::make_shared<MountArgs>();
  auto* sub = root.add_subcommand("mount", "Mount a bucket as a POSIX file system (FUSE), read through the cache");
  sub->add_option("backend", a->url, "file:///dir, s3://bucket[/prefix]?endpoint=..., mem://name")->required();
  sub->add_option("mountpoint", a->mountpoint, "An existing empty directory")->required();
  auto cache = AddCacheFlags(
      sub, {.command = "mount",
            .help = {{kCacheDir, "Disk tier directory (default: none, RAM only); write buffers go under it"},
                     {kMetadataTtl,
                      "Sets --attr-ttl, --entry-ttl and --dir-ttl at once (those given by themselves win); "
                      "'forever' for data that never changes (nothing is revalidated)"}},
            .deprecated = {{"--cache-mem", kCacheRam}}});
  sub->add_flag("--read-only", a->read_only, "Mount read-only (writes fail with EROFS)");
  sub->add_flag("-f,--foreground", a->foreground, "Stay in the foreground (default: daemonise once mounted)");
  sub->add_flag("--allow-other", a->allow_other, "Let other users access the mount");
  sub->add_option("--attr-ttl", a->attr_ttl, "How long file sizes/mtimes are trusted (default 10s)")
      ->each([a](const std::string&) { a->attr_ttl_set = true; });
  sub->add_option("--entry-ttl", a->entry_ttl, "How long name lookups (and misses) are trusted (default 10s)")
      ->each([a](const std::string&) { a->entry_ttl_set = true; });
  sub->add_option("--dir-ttl", a->dir_ttl, "How long directory listings are trusted (default 60s)")
      ->each([a](const std::string&) { a->dir_ttl_set = true; });
  sub->add_flag("--strict-revalidate", a->strict_revalidate,
                "Expired attributes must be confirmed by the store: stat/open wait for it and fail with it "
                "(default: a failed or slow revalidation serves the cached version, logged)");
  sub->add_option("--revalidate-timeout", a->revalidate_timeout,
                  "How long a revalidation is waited for before the cached version is served (default 2s)");
  sub->add_option("--read-timeout", a->read_timeout,
                  "An uncached read fails with EIO after this long in total (default 60s; 0s = no bound)");
  sub->add_option("--emulate", a->emulate, "Emulate a cloud bucket below the cache, e.g. ttfb=30ms,bw=25MB/s");
  sub->add_option("--write-dir", a->write_dir,
                  "Where files being written are buffered (default CACHE_DIR/writes or /tmp)");
  sub->add_option("--part-size", a->part_size, "Multipart upload part size (default 16MiB)");
  sub->add_option("--upload-concurrency", a->upload_concurrency, "Parts uploaded at once per file (default 4)");
  sub->add_option("--readahead-max", a->readahead_max, "Per-file read-ahead window cap (default 64MiB)");
  sub->add_option("--dir-prefetch", a->dir_prefetch, "Subdirectory listings fetched ahead (default 8; 0 off)");
  sub->add_option("--prefetch-files", a->prefetch_files,
                  "Files fetched ahead when a directory's files are opened in listing order (default 8; 0 off)");
  sub->add_option("--prefetch-file-max", a->prefetch_file_max,
                  "Bytes of each file fetched ahead (default 16MiB; the rest comes by read-ahead)");
  sub->add_option("--prefetch-budget", a->prefetch_budget,
                  "Bytes all read-ahead and file prefetch may have in flight at once (default 256MiB)");
  sub->add_option("--max-threads", a->max_threads, "FUSE worker threads (default 64)");
  sub->add_option("--uid", a->uid, "Owner shown for objects without stored attributes (default: yours)");
  sub->add_option("--gid", a->gid, "Group shown for objects without stored attributes (default: yours)");
  sub->add_option("--file-mode", a->file_mode, "Mode of files without stored attributes (octal, default 0644)");
  sub->add_option("--dir-mode", a->dir_mode, "Mode of directories without stored attributes (octal, default 0755)");
  sub->add_option("--secrets-fd", a->secrets_fd,
                  "Read AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and STRATA_GROUP_SECRET as "
                  "NAME=VALUE lines from this inherited descriptor (how `strata csi` passes secrets)");
  sub->add_option("--publish-dataset", a->publish_dataset,
                  "With an etcd cache group: publish the bytes cached of the mount under this dataset name "
                  "(read by `strata scheduler-extender`)");
  sub->add_option("--publish-node", a->publish_node, "The node name published with --publish-dataset");
  sub->add_option("--log-file", a->log_file, "Daemon log file (default: none)");
  sub->add_option("--log-level", a->log_level, "trace, debug, info, warn (default), error");
  sub->footer([] {
    return std::string(
        "Consistency: close-to-open within the mount; other writers' changes appear after the TTLs.\n"
        "Modes, owners, times and symlinks are kept in object metadata as s3fs keeps them.\n"
        "Not supported: writing into existing objects without O_TRUNC and partial truncate (EOPNOTSUPP),\n"
        "hard links, device nodes and FIFOs (EPERM), xattrs (EOPNOTSUPP), renaming non-empty\n"
        "directories (EXDEV: mv copies instead).\n"
        "Example: strata mount s3://bucket/data?endpoint=http://127.0.0.1:9000 /mnt/data --cache-dir /nvme/cache");
  });
  sub->callback([a, cache] { RunMount(*a, *cache); });
});

CommandRegistrar umount_registrar("umount", [](CLI::App& root) {
  auto path = std::make_shared<std::string>();
  auto lazy = std::make_shared<bool>(false);
  auto* sub = root.add_subcommand("umount", "Unmount a strata mount (like fusermount3 -u)");
  sub->add_option("mountpoint", *path, "The mount point")->required();
  sub->add_flag("-l,--lazy", *lazy, "Detach now even if files are open (root)");
  sub->callback([path, lazy] { RunUmount(*path, *lazy); });
});

}  // namespace
}  // namespace strata::cli
