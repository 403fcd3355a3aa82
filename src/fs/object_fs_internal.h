// ObjectFs's private records and helpers, shared by its source files. Not a public API.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "fs/bounded_reads.h"
#include "fs/object_fs.h"
#include "fs/write_buffers.h"

namespace strata::fs {

struct ObjectFs::Handle {
  Ino ino = 0;
  bool writable = false;
  std::shared_ptr<Writer> writer;  // writers, and readers of a file being written here
  std::shared_ptr<Reader> reader;  // readers of a stored version
  std::string key, etag;
};

// Which version of an object its metadata was read from: ETag and
// Last-Modified in whole seconds (a listing has milliseconds, HEAD seconds).
// A server-side copy onto itself (chmod by any client) changes the latter.
inline std::string MetaVersion(const std::string& etag, WallTime mtime) {
  return etag + "@" +
         std::to_string(std::chrono::duration_cast<std::chrono::seconds>(mtime.time_since_epoch()).count());
}

// Directory key of a path: the listing prefix ("" for the root).
inline std::string DirKey(const std::string& path) { return path.empty() ? path : path + "/"; }

inline std::string ChildPath(const std::string& dir, std::string_view name) {
  return dir.empty() ? std::string(name) : dir + "/" + std::string(name);
}

// Backend failures below the namespace surface as IOError naming the object,
// except NotFound (ENOENT is the honest answer).
inline Status BackendError(const Status& st, std::string_view what) {
  if (st.ok() || st.code() == Code::kNotFound) return st;
  return Status(Code::kIOError, std::string(what) + ": " + st.message(), st.cause(), st.retryable())
      .WithForeignCode(st.foreign_code());
}

}  // namespace strata::fs
