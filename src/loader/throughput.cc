#include "loader/throughput.h"

#include <cmath>

namespace strata::loader {

std::optional<Throughput::TimePoint> Throughput::Begin(uint64_t bytes, double max_seconds) {
  MutexLock lock(mu_);
  const TimePoint now = std::chrono::steady_clock::now();
  if (in_flight_ > 0 && std::isfinite(max_seconds)) {
    const double rate = bytes_ ? bytes_ / std::chrono::duration<double>(busy_ + (now - busy_since_)).count() : 0;
    if (rate <= 0 || static_cast<double>(bytes_in_flight_ + bytes) / rate > max_seconds) return std::nullopt;
  }
  if (in_flight_++ == 0) busy_since_ = now;
  bytes_in_flight_ += bytes;
  return now;
}

void Throughput::End(TimePoint start, uint64_t bytes, uint64_t landed) {
  MutexLock lock(mu_);
  const TimePoint now = std::chrono::steady_clock::now();
  bytes_in_flight_ -= bytes;
  if (landed > 0) bytes_ += landed, read_time_ += now - start;
  if (--in_flight_ == 0) busy_ += now - busy_since_;
}

double Throughput::BytesPerSecondPerRead() const {
  MutexLock lock(mu_);
  const double seconds = std::chrono::duration<double>(read_time_).count();
  return bytes_ == 0 || seconds <= 0 ? 0 : static_cast<double>(bytes_) / seconds;
}

}  // namespace strata::loader
