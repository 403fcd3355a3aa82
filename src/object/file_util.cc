#include "object/file_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "object/file_store.h"

namespace strata {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::vector<FileDirEntry>> ReadSortedDir(int root_fd, const std::string& rel) {
  UniqueFd fd(::openat(root_fd, rel.empty() ? "." : rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    // ELOOP: a symlink cycle deeper than the kernel follows; treated like a dangling link.
    if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return NotFoundError("no directory '" + rel + "'");
    return ErrnoToStatus(errno, "opening directory '" + rel + "' to list it");
  }
  DIR* dir = ::fdopendir(fd.get());
  if (!dir) return ErrnoToStatus(errno, "listing directory '" + rel + "'");
  int dfd = fd.release();
  std::vector<FileDirEntry> entries;
  // readdir reports errors only through errno, so clear it before every call.
  for (errno = 0; dirent* e = ::readdir(dir); errno = 0) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || (rel.empty() && name == kFileStoreStagingDir)) continue;
    unsigned char type = e->d_type;
    if (type == DT_UNKNOWN || type == DT_LNK) {
      struct stat st;
      if (::fstatat(dfd, name.c_str(), &st, 0) != 0) continue;  // vanished or dangling link
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
    }
    if (type == DT_DIR) {
      entries.push_back({name + "/", true});
    } else if (type == DT_REG) {
      entries.push_back({std::move(name), false});
    }
  }
  int err = errno;
  ::closedir(dir);
  if (err != 0) return ErrnoToStatus(err, "listing directory '" + rel + "'");
  std::sort(entries.begin(), entries.end(),
            [](const FileDirEntry& a, const FileDirEntry& b) { return a.sort_name < b.sort_name; });
  return entries;
}

FileCursor::FileCursor(int root_fd, std::string prefix, InfoFn info)
    : root_fd_(root_fd), prefix_(std::move(prefix)), info_(std::move(info)) {}

void FileCursor::Skip(const std::string& after, bool skip_prefix) {
  after_ = after;
  skip_prefix_ = skip_prefix;
}

// Whether the entry at `path` (a file's key, or a directory's "d/" prefix)
// can hold a key still to be returned.
bool FileCursor::MayContain(const std::string& path, bool is_dir) const {
  bool in_prefix =
      path.compare(0, prefix_.size(), prefix_) == 0 || (is_dir && prefix_.compare(0, path.size(), path) == 0);
  if (!in_prefix) return false;
  bool within_after = path.compare(0, after_.size(), after_) == 0;
  if (skip_prefix_ && within_after) return false;
  if (!is_dir) return path > after_;
  // A directory holds only keys below `after` when it sorts before it and is not its prefix.
  return !(path < after_ && after_.compare(0, path.size(), path) != 0);
}

Result<std::optional<std::string>> FileCursor::Next() {
  if (!started_) {
    started_ = true;
    // Every key with the prefix lives under the prefix's directory part; a
    // directory part that is not a valid path cannot hold any key.
    std::string dir = prefix_.substr(0, prefix_.rfind('/') + 1);
    if (dir.empty() || ValidateFileKey(dir.substr(0, dir.size() - 1)).ok()) {
      auto entries = ReadSortedDir(root_fd_, dir);
      if (entries.ok()) {
        frames_.push_back({dir, std::move(*entries), 0});
      } else if (entries.status().code() != Code::kNotFound) {
        return entries.status();
      }
    }
  }
  while (!frames_.empty()) {
    Frame& frame = frames_.back();
    if (frame.next >= frame.entries.size()) {
      frames_.pop_back();
      continue;
    }
    const FileDirEntry& entry = frame.entries[frame.next++];
    std::string path = frame.dir + entry.sort_name;
    if (path > prefix_ && path.compare(0, prefix_.size(), prefix_) != 0 && prefix_.compare(0, path.size(), path) != 0) {
      frames_.clear();  // sorted walk: everything after this is past the prefix too
      break;
    }
    if (!MayContain(path, entry.is_dir)) continue;
    if (!entry.is_dir) return std::optional<std::string>(std::move(path));
    if (path.size() > 1024) continue;  // no valid key is this long (also stops symlink loops)
    auto entries = ReadSortedDir(root_fd_, path);
    if (!entries.ok()) {
      if (entries.status().code() == Code::kNotFound) continue;  // removed meanwhile
      return entries.status();
    }
    frames_.push_back({std::move(path), std::move(*entries), 0});
  }
  return std::optional<std::string>();
}

}  // namespace strata
