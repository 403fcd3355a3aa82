#include "profile/record.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/fanotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "profile/mountlog.h"

extern char** environ;

namespace strata::profile {
namespace {

namespace fs = std::filesystem;

std::atomic<bool> g_interrupted{false};
void OnSigint(int) { g_interrupted.store(true); }

// Closes a descriptor however Record ends.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Restores SIGINT's previous action.
struct SigintGuard {
  struct sigaction old {};
  SigintGuard() {
    struct sigaction sa {};
    sa.sa_handler = OnSigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
  }
  ~SigintGuard() { sigaction(SIGINT, &old, nullptr); }
};

double CpuSeconds(const rusage& u) {
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Parent pid from /proc/<pid>/stat ("pid (comm) S ppid ..."); -1 if gone.
pid_t ParentOf(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return -1;
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 4 >= line.size()) return -1;
  std::istringstream rest(line.substr(close + 2));
  char state = 0;
  long ppid = -1;
  rest >> state >> ppid;
  return rest ? pid_t(ppid) : -1;
}

// The process (thread group) of a thread id; the id itself if it is gone.
pid_t TgidOf(pid_t tid) {
  std::ifstream f("/proc/" + std::to_string(tid) + "/status");
  std::string key;
  while (f >> key) {
    if (key == "Tgid:") {
      long tgid = 0;
      if (f >> tgid) return pid_t(tgid);
      break;
    }
    f.ignore(1 << 16, '\n');
  }
  return tid;
}

// Whether `pid` descends from `root`, remembering answers (pids are not
// reused within a profile in practice). A process that has already exited
// cannot be placed: it counts as outside.
class Tree {
 public:
  explicit Tree(pid_t root) { known_[root] = true; }
  bool Contains(pid_t pid) {
    auto it = known_.find(pid);
    if (it != known_.end()) return it->second;
    std::vector<pid_t> chain;
    bool inside = false;
    pid_t p = pid;
    for (int depth = 0; depth < 64 && p > 1; ++depth) {
      auto k = known_.find(p);
      if (k != known_.end()) {
        inside = k->second;
        break;
      }
      chain.push_back(p);
      p = ParentOf(p);
    }
    for (pid_t c : chain) known_[c] = inside;
    return inside;
  }

 private:
  std::unordered_map<pid_t, bool> known_;
};

std::string PathOfFd(int fd) {
  char buf[4096];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

// Canonical directories, as data.paths.
Status CanonicalPaths(const std::vector<std::string>& paths, ProfileData* data) {
  for (const auto& p : paths) {
    std::error_code ec;
    const fs::path root = fs::canonical(p, ec);
    if (ec || !fs::is_directory(root, ec)) return NotFoundError("--path " + p + ": not a directory");
    data->paths.push_back(root.string());
  }
  return Status::Ok();
}

// Mount point -> the paths under it, when every path is on a strata mount
// (their own access logs give exact reads); else empty: fanotify for all.
std::map<std::string, std::vector<std::string>> StrataMounts(const std::vector<std::string>& paths) {
  std::map<std::string, std::vector<std::string>> mounts;
  for (const auto& p : paths) {
    const std::string m = StrataMountOf(p);
    if (m.empty()) return {};
    mounts[m].push_back(p);
  }
  return mounts;
}

// Every directory under the paths gets a mark: a directory mark covers its
// direct entries only, and a mount mark would hold up every process on the
// mount (permission events) instead of those reading the dataset.
Result<std::vector<std::string>> DirectoriesUnder(const std::vector<std::string>& roots) {
  std::vector<std::string> dirs;
  for (const auto& root : roots) {
    std::error_code ec;
    dirs.push_back(root);
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) dirs.push_back(it->path().string());
      if (dirs.size() > 200000) return InvalidArgumentError("--path " + root + ": more than 200000 directories");
    }
  }
  return dirs;
}

Status MarkDirectories(int fan_fd, const std::vector<std::string>& dirs) {
  const uint64_t mask = FAN_OPEN_PERM | FAN_ACCESS | FAN_CLOSE_WRITE | FAN_CLOSE_NOWRITE | FAN_EVENT_ON_CHILD;
  for (const auto& d : dirs) {
    if (fanotify_mark(fan_fd, FAN_MARK_ADD, mask, AT_FDCWD, d.c_str()) != 0)
      return ErrnoToStatus(errno, "fanotify_mark " + d);
  }
  return Status::Ok();
}

// Runs the command in its own process group: a terminal's Ctrl-C reaches the
// profiler, which forwards it to the whole group and still writes the report.
Result<pid_t> Spawn(const std::vector<std::string>& command) {
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  short flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF;
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, flags);
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t child = -1;
  const int spawn_err = posix_spawnp(&child, argv[0], nullptr, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (spawn_err != 0) return ErrnoToStatus(spawn_err, "cannot run " + command[0]);
  return child;
}

// One profile while its command runs: the mounts' logs or the fanotify
// queue, drained into `data` and the per-file counts.
class Recording {
 public:
  Recording(const RecordOptions& options, ProfileData* data) : options_(options), data_(*data) {}

  // The access logs of the mounts, or fanotify marks on every directory.
  Status Start() {
    std::map<std::string, std::vector<std::string>> mounts;
    if (!options_.fanotify) mounts = StrataMounts(data_.paths);
    start_ = std::chrono::steady_clock::now();
    const int64_t start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(start_.time_since_epoch()).count();
    for (const auto& [m, paths] : mounts) {
      logs_.push_back(std::make_unique<MountLog>(m, paths, start_ns));
      data_.mounts.push_back(m);
      STRATA_RETURN_IF_ERROR(logs_.back()->Start());
    }
    data_.exact_reads = !logs_.empty();
    if (!logs_.empty()) return Status::Ok();
    STRATA_ASSIGN_OR_RETURN(const std::vector<std::string> dirs, DirectoriesUnder(data_.paths));
    fan_.fd = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY | O_LARGEFILE | O_CLOEXEC);
    if (fan_.fd < 0) {
      return PermissionDeniedError(std::string("fanotify_init: ") + std::strerror(errno) +
                                   " (strata profile needs CAP_SYS_ADMIN: run it as root)");
    }
    return MarkDirectories(fan_.fd, dirs);
  }

  // Until `child` exits: events drained, --duration and Ctrl-C forwarded as
  // SIGINT to its group, SIGKILL 10 s later if it lingers.
  void Watch(pid_t child) {
    tree_.emplace(child);
    bool signalled = false;
    double kill_at = -1;
    while (true) {
      pollfd p{fan_.fd, POLLIN, 0};
      ::poll(&p, 1, fan_.fd >= 0 ? 50 : 10);  // a log is polled: often, to place short-lived pids
      while (Drain()) {
      }
      siginfo_t info{};
      if (waitid(P_PID, id_t(child), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == child) break;
      const double t = Elapsed();
      if (!signalled && (g_interrupted.load() || (options_.duration_s > 0 && t >= options_.duration_s))) {
        ::kill(-child, SIGINT);
        signalled = true;
        data_.interrupted = true;
        kill_at = t + 10;
      }
      if (signalled && kill_at > 0 && t >= kill_at) {
        ::kill(-child, SIGKILL);
        kill_at = -1;
      }
    }
    // Every event of the finished command is already queued.
    while (Drain()) {
    }
  }

  // The logs' last reads, or the per-file counts, into the data.
  void Finish() {
    for (auto& log : logs_) {
      log->Poll([this](pid_t tid) { return Inside(tid); });  // the reads of the last moments
      log->Stop();
      log->MoveInto(&data_);
    }
    if (data_.exact_reads) return;
    for (auto& [key, f] : files_) {
      // Read notifications are merged in the queue and lose their order
      // against the opens: a file with any read counts every open as a read.
      f.read_opens = f.read_events > 0 ? f.opens : 0;
      data_.files.push_back(std::move(f));
    }
  }

  double Elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  bool Inside(pid_t tid) { return options_.all_processes || tree_->Contains(TgidOf(tid)); }

  // Reads every queued event; false when the queue is empty.
  bool Drain() {
    if (fan_.fd < 0) {
      for (auto& log : logs_) log->Poll([this](pid_t tid) { return Inside(tid); });
      return false;
    }
    alignas(fanotify_event_metadata) static thread_local char buf[64 * 1024];
    const ssize_t n = ::read(fan_.fd, buf, sizeof buf);
    if (n <= 0) return false;
    auto* m = reinterpret_cast<const fanotify_event_metadata*>(buf);
    ssize_t len = n;
    for (; FAN_EVENT_OK(m, len); m = FAN_EVENT_NEXT(m, len)) {
      if (m->vers != FANOTIFY_METADATA_VERSION) continue;
      if (m->mask & FAN_Q_OVERFLOW) ++data_.queue_overflows;  // events were lost: counts are low
      if (m->fd < 0) continue;
      if (m->mask & FAN_OPEN_PERM) {
        fanotify_response resp{m->fd, FAN_ALLOW};
        (void)!::write(fan_.fd, &resp, sizeof resp);  // nothing to do if it fails: closing the fd allows
      }
      ++data_.events;
      if (options_.all_processes || tree_->Contains(m->pid)) {
        Count(*m);
      } else {
        ++data_.other_process_events;
      }
      ::close(m->fd);
    }
    return true;
  }

  // One event of the command's tree on a regular file.
  void Count(const fanotify_event_metadata& m) {
    struct stat st {};
    if (::fstat(m.fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    FileRecord& f = files_[{st.st_dev, st.st_ino}];
    if (f.path.empty()) f.path = PathOfFd(m.fd);
    f.size = uint64_t(st.st_size);
    if (m.mask & FAN_OPEN_PERM) {
      const double t = Elapsed();
      if (f.opens == 0) f.first_s = t;
      f.last_s = t;
      ++f.opens;
    }
    if (m.mask & FAN_ACCESS) ++f.read_events;
    if (m.mask & FAN_CLOSE_WRITE) ++f.write_closes;
  }

  const RecordOptions& options_;
  ProfileData& data_;
  std::chrono::steady_clock::time_point start_;
  std::vector<std::unique_ptr<MountLog>> logs_;
  Fd fan_;
  std::optional<Tree> tree_;  // the command's process tree, once it runs
  std::map<std::pair<dev_t, ino_t>, FileRecord> files_;
};

}  // namespace

Result<ProfileData> Record(const RecordOptions& options) {
  if (options.command.empty())
    return InvalidArgumentError("no command to profile (strata profile [options] -- CMD ...)");
  ProfileData data;
  data.command = options.command;
  STRATA_RETURN_IF_ERROR(CanonicalPaths(options.paths, &data));
  Recording recording(options, &data);
  STRATA_RETURN_IF_ERROR(recording.Start());

  SigintGuard sigint;
  g_interrupted.store(false);
  rusage self_before{};
  getrusage(RUSAGE_SELF, &self_before);
  STRATA_ASSIGN_OR_RETURN(const pid_t child, Spawn(options.command));
  recording.Watch(child);
  int status = 0;
  rusage child_usage{};
  while (::wait4(child, &status, 0, &child_usage) < 0 && errno == EINTR) {
  }
  data.duration_s = recording.Elapsed();
  data.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  data.cpu_s = CpuSeconds(child_usage);
  rusage self_after{};
  getrusage(RUSAGE_SELF, &self_after);
  data.profiler_cpu_s = CpuSeconds(self_after) - CpuSeconds(self_before);
  recording.Finish();
  return data;
}

}  // namespace strata::profile
