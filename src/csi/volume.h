// What a CSI volume is to strata's driver, without any gRPC: the volume_context
// keys a StorageClass or PersistentVolume may set (turned into `strata mount`
// flags), the secret keys it accepts, and the record of a staged volume kept in
// the driver's state dir. Pure functions; every parser is bounds-checked and fuzzed
// (fuzz_csi_volume).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace strata::csi {

using StringMap = std::map<std::string, std::string>;

// volume_context, validated. Keys (the mount's flag names without "--"):
//   url            the store URL (required): s3://bucket/prefix?endpoint=..., file:///dir
//   dataset        the name published for cache-aware scheduling (default: url without its query)
//   cache-ram cache-disk block-size metadata-ttl cache-group peer-listen peer-deadline
//   prefetch-budget readahead-max   the mount's flags of the same name
//   read-only      "true": every publish of the volume is read-only
// Unknown keys, empty or over-long values and values with control characters are
// InvalidArgument (values reach the mount as argv entries, never through a shell).
struct VolumeSpec {
  std::string url;
  std::string dataset;
  bool read_only = false;
  std::vector<std::string> mount_args;  // "--flag", "value" pairs for `strata mount`
  bool has_cache_group = false;
};
Result<VolumeSpec> ParseVolumeContext(const StringMap& context);

// The Kubernetes Secret keys the driver accepts (request `secrets`): they become the
// mount's environment through an inherited memfd, never argv or a file.
//   AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN STRATA_GROUP_SECRET
// Unknown keys are InvalidArgument (named, the value never quoted).
Status CheckSecrets(const StringMap& secrets);
// "KEY=VALUE\n" lines (the format `strata mount --secrets-fd` reads).
std::string FormatSecrets(const StringMap& secrets);
// The inverse; InvalidArgument on a line without '=' or an unknown key.
Result<StringMap> ParseSecrets(std::string_view text);

// A staged volume as recorded in STATE_DIR/volumes/<id hash>.json (no secrets).
struct PublishedTarget {
  std::string path;
  bool read_only = false;
  bool operator==(const PublishedTarget&) const = default;
};
struct VolumeRecord {
  std::string volume_id;
  std::string staging_path;
  StringMap context;            // as given to NodeStageVolume (validated by ParseVolumeContext)
  bool read_only = false;       // the staged mount itself (read-only access mode or context)
  bool has_secrets = false;     // secrets were given: a remount needs them
  std::string sealed_secrets;   // them, sealed (csi/sealed.h) when the driver has a key; else empty
  int pid = 0;                  // the mount process
  uint64_t pid_start_time = 0;  // its start time in clock ticks (/proc/PID/stat), against PID reuse
  std::string cache_dir;
  std::vector<PublishedTarget> targets;
};
std::string SerializeVolumeRecord(const VolumeRecord& record);
Result<VolumeRecord> ParseVolumeRecord(std::string_view text);

// The file name a volume's record has in the state dir (volume ids are opaque bytes).
std::string VolumeKey(const std::string& volume_id);

}  // namespace strata::csi
