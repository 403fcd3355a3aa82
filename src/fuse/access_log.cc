#include "fuse/access_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace strata::fuse {

AccessLog::~AccessLog() { Stop(); }

int64_t AccessLog::NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status AccessLog::Start(const std::string& path) {
  // O_NOFOLLOW, no O_CREAT: the mount only appends to a file its profiler made.
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoToStatus(errno, "access log " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgumentError("access log " + path + ": not a regular file");
  }
  MutexLock lock(mu_);
  if (fd_ >= 0) {
    struct stat cur {};
    if (::fstat(fd_, &cur) == 0 && cur.st_nlink > 0) {
      ::close(fd);
      return UnavailableError("the mount is already being profiled");
    }
    ::close(fd_);  // that profiler deleted its log and is gone
  }
  fd_ = fd;
  on_.store(true);
  return Status::Ok();
}

void AccessLog::Stop() {
  MutexLock lock(mu_);
  on_.store(false);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void AccessLog::Append(const std::string& line) {
  MutexLock lock(mu_);
  if (fd_ < 0) return;
  // One write per line: lines from concurrent readers never interleave. A
  // short or failed write loses a line; the profile then undercounts.
  (void)!::write(fd_, line.data(), line.size());
}

void AccessLog::Open(uint32_t pid, uint64_t fh, uint64_t size, const std::string& path) {
  std::string line = "O " + std::to_string(NowNs()) + " " + std::to_string(pid) + " " + std::to_string(fh) + " " +
                     std::to_string(size) + " ";
  for (char c : path) {
    if (c == '\n') {
      line += "\\n";
    } else if (c == '\\') {
      line += "\\\\";
    } else {
      line += c;
    }
  }
  line += '\n';
  Append(line);
}

void AccessLog::Read(uint32_t pid, uint64_t fh, uint64_t offset, uint64_t bytes, int64_t start_ns, int64_t end_ns) {
  Append("R " + std::to_string(start_ns) + " " + std::to_string(pid) + " " + std::to_string(fh) + " " +
         std::to_string(offset) + " " + std::to_string(bytes) + " " + std::to_string(end_ns - start_ns) + "\n");
}

}  // namespace strata::fuse
