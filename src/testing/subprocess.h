// RunCommand: runs a program (no shell) and collects its exit code, stdout and stderr, so
// tests can drive real clients (aws CLI, boto3, s3cmd, rclone, curl) and the server scripts.
// Thread-safe (no global state is touched; SIGPIPE is blocked only in the calling thread).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace strata::testing {

struct CommandResult {
  int exit_code = 0;  // the exit status, or 128 + signal number if a signal ended the child
  std::string stdout_text;
  std::string stderr_text;
};

// Changes to the child's environment, applied in order over the parent's: a value sets the
// variable, nullopt removes it.
using EnvOverrides = std::vector<std::pair<std::string, std::optional<std::string>>>;

// Removes the CA-bundle variables this machine's environment sets (AWS_CA_BUNDLE,
// SSL_CERT_FILE, REQUESTS_CA_BUNDLE, ...): some clients (rclone) refuse to start with them
// against a plain-http endpoint.
EnvOverrides WithoutCaBundles();

// Appends `more` to `env` (later entries win).
EnvOverrides& operator+=(EnvOverrides& env, const EnvOverrides& more);

struct RunOptions {
  // The child (and its process group) is killed after this long: DeadlineExceeded.
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
  std::string cwd;  // empty: the caller's
};

// Runs argv[0] (searched on PATH) with argv. stdin is `stdin_data` if given, else /dev/null.
// A non-zero exit is not an error: check exit_code. Errors: InvalidArgument (empty argv),
// NotFound (program not found), DeadlineExceeded (timeout), IOError (pipes, spawn).
Result<CommandResult> RunCommand(const std::vector<std::string>& argv, const EnvOverrides& env = {},
                                 std::optional<std::string_view> stdin_data = std::nullopt,
                                 const RunOptions& options = {});

// "argv[0] argv[1] ... -> exit N; stderr: <last lines>", for test failure messages.
std::string DescribeRun(const std::vector<std::string>& argv, const CommandResult& result);

}  // namespace strata::testing
