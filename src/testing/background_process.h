// BackgroundProcess: a server or mount started for an integration test, its stdout and
// stderr in a log file, stopped by PID (SIGTERM, then SIGKILL after a grace period) at the
// latest when it is destroyed. StartStrataServe runs the built `strata serve` and waits for
// the URL it prints.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "testing/subprocess.h"

namespace strata::testing {

class BackgroundProcess {
 public:
  // Starts argv[0] (searched on PATH) in its own process group, stdin from /dev/null, the
  // environment changed by `env`. IOError when the log cannot be created or fork fails.
  static Result<std::unique_ptr<BackgroundProcess>> Start(const std::vector<std::string>& argv,
                                                          const std::string& log_path, const EnvOverrides& env = {});
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string Log() const;

  // Whether it has exited (reaping it); *code gets the exit code, 128 + signal if killed.
  bool Exited(int* code = nullptr);
  bool WaitExit(std::chrono::milliseconds timeout, int* code = nullptr);

  // Waits for a whole log line containing `marker` and returns what follows the marker on
  // it. DeadlineExceeded after `timeout`; Unavailable (with the log) if the process exits first.
  Result<std::string> WaitForLine(std::string_view marker, std::chrono::milliseconds timeout);

  // SIGTERM, then SIGKILL after `grace`. Returns the exit code (-1 if never started).
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(20));

 private:
  BackgroundProcess(pid_t pid, std::string log_path) : pid_(pid), log_path_(std::move(log_path)) {}
  pid_t pid_ = -1;
  int exit_code_ = -1;
  std::string log_path_;
};

struct ServeProcess {
  std::unique_ptr<BackgroundProcess> process;
  std::string endpoint;  // "http://127.0.0.1:PORT"
  uint16_t port = 0;
};

// `$STRATA_BINARY_DIR/src/cli/strata serve <args>`, output to log_path, once it listens.
Result<ServeProcess> StartStrataServe(const std::vector<std::string>& args, const std::string& log_path,
                                      const EnvOverrides& env = {});

}  // namespace strata::testing
