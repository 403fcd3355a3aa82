#include "profile/mountlog.h"

#include <fcntl.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "fuse/access_log.h"

namespace strata::profile {
namespace {

constexpr uint32_t kOutside = std::numeric_limits<uint32_t>::max();

// /proc/mounts escapes space, tab, newline and backslash as \ooo.
std::string Unoctal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3') {
      out += char((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool Under(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

// The next space-separated field of `s` (advanced past it); false at the end.
bool Field(std::string_view& s, std::string_view* out) {
  const size_t sp = s.find(' ');
  *out = s.substr(0, sp);
  s = sp == std::string_view::npos ? std::string_view() : s.substr(sp + 1);
  return !out->empty();
}

template <typename T>
bool Number(std::string_view& s, T* out) {
  std::string_view f;
  if (!Field(s, &f)) return false;
  auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), *out);
  return ec == std::errc() && end == f.data() + f.size();
}

}  // namespace

std::string StrataMountOf(const std::string& path) {
  std::ifstream in("/proc/self/mounts");
  std::string dev, point, type, rest, best;
  while (in >> dev >> point >> type && std::getline(in, rest)) {
    point = Unoctal(point);
    if (type == "fuse.strata" && Under(path, point) && point.size() > best.size()) best = point;
  }
  return best;
}

MountLog::MountLog(std::string mountpoint, std::vector<std::string> paths, int64_t start_ns)
    : mountpoint_(std::move(mountpoint)), paths_(std::move(paths)), start_ns_(start_ns) {}

MountLog::~MountLog() { Stop(); }

Status MountLog::Start() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/strata-profile-XXXXXX";
  fd_ = ::mkstemp(pattern.data());
  if (fd_ < 0) return ErrnoToStatus(errno, "creating the access log " + pattern);
  log_path_ = pattern;
  if (::setxattr(mountpoint_.c_str(), fuse::kProfileXattr, log_path_.data(), log_path_.size(), 0) != 0) {
    const int err = errno;
    if (err == EBUSY) return UnavailableError(mountpoint_ + " is already being profiled");
    return ErrnoToStatus(err, "switching on the access log of the strata mount " + mountpoint_);
  }
  on_ = true;
  return Status::Ok();
}

void MountLog::Stop() {
  if (on_) (void)::removexattr(mountpoint_.c_str(), fuse::kProfileXattr);  // an old mount: nothing to switch off
  on_ = false;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!log_path_.empty()) ::unlink(log_path_.c_str());
  log_path_.clear();
}

void MountLog::Poll(const std::function<bool(pid_t)>& inside) {
  if (fd_ < 0) return;
  char buf[64 * 1024];
  ssize_t n;
  while ((n = ::read(fd_, buf, sizeof buf)) > 0) Feed(std::string_view(buf, size_t(n)), inside);
}

void MountLog::Feed(std::string_view chunk, const std::function<bool(pid_t)>& inside) {
  partial_.append(chunk);
  size_t begin = 0, nl;
  while ((nl = partial_.find('\n', begin)) != std::string::npos) {
    Line(std::string_view(partial_).substr(begin, nl - begin), inside);
    begin = nl + 1;
  }
  partial_.erase(0, begin);
  if (partial_.size() > (1 << 20)) {  // no line is this long: not our log
    ++bad_lines_;
    partial_.clear();
  }
}

void MountLog::Line(std::string_view s, const std::function<bool(pid_t)>& inside) {
  std::string_view kind;
  int64_t t = 0;
  uint32_t pid = 0;
  uint64_t fh = 0;
  if (!Field(s, &kind) || !Number(s, &t) || !Number(s, &pid) || !Number(s, &fh)) {
    ++bad_lines_;
    return;
  }
  const double t_s = double(t - start_ns_) / 1e9;
  if (kind == "O") {
    uint64_t size = 0;
    if (!Number(s, &size) || s.empty()) {
      ++bad_lines_;
      return;
    }
    std::string key;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\\' && i + 1 < s.size()) {
        key += s[i + 1] == 'n' ? '\n' : s[i + 1];
        ++i;
      } else {
        key += s[i];
      }
    }
    const std::string path = mountpoint_ == "/" ? "/" + key : mountpoint_ + "/" + key;
    bool watched = false;
    for (const auto& p : paths_) watched = watched || Under(path, p);
    if (!watched || !inside(pid_t(pid))) {
      if (watched) ++other_;
      open_of_fh_[fh] = {kOutside, 0};
      return;
    }
    auto [it, fresh] = file_index_.try_emplace(path, uint32_t(files_.size()));
    if (fresh) {
      files_.emplace_back();
      files_.back().path = path;
      files_.back().first_s = t_s;
    }
    FileRecord& f = files_[it->second];
    f.size = size;
    f.last_s = t_s;
    ++f.opens;
    open_of_fh_[fh] = {it->second, ++serial_};
  } else if (kind == "R") {
    ReadEvent r;
    int64_t wait_ns = 0;
    if (!Number(s, &r.offset) || !Number(s, &r.length) || !Number(s, &wait_ns) || !s.empty()) {
      ++bad_lines_;
      return;
    }
    auto it = open_of_fh_.find(fh);
    if (it == open_of_fh_.end() || it->second.first == kOutside) return;  // opened before the profile, or not ours
    r.file = it->second.first;
    r.open = it->second.second;
    r.t_s = t_s;
    r.wait_s = double(wait_ns) / 1e9;
    FileRecord& f = files_[r.file];
    ++f.read_events;
    if (!open_read_[r.open]) {
      open_read_[r.open] = true;
      ++f.read_opens;
    }
    reads_.push_back(r);
  } else {
    ++bad_lines_;
  }
}

void MountLog::MoveInto(ProfileData* data) {
  const uint32_t base = uint32_t(data->files.size());
  for (auto& f : files_) data->files.push_back(std::move(f));
  for (auto r : reads_) {
    r.file += base;
    data->reads.push_back(r);
  }
  files_.clear();
  reads_.clear();
  data->bad_log_lines += bad_lines_;
  data->other_process_events += other_;
}

}  // namespace strata::profile
