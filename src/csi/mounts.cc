#include "csi/mounts.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

namespace strata::csi {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
        s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool ParseDev(std::string_view s, unsigned* major, unsigned* minor) {
  size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= s.size() || s.size() > 24) return false;
  unsigned a = 0, b = 0;
  for (char c : s.substr(0, colon)) {
    if (c < '0' || c > '9') return false;
    a = a * 10 + static_cast<unsigned>(c - '0');
  }
  for (char c : s.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
    b = b * 10 + static_cast<unsigned>(c - '0');
  }
  *major = a;
  *minor = b;
  return true;
}

}  // namespace

// A line: ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
Result<std::vector<MountEntry>> ParseMountInfo(std::string_view text) {
  std::vector<MountEntry> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
    auto f = Fields(line);
    size_t dash = 6;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (f.size() < 6 || dash + 1 >= f.size()) {
      return CorruptionError("a mountinfo line without the expected fields", std::string(line.substr(0, 200)));
    }
    MountEntry e;
    if (!ParseDev(f[2], &e.major, &e.minor)) return CorruptionError("a mountinfo line with a bad device number");
    e.root = Unescape(f[3]);
    e.mount_point = Unescape(f[4]);
    std::string_view opts = f[5];
    e.read_only = opts == "ro" || opts.starts_with("ro,");
    e.fs_type = std::string(f[dash + 1]);
    if (dash + 2 < f.size()) e.source = Unescape(f[dash + 2]);
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::vector<MountEntry>> ReadMountTable() {
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return IOError("cannot read /proc/self/mountinfo");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseMountInfo(ss.str());
}

Result<MountEntry> FindMount(const std::vector<MountEntry>& table, const std::string& path) {
  for (auto it = table.rbegin(); it != table.rend(); ++it) {
    if (it->mount_point == path) return *it;
  }
  return NotFoundError("nothing is mounted at " + path);
}

namespace {

Status StatfsNow(const std::string& path) {
  // statfs, not stat: FUSE answers stat of a mount's root from its attribute
  // cache (for as long as the metadata TTL, "forever" included) even after the
  // process died, while statfs always asks the process.
  struct statvfs st;
  if (statvfs(path.c_str(), &st) == 0) return Status::Ok();
  const int err = errno;
  if (err == ENOTCONN) {
    return UnavailableError(path + ": the mount's process is gone (transport endpoint is not connected)");
  }
  return ErrnoToStatus(err, "statfs " + path);
}

}  // namespace

Status ProbePath(const std::string& path, std::chrono::milliseconds timeout) {
  // On a thread of its own: a live but busy FUSE process may take long to
  // answer, and the caller must not wait on it (the probe finishes by itself).
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    Status status;
  };
  auto shared = std::make_shared<Shared>();
  try {
    std::thread([shared, path] {
      Status st = StatfsNow(path);
      std::lock_guard<std::mutex> lock(shared->mu);
      shared->status = std::move(st);
      shared->done = true;
      shared->cv.notify_all();
    }).detach();
  } catch (const std::system_error&) {
    return StatfsNow(path);  // no thread to spare: ask in line
  }
  std::unique_lock<std::mutex> lock(shared->mu);
  if (!shared->cv.wait_for(lock, timeout, [&] { return shared->done; })) {
    return DeadlineExceededError(path + ": the mount did not answer statfs within " + std::to_string(timeout.count()) +
                                 " ms (busy, or hung)");
  }
  return shared->status;
}

Status BindMount(const std::string& source, const std::string& target, bool read_only) {
  if (mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return ErrnoToStatus(errno, "bind mount " + source + " on " + target);
  }
  if (read_only && mount(nullptr, target.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0) {
    const int err = errno;
    umount2(target.c_str(), MNT_DETACH);  // never leave a writable bind behind a read-only request
    return ErrnoToStatus(err, "remount " + target + " read-only");
  }
  return Status::Ok();
}

Status Unmount(const std::string& path, bool lazy) {
  if (umount2(path.c_str(), lazy ? MNT_DETACH : 0) == 0) return Status::Ok();
  const int err = errno;
  if (err == EINVAL) return NotFoundError("nothing is mounted at " + path);
  return ErrnoToStatus(err, "unmount " + path);
}

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (!ec) return Status::Ok();
  if (ec.value() == ENOTCONN || ec.value() == EEXIST) return Status::Ok();
  return ErrnoToStatus(ec.value(), "create " + path);
}

}  // namespace strata::csi
