// WriteBuffers: where the files open for writing are buffered until they are
// uploaded. Each mount buffers in its own subdirectory of write_dir
// (strata-mount-<pid>-<random>, owned through an flock'd lock file), so
// mounts sharing write_dir never touch each other's buffers; the buffers of a
// mount that died are swept by the next one (empty ones removed, the others
// moved to lost+found). Bytes that cannot be uploaded are never deleted:
// they are moved to lost+found, with a log line naming both.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "base/buffer.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "fs/inode_table.h"
#include "fs/types.h"
#include "io/file_system.h"

namespace strata::fs {

// The local buffer of a file open for writing. `mu` serialises writes,
// truncation and uploads.
struct Writer {
  std::string temp_path;  // set before the writer is shared, then constant
  Mutex mu;
  std::unique_ptr<io::WritableFile> out PT_GUARDED_BY(mu);
  std::unique_ptr<io::RandomAccessFile> in;  // positional reads: any thread
  bool dirty GUARDED_BY(mu) = false;         // written (or truncated) since the last upload
  // Written with `mu` held, read without it by getattr and listings, which
  // hold the inode table's lock and so cannot wait for `mu` (an upload holds
  // `mu`, then takes the table's lock): atomic.
  std::atomic<uint64_t> size{0};
  std::atomic<bool> uploaded{false};             // an object exists under the inode's key
  bool unlinked GUARDED_BY(kInodeLock) = false;  // removed while open: never upload
  int refs GUARDED_BY(kInodeLock) = 0;           // handles sharing it
};

class WriteBuffers {
 public:
  // `options` (write_dir, lost_found_dir, read_only), `local` and `clock`
  // must outlive this. Thread-safe.
  WriteBuffers(const FsOptions& options, io::FileSystem& local, Clock& clock);

  // Sweeps the buffer directories of mounts that died (their lock is free):
  // empty buffers removed, the others moved to lost+found.
  void SweepStale();
  // A new, empty buffer for the file at `path` (named in errors only).
  Result<std::shared_ptr<Writer>> NewWriter(const std::string& path);
  Status Truncate(Writer& w, uint64_t size) REQUIRES(w.mu);
  // Up to `size` bytes at `offset` (fewer only at the buffer's end).
  Result<Buffer> Read(Writer& w, uint64_t offset, size_t size);
  // IOError: the buffer holds fewer bytes than were written (logged).
  static Result<Buffer> ShortBuffer(const Writer& w, uint64_t got_to, uint64_t want_to);
  void Remove(const Writer& w);
  // Moves a buffer that could not be uploaded to lost+found; says where.
  void KeepLost(const std::string& buffer, const std::string& key);
  // At unmount, once every buffer is uploaded or kept: the directory goes.
  void Close();

 private:
  // This mount's buffer directory, created and locked on first use.
  Result<std::string> Dir();
  std::string LostFoundDir() const;

  const FsOptions& options_;
  io::FileSystem& local_;
  Clock& clock_;
  std::atomic<uint64_t> next_temp_{1};
  Mutex mu_;
  std::string dir_ GUARDED_BY(mu_);  // empty until the first write
  // Held while the mount lives: the directory is ours.
  std::unique_ptr<io::FileLock> lock_ GUARDED_BY(mu_);
};

}  // namespace strata::fs
