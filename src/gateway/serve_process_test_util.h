// Test helper: the built `strata serve` as a child process (its own process
// group, output to a log file), ready once it printed "listening on URL";
// stopped with SIGTERM (then SIGKILL) by its PID.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "testing/subprocess.h"

extern char** environ;

namespace strata::gateway {

class ServeProcess {
 public:
  // Starts `strata serve ARGS...` with `env` over this process's environment
  // and waits (up to 30 s) for its URL.
  static Result<std::unique_ptr<ServeProcess>> Start(const std::vector<std::string>& args,
                                                     const testing::EnvOverrides& env,
                                                     const std::filesystem::path& log) {
    const char* bin_dir = std::getenv("STRATA_BINARY_DIR");
    if (!bin_dir) return UnavailableError("run under ctest (STRATA_BINARY_DIR)");
    std::vector<std::string> argv{std::string(bin_dir) + "/src/cli/strata", "serve"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> vars;
    for (char** e = environ; *e; ++e) {
      std::string kv = *e;
      if (size_t eq = kv.find('='); eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : env) {
      if (v) {
        vars[k] = *v;
      } else {
        vars.erase(k);
      }
    }
    std::vector<std::string> env_strings;
    for (auto& [k, v] : vars) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, cargs;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (auto& a : argv) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    std::unique_ptr<ServeProcess> p(new ServeProcess());
    p->log_ = log;
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return IOError("cannot create " + log.string());
    p->pid_ = ::fork();
    if (p->pid_ == 0) {
      ::setpgid(0, 0);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execve(cargs[0], cargs.data(), envp.data());
      _exit(127);
    }
    ::close(fd);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      std::string text = p->Log();
      if (size_t at = text.find("listening on "); at != std::string::npos) {
        if (size_t nl = text.find('\n', at); nl != std::string::npos) {
          p->url_ = text.substr(at + 13, nl - at - 13);
          return p;
        }
      }
      if (p->Exited()) return UnavailableError("strata serve exited:\n" + text);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling the log for the URL
    }
    return DeadlineExceededError("strata serve did not start:\n" + p->Log());
  }

  ~ServeProcess() { Stop(); }
  const std::string& url() const { return url_; }  // http://127.0.0.1:PORT
  pid_t pid() const { return pid_; }
  std::string Log() const {
    std::ifstream in(log_, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // A "Name:  N kB" line of /proc/PID/status (VmHWM, VmRSS) in bytes; 0 when unreadable.
  uint64_t StatusBytes(const std::string& name) const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(name + ":", 0) == 0) return std::strtoull(line.c_str() + name.size() + 1, nullptr, 10) << 10;
    }
    return 0;
  }
  bool Exited() {
    if (pid_ <= 0) return true;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      pid_ = -1;
    }
    return pid_ <= 0;
  }
  // SIGTERM, then SIGKILL after 20 s. The exit code (0: a clean shutdown).
  int Stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20); !Exited();) {
        if (std::chrono::steady_clock::now() > deadline) {
          ::kill(pid_, SIGKILL);
          int st = 0;
          ::waitpid(pid_, &st, 0);
          exit_code_ = 128 + SIGKILL;
          pid_ = -1;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling the child's exit
      }
    }
    return exit_code_;
  }

 private:
  ServeProcess() = default;
  std::filesystem::path log_;
  std::string url_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

}  // namespace strata::gateway
