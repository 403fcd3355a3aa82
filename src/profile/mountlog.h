// `strata profile` through a strata mount: the mount's access log
// (fuse/access_log.h) gives every read with its offset and length. The
// profiler creates the log file, switches it on with setxattr on the mount's
// root, and parses it as it grows (pids are placed in the command's process
// tree while they still exist).
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "profile/model.h"

namespace strata::profile {

// The mount point of the strata mount (fstype fuse.strata) that holds the
// canonical path `path`, or "" if none does.
std::string StrataMountOf(const std::string& path);

// One mount's log, parsed incrementally into per-file records and reads.
class MountLog {
 public:
  // `paths`: the watched directories under `mountpoint` (canonical);
  // `start_ns`: the profile's start on the steady clock.
  MountLog(std::string mountpoint, std::vector<std::string> paths, int64_t start_ns);
  ~MountLog();
  // Creates the log file (private, in the temp directory) and switches the
  // mount's log on. Unavailable if another profiler holds the mount.
  Status Start();
  // Switches the log off (idempotent) and removes the file.
  void Stop();
  // Parses what was appended since the last call. `inside(tid)` says whether
  // a reading thread belongs to the command's process tree.
  void Poll(const std::function<bool(pid_t)>& inside);
  // Parses one chunk of log text (tests; Poll uses it).
  void Feed(std::string_view chunk, const std::function<bool(pid_t)>& inside);
  // Appends the files and reads to `data` (file indices renumbered).
  void MoveInto(ProfileData* data);

  uint64_t bad_lines() const { return bad_lines_; }
  uint64_t other_process_events() const { return other_; }

 private:
  void Line(std::string_view line, const std::function<bool(pid_t)>& inside);

  std::string mountpoint_, log_path_;
  std::vector<std::string> paths_;
  int64_t start_ns_;
  int fd_ = -1;
  bool on_ = false;
  std::string partial_;
  std::map<std::string, uint32_t> file_index_;  // path -> files_
  std::vector<FileRecord> files_;
  std::unordered_map<uint64_t, std::pair<uint32_t, uint64_t>> open_of_fh_;  // fh -> (file, open serial)
  std::unordered_map<uint64_t, bool> open_read_;                            // open serial -> read seen
  std::vector<ReadEvent> reads_;
  uint64_t serial_ = 0, bad_lines_ = 0, other_ = 0;
};

}  // namespace strata::profile
