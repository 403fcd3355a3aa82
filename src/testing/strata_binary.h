// A GoogleTest fixture for tests that run the built `strata` binary: finds it
// through STRATA_BINARY_DIR (set by ctest), gives each test a fresh temp dir
// (removed afterwards) and runs the binary without a shell.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "testing/subprocess.h"

namespace strata::testing {

struct CliRun {
  int code = -1;
  std::string out, err;
};

class StrataBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("STRATA_BINARY_DIR");
    ASSERT_NE(bin, nullptr) << "STRATA_BINARY_DIR not set (run through ctest)";
    binary_ = std::string(bin) + "/src/cli/strata";
    ASSERT_TRUE(std::filesystem::exists(binary_)) << binary_;
    std::string pattern = (std::filesystem::temp_directory_path() / "strata-cli-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Runs `strata args...` (stdout/stderr captured; a failure to start is a test failure).
  CliRun RunStrata(const std::vector<std::string>& args, std::chrono::seconds timeout,
                   const testing::EnvOverrides& env = {}) {
    std::vector<std::string> argv{binary_};
    argv.insert(argv.end(), args.begin(), args.end());
    testing::RunOptions options;
    options.timeout = timeout;
    auto result = testing::RunCommand(argv, env, std::nullopt, options);
    CliRun run;
    if (!result.ok()) {
      ADD_FAILURE() << "cannot run " << binary_ << ": " << result.status();
      return run;
    }
    run.code = result->exit_code;
    run.out = std::move(result->stdout_text);
    run.err = std::move(result->stderr_text);
    return run;
  }

  std::string binary_;
  std::filesystem::path dir_;
};

}  // namespace strata::testing
