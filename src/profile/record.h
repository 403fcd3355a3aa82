// Recording for `strata profile`: runs a command and counts, per file under
// the watched directories, the accesses of the command's process tree. When
// every path is on a strata mount, the mounts' access logs give every read
// exactly (mountlog.h); otherwise Linux fanotify (needs
// CAP_SYS_ADMIN) counts opens, read notifications and write-closes
// (model.h says what fanotify can and cannot tell).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "profile/model.h"

namespace strata::profile {

struct RecordOptions {
  std::vector<std::string> command;  // argv; run without a shell
  std::vector<std::string> paths;    // directories watched, recursively (marks on every directory at the start)
  double duration_s = 0;             // 0: until the command ends; then SIGINT to its process group
  bool all_processes = false;        // count accesses of every process, not only the command's tree
  bool fanotify = false;             // fanotify even when every path is on a strata mount
};

// Runs the command to its end (or --duration / Ctrl-C, forwarded to the
// command's process group as SIGINT; SIGKILL 10 s later if it lingers).
// PermissionDenied if fanotify is not allowed; NotFound if the command or a
// path does not exist. The command's own failure is not an error: its exit
// code is in the data.
Result<ProfileData> Record(const RecordOptions& options);

}  // namespace strata::profile
