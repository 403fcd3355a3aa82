// FaultFileSystem: a FileSystem decorator for tests that can (a) run out of
// space after a byte budget, (b) fail reads/writes on chosen paths with a
// seeded probability, and (c) simulate a crash the way LevelDB's
// FaultInjectionTestEnv does: data not yet Sync()ed and files created or
// renamed without a following SyncDir of the parent are lost. It also counts
// operations. Thread-safe. The wrapped file system must outlive it.
//
// Crash-model limits (documented, not hidden): removals, truncations and
// directory creation are treated as durable at once; a rename's replaced
// target is kept in memory (tests use small files) so it can be restored.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "io/file_system.h"

namespace strata::io {

enum FileFaultOp : uint32_t {
  kFaultRead = 1,       // RandomAccessFile::ReadAt
  kFaultWrite = 2,      // Append / WriteAt
  kFaultSync = 4,       // WritableFile::Sync and SyncDir
  kFaultOpen = 8,       // OpenForRead / OpenForWrite / CreateExclusive
  kFaultMetadata = 16,  // Rename, Remove, RemoveDir, CreateDirs, Truncate
};

struct FaultSpec {
  std::string path_substring;  // empty matches every path
  double probability = 1.0;    // per matching operation
  uint64_t seed = 1;
  uint32_t ops = kFaultRead | kFaultWrite;
};

struct FaultCounters {
  uint64_t opens = 0;
  uint64_t reads = 0;
  uint64_t bytes_read = 0;
  uint64_t writes = 0;
  uint64_t bytes_written = 0;
  uint64_t syncs = 0;
  uint64_t dir_syncs = 0;
  uint64_t renames = 0;
  uint64_t removes = 0;
  uint64_t injected_errors = 0;
  uint64_t no_space_errors = 0;
};

class FaultFileSystem : public FileSystem {
 public:
  explicit FaultFileSystem(FileSystem& base);
  ~FaultFileSystem() override;

  // After `bytes` more bytes are written, writes fail with NoSpace (the part
  // of a write that still fits is written first, as a real disk would).
  void SetWriteBudget(uint64_t bytes);
  void ClearWriteBudget();
  void InjectErrors(FaultSpec spec);
  void ClearErrors();
  FaultCounters Counters() const;

  // A disk that cannot keep up: while the gate is closed, writes (Append,
  // WriteAt) wait at it until OpenWriteGate(). The destructor opens it.
  void CloseWriteGate();
  void OpenWriteGate();
  // Waits up to `deadline` (real time) until at least `n` writes wait at the gate.
  bool WaitHeldWrites(int n, std::chrono::milliseconds deadline);
  // A disk that is slow to read: likewise for reads (RandomAccessFile::ReadAt).
  void CloseReadGate();
  void OpenReadGate();
  bool WaitHeldReads(int n, std::chrono::milliseconds deadline);

  // Undoes everything not made durable: truncates written files back to their
  // last synced size (restoring bytes overwritten in place), then undoes
  // creations and renames whose parent directory was not synced, newest
  // first. Handles opened before the crash fail afterwards.
  Status SimulateCrash();
  // Forgets pending (unsynced) state, as if everything had been synced.
  void MarkAllDurable();

  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path, bool truncate = true) override;
  Result<std::unique_ptr<WritableFile>> CreateExclusive(const std::string& path) override;
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
  // Fails like an open (kFaultOpen) when an injected fault matches the path.
  Result<std::unique_ptr<FileLock>> LockFileBlocking(const std::string& path, const LockWaitOptions& options) override;
  Status Truncate(const std::string& path, uint64_t size) override;
  Result<std::string> RealPath(const std::string& path) override { return base_.RealPath(path); }
  Result<int> OpenDirectory(const std::string& path) override { return base_.OpenDirectory(path); }

 private:
  friend class FaultWritableFile;
  friend class FaultRandomAccessFile;

  // Per written file: what survives a crash.
  struct FileState {
    uint64_t synced_size = 0;
    // Bytes overwritten in place below synced_size since the last sync: (offset, old bytes).
    std::vector<std::pair<uint64_t, std::string>> undo;
  };
  // A namespace change not yet made durable by SyncDir(dir).
  struct DirOp {
    enum Kind { kCreate, kRename } kind;
    std::string dir;  // the directory whose sync makes it durable
    std::string from, to;
    std::optional<std::string> replaced;  // old contents of `to` (rename over an existing file)
  };

  Status MaybeFail(uint32_t op, const std::string& path, std::string_view what);
  Status MaybeFailLocked(uint32_t op, const std::string& path, std::string_view what);
  Result<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path, bool truncate, bool exclusive);
  // Hooks for FaultWritableFile; `epoch` tells handles opened before a crash.
  bool Stale(uint64_t epoch) const;
  // Checks faults, takes up to n bytes of the budget (*allowed) and saves overwritten synced bytes.
  Status BeforeWrite(const std::string& path, uint64_t offset, size_t n, uint64_t epoch, uint64_t* allowed);
  void PassWriteGate();
  void PassReadGate();
  void AfterWrite(size_t n);
  void AfterSync(const std::string& path, uint64_t size, uint64_t epoch);
  Status RestoreFile(const std::string& path, const FileState& state);
  Status UndoDirOp(const DirOp& op);

  FileSystem& base_;
  mutable std::mutex mu_;
  std::optional<uint64_t> budget_;
  std::optional<FaultSpec> fault_;
  std::mt19937_64 rng_;
  FaultCounters counters_;
  std::map<std::string, FileState> files_;
  std::vector<DirOp> dir_ops_;
  uint64_t epoch_ = 0;
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  bool gate_closed_ = false;
  int gate_held_ = 0;
  bool read_gate_closed_ = false;  // (under gate_mu_, signalled on gate_cv_)
  int read_gate_held_ = 0;
};

}  // namespace strata::io
