// A request body kept in an unnamed temp file instead of memory (large
// PutObject and UploadPart bodies): O_TMPFILE where the file system has it (the file is gone as
// soon as it is closed, crash included), else mkstemp + unlink. Read back in
// bounded pieces. Not thread-safe for appends; reads are (pread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/buffer.h"
#include "base/status.h"

namespace strata::gateway {

class BodyFile {
 public:
  // A new empty file in `dir` (empty: $TMPDIR, else /tmp).
  static Result<std::shared_ptr<BodyFile>> Create(const std::string& dir);
  ~BodyFile();
  BodyFile(const BodyFile&) = delete;
  BodyFile& operator=(const BodyFile&) = delete;

  Status Append(const void* data, size_t n);
  uint64_t size() const { return size_; }
  const std::string& dir() const { return dir_; }
  // Bytes [offset, offset + n) (clamped to size()) in a new buffer.
  Result<Buffer> Read(uint64_t offset, size_t n) const;
  // Exactly bytes [offset, offset + n) into dst (OutOfRange past size()).
  Status ReadInto(uint64_t offset, void* dst, size_t n) const;
  // Calls fn on the whole content, in pieces of at most `piece` bytes.
  Status ForEachPiece(size_t piece, const std::function<Status(std::string_view)>& fn) const;

 private:
  BodyFile(int fd, std::string dir) : fd_(fd), dir_(std::move(dir)) {}
  int fd_;
  std::string dir_;
  uint64_t size_ = 0;
};

}  // namespace strata::gateway
