// The libfuse3 low-level, multithreaded adapter for fs::ObjectFs. Thin: it
// converts FUSE requests to ObjectFs calls and Status to errno (through
// fuse/errno_map.h only). Large I/O (1 MiB reads and writes), readdirplus,
// keep_cache for files unchanged since their last open, noatime.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "fs/object_fs.h"

namespace strata::fuse {

struct MountOptions {
  std::string mountpoint;               // an existing directory
  std::string fsname = "strata";        // shown in /proc/mounts (commas and spaces replaced)
  bool read_only = false;               // also mounted "ro": the kernel answers EROFS itself
  bool allow_other = false;             // let other users in (non-root needs user_allow_other in /etc/fuse.conf)
  unsigned max_threads = 64;            // FUSE worker threads (requests block on the backend)
  uint32_t max_io = 1u << 20;           // largest read/write request
  uint32_t kernel_readahead_kb = 1024;  // the mount's read_ahead_kb (0: kernel default)
  // Called once the kernel mount exists, before requests are served (the
  // daemon tells its parent it may exit).
  std::function<void()> on_mounted;
};

// Mounts `fs` and serves it until the file system is unmounted (`strata
// umount`, `fusermount3 -u`, `umount`) or SIGINT/SIGTERM/SIGHUP arrives, then
// unmounts. Blocks the calling thread. Install nothing else for those
// signals; block them in other threads (threads created before this call
// inherit the caller's mask; use BlockStopSignals() first thing).
// Errors: InvalidArgument (mountpoint not a directory), IOError (mount failed).
Status ServeMount(fs::ObjectFs& fs, const MountOptions& options);

// Blocks SIGINT/SIGTERM/SIGHUP in the calling thread, so threads it creates
// later inherit the block and the signals reach ServeMount's thread only.
void BlockStopSignals();

// Unmounts a strata (or any FUSE) mount: fusermount3 -u, falling back to
// umount(2) for root. NotFound if `mountpoint` is not a mount point.
Status Unmount(const std::string& mountpoint);

// Whether `mountpoint` appears in /proc/self/mounts.
bool IsMounted(const std::string& mountpoint);

}  // namespace strata::fuse
