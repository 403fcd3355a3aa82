// The node's mount table and the mount syscalls the driver needs: is a path a
// mount point (and of what), is a FUSE mount alive (ENOTCONN when its process
// died), bind mounts into pods (read-only when asked), unmounting. Linux only;
// paths are absolute. Thread-safe (no state).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::csi {

struct MountEntry {
  std::string mount_point;  // unescaped (\040 -> ' ')
  std::string fs_type;      // "fuse.strata", "fuse", "tmpfs", ...
  std::string source;
  bool read_only = false;         // the mount's own flags (ro)
  unsigned major = 0, minor = 0;  // st_dev of the file system
  std::string root;               // the subtree of the file system mounted here ("/" for the whole)
};

// The entries of /proc/self/mountinfo (`text` is its content, for tests and fuzzing).
Result<std::vector<MountEntry>> ParseMountInfo(std::string_view text);
Result<std::vector<MountEntry>> ReadMountTable();

// The last (topmost) entry mounted at `path`, or NotFound.
Result<MountEntry> FindMount(const std::vector<MountEntry>& table, const std::string& path);

// OK when `path` answers statfs() (asked of the FUSE process itself); Unavailable
// ("transport endpoint is not connected") when it is a FUSE mount whose process
// died; DeadlineExceeded when no answer came within `timeout` (a busy or hung
// process: not proof of death); other errnos as such.
Status ProbePath(const std::string& path, std::chrono::milliseconds timeout = std::chrono::seconds(5));

// Bind-mounts `source` onto `target` (an existing directory); read-only makes
// the bind read-only (the source stays as it is).
Status BindMount(const std::string& source, const std::string& target, bool read_only);
// Unmounts `path`; lazy detaches it even when busy or dead (MNT_DETACH).
// NotFound when nothing is mounted there.
Status Unmount(const std::string& path, bool lazy);

// Creates `path` (and its parents) as a directory; OK if it exists. A dead FUSE
// mount at `path` is not an error here (it is handled by the caller).
Status MakeDirs(const std::string& path);

}  // namespace strata::csi
