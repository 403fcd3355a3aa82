// Durable whole-file helpers on top of FileSystem. Thread-safe as far as the
// file system is; concurrent WriteFileAtomic calls to one path each leave a
// complete file (the last rename wins).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/buffer.h"
#include "base/status.h"
#include "io/file_system.h"

namespace strata::io {

// Replaces `path` with `data` so that readers, and a crash at any point, see
// either the old contents or the new ones: write a temp name in the same
// directory, fsync it, rename over `path`, fsync the directory. On failure
// the temp file is removed and `path` is untouched.
Status WriteFileAtomic(FileSystem& fs, const std::string& path, std::string_view data);
Status WriteFileAtomic(FileSystem& fs, const std::string& path, const Buffer& data);
// The same for a file made of `parts` in order, written one after another (no joined copy).
Status WriteFileAtomic(FileSystem& fs, const std::string& path, const std::vector<Buffer>& parts);
// The same through FileSystem::OpenForStreamingWrite: the parts' whole 4 KiB
// blocks at aligned offsets from aligned memory go to the device without the
// page cache (a large file written once: no copy into, and no eviction of, the
// page cache), until the first part that is not so aligned.
Status WriteFileAtomicStreaming(FileSystem& fs, const std::string& path, const std::vector<Buffer>& parts);
// WriteFileAtomic after creating the directories `path` is in ("out/a.json" creates out/; a bare
// "a.json" needs none): for result files a user names on a command line. Errors, never throws.
Status WriteFileAtomicCreatingDirs(FileSystem& fs, const std::string& path, std::string_view data);

// Builds a file from positional writes (any order, from any thread) under a
// temp name beside `path`; Commit() then publishes it as WriteFileAtomic
// does (fsync, rename, directory fsync). Destroyed uncommitted, or after a
// failed Commit(), it removes the temp file and leaves `path` untouched: for
// downloads that must never leave a partial file under the real name.
class AtomicFileWriter {
 public:
  static Result<std::unique_ptr<AtomicFileWriter>> Create(FileSystem& fs, const std::string& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  Status WriteAt(uint64_t offset, const void* data, size_t n);
  Status Commit();
  const std::string& path() const { return path_; }

 private:
  AtomicFileWriter(FileSystem& fs, std::string path, std::string tmp, std::unique_ptr<WritableFile> file);
  FileSystem& fs_;
  const std::string path_, tmp_;
  std::mutex mu_;  // WritableFile is not thread-safe
  std::unique_ptr<WritableFile> file_;
  bool committed_ = false;
};

// Reads a whole file; InvalidArgument if it holds more than max_size bytes.
// Never allocates more than max_size + a small chunk, whatever the file claims.
Result<std::string> ReadFileToString(FileSystem& fs, const std::string& path, uint64_t max_size);

// Creates a fresh private directory "$TMPDIR/<prefix>XXXXXX" (mkdtemp).
Result<std::string> MakeTempDir(std::string_view prefix);

// Removes a file or a directory tree (like rm -rf); OK if path is missing.
Status RemoveAll(FileSystem& fs, const std::string& path);

}  // namespace strata::io
