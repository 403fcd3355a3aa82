// The node side of the driver without gRPC: stage (one `strata mount` per
// volume per node, its own process, recorded in STATE_DIR/volumes), publish
// (a bind mount per pod, read-only when asked), unpublish, unstage, stats, and
// healing: on start every recorded mount is re-adopted (a live process is kept,
// its secrets recovered from it), and a dead one (process gone, ENOTCONN) is
// remounted and its pods' bind mounts repaired, then and every heal_interval.
// Every call is idempotent as CSI requires. Errors: InvalidArgument (missing or
// malformed fields), NotFound (unknown volume), AlreadyExists (staged or
// published differently), PreconditionFailed (not staged / still published),
// else the mount's or the kernel's error. Thread-safe: calls are serialised.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "base/status.h"
#include "base/units.h"
#include "csi/mount_process.h"
#include "csi/volume.h"

namespace strata::csi {

struct NodeOptions {
  std::string node_id;
  std::string state_dir;      // volumes/ (records), logs/ (mount logs), cache/ (default cache root)
  std::string cache_root;     // each volume's disk cache in CACHE_ROOT/<volume key>; default STATE_DIR/cache
  std::string strata_binary;  // launched as `strata mount`
  // The mount host's socket (csi/mount_host.h): mounts are launched by it, in its
  // container, so they outlive this one; empty: this process launches them.
  std::string mount_host;
  StringMap mount_defaults;  // volume_context keys every volume gets unless it sets its own (cache-ram, ...)
  // What `strata mount` uses when neither sets cache-disk / cache-free-space: the volume's
  // capacity in NodeGetVolumeStats (0 / no floor: not bounded by them).
  uint64_t cache_disk_default = 0;
  SpaceFloor cache_free_space_default{};
  std::chrono::milliseconds heal_interval{2000};  // 0: only on start and when asked
  std::chrono::milliseconds mount_timeout{60000};
  std::string seal_key;  // 32 bytes: secrets are kept sealed in the records (csi/sealed.h); empty: memory only
};

struct StageRequest {
  std::string volume_id, staging_path;
  StringMap context, secrets;
  bool read_only = false;  // the access mode is a reader-only one
};
struct PublishRequest {
  std::string volume_id, staging_path, target_path;
  bool read_only = false;
  StringMap context;
};
struct VolumeStats {
  uint64_t cached_bytes = 0;  // in the volume's disk cache
  // What the disk cache can hold now: its bound (cache-disk), or less when the
  // file system's free space above the cache's floor (cache-free-space) is less
  // (0: unknown).
  uint64_t capacity_bytes = 0;
};

class NodeManager {
 public:
  static Result<std::unique_ptr<NodeManager>> Open(NodeOptions options);
  ~NodeManager();

  Status Stage(const StageRequest& r);
  Status Unstage(const std::string& volume_id, const std::string& staging_path);
  Status Publish(const PublishRequest& r);
  Status Unpublish(const std::string& volume_id, const std::string& target_path);
  Result<VolumeStats> Stats(const std::string& volume_id, const std::string& path);
  // One healing pass over every volume (the background loop calls it too).
  void Heal();

  struct Counters {
    uint64_t adopted = 0;   // live mounts found on start
    uint64_t remounts = 0;  // dead mounts mounted again
    uint64_t binds_repaired = 0;
  };
  Counters counters() const;
  const NodeOptions& options() const { return options_; }

 private:
  explicit NodeManager(NodeOptions options) : options_(std::move(options)) {}
  struct Volume {
    VolumeRecord record;
    StringMap secrets;  // memory only
    bool secrets_known = false;
  };
  std::string RecordPath(const std::string& volume_id) const;
  Status Save(const VolumeRecord& r) REQUIRES(mu_);
  Status StartMount(Volume& v) REQUIRES(mu_);
  Status SealInto(Volume& v) REQUIRES(mu_);  // record.sealed_secrets from v.secrets
  void HealLocked(Volume& v) REQUIRES(mu_);
  void Adopt(VolumeRecord record) REQUIRES(mu_);
  void Loop();

  NodeOptions options_;
  mutable Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::map<std::string, Volume> volumes_ GUARDED_BY(mu_);  // by volume id
  Counters counters_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace strata::csi
