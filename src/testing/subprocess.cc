#include "testing/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

extern char** environ;

namespace strata::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Closes an fd on scope exit unless released.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  int get() const { return fd_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void Reset(int fd) {
    Close();
    fd_ = fd;
  }

 private:
  int fd_;
};

// The child's environment: the parent's with `overrides` applied, as "K=V" strings.
std::vector<std::string> BuildEnv(const EnvOverrides& overrides) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    vars[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  for (const auto& [name, value] : overrides) {
    if (value) {
      vars[name] = *value;
    } else {
      vars.erase(name);
    }
  }
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Blocks SIGPIPE in this thread while alive (a child closing its stdin early must not kill
// the test), and swallows a SIGPIPE raised meanwhile before restoring the mask.
class ScopedBlockSigpipe {
 public:
  ScopedBlockSigpipe() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~ScopedBlockSigpipe() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    if (!sigismember(&old_, SIGPIPE) && sigismember(&pending, SIGPIPE)) {
      timespec zero{};
      sigtimedwait(&set, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t old_;
};

Status MakePipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "pipe2 for a child process");
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
  return Status::Ok();
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

// Spawns argv with stdin/stdout/stderr on the given fds, in its own process group, with
// default signal handling and an empty signal mask.
Result<pid_t> Spawn(const std::vector<std::string>& argv, const EnvOverrides& env, const RunOptions& options, int in_fd,
                    int out_fd, int err_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_fd, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all_defaults;
  sigemptyset(&none);
  sigemptyset(&all_defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&all_defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all_defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::vector<std::string> args = argv;
  std::vector<std::string> env_strings = BuildEnv(env);
  std::vector<char*> c_args = CStrings(args);
  std::vector<char*> c_env = CStrings(env_strings);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, c_args[0], &actions, &attr, c_args.data(), c_env.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == ENOENT) return NotFoundError("cannot run '" + argv[0] + "': not found on PATH");
  if (rc != 0) return ErrnoToStatus(rc, "spawning '" + argv[0] + "'");
  return pid;
}

// Feeds stdin and drains stdout/stderr until both close or the deadline passes.
// Returns false on timeout.
bool Pump(Fd& in_w, Fd& out_r, Fd& err_r, std::string_view input, CommandResult& result, Clock::time_point deadline) {
  size_t written = 0;
  if (in_w.get() >= 0) ::fcntl(in_w.get(), F_SETFL, O_NONBLOCK);
  if (input.empty()) in_w.Close();
  char buf[65536];
  while (out_r.get() >= 0 || err_r.get() >= 0) {
    pollfd fds[3];
    int n = 0;
    Fd* owners[3];
    std::string* sinks[3] = {nullptr, nullptr, nullptr};
    if (in_w.get() >= 0) {
      fds[n] = {in_w.get(), POLLOUT, 0};
      owners[n++] = &in_w;
    }
    if (out_r.get() >= 0) {
      fds[n] = {out_r.get(), POLLIN, 0};
      sinks[n] = &result.stdout_text;
      owners[n++] = &out_r;
    }
    if (err_r.get() >= 0) {
      fds[n] = {err_r.get(), POLLIN, 0};
      sinks[n] = &result.stderr_text;
      owners[n++] = &err_r;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    int ready = ::poll(fds, n, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) return true;  // cannot happen with valid fds; reap below
    for (int i = 0; i < n && ready > 0; ++i) {
      if (fds[i].revents == 0) continue;
      if (sinks[i] == nullptr) {  // stdin
        ssize_t w = ::write(fds[i].fd, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) owners[i]->Close();
        continue;
      }
      ssize_t r = ::read(fds[i].fd, buf, sizeof(buf));
      if (r > 0) {
        sinks[i]->append(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        owners[i]->Close();
      }
    }
  }
  return true;
}

}  // namespace

EnvOverrides WithoutCaBundles() {
  EnvOverrides env;
  for (const char* name : {"AWS_CA_BUNDLE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR",
                           "NIX_SSL_CERT_FILE", "HTTPLIB2_CA_CERTS", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO",
                           "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "PIP_CERT"}) {
    env.emplace_back(name, std::nullopt);
  }
  return env;
}

EnvOverrides& operator+=(EnvOverrides& env, const EnvOverrides& more) {
  env.insert(env.end(), more.begin(), more.end());
  return env;
}

Result<CommandResult> RunCommand(const std::vector<std::string>& argv, const EnvOverrides& env,
                                 std::optional<std::string_view> stdin_data, const RunOptions& options) {
  if (argv.empty() || argv[0].empty()) return InvalidArgumentError("RunCommand: empty argv");
  ScopedBlockSigpipe block_sigpipe;
  Fd in_r, in_w, out_r, out_w, err_r, err_w;
  if (stdin_data) {
    STRATA_RETURN_IF_ERROR(MakePipe(in_r, in_w));
  } else {
    in_r.Reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (in_r.get() < 0) return ErrnoToStatus(errno, "opening /dev/null");
  }
  STRATA_RETURN_IF_ERROR(MakePipe(out_r, out_w));
  STRATA_RETURN_IF_ERROR(MakePipe(err_r, err_w));

  auto deadline = Clock::now() + options.timeout;
  STRATA_ASSIGN_OR_RETURN(pid_t pid, Spawn(argv, env, options, in_r.get(), out_w.get(), err_w.get()));
  in_r.Close();
  out_w.Close();
  err_w.Close();

  CommandResult result;
  bool finished = Pump(in_w, out_r, err_r, stdin_data.value_or(std::string_view()), result, deadline);
  int wait_status = 0;
  // The child may close its output before it exits: keep honouring the deadline.
  while (finished) {
    pid_t r = ::waitpid(pid, &wait_status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (Clock::now() >= deadline) {
      finished = false;
      break;
    }
    ::usleep(2000);
  }
  if (!finished) {
    ::kill(-pid, SIGKILL);  // the whole group: a script's children too
    while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
    return DeadlineExceededError("'" + argv[0] + "' still running after " + std::to_string(options.timeout.count()) +
                                     " ms; killed its process group",
                                 "stderr so far: " + result.stderr_text.substr(0, 4000));
  }
  result.exit_code = ExitCodeOf(wait_status);
  return result;
}

std::string DescribeRun(const std::vector<std::string>& argv, const CommandResult& result) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  out += " -> exit " + std::to_string(result.exit_code);
  std::string_view err = result.stderr_text;
  if (err.size() > 2000) err = err.substr(err.size() - 2000);
  if (!err.empty()) out += "; stderr: " + std::string(err);
  return out;
}

}  // namespace strata::testing
