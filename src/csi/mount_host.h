// The mount host: `strata csi --mode=mounts`, a process of its own DaemonSet
// (updated OnDelete, i.e. when the node is drained) that starts the volumes'
// `strata mount` daemons for the node plugin. A container's end kills every
// process of its cgroup, so the mounts a plugin launches itself die with the
// plugin's container (a crash, a failed liveness probe, a rollout of a new
// image); launched by the mount host they are in its container and outlive
// the plugin's. The plugin asks over a unix socket in a hostPath both mount
// (owner-only, and the host checks the peer is root or its own user). Both run
// in the host's PID namespace (hostPID), so the plugin sees, stops and
// recovers the secrets of these mounts by PID as of those it launched.
//
// Wire (SOCK_SEQPACKET, one request per connection): a JSON request
// {"url", "mountpoint", "log_file", "args": [...], "timeout_ms"} of at most
// kMaxMountHostMessage bytes, with the secrets' memfd attached (SCM_RIGHTS)
// when there are any; one JSON answer {"code", "message", "cause", "pid",
// "start_time"}. The parsers are bounds-checked and fuzzed (fuzz_csi_mount_host).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "csi/mount_process.h"

namespace strata::csi {

inline constexpr size_t kMaxMountHostMessage = 64 << 10;

// The request without its secrets (they travel as a file descriptor);
// InvalidArgument when a string in it is not UTF-8.
Result<std::string> FormatMountHostRequest(const MountLaunch& launch);
// InvalidArgument unless every field is present, of its type and bounded: url
// and mountpoint non-empty, mountpoint and log_file absolute, at most 64 args,
// none of them a flag the host sets itself (--secrets-fd, --log-file), no NUL
// anywhere, a timeout of 1 ms to 10 min.
Result<MountLaunch> ParseMountHostRequest(std::string_view json);

std::string FormatMountHostAnswer(const Result<MountProcess>& outcome);
// The launch's outcome as the host saw it (the process, or its error's code,
// message and cause); Internal when the answer itself is malformed.
Result<MountProcess> ParseMountHostAnswer(std::string_view json);

struct MountHostOptions {
  std::string socket_path;    // created owner-only (a stale socket file is replaced)
  std::string strata_binary;  // what it launches as `strata mount`
  size_t max_connections = 16;
};

// Serves until Stop() (or destruction); each request launches one mount
// (LaunchMount) and answers when it serves or failed.
class MountHost {
 public:
  static Result<std::unique_ptr<MountHost>> Start(MountHostOptions options);
  ~MountHost();  // stops accepting and waits for the launches in progress
  MountHost(const MountHost&) = delete;
  MountHost& operator=(const MountHost&) = delete;

 private:
  struct State;
  explicit MountHost(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

// `strata csi --mode=mounts`: serves until SIGINT or SIGTERM (blocked here
// before any thread starts, then awaited); the mounts it started stay up.
Status RunMountHost(const MountHostOptions& options);

// Asks the mount host at `socket_path` to launch `launch` (its binary is the
// host's own); the launch's error as LaunchMount would return it, or
// Unavailable (retryable) when the host cannot be reached.
Result<MountProcess> LaunchMountVia(const std::string& socket_path, const MountLaunch& launch);

}  // namespace strata::csi
