// The file store's functions on a root directory that need no open store:
// the key check `strata cp` uses to write keys as plain paths, and removing
// an empty store (DeleteBucket). Split from file_store.cc, which holds the
// store itself.

#include <cerrno>
#include <climits>
#include <cstring>

#include "io/durable.h"
#include "io/file_system.h"
#include "object/file_store.h"
#include "object/file_util.h"

namespace strata::object {
namespace {

std::string Quote(std::string_view key) { return "'" + std::string(key) + "'"; }

}  // namespace

Status ValidateFileKey(std::string_view key) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("key " + Quote(key) + " cannot be stored in a file store: " + why);
  };
  if (key.front() == '/') return bad("it starts with '/'");
  size_t start = 0;
  for (;;) {
    size_t slash = key.find('/', start);
    std::string_view seg = key.substr(start, slash == std::string_view::npos ? key.npos : slash - start);
    if (seg.empty()) return bad("it has an empty path segment (\"//\" or a trailing '/')");
    if (seg == "." || seg == "..") return bad("it has a '.' or '..' segment");
    if (seg.size() > NAME_MAX) return bad("a path segment is longer than 255 bytes");
    if (start == 0 && seg == kFileStoreStagingDir) return bad("'.strata-tmp' is reserved for staging");
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return Status::Ok();
}

Status RemoveEmptyFileStore(const std::string& root_dir, io::FileSystem& fs) {
  UniqueFd root_fd;
  auto has_keys = [&]() -> Result<bool> {
    if (!root_fd.valid()) {
      STRATA_ASSIGN_OR_RETURN(int fd, fs.OpenDirectory(root_dir));
      root_fd = UniqueFd(fd);
    }
    return HasAnyKey(root_fd.get());
  };
  auto not_empty = [&] { return PreconditionFailedError("file store '" + root_dir + "' is not empty"); };
  auto missing = [&] { return NotFoundError("no file store at '" + root_dir + "'"); };
  auto keys = has_keys();
  if (!keys.ok()) {
    if (keys.status().code() == Code::kNotFound) return missing();
    return keys.status().WithContext("listing file store '" + root_dir + "'");
  }
  if (*keys) return not_empty();
  STRATA_RETURN_IF_ERROR(io::RemoveAll(fs, root_dir + "/" + std::string(kFileStoreStagingDir))
                             .WithContext("removing the staging directory of '" + root_dir + "'"));
  // No keys: what is left is empty directories and internal leftovers.
  PruneNonKeys(root_fd.get());
  Status removed = fs.RemoveDir(root_dir);
  if (removed.ok()) return Status::Ok();
  if (removed.code() == Code::kNotFound) return missing();
  auto again = has_keys();
  if (again.ok() && *again) return not_empty();  // a key arrived meanwhile
  if (removed.cause() == std::strerror(ENOTEMPTY)) {
    return PreconditionFailedError("file store '" + root_dir +
                                   "' holds files that are not objects (not regular files)");
  }
  return removed.WithContext("removing file store '" + root_dir + "'");
}

}  // namespace strata::object
