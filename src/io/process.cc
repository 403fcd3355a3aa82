#include "io/process.h"

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>

namespace strata::io {

bool ProcessAlive(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

WallTime BootTime() {
  static const WallTime boot = [] {
    std::ifstream stat("/proc/stat");
    std::string line;
    while (std::getline(stat, line)) {
      long long seconds = 0;
      if (line.rfind("btime ", 0) == 0 && std::sscanf(line.c_str() + 6, "%lld", &seconds) == 1 && seconds > 0)
        return WallTime(std::chrono::seconds(seconds));
    }
    return WallTime{};
  }();
  return boot;
}

std::optional<MemoryInfo> ReadMemoryInfo() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  MemoryInfo m;
  bool total = false, available = false;
  while (std::getline(meminfo, line) && !(total && available)) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "MemTotal: %llu kB", &kib) == 1) {
      m.total_bytes = kib << 10, total = true;
    } else if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kib) == 1) {
      m.available_bytes = kib << 10, available = true;
    }
  }
  if (!total || !available) return std::nullopt;
  return m;
}

}  // namespace strata::io
