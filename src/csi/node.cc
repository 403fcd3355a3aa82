#include "csi/node.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>

#include "base/log.h"
#include "base/utf8.h"
#include "csi/mount_host.h"
#include "csi/mounts.h"
#include "csi/sealed.h"
#include "io/durable.h"
#include "io/file_system.h"

namespace strata::csi {
namespace {

namespace fs = std::filesystem;

// An absolute path, normalised as the kernel shows it in the mount table
// ("/a//b/" is "/a/b"), so a mount is found where it was made.
Result<std::string> NeedAbsolute(const std::string& path, const char* field) {
  if (path.empty()) return InvalidArgumentError(std::string(field) + " is required");
  if (path[0] != '/' || path.find('\0') != std::string::npos || path.size() > 4096) {
    return InvalidArgumentError(std::string(field) + " must be an absolute path");
  }
  // The volume record (JSON) keeps the path: protobuf's string fields are UTF-8 too.
  if (!IsValidUtf8(path)) return InvalidArgumentError(std::string(field) + " is not UTF-8");
  std::string normal = fs::path(path).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

Status NeedId(const std::string& id) {
  if (id.empty()) return InvalidArgumentError("volume_id is required");
  if (id.size() > 4096) return InvalidArgumentError("volume_id is over 4096 bytes");
  if (!IsValidUtf8(id)) return InvalidArgumentError("volume_id is not UTF-8");
  return Status::Ok();
}

// Whatever is mounted at `path` (stacked mounts too) is detached.
void DetachAll(const std::string& path) {
  for (int i = 0; i < 16 && Unmount(path, true).ok(); ++i) {
  }
}

bool IsMounted(const std::string& path) {
  auto table = ReadMountTable();
  return table.ok() && FindMount(*table, path).ok();
}

// Mounted and not dead: a FUSE mount whose process died answers ENOTCONN; one
// that is slow to answer is busy or hung, which a remount would not cure (its
// process is alive), so it counts as up.
bool Healthy(const std::string& path) {
  if (!IsMounted(path)) return false;
  Status st = ProbePath(path);
  if (st.code() == Code::kDeadlineExceeded) STRATA_LOG_WARN("csi: {}", st.ToString());
  return st.ok() || st.code() == Code::kDeadlineExceeded;
}

uint64_t DiskUsage(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2)) total += it->file_size(e2);
  }
  return total;
}

}  // namespace

Result<std::unique_ptr<NodeManager>> NodeManager::Open(NodeOptions options) {
  if (options.node_id.empty()) return InvalidArgumentError("--node-id is required");
  if (options.state_dir.empty()) return InvalidArgumentError("--state-dir is required");
  if (options.cache_root.empty()) options.cache_root = options.state_dir + "/cache";
  for (const std::string& d : {options.state_dir + "/volumes", options.state_dir + "/logs", options.cache_root}) {
    STRATA_RETURN_IF_ERROR(io::DefaultFileSystem().CreateDirs(d));
  }
  std::unique_ptr<NodeManager> m(new NodeManager(std::move(options)));
  {
    MutexLock lock(m->mu_);
    STRATA_ASSIGN_OR_RETURN(auto entries, io::DefaultFileSystem().ListDir(m->options_.state_dir + "/volumes"));
    for (const auto& e : entries) {
      if (!e.name.ends_with(".json")) continue;
      const std::string path = m->options_.state_dir + "/volumes/" + e.name;
      auto text = io::ReadFileToString(io::DefaultFileSystem(), path, 1 << 20);
      auto record = text.ok() ? ParseVolumeRecord(*text) : Result<VolumeRecord>(text.status());
      if (!record.ok()) {
        // Kept for a person to look at: deleting it could orphan a mount.
        STRATA_LOG_ERROR("csi: skipping volume record {}: {}", path, record.status().ToString());
        continue;
      }
      m->Adopt(std::move(*record));
    }
    for (auto& [id, v] : m->volumes_) m->HealLocked(v);
  }
  if (m->options_.heal_interval.count() > 0) m->thread_ = std::thread([p = m.get()] { p->Loop(); });
  return m;
}

NodeManager::~NodeManager() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
  // The mounts stay: pods are reading through them.
}

NodeManager::Counters NodeManager::counters() const {
  MutexLock lock(mu_);
  return counters_;
}

std::string NodeManager::RecordPath(const std::string& volume_id) const {
  return options_.state_dir + "/volumes/" + VolumeKey(volume_id) + ".json";
}

Status NodeManager::Save(const VolumeRecord& r) {
  return io::WriteFileAtomic(io::DefaultFileSystem(), RecordPath(r.volume_id), SerializeVolumeRecord(r));
}

void NodeManager::Adopt(VolumeRecord record) {
  Volume v;
  v.record = std::move(record);
  const MountProcess p{v.record.pid, v.record.pid_start_time};
  if (ProcessRunning(p)) {
    ++counters_.adopted;
    auto secrets = RecoverSecrets(p);
    if (secrets.ok()) {
      v.secrets = std::move(*secrets);
      v.secrets_known = true;
    }
    STRATA_LOG_INFO("csi: adopted volume {} (mount pid {}, staged at {})", v.record.volume_id, p.pid,
                    v.record.staging_path);
  }
  if (!v.record.has_secrets) v.secrets_known = true;  // none needed
  if (!v.secrets_known && !v.record.sealed_secrets.empty() && !options_.seal_key.empty()) {
    auto opened = UnsealSecrets(v.record.sealed_secrets, options_.seal_key, v.record.volume_id);
    if (opened.ok()) {
      v.secrets = std::move(*opened);
      v.secrets_known = true;
    } else {
      STRATA_LOG_ERROR("csi: volume {}'s sealed secrets: {}", v.record.volume_id, opened.status().ToString());
    }
  }
  const std::string id = v.record.volume_id;
  volumes_[id] = std::move(v);
}

Status NodeManager::SealInto(Volume& v) {
  v.record.sealed_secrets.clear();
  if (options_.seal_key.empty() || v.secrets.empty()) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(v.record.sealed_secrets, SealSecrets(v.secrets, options_.seal_key, v.record.volume_id));
  return Status::Ok();
}

Status NodeManager::StartMount(Volume& v) {
  StringMap context = options_.mount_defaults;
  for (const auto& [k, val] : v.record.context) context[k] = val;
  auto spec = ParseVolumeContext(context);
  if (!spec.ok()) return spec.status();
  MountLaunch l;
  l.binary = options_.strata_binary;
  l.url = spec->url;
  l.mountpoint = v.record.staging_path;
  l.args = spec->mount_args;
  l.args.insert(l.args.end(), {"--cache-dir", v.record.cache_dir, "--allow-other"});
  if (v.record.read_only) l.args.push_back("--read-only");
  if (spec->has_cache_group) {
    // What this member caches of the dataset goes to etcd for the scheduler extender.
    l.args.insert(l.args.end(), {"--publish-dataset", spec->dataset, "--publish-node", options_.node_id});
  }
  l.secrets = v.secrets;
  l.log_file = options_.state_dir + "/logs/" + VolumeKey(v.record.volume_id) + ".log";
  l.timeout = options_.mount_timeout;
  STRATA_RETURN_IF_ERROR(io::DefaultFileSystem().CreateDirs(v.record.cache_dir));
  STRATA_ASSIGN_OR_RETURN(MountProcess p,
                          options_.mount_host.empty() ? LaunchMount(l) : LaunchMountVia(options_.mount_host, l));
  v.record.pid = p.pid;
  v.record.pid_start_time = p.start_time;
  return Save(v.record);
}

Status NodeManager::Stage(const StageRequest& request) {
  StageRequest r = request;
  STRATA_RETURN_IF_ERROR(NeedId(r.volume_id));
  STRATA_ASSIGN_OR_RETURN(r.staging_path, NeedAbsolute(r.staging_path, "staging_target_path"));
  STRATA_RETURN_IF_ERROR(CheckSecrets(r.secrets));
  STRATA_ASSIGN_OR_RETURN(VolumeSpec spec, ParseVolumeContext(r.context));
  MutexLock lock(mu_);
  auto it = volumes_.find(r.volume_id);
  if (it != volumes_.end()) {
    Volume& v = it->second;
    if (v.record.staging_path != r.staging_path || v.record.context != r.context ||
        v.record.read_only != (r.read_only || spec.read_only)) {
      return AlreadyExistsError("volume " + r.volume_id + " is already staged at " + v.record.staging_path +
                                " with other parameters");
    }
    if (!r.secrets.empty() || !v.record.has_secrets) {
      v.secrets = r.secrets;
      v.secrets_known = true;
      v.record.has_secrets = !r.secrets.empty();
      STRATA_RETURN_IF_ERROR(SealInto(v));
      STRATA_RETURN_IF_ERROR(Save(v.record));
    }
    HealLocked(v);  // a retry after a dead mount brings it back
    return Healthy(v.record.staging_path)
               ? Status::Ok()
               : UnavailableError("volume " + r.volume_id + " is staged but its mount is not up");
  }
  STRATA_RETURN_IF_ERROR(MakeDirs(r.staging_path));
  if (IsMounted(r.staging_path)) {
    if (Healthy(r.staging_path)) {
      return AlreadyExistsError("something else is mounted at " + r.staging_path);
    }
    DetachAll(r.staging_path);  // a dead mount left by a process this driver no longer knows
  }
  Volume v;
  v.record.volume_id = r.volume_id;
  v.record.staging_path = r.staging_path;
  v.record.context = r.context;
  v.record.read_only = r.read_only || spec.read_only;
  v.record.has_secrets = !r.secrets.empty();
  v.record.cache_dir = options_.cache_root + "/" + VolumeKey(r.volume_id);
  v.secrets = r.secrets;
  v.secrets_known = true;
  STRATA_RETURN_IF_ERROR(SealInto(v));
  // Recorded before the mount starts, so a driver dying in between leaves a
  // record to heal from rather than an orphaned mount.
  STRATA_RETURN_IF_ERROR(Save(v.record));
  Status st = StartMount(v);
  if (!st.ok()) {
    io::DefaultFileSystem().Remove(RecordPath(r.volume_id)).IgnoreError();
    return st.WithContext("stage volume " + r.volume_id);
  }
  STRATA_LOG_INFO("csi: staged volume {} at {} (mount pid {})", r.volume_id, r.staging_path, v.record.pid);
  volumes_[r.volume_id] = std::move(v);
  return Status::Ok();
}

Status NodeManager::Unstage(const std::string& volume_id, const std::string& staging_path_in) {
  STRATA_RETURN_IF_ERROR(NeedId(volume_id));
  STRATA_ASSIGN_OR_RETURN(const std::string staging_path, NeedAbsolute(staging_path_in, "staging_target_path"));
  MutexLock lock(mu_);
  auto it = volumes_.find(volume_id);
  if (it == volumes_.end()) return Status::Ok();  // already unstaged
  Volume& v = it->second;
  if (v.record.staging_path != staging_path) {
    return InvalidArgumentError("volume " + volume_id + " is staged at " + v.record.staging_path + ", not " +
                                staging_path);
  }
  if (!v.record.targets.empty()) {
    return PreconditionFailedError("volume " + volume_id + " is still published at " + v.record.targets[0].path);
  }
  const MountProcess p{v.record.pid, v.record.pid_start_time};
  if (ProcessRunning(p)) {
    STRATA_RETURN_IF_ERROR(StopMount(p, staging_path, std::chrono::seconds(10)));
  } else {
    DetachAll(staging_path);
  }
  STRATA_RETURN_IF_ERROR(io::DefaultFileSystem().Remove(RecordPath(volume_id)));
  volumes_.erase(it);
  STRATA_LOG_INFO("csi: unstaged volume {}", volume_id);
  return Status::Ok();
}

Status NodeManager::Publish(const PublishRequest& request) {
  PublishRequest r = request;
  STRATA_RETURN_IF_ERROR(NeedId(r.volume_id));
  STRATA_ASSIGN_OR_RETURN(r.staging_path, NeedAbsolute(r.staging_path, "staging_target_path"));
  STRATA_ASSIGN_OR_RETURN(r.target_path, NeedAbsolute(r.target_path, "target_path"));
  MutexLock lock(mu_);
  auto it = volumes_.find(r.volume_id);
  if (it == volumes_.end()) {
    return PreconditionFailedError("volume " + r.volume_id + " is not staged on this node");
  }
  Volume& v = it->second;
  if (v.record.staging_path != r.staging_path) {
    return PreconditionFailedError("volume " + r.volume_id + " is staged at " + v.record.staging_path);
  }
  const bool ro = r.read_only || v.record.read_only;
  for (const auto& t : v.record.targets) {
    if (t.path != r.target_path) continue;
    if (t.read_only != ro) {
      return AlreadyExistsError("volume " + r.volume_id + " is published at " + r.target_path +
                                (t.read_only ? " read-only" : " read-write"));
    }
    HealLocked(v);
    return Healthy(r.target_path) ? Status::Ok()
                                  : UnavailableError("the bind mount at " + r.target_path + " is not up");
  }
  if (!Healthy(v.record.staging_path)) HealLocked(v);
  if (!Healthy(v.record.staging_path)) {
    return UnavailableError("volume " + r.volume_id + "'s mount at " + v.record.staging_path + " is not up");
  }
  STRATA_RETURN_IF_ERROR(MakeDirs(r.target_path));
  if (IsMounted(r.target_path)) DetachAll(r.target_path);  // a bind left by a crash before it was recorded
  STRATA_RETURN_IF_ERROR(BindMount(v.record.staging_path, r.target_path, ro));
  v.record.targets.push_back({r.target_path, ro});
  Status st = Save(v.record);
  if (!st.ok()) {
    v.record.targets.pop_back();
    Unmount(r.target_path, true).IgnoreError();
    return st;
  }
  STRATA_LOG_INFO("csi: published volume {} at {}{}", r.volume_id, r.target_path, ro ? " (read-only)" : "");
  return Status::Ok();
}

Status NodeManager::Unpublish(const std::string& volume_id, const std::string& target_path_in) {
  STRATA_RETURN_IF_ERROR(NeedId(volume_id));
  STRATA_ASSIGN_OR_RETURN(const std::string target_path, NeedAbsolute(target_path_in, "target_path"));
  MutexLock lock(mu_);
  auto it = volumes_.find(volume_id);
  if (it == volumes_.end()) {
    if (IsMounted(target_path)) {
      // A bind this driver has no record of (its state was lost): the kubelet
      // wants it gone, and refusing would keep the pod from terminating.
      STRATA_LOG_WARN("csi: unpublish of unknown volume {}: detaching {}", volume_id, target_path);
      DetachAll(target_path);
      std::error_code ec;
      fs::remove(target_path, ec);
      return Status::Ok();
    }
    return NotFoundError("volume " + volume_id + " is not staged on this node");
  }
  Volume& v = it->second;
  auto t = std::find_if(v.record.targets.begin(), v.record.targets.end(),
                        [&](const PublishedTarget& x) { return x.path == target_path; });
  if (t == v.record.targets.end()) return Status::Ok();  // already unpublished
  if (IsMounted(target_path)) {
    Status st = Unmount(target_path, false);
    if (!st.ok()) DetachAll(target_path);  // busy or dead: detach; the pod is going away
  }
  std::error_code ec;
  fs::remove(target_path, ec);  // the directory the plugin created (if empty)
  v.record.targets.erase(t);
  STRATA_RETURN_IF_ERROR(Save(v.record));
  STRATA_LOG_INFO("csi: unpublished volume {} from {}", volume_id, target_path);
  return Status::Ok();
}

Result<VolumeStats> NodeManager::Stats(const std::string& volume_id, const std::string& path_in) {
  STRATA_RETURN_IF_ERROR(NeedId(volume_id));
  STRATA_ASSIGN_OR_RETURN(const std::string path, NeedAbsolute(path_in, "volume_path"));
  std::string cache_dir;
  StringMap context = options_.mount_defaults;
  {
    MutexLock lock(mu_);
    auto it = volumes_.find(volume_id);
    if (it == volumes_.end()) return NotFoundError("volume " + volume_id + " is not staged on this node");
    const VolumeRecord& r = it->second.record;
    bool known = r.staging_path == path;
    for (const auto& t : r.targets) known = known || t.path == path;
    if (!known) return NotFoundError(path + " is not where volume " + volume_id + " is staged or published");
    cache_dir = r.cache_dir;
    for (const auto& [k, v] : r.context) context[k] = v;
  }
  // The mount's bounds, as it read them (the context was validated at staging).
  uint64_t bound = options_.cache_disk_default;
  SpaceFloor floor = options_.cache_free_space_default;
  if (auto v = context.find("cache-disk"); v != context.end()) bound = ParseSize(v->second).value_or(bound);
  if (auto v = context.find("cache-free-space"); v != context.end()) {
    floor = ParseSpaceFloor(v->second).value_or(floor);
  }
  VolumeStats s;
  s.cached_bytes = DiskUsage(cache_dir);
  struct statvfs vfs;
  if (statvfs(cache_dir.c_str(), &vfs) == 0) {
    const uint64_t size = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
    const uint64_t free = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    const uint64_t keep = floor.Of(size);
    s.capacity_bytes = s.cached_bytes + (free > keep ? free - keep : 0);
    if (bound > 0) s.capacity_bytes = std::min(s.capacity_bytes, bound);
  }
  return s;
}

void NodeManager::HealLocked(Volume& v) {
  VolumeRecord& r = v.record;
  const MountProcess p{r.pid, r.pid_start_time};
  ReapIfChild(p.pid);
  if (!ProcessRunning(p) || !Healthy(r.staging_path)) {
    if (!v.secrets_known) {
      STRATA_LOG_ERROR(
          "csi: volume {}'s mount is down and its secrets are not known to this driver (it restarted after the "
          "mount died): the next NodeStageVolume or NodePublishVolume with secrets brings it back",
          r.volume_id);
      return;
    }
    STRATA_LOG_WARN("csi: volume {}'s mount at {} is down (pid {}); mounting it again", r.volume_id, r.staging_path,
                    r.pid);
    if (ProcessRunning(p)) {
      StopMount(p, r.staging_path, std::chrono::seconds(2)).IgnoreError();
    }
    DetachAll(r.staging_path);
    Status st = StartMount(v);
    if (!st.ok()) {
      STRATA_LOG_ERROR("csi: remounting volume {} failed: {}", r.volume_id, st.ToString());
      return;
    }
    ++counters_.remounts;
  }
  for (const auto& t : r.targets) {
    if (Healthy(t.path)) continue;
    DetachAll(t.path);  // the dead bind of the previous mount
    Status st = MakeDirs(t.path);
    if (st.ok()) st = BindMount(r.staging_path, t.path, t.read_only);
    if (!st.ok()) {
      STRATA_LOG_ERROR("csi: repairing the bind mount of volume {} at {} failed: {}", r.volume_id, t.path,
                       st.ToString());
      continue;
    }
    ++counters_.binds_repaired;
    STRATA_LOG_INFO("csi: repaired the bind mount of volume {} at {}", r.volume_id, t.path);
  }
}

void NodeManager::Heal() {
  MutexLock lock(mu_);
  for (auto& [id, v] : volumes_) HealLocked(v);
}

void NodeManager::Loop() {
  MutexLock lock(mu_);
  while (!stopping_) {
    // The predicate runs with mu_ held (the analysis cannot see that through the lambda).
    if (cv_.WaitFor(lock, options_.heal_interval, [&]() NO_THREAD_SAFETY_ANALYSIS { return stopping_; })) break;
    for (auto& [id, v] : volumes_) HealLocked(v);
  }
}

}  // namespace strata::csi
