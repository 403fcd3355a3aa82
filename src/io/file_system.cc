#include "io/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>

#include "io/uring_read.h"

namespace strata::io {

Result<Buffer> RandomAccessFile::Read(uint64_t offset, size_t n) {
  MutableBuffer buf(n);
  STRATA_ASSIGN_OR_RETURN(size_t got, ReadAt(offset, n, buf.data()));
  buf.Resize(got);
  return std::move(buf).Freeze();
}

Result<size_t> RandomAccessFile::ReadAtParts(uint64_t offset, size_t n, void* dst, size_t /*part*/,
                                             const std::function<void(size_t)>& landed) {
  STRATA_ASSIGN_OR_RETURN(size_t got, ReadAt(offset, n, dst));
  if (landed && got > 0) landed(got);
  return got;
}

Result<FileStat> RandomAccessFile::Stat() {
  STRATA_ASSIGN_OR_RETURN(uint64_t size, Size());
  FileStat st;
  st.size = size;
  return st;
}

Result<std::string> RandomAccessFile::GetXattr(const std::string& name) {
  return NotSupportedError("extended attributes of " + path());
}

Status RandomAccessFile::SetXattr(const std::string& name, std::string_view value) {
  return NotSupportedError("extended attributes of " + path());
}

Status WritableFile::SetXattr(const std::string& name, std::string_view value) {
  return NotSupportedError("extended attributes of " + path());
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  std::string out(dir);
  if (out.back() != '/') out += '/';
  out += name;
  return out;
}

std::string ParentDir(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

std::string BaseName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

namespace {

Status Errno(std::string_view op, const std::string& path) {
  int err = errno;
  return ErrnoToStatus(err, std::string(op) + " " + path);
}

WallTime MTime(const struct stat& st) {
  return WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::seconds(st.st_mtim.tv_sec) +
                                                                 std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

FileStat ToFileStat(const struct stat& st) {
  return FileStat{static_cast<uint64_t>(st.st_size), S_ISDIR(st.st_mode), MTime(st), static_cast<uint64_t>(st.st_ino)};
}

// Full pread: loops over short reads and EINTR; short only at end of file.
Result<size_t> PreadFull(int fd, uint64_t offset, size_t n, void* dst, const std::string& path) {
  size_t done = 0;
  auto* out = static_cast<uint8_t*>(dst);
  while (done < n) {
    ssize_t r = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Errno("read", path);
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

Status PwriteFull(int fd, uint64_t offset, const void* src, size_t n, const std::string& path) {
  size_t done = 0;
  const auto* in = static_cast<const uint8_t*>(src);
  while (done < n) {
    ssize_t r = ::pwrite(fd, in + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Errno("write", path);
    }
    done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

class PosixRandomAccessFile : public RandomAccessFile {
 public:
  PosixRandomAccessFile(int fd, std::string path, bool direct) : fd_(fd), path_(std::move(path)), direct_(direct) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  Result<size_t> ReadAt(uint64_t offset, size_t n, void* dst) override {
    if (direct_) {
      constexpr size_t kA = PosixFileSystem::kDirectAlignment;
      if (offset % kA || n % kA || reinterpret_cast<uintptr_t>(dst) % kA) {
        return InvalidArgumentError("O_DIRECT read of " + path_ + " needs offset, size and buffer aligned to " +
                                    std::to_string(kA) + " bytes");
      }
    }
    return PreadFull(fd_, offset, n, dst, path_);
  }

  Result<size_t> ReadAtParts(uint64_t offset, size_t n, void* dst, size_t part,
                             const std::function<void(size_t)>& landed) override {
    if (part > 0 && part < n &&
        (!direct_ || (offset % PosixFileSystem::kDirectAlignment == 0 &&
                      reinterpret_cast<uintptr_t>(dst) % PosixFileSystem::kDirectAlignment == 0 &&
                      n % PosixFileSystem::kDirectAlignment == 0))) {
      auto r = UringReadParts(fd_, offset, n, dst, part, landed, path_);
      if (r.ok() || r.status().code() != Code::kNotSupported) return r;
    }
    return RandomAccessFile::ReadAtParts(offset, n, dst, part, landed);
  }

  Result<uint64_t> Size() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return Errno("stat", path_);
    return static_cast<uint64_t>(st.st_size);
  }

  Result<FileStat> Stat() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return Errno("stat", path_);
    return ToFileStat(st);
  }

  Result<std::string> GetXattr(const std::string& name) override {
    std::string value(256, '\0');
    while (true) {
      ssize_t n = ::fgetxattr(fd_, name.c_str(), value.data(), value.size());
      if (n >= 0) {
        value.resize(static_cast<size_t>(n));
        return value;
      }
      if (errno == ENODATA) return NotFoundError("no attribute " + name + " on " + path_);
      if (errno != ERANGE || value.size() >= (1u << 16)) return Errno("get attribute " + name + " of", path_);
      value.resize(value.size() * 4);
    }
  }

  Status SetXattr(const std::string& name, std::string_view value) override {
    if (::fsetxattr(fd_, name.c_str(), value.data(), value.size(), 0) != 0) {
      return Errno("set attribute " + name + " of", path_);
    }
    return Status::Ok();
  }

  const std::string& path() const override { return path_; }

 private:
  int fd_;
  std::string path_;
  bool direct_;
};

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(int fd, std::string path, uint64_t size, bool direct = false)
      : fd_(fd), path_(std::move(path)), size_(size), direct_(direct) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  using WritableFile::Append;
  using WritableFile::WriteAt;

  Status Append(const void* data, size_t n) override { return WriteAt(size_, data, n); }

  Status WriteAt(uint64_t offset, const void* data, size_t n) override {
    STRATA_RETURN_IF_ERROR(CheckOpen());
    const auto* p = static_cast<const uint8_t*>(data);
    if (direct_) {
      // The aligned blocks go direct; what is left (a tail, or a write that
      // was never aligned) is written buffered, and so is everything after it.
      constexpr size_t kA = PosixFileSystem::kDirectAlignment;
      const size_t blocks = (offset % kA || reinterpret_cast<uintptr_t>(p) % kA) ? 0 : n - n % kA;
      STRATA_RETURN_IF_ERROR(PwriteDirect(offset, p, blocks));
      offset += blocks, p += blocks, n -= blocks;
      size_ = std::max(size_, offset);
      if (n > 0) STRATA_RETURN_IF_ERROR(StopDirect());
    }
    STRATA_RETURN_IF_ERROR(PwriteFull(fd_, offset, p, n, path_));
    size_ = std::max(size_, offset + n);
    return Status::Ok();
  }

  Status Sync() override {
    STRATA_RETURN_IF_ERROR(CheckOpen());
    if (::fdatasync(fd_) != 0) return Errno("fdatasync", path_);
    return Status::Ok();
  }

  Status SetXattr(const std::string& name, std::string_view value) override {
    STRATA_RETURN_IF_ERROR(CheckOpen());
    if (::fsetxattr(fd_, name.c_str(), value.data(), value.size(), 0) != 0) {
      if (errno == ENOTSUP) return NotSupportedError("extended attributes of " + path_);
      return Errno("set attribute " + name + " of", path_);
    }
    return Status::Ok();
  }

  Status Close() override {
    if (fd_ < 0) return Status::Ok();
    int fd = fd_;
    fd_ = -1;
    // Linux closes the descriptor even when close() reports an error: never retry.
    if (::close(fd) != 0) return Errno("close", path_);
    return Status::Ok();
  }

  uint64_t Size() const override { return size_; }
  const std::string& path() const override { return path_; }

 private:
  Status CheckOpen() const {
    if (fd_ < 0) return InvalidArgumentError("write to closed file " + path_);
    return Status::Ok();
  }
  // Whole blocks with O_DIRECT; a short write (the device took part of it)
  // leaves an aligned remainder, which is retried the same way.
  Status PwriteDirect(uint64_t offset, const uint8_t* p, size_t n) {
    while (n > 0) {
      ssize_t r = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
      if (r < 0) {
        if (errno == EINTR) continue;
        return Errno("write", path_);
      }
      const size_t done = static_cast<size_t>(r) - static_cast<size_t>(r) % PosixFileSystem::kDirectAlignment;
      if (done == 0) return IOError("write " + path_ + ": the device took less than one block (O_DIRECT)");
      offset += done, p += done, n -= done;
    }
    return Status::Ok();
  }
  Status StopDirect() {
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) != 0) return Errno("fcntl(O_DIRECT off)", path_);
    direct_ = false;
    return Status::Ok();
  }
  int fd_;
  std::string path_;
  uint64_t size_;
  bool direct_;
};

class PosixFileLock : public FileLock {
 public:
  PosixFileLock(int fd, std::string path, bool remove_on_unlock = false)
      : fd_(fd), path_(std::move(path)), remove_(remove_on_unlock) {}
  ~PosixFileLock() override {
    if (remove_) (void)::unlink(path_.c_str());  // before unlocking: waiters then see a removed file
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  const std::string& path() const override { return path_; }

 private:
  int fd_;
  std::string path_;
  bool remove_;
};

Result<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path, int flags, std::string_view op) {
  int fd = ::open(path.c_str(), flags | O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(op, path);
  uint64_t size = 0;
  if (!(flags & O_TRUNC)) {
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      Status s = Errno("stat", path);
      ::close(fd);
      return s;
    }
    size = static_cast<uint64_t>(st.st_size);
  }
  return std::unique_ptr<WritableFile>(std::make_unique<PosixWritableFile>(fd, path, size));
}

// The PID a lock holder wrote into its lock file, or "" if unreadable.
std::string ReadHolderPid(int fd) {
  char buf[32];
  ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return {};
  std::string_view text(buf, static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  long pid = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  if (ec != std::errc() || end != text.data() + text.size() || pid <= 0) return {};
  return std::to_string(pid);
}

}  // namespace

Result<std::unique_ptr<RandomAccessFile>> PosixFileSystem::OpenForRead(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("open for reading", path);
  return std::unique_ptr<RandomAccessFile>(std::make_unique<PosixRandomAccessFile>(fd, path, false));
}

Result<std::unique_ptr<RandomAccessFile>> PosixFileSystem::OpenForReadDirect(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (fd < 0) {
    if (errno == EINVAL) return NotSupportedError("O_DIRECT is not supported for " + path, std::strerror(EINVAL));
    return Errno("open for direct reading", path);
  }
  return std::unique_ptr<RandomAccessFile>(std::make_unique<PosixRandomAccessFile>(fd, path, true));
}

Result<uint64_t> PosixFileSystem::ResidentBytes(const std::string& path, uint64_t offset, uint64_t length) {
  if (length == 0) return uint64_t{0};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("open", path);
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t first = offset / page * page;
  const uint64_t span = offset + length - first;
  void* map = ::mmap(nullptr, span, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(first));
  ::close(fd);
  if (map == MAP_FAILED) return Errno("mmap", path);
  std::vector<unsigned char> in((span + page - 1) / page);
  const int rc = ::mincore(map, span, in.data());
  const int err = errno;
  ::munmap(map, span);
  if (rc != 0) return ErrnoToStatus(err, "mincore " + path);
  uint64_t pages = 0;
  for (unsigned char v : in) pages += v & 1;
  return std::min(length, pages * page);
}

Result<std::unique_ptr<WritableFile>> PosixFileSystem::OpenForWrite(const std::string& path, bool truncate) {
  return OpenWritable(path, truncate ? O_TRUNC : 0, "open for writing");
}

Result<std::unique_ptr<WritableFile>> PosixFileSystem::OpenForStreamingWrite(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0644);
  if (fd < 0 && errno == EINVAL) return OpenForWrite(path, true);  // refused (tmpfs before Linux 6.6): buffered
  if (fd < 0) return Errno("open for writing", path);
  return std::unique_ptr<WritableFile>(std::make_unique<PosixWritableFile>(fd, path, 0, /*direct=*/true));
}

Result<std::unique_ptr<WritableFile>> PosixFileSystem::CreateExclusive(const std::string& path) {
  return OpenWritable(path, O_EXCL | O_TRUNC, "create");
}

Status PosixFileSystem::Rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return Errno("rename", from + " to " + to);
  return Status::Ok();
}

Status PosixFileSystem::Remove(const std::string& path) {
  if (::unlink(path.c_str()) != 0) return Errno("remove", path);
  return Status::Ok();
}

Status PosixFileSystem::RemoveDir(const std::string& path) {
  if (::rmdir(path.c_str()) != 0) return Errno("remove directory", path);
  return Status::Ok();
}

Status PosixFileSystem::CreateDirs(const std::string& path) {
  if (path.empty()) return InvalidArgumentError("create directories: empty path");
  // Create each prefix ending before a '/', then the whole path.
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) == 0) continue;
    if (errno != EEXIST) return Errno("create directory", prefix);
    struct stat st;
    if (::stat(prefix.c_str(), &st) != 0) return Errno("stat", prefix);
    if (!S_ISDIR(st.st_mode)) {
      return AlreadyExistsError("create directory " + prefix + ": exists and is not a directory");
    }
  }
  return Status::Ok();
}

Result<std::vector<DirEntry>> PosixFileSystem::ListDir(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (!dir) return Errno("list directory", path);
  std::vector<DirEntry> out;
  int dfd = ::dirfd(dir);
  int err = 0;
  for (;;) {
    // readdir reports its own failure only through errno, so clear it before
    // each call (a skipped entry below leaves ENOENT behind).
    errno = 0;
    struct dirent* e = ::readdir(dir);
    if (!e) {
      err = errno;
      break;
    }
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    // Follow symlinks, but still list a dangling one (as a non-directory) so it can be removed.
    if (::fstatat(dfd, e->d_name, &st, 0) != 0 && ::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed while listing
      Status s = Errno("stat", JoinPath(path, name));
      ::closedir(dir);
      return s;
    }
    out.push_back(DirEntry{std::string(name), S_ISDIR(st.st_mode), static_cast<uint64_t>(st.st_size), MTime(st)});
  }
  ::closedir(dir);
  if (err != 0) return ErrnoToStatus(err, "list directory " + path);
  std::sort(out.begin(), out.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

Result<FileStat> PosixFileSystem::Stat(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Errno("stat", path);
  return ToFileStat(st);
}

Status PosixFileSystem::SyncDir(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open directory", path);
  Status s;
  if (::fsync(fd) != 0) s = Errno("fsync directory", path);
  ::close(fd);
  return s;
}

Result<std::string> FileSystem::RealPath(const std::string& path) {
  char resolved[PATH_MAX];
  if (!::realpath(path.c_str(), resolved)) return Errno("realpath", path);
  return std::string(resolved);
}

Result<int> FileSystem::OpenDirectory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open directory", path);
  return fd;
}

Result<bool> PosixFileSystem::Exists(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  return Errno("stat", path);
}

std::optional<int64_t> RoomAboveFloor(FileSystem& fs, const std::string& path, uint64_t floor) {
  if (floor == 0) return std::nullopt;
  auto free = fs.FreeSpace(path);
  if (!free.ok()) return std::nullopt;
  constexpr uint64_t kMax = INT64_MAX / 2;  // no sum or difference of two overflows
  return static_cast<int64_t>(std::min(*free, kMax)) - static_cast<int64_t>(std::min(floor, kMax));
}

Result<SpaceInfo> PosixFileSystem::Space(const std::string& path) {
  struct statvfs vfs;
  if (::statvfs(path.c_str(), &vfs) != 0) return Errno("statvfs", path);
  return SpaceInfo{.total = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize,
                   .available = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize};
}

Result<std::unique_ptr<FileLock>> PosixFileSystem::LockFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("open lock file", path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err == EWOULDBLOCK) {
      std::string pid = ReadHolderPid(fd);
      ::close(fd);
      std::string holder = pid.empty() ? "another process" : "process " + pid;
      return Status(Code::kUnavailable, "lock " + path + " is held by " + holder, std::strerror(err), false);
    }
    ::close(fd);
    return ErrnoToStatus(err, "lock " + path);
  }
  // Record our PID so a second locker can say who holds it.
  std::string pid = std::to_string(::getpid()) + "\n";
  Status s = ::ftruncate(fd, 0) == 0 ? PwriteFull(fd, 0, pid.data(), pid.size(), path) : Errno("truncate", path);
  if (!s.ok()) {
    ::flock(fd, LOCK_UN);
    ::close(fd);
    return s;
  }
  return std::unique_ptr<FileLock>(std::make_unique<PosixFileLock>(fd, path));
}

Result<std::unique_ptr<FileLock>> PosixFileSystem::LockFileBlocking(const std::string& path,
                                                                    const LockWaitOptions& options) {
  bool waited = false;
  while (true) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Errno("open lock file", path);
    int rc = ::flock(fd, LOCK_EX | LOCK_NB);
    if (rc != 0 && errno == EWOULDBLOCK) {
      if (!waited && options.on_wait) options.on_wait();
      waited = true;
      do {
        rc = ::flock(fd, LOCK_EX);
      } while (rc != 0 && errno == EINTR);
    }
    if (rc != 0) {
      int err = errno;
      ::close(fd);
      return ErrnoToStatus(err, "lock " + path);
    }
    if (!options.remove_on_unlock) return std::unique_ptr<FileLock>(std::make_unique<PosixFileLock>(fd, path));
    // Its holder may have removed it as it unlocked: only the file the name has now counts.
    struct stat held {};
    struct stat named {};
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      return std::unique_ptr<FileLock>(std::make_unique<PosixFileLock>(fd, path, /*remove_on_unlock=*/true));
    }
    ::close(fd);
  }
}

Status PosixFileSystem::Truncate(const std::string& path, uint64_t size) {
  if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) return Errno("truncate", path);
  return Status::Ok();
}

FileSystem& DefaultFileSystem() {
  static PosixFileSystem* fs = new PosixFileSystem();  // never destroyed: may be used at exit
  return *fs;
}

}  // namespace strata::io
