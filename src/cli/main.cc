// strata: the command-line front end. Builds the CLI11 app from the command
// registry (cli/command.h) and turns every failure into one message and one
// documented exit code.
#include <csignal>
#include <iostream>

#include "base/log.h"
#include "cli/command.h"

namespace strata::cli {

int RunCli(int argc, char** argv) {
  InitLoggingFromEnv();
  CLI::App app{"strata: a data layer between S3-compatible object storage and training jobs"};
  app.name("strata");
  app.require_subcommand(1);
  app.footer(ExitCodeHelp());  // copied into every subcommand's help too
  app.set_version_flag("--version", "strata 0.1.0");
  app.add_option_function<std::string>(
         "--log-level", [](const std::string& level) { SetLogLevel(level); },
         "Log level: trace, debug, info, warn, error, off (default: $STRATA_LOG or warn)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  for (const auto& command : RegisteredCommands()) command.setup(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message (and the usage hint) to stderr
    return kExitUsage;
  } catch (const CliError& e) {
    std::cout.flush();
    std::cerr << e.Render();
    return e.exit_code();
  } catch (const QuietExit& e) {
    return e.code;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "strata: " << e.what() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace strata::cli

int main(int argc, char** argv) {
  // A closed pipe (`strata cat ... | head`) must end the write loop with an
  // error, not kill the process mid-message.
  std::signal(SIGPIPE, SIG_IGN);
  return strata::cli::RunCli(argc, argv);
}
