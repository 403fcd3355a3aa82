#include "gateway/body_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

namespace strata::gateway {

Result<std::shared_ptr<BodyFile>> BodyFile::Create(const std::string& dir) {
  std::string d = dir;
  if (d.empty()) {
    const char* t = std::getenv("TMPDIR");
    d = t && *t ? t : "/tmp";
  }
  int fd = ::open(d.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    std::string path = d + "/.strata-body-XXXXXX";
    fd = ::mkostemp(path.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(path.c_str());  // nameless from here on
  }
  if (fd < 0) return ErrnoToStatus(errno, "creating a temp file for a request body in " + d);
  return std::shared_ptr<BodyFile>(new BodyFile(fd, d));
}

BodyFile::~BodyFile() { ::close(fd_); }

Status BodyFile::Append(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(size_));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return ErrnoToStatus(errno, "writing a request body to " + dir_);
    p += w;
    n -= static_cast<size_t>(w);
    size_ += static_cast<uint64_t>(w);
  }
  return Status::Ok();
}

Result<Buffer> BodyFile::Read(uint64_t offset, size_t n) const {
  if (offset > size_) offset = size_;
  n = static_cast<size_t>(std::min<uint64_t>(n, size_ - offset));
  MutableBuffer buf(n);
  STRATA_RETURN_IF_ERROR(ReadInto(offset, buf.data(), n));
  return std::move(buf).Freeze();
}

Status BodyFile::ReadInto(uint64_t offset, void* dst, size_t n) const {
  if (offset > size_ || n > size_ - offset) return OutOfRangeError("read past the end of a request body temp file");
  char* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoToStatus(errno, "reading a request body back from " + dir_);
    if (r == 0) return IOError("request body temp file in " + dir_ + " is shorter than written");
    done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

Status BodyFile::ForEachPiece(size_t piece, const std::function<Status(std::string_view)>& fn) const {
  for (uint64_t off = 0; off < size_; off += piece) {
    STRATA_ASSIGN_OR_RETURN(Buffer b, Read(off, piece));
    STRATA_RETURN_IF_ERROR(fn(b.view()));
  }
  return Status::Ok();
}

}  // namespace strata::gateway
