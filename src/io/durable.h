// Durable whole-file helpers on top of FileSystem. Thread-safe as far as the
// file system is; concurrent WriteFileAtomic calls to one path each leave a
// complete file (the last rename wins).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/buffer.h"
#include "base/status.h"
#include "io/file_system.h"

namespace strata {

// Replaces `path` with `data` so that readers, and a crash at any point, see
// either the old contents or the new ones: write a temp name in the same
// directory, fsync it, rename over `path`, fsync the directory. On failure
// the temp file is removed and `path` is untouched.
Status WriteFileAtomic(FileSystem& fs, const std::string& path, std::string_view data);
Status WriteFileAtomic(FileSystem& fs, const std::string& path, const Buffer& data);

// Reads a whole file; InvalidArgument if it holds more than max_size bytes.
// Never allocates more than max_size + a small chunk, whatever the file claims.
Result<std::string> ReadFileToString(FileSystem& fs, const std::string& path, uint64_t max_size);

// Creates a fresh private directory "$TMPDIR/<prefix>XXXXXX" (mkdtemp).
Result<std::string> MakeTempDir(std::string_view prefix);

// Removes a file or a directory tree (like rm -rf); OK if path is missing.
Status RemoveAll(FileSystem& fs, const std::string& path);

}  // namespace strata
