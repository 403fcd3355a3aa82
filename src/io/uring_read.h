// Reads of one file range as several reads in flight at once, through a
// per-thread io_uring: a local SSD serves four 1 MiB reads together faster
// than one 4 MiB read at queue depth 1, which is what a lone reader of a
// disk cache block would otherwise get. Internal to PosixFileSystem.
//
// Where io_uring cannot be set up (an old kernel, a seccomp policy,
// kernel.io_uring_disabled), the first failure is logged once and every
// later call answers NotSupported at once, so callers read the plain way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"

namespace strata::io {

// Whether io_uring works in this process (sets up this thread's ring).
// STRATA_IO_URING=off in the environment turns it off for the process (an
// operator's switch where io_uring is not wanted).
bool UringAvailable();

// Turns io_uring off for the calling thread while it lives (tests of the fallback).
class ScopedUringOff {
 public:
  ScopedUringOff();
  ~ScopedUringOff();
  ScopedUringOff(const ScopedUringOff&) = delete;
  ScopedUringOff& operator=(const ScopedUringOff&) = delete;

 private:
  bool was_;
};

// Reads [offset, offset + n) of `fd` into dst as parts of `part` bytes (the
// last takes the remainder), all submitted at once; `landed(bytes)` is called
// as each leading run of parts completes, in order. Returns the bytes read
// (fewer only at end of file). NotSupported when io_uring is unavailable
// (nothing read); errno failures as IOError naming `path`.
Result<size_t> UringReadParts(int fd, uint64_t offset, size_t n, void* dst, size_t part,
                              const std::function<void(size_t)>& landed, const std::string& path);

}  // namespace strata::io
