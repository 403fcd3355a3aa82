// fork() for tests whose process has other threads. clang 14's ASan runtime
// takes no lock of its allocator around fork (LLVM 18's does): a child forked
// while another thread is inside malloc can wait forever at its own first
// malloc. Under ASan, ForkForTest first waits (at most 10 s) until every other
// thread of the process sleeps, which leaves only the window between that check
// and the fork; elsewhere it is fork(). WaitForChild bounds the wait for the
// child, so a stuck child is a failure with a message, not a test timeout.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "base/sanitizers.h"

namespace strata::testing {

// How many of this process's threads other than the caller are running (R) or
// in uninterruptible sleep (D), from /proc/self/task.
inline int OtherThreadsRunning() {
  const std::string me = std::to_string(gettid());
  int running = 0;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return 0;
  while (dirent* e = readdir(tasks)) {
    const std::string tid = e->d_name;
    if (tid == "." || tid == ".." || tid == me) continue;
    std::ifstream stat("/proc/self/task/" + tid + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;  // the thread ended
    const size_t paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size()) {
      const char state = line[paren + 2];
      running += state == 'R' || state == 'D';
    }
  }
  closedir(tasks);
  return running;
}

inline pid_t ForkForTest() {
  if (kAddressSanitizer) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (OtherThreadsRunning() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return ::fork();
}

// The child's wait status, or nullopt after killing (SIGKILL) and reaping a
// child still running at the deadline.
inline std::optional<int> WaitForChild(pid_t pid, std::chrono::seconds limit = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return std::nullopt;
}

}  // namespace strata::testing
