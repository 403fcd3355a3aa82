// The mount's per-read access log, for `strata profile`. Off unless a
// profiler turns it on: setxattr("user.strata.profile", PATH) on the mount's
// root names a file the profiler has created (the mount opens it, never
// creates it); removexattr, or an empty value, turns it off. While it is on,
// files opened through the mount bypass the kernel page cache (direct I/O),
// so every read the program makes reaches the mount and is logged with its
// offset and length. One text line per event, appended with one write(2):
//   O <mono_ns> <pid> <fh> <size> <path>          an open (path: the key, '\n' and '\\' escaped)
//   R <mono_ns> <pid> <fh> <offset> <bytes> <ns>  a read that returned `bytes`, taking <ns>
// mono_ns is CLOCK_MONOTONIC (steady_clock), pid the reading thread's id.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "base/mutex.h"
#include "base/status.h"

namespace strata::fuse {

inline constexpr const char* kProfileXattr = "user.strata.profile";

class AccessLog {
 public:
  ~AccessLog();
  // Opens `path` (an existing regular file, no symlink) for appending.
  // Busy while another profiler's log is on (unless that file was deleted:
  // its profiler is gone).
  Status Start(const std::string& path);
  void Stop();
  bool on() const { return on_.load(std::memory_order_relaxed); }
  void Open(uint32_t pid, uint64_t fh, uint64_t size, const std::string& path);
  void Read(uint32_t pid, uint64_t fh, uint64_t offset, uint64_t bytes, int64_t start_ns, int64_t end_ns);

  static int64_t NowNs();

 private:
  void Append(const std::string& line);
  Mutex mu_;
  int fd_ GUARDED_BY(mu_) = -1;
  std::atomic<bool> on_{false};
};

}  // namespace strata::fuse
