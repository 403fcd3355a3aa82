#include "testing/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

namespace strata::testing {
namespace {

using ::testing::HasSubstr;

TEST(RunCommand, SeparatesStdoutStderrAndExitCode) {
  auto r = RunCommand({"sh", "-c", "echo out; echo err >&2; exit 7"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_EQ(r->stdout_text, "out\n");
  EXPECT_EQ(r->stderr_text, "err\n");
}

TEST(RunCommand, ArgumentsAreNotInterpretedByAShell) {
  auto r = RunCommand({"printf", "%s|", "a b", "$HOME", "*"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout_text, "a b|$HOME|*|");
}

TEST(RunCommand, FeedsStdinLargerThanAPipe) {
  std::string input(3 << 20, 'x');  // > pipe buffer: needs interleaved writing and reading
  for (size_t i = 0; i < input.size(); i += 4099) input[i] = static_cast<char>('a' + i % 26);
  auto r = RunCommand({"cat"}, {}, input);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_TRUE(r->stdout_text == input) << "cat echoed " << r->stdout_text.size() << " bytes of " << input.size();
}

TEST(RunCommand, StdinIsEmptyWhenNotGiven) {
  auto r = RunCommand({"wc", "-c"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout_text, "0\n");
}

TEST(RunCommand, ChildClosingStdinEarlyDoesNotKillTheCaller) {
  std::string input(4 << 20, 'y');
  auto r = RunCommand({"head", "-c", "10"}, {}, input);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout_text, std::string(10, 'y'));
}

TEST(RunCommand, EnvOverridesSetAndRemove) {
  ::setenv("STRATA_SUBPROCESS_TEST_A", "from-parent", 1);
  ::setenv("STRATA_SUBPROCESS_TEST_B", "from-parent", 1);
  auto r = RunCommand({"sh", "-c", "echo \"${STRATA_SUBPROCESS_TEST_A-unset} ${STRATA_SUBPROCESS_TEST_B-unset}\""},
                      {{"STRATA_SUBPROCESS_TEST_A", std::nullopt}, {"STRATA_SUBPROCESS_TEST_B", "child"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout_text, "unset child\n");
}

TEST(RunCommand, WithoutCaBundlesRemovesAwsCaBundle) {
  ::setenv("AWS_CA_BUNDLE", "/nonexistent/bundle.pem", 1);
  auto r = RunCommand({"sh", "-c", "echo \"${AWS_CA_BUNDLE-unset} ${SSL_CERT_FILE-unset}\""}, WithoutCaBundles());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout_text, "unset unset\n");
}

TEST(RunCommand, SignalExitIsReportedAs128PlusSignal) {
  auto r = RunCommand({"sh", "-c", "kill -TERM $$"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 128 + 15);
}

TEST(RunCommand, MissingProgramIsNotFound) {
  auto r = RunCommand({"strata-no-such-program-xyz"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("strata-no-such-program-xyz"));
}

TEST(RunCommand, EmptyArgvIsInvalid) { EXPECT_EQ(RunCommand({}).status().code(), Code::kInvalidArgument); }

TEST(RunCommand, TimeoutKillsTheChildsProcessGroup) {
  RunOptions options;
  options.timeout = std::chrono::milliseconds(300);
  // The grandchild holds stdout open: only killing the whole group ends the run.
  auto r = RunCommand({"sh", "-c", "sleep 30 & echo started; wait"}, {}, std::nullopt, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDeadlineExceeded);
}

TEST(RunCommand, RunsInTheGivenDirectory) {
  RunOptions options;
  options.cwd = "/";
  auto r = RunCommand({"pwd"}, {}, std::nullopt, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout_text, "/\n");
}

}  // namespace
}  // namespace strata::testing
