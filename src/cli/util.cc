#include "cli/util.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "base/executor.h"

namespace strata::cli {

std::string FormatTime(WallTime t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char out[32];
  std::strftime(out, sizeof(out), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return out;
}

Status WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "write");
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Progress::Progress(std::string verb, uint64_t total_objects, uint64_t total_bytes)
    : verb_(std::move(verb)), total_objects_(total_objects), total_bytes_(total_bytes), start_(RealClock().Now()) {
  // The thread's boundary: a progress line that throws (bad_alloc) only stops the line.
  if (isatty(STDERR_FILENO))
    thread_ = std::thread([this] { RunGuarded("progress line", [this] { Loop(); }).IgnoreError(); });
}

Progress::~Progress() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  std::fputs("\r\033[K", stderr);  // clear the progress line
  std::fflush(stderr);
}

double Progress::ElapsedSeconds() const { return Seconds(RealClock().Now() - start_); }

std::string Progress::Line() const {
  double elapsed = ElapsedSeconds();
  double done = static_cast<double>(bytes());
  char eta[32] = "--";
  if (done > 0 && total_bytes_ > done) {
    std::snprintf(eta, sizeof(eta), "%.0fs", (total_bytes_ - done) * elapsed / done);
  }
  double fraction = total_bytes_ ? done / total_bytes_ : (total_objects_ ? double(objects()) / total_objects_ : 1);
  constexpr int kWidth = 24;
  int filled = std::clamp(static_cast<int>(fraction * kWidth), 0, kWidth);
  std::string bar = "[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "]";
  char line[256];
  std::snprintf(line, sizeof(line), "%s %s %llu/%llu objects  %s/%s  %s  ETA %s", verb_.c_str(), bar.c_str(),
                static_cast<unsigned long long>(objects()), static_cast<unsigned long long>(total_objects_),
                FormatBytes(done).c_str(), FormatBytes(total_bytes_).c_str(), FormatRate(done, elapsed).c_str(), eta);
  return line;
}

void Progress::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stop_; })) {
    std::fprintf(stderr, "\r\033[K%s", Line().c_str());
    std::fflush(stderr);
  }
}

std::string Progress::Summary() const {
  double elapsed = ElapsedSeconds();
  uint64_t n = objects();
  return verb_ + " " + std::to_string(n) + (n == 1 ? " object, " : " objects, ") +
         FormatBytes(static_cast<double>(bytes())) + " in " + FormatDuration(elapsed) + " (" +
         FormatRate(static_cast<double>(bytes()), elapsed) + ")";
}

}  // namespace strata::cli
