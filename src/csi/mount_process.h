// Each staged volume's `strata mount` runs as its own daemon (its own session,
// not a child the driver waits on), so the driver can be restarted or upgraded
// under running pods. Secrets reach it through an inherited memfd (fd 3, read
// by `strata mount --secrets-fd 3`), never argv, the environment block or a
// file; the daemon keeps that fd open so a restarted driver can recover them
// (root only: /proc/PID/fd/3) to remount a volume whose mount later dies.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"
#include "csi/volume.h"

namespace strata::csi {

struct MountLaunch {
  std::string binary;  // the strata executable
  std::string url, mountpoint;
  std::vector<std::string> args;  // further `strata mount` flags
  StringMap secrets;
  std::string log_file;  // the daemon's log
  std::chrono::milliseconds timeout{60000};
};

struct MountProcess {
  int pid = 0;
  uint64_t start_time = 0;  // clock ticks since boot (/proc/PID/stat), tells a reused PID apart
};

// Starts the mount and returns once it serves `mountpoint` (the launcher exits
// 0 then). Its failure comes back with the mount's exit code's meaning
// (InvalidArgument, NotFound, PermissionDenied/Unauthenticated, Unavailable)
// and its last output lines.
Result<MountProcess> LaunchMount(const MountLaunch& launch);

// A sealed memfd (close-on-exec) holding `secrets` as FormatSecrets writes them,
// read from offset 0; the caller closes it.
Result<int> SecretsMemfd(const StringMap& secrets);

// 0 when `pid` does not exist or is a zombie.
uint64_t ProcessStartTime(int pid);
bool ProcessRunning(const MountProcess& p);

// The secrets a running mount was started with (its fd 3). NotFound when it
// holds none (started without secrets, or not by this driver).
Result<StringMap> RecoverSecrets(const MountProcess& p);

// Unmounts `mountpoint` (lazily when busy) and waits for the process to end;
// SIGTERM then SIGKILL after `grace`.
Status StopMount(const MountProcess& p, const std::string& mountpoint, std::chrono::milliseconds grace);

// Reaps `pid` if it is an exited child of this process (no zombie is left).
void ReapIfChild(int pid);

}  // namespace strata::csi
