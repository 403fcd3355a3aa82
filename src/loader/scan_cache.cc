#include "loader/scan_cache.h"

#include "base/log.h"
#include "io/durable.h"
#include "io/file_system.h"

namespace strata::loader {
namespace {
constexpr uint64_t kMaxScanFile = 1ull << 30;
}

std::optional<dataset::ShardScan> DiskScanCache::Lookup(const std::string& id) {
  const std::string path = dir_ + "/" + id + ".scan";
  auto text = io::ReadFileToString(io::DefaultFileSystem(), path, kMaxScanFile);
  if (!text.ok()) return std::nullopt;
  auto scan = dataset::DecodeShardScan(Buffer::FromString(std::move(*text)), path);
  if (!scan.ok()) return std::nullopt;  // rewritten by the next Store
  return std::move(*scan);
}

void DiskScanCache::Store(const std::string& id, const dataset::ShardScan& scan) {
  io::FileSystem& fs = io::DefaultFileSystem();
  Status s = fs.CreateDirs(dir_);
  if (s.ok()) s = io::WriteFileAtomic(fs, dir_ + "/" + id + ".scan", dataset::EncodeShardScan(scan));
  if (!s.ok()) STRATA_LOG_WARN("loader: not keeping a shard scan in {}: {}", dir_, s.ToString());
}

}  // namespace strata::loader
