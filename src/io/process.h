// What the kernel says about processes and this boot: the questions a cache
// asks before it takes over a temp file whose writer may still be alive.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

#include "base/clock.h"

namespace strata::io {

// False only when the kernel says there is no such process: EPERM (another
// user's) and a reused pid count as alive, so a caller that deletes what a
// dead writer left at worst keeps a file, never takes one from a live writer.
bool ProcessAlive(pid_t pid);

// When this machine booted (/proc/stat's btime), or the epoch if unknown. A
// file written before it has a dead writer whatever its pid names now: after
// a reboot that pid may belong to an unrelated live process.
WallTime BootTime();

// The machine's memory as /proc/meminfo says now (MemTotal, MemAvailable:
// what could be had without swapping, the page cache's clean pages included),
// or nullopt where it cannot be read.
struct MemoryInfo {
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;
};
std::optional<MemoryInfo> ReadMemoryInfo();

}  // namespace strata::io
