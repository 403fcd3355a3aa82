#include "cli/command.h"

#include <algorithm>

namespace strata::cli {
namespace {

std::vector<RegisteredCommand>& Registry() {
  static std::vector<RegisteredCommand> registry;  // filled during static init
  return registry;
}

}  // namespace

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case Code::kOk: return kExitOk;
    case Code::kInvalidArgument:
    case Code::kOutOfRange: return kExitUsage;
    case Code::kNotFound: return kExitNotFound;
    case Code::kPermissionDenied:
    case Code::kUnauthenticated: return kExitDenied;
    case Code::kCorruption: return kExitCorruption;
    case Code::kUnavailable:
    case Code::kThrottled:
    case Code::kDeadlineExceeded: return kExitUnavailable;
    default: return kExitFailure;
  }
}

std::string HintFor(const Status& status, std::string_view command) {
  switch (status.code()) {
    case Code::kUnauthenticated:
      return "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) to credentials valid for this endpoint";
    case Code::kPermissionDenied:
      return "the credentials or file permissions do not allow this; check the bucket policy or the file mode";
    case Code::kNotFound: return "check the name: `strata ls` the parent URL to see what exists";
    case Code::kInvalidArgument: return "see `strata " + std::string(command) + " --help` for the accepted forms";
    case Code::kOutOfRange: return "the range starts past the end of the object; check its size with `strata stat`";
    case Code::kCorruption: return "the data failed verification; copy it again from a good source";
    case Code::kUnavailable:
    case Code::kThrottled:
    case Code::kDeadlineExceeded:
      return "the service was unavailable or too slow; retrying may help (is the endpoint reachable?)";
    case Code::kNoSpace: return "free some disk space, then retry";
    case Code::kPreconditionFailed: return "the object changed while strata was working on it; retry";
    case Code::kAlreadyExists: return "remove the existing object first";
    default: return {};
  }
}

std::string ExitCodeHelp() {
  return "Exit codes: 0 ok, 1 failure, 2 usage error (bad arguments or URL), 3 not found,\n"
         "  4 permission or authentication denied, 5 corruption / verification failed,\n"
         "  6 unavailable or timed out (a retry may help).\n"
         "URLs: file:///dir/key, s3://bucket/key[?endpoint=http://host:port&region=R&path_style=1],\n"
         "  mem://name/key, or a plain local path. Logging: --log-level or STRATA_LOG=debug|info|warn|error.";
}

CliError::CliError(std::string command, std::string object, Status status)
    : command_(std::move(command)), object_(std::move(object)), status_(std::move(status)) {
  line_ = "strata: " + command_ + ": ";
  if (!object_.empty()) line_ += object_ + ": ";
  line_ += status_.message();
  if (!status_.foreign_code().empty()) line_ += " [" + status_.foreign_code() + "]";
  if (!status_.cause().empty()) line_ += " (cause: " + status_.cause() + ")";
}

std::string CliError::Render() const {
  std::string out = line_ + "\n";
  std::string hint = HintFor(status_, command_);
  if (!hint.empty()) out += "  hint: " + hint + "\n";
  return out;
}

void Check(const Status& status, std::string_view command, std::string_view object) {
  if (!status.ok()) Fail(command, object, status);
}

void Fail(std::string_view command, std::string_view object, Status status) {
  throw CliError(std::string(command), std::string(object), std::move(status));
}

CommandRegistrar::CommandRegistrar(std::string name, std::function<void(CLI::App& root)> setup) {
  Registry().push_back({std::move(name), std::move(setup)});
}

std::vector<RegisteredCommand> RegisteredCommands() {
  auto commands = Registry();
  std::stable_sort(commands.begin(), commands.end(),
                   [](const RegisteredCommand& a, const RegisteredCommand& b) { return a.name < b.name; });
  return commands;
}

}  // namespace strata::cli
