// The strata command framework. Each cmd_<name>.cc defines a static
// CommandRegistrar that adds its subcommand(s) to the root CLI11 app; main.cc
// builds the app from the registry. Command callbacks report failures by
// throwing CliError (exceptions are allowed in cli/ only and are caught in
// main), which maps a Status to one documented exit code in one place.
#pragma once

#include <CLI/CLI.hpp>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::cli {

// Exit codes scripts can rely on (also in `strata --help` and README.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,      // generic failure
  kExitUsage = 2,        // bad command line, malformed URL, invalid argument
  kExitNotFound = 3,     // no such object, key, bucket or file
  kExitDenied = 4,       // permission or authentication denied
  kExitCorruption = 5,   // corruption / verification failed
  kExitUnavailable = 6,  // unavailable, throttled or timed out: a retry may help
};

// The one Status -> exit code mapping.
int ExitCodeFor(const Status& status);
// What the user can do about `status` (one line, may be empty).
std::string HintFor(const Status& status, std::string_view command);
// The `strata --help` footer describing the exit codes.
std::string ExitCodeHelp();

// A failed command: `command` and `object` (a URL or path) name what failed.
class CliError : public std::exception {
 public:
  CliError(std::string command, std::string object, Status status);
  const char* what() const noexcept override { return line_.c_str(); }
  const Status& status() const { return status_; }
  int exit_code() const { return ExitCodeFor(status_); }
  // "strata: <command>: <object>: <message> (cause: ...)" and a hint line.
  std::string Render() const;

 private:
  std::string command_, object_;
  Status status_;
  std::string line_;
};

// Throws CliError unless ok. Use at the top of command code paths.
void Check(const Status& status, std::string_view command, std::string_view object);
template <typename T>
T Check(Result<T> result, std::string_view command, std::string_view object) {
  Check(result.status(), command, object);
  return std::move(result).value();
}
[[noreturn]] void Fail(std::string_view command, std::string_view object, Status status);

// Ends the command with `code` and no message (e.g. stdout closed by `head`).
struct QuietExit {
  int code;
};

// Registers a subcommand builder; `setup` runs once when main builds the app.
struct CommandRegistrar {
  CommandRegistrar(std::string name, std::function<void(CLI::App& root)> setup);
};

struct RegisteredCommand {
  std::string name;
  std::function<void(CLI::App& root)> setup;
};
// Registered commands, sorted by name.
std::vector<RegisteredCommand> RegisteredCommands();

// Builds the root app (global options, every registered command) and runs it.
// Returns the process exit code; never throws.
int RunCli(int argc, char** argv);

}  // namespace strata::cli
