#include "io/uring_read.h"

#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "base/log.h"

namespace strata::io {
namespace {

constexpr unsigned kRingDepth = 16;  // parts in flight per call at most (larger parts beyond that)

std::atomic<bool> g_unavailable{false};
thread_local bool t_off = false;

bool OffByEnvironment() {
  static const bool off = [] {
    const char* v = std::getenv("STRATA_IO_URING");
    const bool off = v != nullptr && (std::string_view(v) == "off" || std::string_view(v) == "0");
    if (off) STRATA_LOG_INFO("io_uring off (STRATA_IO_URING={}): disk cache blocks are read with one pread each", v);
    return off;
  }();
  return off;
}

// One ring per thread: submissions need no lock, and a ring is a few pages.
struct ThreadRing {
  io_uring ring{};
  int error = 0;
  ThreadRing() { error = -io_uring_queue_init(kRingDepth, &ring, 0); }
  ~ThreadRing() {
    if (error == 0) io_uring_queue_exit(&ring);
  }
  ThreadRing(const ThreadRing&) = delete;
  ThreadRing& operator=(const ThreadRing&) = delete;
};

io_uring* Ring() {
  if (t_off || g_unavailable.load(std::memory_order_relaxed) || OffByEnvironment()) return nullptr;
  thread_local ThreadRing ring;
  if (ring.error == 0) return &ring.ring;
  if (!g_unavailable.exchange(true)) {
    STRATA_LOG_WARN("io_uring unavailable ({}): disk cache blocks are read with one pread each",
                    std::strerror(ring.error));
  }
  return nullptr;
}

Status ReadError(int err, const std::string& path) {
  return Status(err == ENOSPC ? Code::kNoSpace : Code::kIOError, "read " + path + ": " + std::strerror(err),
                "errno " + std::to_string(err));
}

}  // namespace

bool UringAvailable() { return Ring() != nullptr; }

ScopedUringOff::ScopedUringOff() : was_(t_off) { t_off = true; }
ScopedUringOff::~ScopedUringOff() { t_off = was_; }

Result<size_t> UringReadParts(int fd, uint64_t offset, size_t n, void* dst, size_t part,
                              const std::function<void(size_t)>& landed, const std::string& path) {
  io_uring* ring = Ring();
  if (ring == nullptr) return NotSupportedError("io_uring is unavailable");
  auto* out = static_cast<uint8_t*>(dst);
  // Whole pages (O_DIRECT needs them aligned), at most kRingDepth of them.
  constexpr size_t kPage = 4096;
  part = (std::max({part, (n + kRingDepth - 1) / kRingDepth, size_t{1}}) + kPage - 1) / kPage * kPage;
  const size_t parts = std::max<size_t>(1, n / part);
  struct Part {
    uint64_t begin = 0;
    size_t length = 0;
    int result = 0;
    bool done = false;
  };
  std::vector<Part> p(parts);
  for (size_t i = 0; i < parts; ++i) {
    p[i].begin = i * part;
    p[i].length = i + 1 == parts ? n - p[i].begin : part;
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    if (sqe == nullptr) return InternalError("io_uring submission queue full");  // kRingDepth bounds parts
    io_uring_prep_read(sqe, fd, out + p[i].begin, static_cast<unsigned>(p[i].length), offset + p[i].begin);
    io_uring_sqe_set_data64(sqe, i);
  }
  for (int r = io_uring_submit(ring); r < 0;) {
    if (r != -EINTR && r != -EAGAIN) return ReadError(-r, path);
    r = io_uring_submit(ring);
  }
  // Every submitted read is reaped before returning, even after an error:
  // the kernel writes into `dst` until it completes.
  size_t next = 0, landed_bytes = 0;
  for (size_t reaped = 0; reaped < parts;) {
    io_uring_cqe* cqe = nullptr;
    int r = io_uring_wait_cqe(ring, &cqe);
    if (r == -EINTR) continue;
    if (r < 0) return ReadError(-r, path);  // the ring is unusable; nothing more will complete
    Part& done = p[io_uring_cqe_get_data64(cqe)];
    done.result = cqe->res;
    done.done = true;
    io_uring_cqe_seen(ring, cqe);
    ++reaped;
    // Leading parts complete and whole: the caller may use them now.
    while (next < parts && p[next].done && p[next].result == static_cast<int>(p[next].length)) {
      landed_bytes += p[next++].length;
      if (landed) landed(landed_bytes);
    }
  }
  // The rest in order: retried, short reads finished the plain way (EOF ends it).
  size_t total = landed_bytes;
  for (size_t i = next; i < parts; ++i) {
    size_t got = p[i].result > 0 ? static_cast<size_t>(p[i].result) : 0;
    if (p[i].result < 0 && p[i].result != -EINTR && p[i].result != -EAGAIN) return ReadError(-p[i].result, path);
    while (got < p[i].length) {
      ssize_t r = ::pread(fd, out + p[i].begin + got, p[i].length - got, static_cast<off_t>(offset + p[i].begin + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return ReadError(errno, path);
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    total += got;
    if (landed && got > 0) landed(total);
    if (got < p[i].length) return total;  // end of file
  }
  return total;
}

}  // namespace strata::io
