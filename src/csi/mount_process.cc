#include "csi/mount_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/log.h"
#include "csi/mounts.h"

namespace strata::csi {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int kSecretsFd = 3;

// The exit codes of `strata` (cli/command.h) as a Status code.
Status FromExitCode(int code, const std::string& output) {
  std::string tail = output.size() > 2000 ? output.substr(output.size() - 2000) : output;
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  std::string msg = "strata mount failed (exit " + std::to_string(code) + ")";
  switch (code) {
    case 2: return InvalidArgumentError(msg, tail);
    case 3: return NotFoundError(msg, tail);
    case 4: return PermissionDeniedError(msg, tail);
    case 6: return UnavailableError(msg, tail);
    default: return InternalError(msg, tail);
  }
}

// The "(pid N)" the launcher prints once mounted.
int ParsePid(const std::string& out) {
  size_t at = out.rfind("(pid ");
  if (at == std::string::npos) return 0;
  int pid = 0;
  for (size_t i = at + 5; i < out.size() && out[i] >= '0' && out[i] <= '9' && pid < (1 << 22); ++i) {
    pid = pid * 10 + (out[i] - '0');
  }
  return pid;
}

}  // namespace

Result<int> SecretsMemfd(const StringMap& secrets) {
  int fd = memfd_create("strata-secrets", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return ErrnoToStatus(errno, "memfd_create");
  const std::string text = FormatSecrets(secrets);
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      close(fd);
      return ErrnoToStatus(err, "write the secrets memfd");
    }
    off += static_cast<size_t>(n);
  }
  // Nobody may change them afterwards (the mount and a recovering driver only read).
  fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  lseek(fd, 0, SEEK_SET);
  return fd;
}

Result<MountProcess> LaunchMount(const MountLaunch& l) {
  std::vector<std::string> args = {l.binary, "mount", l.url, l.mountpoint, "--log-file", l.log_file};
  int secrets_fd = -1;
  if (!l.secrets.empty()) {
    STRATA_ASSIGN_OR_RETURN(secrets_fd, SecretsMemfd(l.secrets));
    args.push_back("--secrets-fd");
    args.push_back(std::to_string(kSecretsFd));
  }
  args.insert(args.end(), l.args.begin(), l.args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    if (secrets_fd >= 0) close(secrets_fd);
    return ErrnoToStatus(errno, "pipe");
  }
  const pid_t child = fork();
  if (child < 0) {
    const int err = errno;
    close(out[0]), close(out[1]);
    if (secrets_fd >= 0) close(secrets_fd);
    return ErrnoToStatus(err, "fork");
  }
  if (child == 0) {  // async-signal-safe calls only until exec
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    if (secrets_fd >= 0) dup2(secrets_fd, kSecretsFd);  // dup2 clears CLOEXEC on the copy
    close_range(secrets_fd >= 0 ? kSecretsFd + 1 : kSecretsFd, ~0u, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  if (secrets_fd >= 0) close(secrets_fd);
  // The launcher exits once the daemon mounted (or failed); the daemon closes
  // its copy of the pipe before it reports, so EOF comes with the outcome.
  std::string output;
  const auto deadline = SteadyClock::now() + l.timeout;
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[4096];
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (output.size() < (64 << 10)) output.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  if (timed_out) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    return DeadlineExceededError("strata mount did not report within the timeout", output);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code != 0) return FromExitCode(code, output);
  MountProcess p;
  p.pid = ParsePid(output);
  p.start_time = ProcessStartTime(p.pid);
  if (p.pid <= 0 || p.start_time == 0) return InternalError("strata mount reported no running daemon", output);
  return p;
}

uint64_t ProcessStartTime(int pid) {
  if (pid <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return 0;
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close_paren + 2));
  std::string f;
  // Fields after the name: state(3) ... starttime(22).
  for (int i = 3; i <= 22 && fields >> f; ++i) {
    if (i == 3 && (f == "Z" || f == "X")) return 0;
    if (i == 22) return std::strtoull(f.c_str(), nullptr, 10);
  }
  return 0;
}

bool ProcessRunning(const MountProcess& p) {
  return p.pid > 0 && p.start_time != 0 && ProcessStartTime(p.pid) == p.start_time;
}

Result<StringMap> RecoverSecrets(const MountProcess& p) {
  if (!ProcessRunning(p)) return NotFoundError("the mount process is gone");
  const std::string link = "/proc/" + std::to_string(p.pid) + "/fd/" + std::to_string(kSecretsFd);
  char target[256];
  ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
  if (n <= 0 ||
      std::string_view(target, static_cast<size_t>(n)).find("memfd:strata-secrets") == std::string_view::npos) {
    return NotFoundError("the mount holds no secrets");
  }
  int fd = open(link.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open the mount's secrets");
  std::string text;
  char buf[4096];
  ssize_t r;
  while ((r = pread(fd, buf, sizeof buf, static_cast<off_t>(text.size()))) > 0 && text.size() < (64 << 10)) {
    text.append(buf, static_cast<size_t>(r));
  }
  close(fd);
  return ParseSecrets(text);
}

void ReapIfChild(int pid) {
  if (pid > 0) waitpid(pid, nullptr, WNOHANG);
}

Status StopMount(const MountProcess& p, const std::string& mountpoint, std::chrono::milliseconds grace) {
  Status st = Unmount(mountpoint, false);
  if (!st.ok() && st.code() != Code::kNotFound) {
    STRATA_LOG_WARN("csi: unmount {} failed ({}); detaching it", mountpoint, st.ToString());
    Unmount(mountpoint, true).IgnoreError();
  }
  auto wait_gone = [&](std::chrono::milliseconds d) {
    const auto end = SteadyClock::now() + d;
    while (SteadyClock::now() < end) {
      ReapIfChild(p.pid);
      if (!ProcessRunning(p)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling the process's exit, with a deadline
    }
    return !ProcessRunning(p);
  };
  if (wait_gone(grace)) return Status::Ok();
  kill(p.pid, SIGTERM);
  if (wait_gone(grace)) return Status::Ok();
  kill(p.pid, SIGKILL);
  if (wait_gone(std::chrono::seconds(5))) return Status::Ok();
  return UnavailableError("the mount process " + std::to_string(p.pid) + " did not end");
}

}  // namespace strata::csi
