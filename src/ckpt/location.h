// Where checkpoints live: a local directory (through an io FileSystem) or an
// object store (keys "step-000000123/<file>"). Readers, verification, pull,
// retention and the coordinator's commit work on either through this one
// interface. Implementations are thread-safe; the FileSystem / store must
// outlive the Location.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/buffer.h"
#include "base/status.h"
#include "io/file_system.h"
#include "object/object_store.h"
#include "object/transfer.h"

namespace strata::ckpt {

struct FileEntry {
  std::string name;
  uint64_t size = 0;
};

class Location {
 public:
  virtual ~Location() = default;
  virtual std::string Describe() const = 0;  // path or URL, for messages
  virtual bool is_local() const = 0;
  // Steps with a step directory / key prefix (committed or not), ascending.
  virtual Result<std::vector<int64_t>> ListSteps() = 0;
  // Files of one step (names without the directory), sorted by name.
  virtual Result<std::vector<FileEntry>> ListFiles(int64_t step) = 0;
  // NotFound when missing.
  virtual Result<uint64_t> FileSize(int64_t step, std::string_view name) = 0;
  // The whole file; InvalidArgument if larger than max_size, NotFound if missing.
  virtual Result<std::string> ReadSmall(int64_t step, std::string_view name, uint64_t max_size) = 0;
  // Reads exactly n bytes at offset; Corruption if the file ends first.
  virtual Status ReadAt(int64_t step, std::string_view name, uint64_t offset, uint64_t n, void* dst) = 0;
  // Atomic, durable whole-file write: readers see the old file, the new one, or none.
  virtual Status WriteFile(int64_t step, std::string_view name, const Buffer& data) = 0;
  // Streams a file of `size` bytes into place without holding it whole:
  // `source` gives byte ranges (called from several threads at once),
  // hooks.in_order sees them in offset order (e.g. to hash them) and
  // hooks.before_commit runs before the file becomes visible. Any error
  // leaves no new file (an older one stays). Returns the ETag ("" locally).
  virtual Result<std::string> WriteFileFrom(int64_t step, std::string_view name, uint64_t size,
                                            const object::PartSource& source, const object::StreamPutHooks& hooks) = 0;
  virtual Status Remove(int64_t step, std::string_view name) = 0;  // OK if missing
  // Deletes a checkpoint: the commit markers first (so it stops counting at
  // once, even if the deletion is interrupted), then every other file.
  virtual Status RemoveStep(int64_t step) = 0;
};

// `dir` is created if missing. Paths: dir/step-000000123/<file>.
Result<std::unique_ptr<Location>> OpenLocalLocation(io::FileSystem& fs, std::string dir);
// Keys "step-000000123/<file>" in `store` (confine it with a PrefixStore /
// ?prefix= to put checkpoints under a prefix). `part_size`/`concurrency`
// size multipart uploads and ranged reads of large files. Reads check each
// answer's ETag against the step's listing: another version (an out-of-date
// replica's) is Unavailable, never taken for damage.
std::unique_ptr<Location> StoreLocation(object::ObjectStorePtr store, uint64_t part_size = 16ull << 20,
                                        int concurrency = 8);
// A URL with a scheme (file://, mem://, s3://) opens a store; anything else
// is a local directory on DefaultFileSystem() (not created here).
Result<std::unique_ptr<Location>> OpenLocation(std::string_view dir_or_url);

}  // namespace strata::ckpt
