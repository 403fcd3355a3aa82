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

}  // namespace
}  // namespace strata::io
