// POSIX helpers for the file store (internal to object/): the key <-> path
// layout, the ordered directory walk behind List, and the two atomic
// file <-> directory conversions (link + renameat2 RENAME_EXCHANGE, which
// io/FileSystem does not offer; everything else goes through it).
//
// Layout: a key is split at '/' into segments; a segment is stored under its
// own name when that is a "plain" name (non-empty, not "." or "..", not
// starting with ".strata-", at most 255 bytes), else as ".strata-x" + the
// segment (so "dir/" is the file dir/.strata-x and "a//b" is a/.strata-x/b).
// When key "a" and keys under "a/" both exist, "a" is a directory and the
// object "a" is the file a/.strata-self. Every other name starting with
// ".strata-" (staging, conversions in flight) is internal and never listed.
#pragma once

#include <sys/stat.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/buffer.h"
#include "base/status.h"
#include "io/file_system.h"
#include "object/list_util.h"

namespace strata::object {

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

inline constexpr std::string_view kReservedPrefix = ".strata-";
inline constexpr std::string_view kEscapePrefix = ".strata-x";  // + a segment with no plain name
inline constexpr std::string_view kSelfName = ".strata-self";   // the object named like its directory
inline constexpr std::string_view kConvPrefix = ".strata-conv-";

// Whether the segment is stored under its own name.
bool IsPlainSegment(std::string_view segment);
// The on-disk names of the key's segments ("" is one empty segment);
// InvalidArgument when a segment's name would exceed 255 bytes.
Result<std::vector<std::string>> EncodeKeyPath(std::string_view key);
// The key segment a directory entry stands for; nullopt for internal names
// (and for a non-canonical ".strata-x<plain>", so no key has two names).
std::optional<std::string> DecodeName(std::string_view name);
// The first `n` names joined with '/'.
std::string JoinNames(const std::vector<std::string>& names, size_t n);

// Makes the regular file `rel` (relative to root_fd) a directory holding it
// as .strata-self, atomically: `conv` (an unused internal name in the same
// directory) is made a directory, the file linked into it and exchanged with
// it. Without hard links or RENAME_EXCHANGE, two renames (the object is
// briefly invisible). The inode, and so its xattrs, is kept.
Status ConvertFileToDir(int root_fd, const std::string& rel, const std::string& conv, bool fsync);
// The reverse, for a directory holding only .strata-self: its object becomes
// the file `rel` again. Unsupported without RENAME_EXCHANGE (the directory is
// then left as it is, which is a valid layout too).
Status ConvertDirToFile(int root_fd, const std::string& rel, const std::string& conv, bool fsync);

// Entries of a directory with the sort keys that make a depth-first walk
// produce full keys in S3 byte order: a subdirectory "d" sorts as "d/", so
// "a-b" < "a/x" < "a0" come out in that order.
struct FileDirEntry {
  std::string sort_name;  // the decoded segment, plus '/' for directories
  bool is_dir = false;
  std::string name;  // on disk, relative to the directory ("d/.strata-self" for the object "d")
};
// NotFound if missing or not a directory. Skips ".", "..", non-regular files
// and internal names; a directory "d" holding .strata-self gives two entries
// ("d" and "d/"). `raw`: names as they are, nothing decoded or hidden (for
// staging directories).
Result<std::vector<FileDirEntry>> ReadSortedDir(int root_fd, const std::string& rel, bool raw = false);

// Whether the tree under root_fd holds any key.
Result<bool> HasAnyKey(int root_fd);
// For a tree without keys: removes its empty directories and internal
// leftovers (of conversions a crash interrupted), not following symlinks.
// Best effort; whatever else is there stays.
void PruneNonKeys(int root_fd);

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
    std::string dir;   // the key prefix: "" or "a/b/"
    std::string path;  // on disk, relative to the root: "" or "a/b"
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

// Whole-file helpers over io::FileSystem files, in pieces of kFileChunk bytes.
inline constexpr size_t kFileChunk = 1 << 20;
// Reads [offset, offset+n) exactly; Unavailable if the file got shorter.
Status ReadExactly(io::RandomAccessFile& file, uint64_t offset, size_t n, void* dst, std::string_view what);
// Appends the first `size` bytes of `in` to `out`.
Status CopyInto(io::RandomAccessFile& in, uint64_t size, io::WritableFile& out, std::string_view what);
// Hex MD5 of the first `size` bytes of `file`.
Result<std::string> Md5HexOf(io::RandomAccessFile& file, uint64_t size, std::string_view what);

}  // namespace strata::object
