// POSIX helpers for the file store (internal to object/): the ordered
// directory walk behind List (its reads and writes go through io/FileSystem).
#pragma once

#include <sys/stat.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/buffer.h"
#include "base/status.h"
#include "object/list_util.h"

namespace strata {

// Owns a file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  ~UniqueFd();
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// Entries of a directory with the sort keys that make a depth-first walk
// produce full keys in S3 byte order: a subdirectory "d" sorts as "d/", so
// "a-b" < "a/x" < "a0" come out in that order.
struct FileDirEntry {
  std::string sort_name;  // name, plus '/' for directories
  bool is_dir = false;
};
// NotFound if missing or not a directory. Skips ".", "..", non-regular files
// and, at the root (rel == ""), the staging directory.
Result<std::vector<FileDirEntry>> ReadSortedDir(int root_fd, const std::string& rel);

// The ordered walk over a file store's keys (see ListCursor). `info` returns
// the info for one key (nullopt if gone).
class FileCursor : public ListCursor {
 public:
  using InfoFn = std::function<Result<std::optional<ObjectInfo>>(const std::string&)>;
  FileCursor(int root_fd, std::string prefix, InfoFn info);
  void Skip(const std::string& after, bool skip_prefix) override;
  Result<std::optional<std::string>> Next() override;
  Result<std::optional<ObjectInfo>> Info(const std::string& key) override { return info_(key); }

 private:
  struct Frame {
    std::string dir;  // "" or "a/b/"
    std::vector<FileDirEntry> entries;
    size_t next = 0;
  };
  bool MayContain(const std::string& path, bool is_dir) const;

  int root_fd_;
  std::string prefix_;
  InfoFn info_;
  std::string after_;
  bool skip_prefix_ = false;
  bool started_ = false;
  std::vector<Frame> frames_;
};

}  // namespace strata
