#include "io/process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "gtest/gtest.h"

namespace strata::io {
namespace {

TEST(ProcessTest, AProcessIsAliveUntilItIsReaped) {
  EXPECT_TRUE(ProcessAlive(::getpid()));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(ProcessAlive(child));  // reaped: no such process (the pid is not reused this fast)
}

TEST(ProcessTest, BootTimeIsInThePast) {
  const WallTime boot = BootTime();
  EXPECT_GT(boot, WallTime{});  // /proc/stat has btime on Linux
  EXPECT_LT(boot, std::chrono::system_clock::now());
}

TEST(ProcessTest, MemoryInfoHasTheMachinesMemory) {
  const std::optional<MemoryInfo> m = ReadMemoryInfo();
  ASSERT_TRUE(m.has_value());  // /proc/meminfo has both lines on Linux 3.14+
  EXPECT_GT(m->total_bytes, 0u);
  EXPECT_GT(m->available_bytes, 0u);
  EXPECT_LE(m->available_bytes, m->total_bytes);
}

}  // namespace
}  // namespace strata::io
