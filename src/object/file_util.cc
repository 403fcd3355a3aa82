#include "object/file_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>  // renameat2
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "base/hash.h"
#include "object/file_store.h"

namespace strata::object {

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

bool IsPlainSegment(std::string_view segment) {
  return !segment.empty() && segment != "." && segment != ".." && !segment.starts_with(kReservedPrefix) &&
         segment.size() <= NAME_MAX;
}

Result<std::vector<std::string>> EncodeKeyPath(std::string_view key) {
  std::vector<std::string> names;
  for (size_t start = 0;;) {
    size_t slash = key.find('/', start);
    std::string_view seg = key.substr(start, slash == std::string_view::npos ? key.npos : slash - start);
    if (IsPlainSegment(seg)) {
      names.emplace_back(seg);
    } else {
      names.push_back(std::string(kEscapePrefix) + std::string(seg));
      if (names.back().size() > NAME_MAX) {
        return InvalidArgumentError("key '" + std::string(key) + "' cannot be stored in a file store: a path segment " +
                                    "is longer than " + std::to_string(NAME_MAX) + " bytes once escaped");
      }
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return names;
}

std::optional<std::string> DecodeName(std::string_view name) {
  if (!name.starts_with(kReservedPrefix)) return std::string(name);
  if (!name.starts_with(kEscapePrefix)) return std::nullopt;
  std::string_view seg = name.substr(kEscapePrefix.size());
  if (IsPlainSegment(seg)) return std::nullopt;
  return std::string(seg);
}

std::string JoinNames(const std::vector<std::string>& names, size_t n) {
  std::string path;
  for (size_t i = 0; i < n && i < names.size(); ++i) {
    if (i > 0) path += '/';
    path += names[i];
  }
  return path;
}

namespace {

// Whether the errno of linkat/renameat2 means "this file system cannot".
bool Unsupported(int err) {
  return err == EPERM || err == EOPNOTSUPP || err == EINVAL || err == ENOSYS || err == EXDEV;
}

Status SyncDirAt(int root_fd, const std::string& rel) {
  UniqueFd fd(::openat(root_fd, rel.empty() ? "." : rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() || ::fsync(fd.get()) != 0) return ErrnoToStatus(errno, "syncing directory '" + rel + "'");
  return Status::Ok();
}

std::string ParentRel(const std::string& rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

}  // namespace

Status ConvertFileToDir(int root_fd, const std::string& rel, const std::string& conv, bool fsync) {
  const std::string self = conv + "/" + std::string(kSelfName);
  const std::string what = "making '" + rel + "' a directory";
  if (::mkdirat(root_fd, conv.c_str(), 0755) != 0) return ErrnoToStatus(errno, what);
  auto undo = [&](int err, std::string_view step) {
    ::unlinkat(root_fd, self.c_str(), 0);
    ::unlinkat(root_fd, conv.c_str(), AT_REMOVEDIR);
    return ErrnoToStatus(err, what + " (" + std::string(step) + ")");
  };
  bool linked = ::linkat(root_fd, rel.c_str(), root_fd, self.c_str(), 0) == 0;
  if (!linked && !Unsupported(errno)) return undo(errno, "link");
  if (linked) {
    if (Status synced = fsync ? SyncDirAt(root_fd, conv) : Status::Ok(); !synced.ok()) {
      undo(0, "").IgnoreError();
      return synced.WithContext(what);
    }
    if (::renameat2(root_fd, conv.c_str(), root_fd, rel.c_str(), RENAME_EXCHANGE) == 0) {
      // `conv` is now the old name of the file: one more link to the same inode.
      if (::unlinkat(root_fd, conv.c_str(), 0) != 0) return ErrnoToStatus(errno, what + " (unlink)");
      if (fsync) return SyncDirAt(root_fd, ParentRel(rel));
      return Status::Ok();
    }
    if (!Unsupported(errno)) return undo(errno, "exchange");
    ::unlinkat(root_fd, self.c_str(), 0);
  }
  // No hard links or no exchange: two renames, the object briefly unseen.
  if (::renameat(root_fd, rel.c_str(), root_fd, self.c_str()) != 0) return undo(errno, "rename");
  if (::renameat(root_fd, conv.c_str(), root_fd, rel.c_str()) != 0) {
    int err = errno;
    ::renameat(root_fd, self.c_str(), root_fd, rel.c_str());  // put the object back
    return undo(err, "rename");
  }
  if (fsync) {
    STRATA_RETURN_IF_ERROR(SyncDirAt(root_fd, rel));
    return SyncDirAt(root_fd, ParentRel(rel));
  }
  return Status::Ok();
}

Status ConvertDirToFile(int root_fd, const std::string& rel, const std::string& conv, bool fsync) {
  const std::string self = rel + "/" + std::string(kSelfName);
  const std::string what = "making '" + rel + "' a file again";
  if (::linkat(root_fd, self.c_str(), root_fd, conv.c_str(), 0) != 0) return ErrnoToStatus(errno, what + " (link)");
  if (::renameat2(root_fd, conv.c_str(), root_fd, rel.c_str(), RENAME_EXCHANGE) != 0) {
    int err = errno;
    ::unlinkat(root_fd, conv.c_str(), 0);
    return ErrnoToStatus(err, what + " (exchange)");
  }
  // `conv` is now the directory; the object is `rel` (and conv/.strata-self, dropped here).
  const std::string old_self = conv + "/" + std::string(kSelfName);
  ::unlinkat(root_fd, old_self.c_str(), 0);
  if (::unlinkat(root_fd, conv.c_str(), AT_REMOVEDIR) != 0) return ErrnoToStatus(errno, what + " (rmdir)");
  if (fsync) return SyncDirAt(root_fd, ParentRel(rel));
  return Status::Ok();
}

Result<std::vector<FileDirEntry>> ReadSortedDir(int root_fd, const std::string& rel, bool raw) {
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
    if (name == "." || name == "..") continue;
    std::optional<std::string> seg = raw ? std::optional<std::string>(name) : DecodeName(name);
    if (!seg) continue;  // internal
    unsigned char type = e->d_type;
    if (type == DT_UNKNOWN || type == DT_LNK) {
      struct stat st;
      if (::fstatat(dfd, name.c_str(), &st, 0) != 0) continue;  // vanished or dangling link
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
    }
    if (type == DT_DIR) {
      if (!raw) {
        // The object named like the directory sorts before everything in it.
        const std::string self = name + "/" + std::string(kSelfName);
        struct stat st;
        if (::fstatat(dfd, self.c_str(), &st, 0) == 0 && S_ISREG(st.st_mode)) entries.push_back({*seg, false, self});
      }
      entries.push_back({*seg + "/", true, name});
    } else if (type == DT_REG) {
      entries.push_back({std::move(*seg), false, std::move(name)});
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
    std::string path;
    bool valid = true;
    if (!dir.empty()) {
      auto names = EncodeKeyPath(std::string_view(dir).substr(0, dir.size() - 1));
      valid = names.ok();  // a segment too long to store holds no key
      if (valid) path = JoinNames(*names, names->size());
    }
    if (valid) {
      auto entries = ReadSortedDir(root_fd_, path);
      if (entries.ok()) {
        frames_.push_back({dir, path, std::move(*entries), 0});
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
    std::string disk = frame.path.empty() ? entry.name : frame.path + "/" + entry.name;
    auto entries = ReadSortedDir(root_fd_, disk);
    if (!entries.ok()) {
      if (entries.status().code() == Code::kNotFound) continue;  // removed meanwhile
      return entries.status();
    }
    frames_.push_back({std::move(path), std::move(disk), std::move(*entries), 0});
  }
  return std::optional<std::string>();
}

Result<bool> HasAnyKey(int root_fd) {
  FileCursor cursor(root_fd, "", [](const std::string&) { return std::optional<ObjectInfo>(); });
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> key, cursor.Next());
  return key.has_value();
}

namespace {

// Returns whether `rel` (a directory) was emptied.
bool PruneDir(int root_fd, const std::string& rel, int depth) {
  if (depth > 512) return false;
  UniqueFd fd(::openat(root_fd, rel.empty() ? "." : rel.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return false;
  DIR* dir = ::fdopendir(fd.get());
  if (!dir) return false;
  int dfd = fd.release();
  std::vector<std::pair<std::string, bool>> names;  // name, is a real directory
  for (dirent* e = ::readdir(dir); e; e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    names.emplace_back(std::move(name), S_ISDIR(st.st_mode));
  }
  ::closedir(dir);
  bool empty = true;
  for (const auto& [name, is_dir] : names) {
    const std::string child = rel.empty() ? name : rel + "/" + name;
    if (is_dir) {
      if (PruneDir(root_fd, child, depth + 1) && ::unlinkat(root_fd, child.c_str(), AT_REMOVEDIR) == 0) continue;
    } else if (!DecodeName(name) && ::unlinkat(root_fd, child.c_str(), 0) == 0) {
      continue;  // internal: a conversion's leftover link
    }
    empty = false;
  }
  return empty;
}

}  // namespace

void PruneNonKeys(int root_fd) { PruneDir(root_fd, "", 0); }

Status ReadExactly(io::RandomAccessFile& file, uint64_t offset, size_t n, void* dst, std::string_view what) {
  STRATA_ASSIGN_OR_RETURN(size_t got, file.ReadAt(offset, n, dst));
  if (got != n) return UnavailableError(std::string(what) + " got shorter while being read", "unexpected EOF");
  return Status::Ok();
}

Status CopyInto(io::RandomAccessFile& in, uint64_t size, io::WritableFile& out, std::string_view what) {
  std::string buf(static_cast<size_t>(std::min<uint64_t>(size, kFileChunk)), '\0');
  for (uint64_t offset = 0; offset < size;) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(size - offset, buf.size()));
    STRATA_RETURN_IF_ERROR(ReadExactly(in, offset, chunk, buf.data(), what));
    STRATA_RETURN_IF_ERROR(out.Append(buf.data(), chunk));
    offset += chunk;
  }
  return Status::Ok();
}

Result<std::string> Md5HexOf(io::RandomAccessFile& file, uint64_t size, std::string_view what) {
  Md5Hasher hasher;
  std::string buf(static_cast<size_t>(std::min<uint64_t>(size, kFileChunk)), '\0');
  for (uint64_t offset = 0; offset < size;) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(size - offset, buf.size()));
    STRATA_RETURN_IF_ERROR(ReadExactly(file, offset, chunk, buf.data(), what));
    hasher.Update(buf.data(), chunk);
    offset += chunk;
  }
  return ToHex(hasher.Finish());
}

}  // namespace strata::object
