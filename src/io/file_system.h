// Local file access behind an interface, so tests can substitute a
// fault-injecting file system (disk full, I/O errors, crash simulation).
// Every errno is translated once, here, via ErrnoToStatus with the path in
// the message. FileSystem implementations are thread-safe; a
// RandomAccessFile may be read from many threads at once; a WritableFile is
// used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/buffer.h"
#include "base/clock.h"
#include "base/status.h"

namespace strata::io {

struct FileStat {
  uint64_t size = 0;
  bool is_dir = false;
  WallTime mtime{};
  uint64_t inode = 0;  // 0 where the file system has none
};

struct SpaceInfo {
  uint64_t total = 0;      // the file system's size
  uint64_t available = 0;  // free to an unprivileged writer
};

struct DirEntry {
  std::string name;  // no directory part
  bool is_dir = false;
  uint64_t size = 0;
  WallTime mtime{};
};

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to n bytes at offset into dst. Returns fewer than n only at end
  // of file (0 at or past it). Thread-safe.
  virtual Result<size_t> ReadAt(uint64_t offset, size_t n, void* dst) = 0;
  // Reads [offset, offset+n) into dst as reads of about `part` bytes in
  // flight at once where the file system can (PosixFileSystem: io_uring; a
  // local SSD serves them together faster than one read at queue depth 1),
  // calling landed(bytes) as each leading run has arrived, in order, so the
  // caller can work on it while the rest is read. Returns the bytes read,
  // fewer only at end of file. Default: one ReadAt, then landed.
  virtual Result<size_t> ReadAtParts(uint64_t offset, size_t n, void* dst, size_t part,
                                     const std::function<void(size_t)>& landed);
  virtual Result<uint64_t> Size() = 0;
  // The open file's own metadata (not the path's: it may have been renamed over since). Default: the size only.
  virtual Result<FileStat> Stat();
  // Extended attributes of the open file: NotFound if it has no `name`,
  // NotSupported where the file system keeps none (the default).
  virtual Result<std::string> GetXattr(const std::string& name);
  virtual Status SetXattr(const std::string& name, std::string_view value);
  virtual const std::string& path() const = 0;

  // Reads [offset, offset+n) into a new Buffer (shorter only at end of file).
  Result<Buffer> Read(uint64_t offset, size_t n);
};

// Not thread-safe. Destroying an unclosed file closes it and drops any error:
// call Close() to learn whether the last writes reached the kernel.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Writes at the end of the file (as this handle knows it: the size at open,
  // grown by Append and WriteAt).
  virtual Status Append(const void* data, size_t n) = 0;
  Status Append(const Buffer& data) { return Append(data.data(), data.size()); }
  Status Append(std::string_view data) { return Append(data.data(), data.size()); }
  virtual Status WriteAt(uint64_t offset, const void* data, size_t n) = 0;
  Status WriteAt(uint64_t offset, const Buffer& data) { return WriteAt(offset, data.data(), data.size()); }
  // Makes written bytes durable (fdatasync).
  virtual Status Sync() = 0;
  // Further calls fail with InvalidArgument; a second Close is OK.
  virtual Status Close() = 0;
  // The file size as this handle knows it.
  virtual uint64_t Size() const = 0;
  // Sets an extended attribute before the file is synced and renamed, so it is
  // committed with the bytes. NotSupported where the file system keeps none (the default).
  virtual Status SetXattr(const std::string& name, std::string_view value);
  virtual const std::string& path() const = 0;
};

// An exclusive advisory lock (flock) held until destroyed.
class FileLock {
 public:
  virtual ~FileLock() = default;
  virtual const std::string& path() const = 0;
};

struct LockWaitOptions {
  // Runs once, before blocking, when another open file description holds the lock (e.g. to count waits).
  std::function<void()> on_wait;
  // The holder removes the lock file as it unlocks, so per-item lock files do
  // not pile up; a waiter that then holds the removed file locks the file the
  // name has now. Every locker of the path must use the same setting.
  bool remove_on_unlock = false;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) = 0;
  // Creates the file if missing; truncate=false keeps its bytes and appends after them.
  virtual Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path, bool truncate = true) = 0;
  // Creates a new file; AlreadyExists if the name is taken (O_EXCL).
  virtual Result<std::unique_ptr<WritableFile>> CreateExclusive(const std::string& path) = 0;
  // Like OpenForWrite(path, true), for large sequential writes that should not
  // pass through (and evict) the page cache: where the file system allows it,
  // writes of whole 4 KiB blocks from 4 KiB-aligned memory at aligned offsets
  // go straight to the device (O_DIRECT); the first other write switches the
  // handle to buffered writes for the rest (a file's unaligned tail). Sync()
  // is still needed for durability. Default: OpenForWrite (always buffered).
  virtual Result<std::unique_ptr<WritableFile>> OpenForStreamingWrite(const std::string& path) {
    return OpenForWrite(path, true);
  }

  // Atomically replaces `to` (durable once the parent directory is synced).
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status Remove(const std::string& path) = 0;     // a file
  virtual Status RemoveDir(const std::string& path) = 0;  // an empty directory
  // Like mkdir -p; AlreadyExists if a component is a non-directory.
  virtual Status CreateDirs(const std::string& path) = 0;
  // Entries sorted by name, without "." and "..".
  virtual Result<std::vector<DirEntry>> ListDir(const std::string& path) = 0;
  virtual Result<FileStat> Stat(const std::string& path) = 0;
  virtual Status SyncDir(const std::string& path) = 0;
  // False for a missing path; an error only when existence cannot be told (e.g. EACCES).
  virtual Result<bool> Exists(const std::string& path) = 0;
  // The size of the file system holding path, and the bytes available on it
  // to an unprivileged writer.
  virtual Result<SpaceInfo> Space(const std::string& path) = 0;
  Result<uint64_t> FreeSpace(const std::string& path) {
    STRATA_ASSIGN_OR_RETURN(SpaceInfo space, Space(path));
    return space.available;
  }
  // Exclusive, non-blocking: Unavailable naming the holder's PID (written
  // into the lock file by the holder) when another open file description holds it.
  virtual Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) = 0;
  // Exclusive, blocking: waits until no other open file description holds it
  // (a holder that dies releases it). Creates the file if missing.
  virtual Result<std::unique_ptr<FileLock>> LockFileBlocking(const std::string& path,
                                                             const LockWaitOptions& options) = 0;
  virtual Status Truncate(const std::string& path, uint64_t size) = 0;
  // The absolute path with symlinks resolved (realpath(3)). Default: the OS's.
  virtual Result<std::string> RealPath(const std::string& path);
  // A directory's descriptor for fd-relative walks (openat, fdopendir); the
  // caller closes it. NotFound with ENOTDIR's text as the cause when `path`
  // is not a directory. Default: the OS's.
  virtual Result<int> OpenDirectory(const std::string& path);
};

// The operating system's file system: pread/pwrite, O_CLOEXEC, fdatasync.
// Bytes free on path's file system above `floor` (negative: below it by that
// much); nullopt without a floor (0) or when the free space cannot be read
// (a write into a full disk then fails on its own). Caches keep their floor with it.
std::optional<int64_t> RoomAboveFloor(FileSystem& fs, const std::string& path, uint64_t floor);

class PosixFileSystem : public FileSystem {
 public:
  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path, bool truncate = true) override;
  Result<std::unique_ptr<WritableFile>> CreateExclusive(const std::string& path) override;
  // O_DIRECT where the file system takes it; buffered where it refuses (e.g. tmpfs before Linux 6.6).
  Result<std::unique_ptr<WritableFile>> OpenForStreamingWrite(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Status RemoveDir(const std::string& path) override;
  Status CreateDirs(const std::string& path) override;
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override;
  Result<FileStat> Stat(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  Result<bool> Exists(const std::string& path) override;
  Result<SpaceInfo> Space(const std::string& path) override;
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;
  Result<std::unique_ptr<FileLock>> LockFileBlocking(const std::string& path, const LockWaitOptions& options) override;
  Status Truncate(const std::string& path, uint64_t size) override;

  // Opens with O_DIRECT (page cache bypassed): offsets, sizes and destination
  // buffers passed to ReadAt must be multiples of kDirectAlignment, else
  // InvalidArgument. NotSupported where the file system refuses O_DIRECT (e.g. tmpfs before 6.6).
  static constexpr size_t kDirectAlignment = 4096;
  Result<std::unique_ptr<RandomAccessFile>> OpenForReadDirect(const std::string& path);
  // How many bytes of [offset, offset + length) of the file at `path` the
  // page cache holds now (mincore; whole pages, so a partial last page counts whole).
  static Result<uint64_t> ResidentBytes(const std::string& path, uint64_t offset, uint64_t length);
};

// A process-wide PosixFileSystem.
FileSystem& DefaultFileSystem();

// Path helpers (plain string manipulation, '/' separators).
std::string JoinPath(std::string_view dir, std::string_view name);
// "a/b/c" -> "a/b"; "c" -> "."; "/c" -> "/".
std::string ParentDir(std::string_view path);
std::string BaseName(std::string_view path);

}  // namespace strata::io
