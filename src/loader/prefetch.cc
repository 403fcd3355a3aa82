#include "loader/prefetch.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace strata::loader {
namespace {

constexpr double kMaxRequests = 64;  // the fit remembers about this many requests

uint64_t ToBytes(double v) {
  if (!(v > 0)) return 0;
  if (v >= 1.8e19) return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(v);
}

}  // namespace

PrefetchSizer::PrefetchSizer(PrefetchLimits limits, Clock& clock) : limits_(limits), clock_(clock) {
  limits_.max_connections = std::max<size_t>(limits_.max_connections, 1);
  limits_.headroom = std::max(limits_.headroom, 1.0);
}

void PrefetchSizer::OnConsumed(uint64_t bytes, Duration waited) {
  const TimePoint now = clock_.Now();
  if (!consumed_once_) {  // the first take ends start-up, which is not the consumer's pace
    consumed_once_ = true;
    last_take_ = now;
    return;
  }
  const double busy = std::max(0.0, Seconds(now - last_take_) - Seconds(waited));
  last_take_ = now;
  taken_bytes_ += double(bytes);
  busy_seconds_ += busy;
  const double horizon = std::max(Seconds(limits_.horizon), 1e-3);
  while (busy_seconds_ > horizon) {
    taken_bytes_ /= 2;
    busy_seconds_ /= 2;
  }
}

void PrefetchSizer::OnFetched(uint64_t bytes, size_t connections, Duration elapsed) {
  const double x = double(bytes) / double(std::max<size_t>(connections, 1));
  const double y = std::max(Seconds(elapsed), 0.0);
  if (n_ >= kMaxRequests) {
    n_ /= 2, sx_ /= 2, sy_ /= 2, sxx_ /= 2, sxy_ /= 2;
  }
  n_ += 1, sx_ += x, sy_ += y, sxx_ += x * x, sxy_ += x * y;
}

double PrefetchSizer::DemandBytesPerSecond() const {
  if (taken_bytes_ <= 0) return -1;
  if (busy_seconds_ < 1e-6) return -1;  // a consumer that never works between takes: unbounded
  return taken_bytes_ / busy_seconds_;
}

double PrefetchSizer::FirstByteSeconds() const {
  if (n_ < 2) return -1;
  const double mx = sx_ / n_, my = sy_ / n_;
  const double var = sxx_ / n_ - mx * mx, cov = sxy_ / n_ - mx * my;
  // Sizes too alike (or a negative slope) do not separate latency from bandwidth.
  if (var <= (0.05 * mx) * (0.05 * mx) || cov <= 0) return -1;
  return std::max(0.0, my - (cov / var) * mx);
}

double PrefetchSizer::ConnectionBytesPerSecond() const {
  if (n_ <= 0 || sy_ <= 0) return -1;
  const double mx = sx_ / n_, my = sy_ / n_;
  const double first = FirstByteSeconds();
  // Without a separate latency the whole time is charged to bandwidth, which
  // still gives W exactly for requests of the size measured.
  const double transfer = first >= 0 ? my - first : my;
  return transfer > 0 ? mx / transfer : -1;
}

double PrefetchSizer::RequestSeconds(uint64_t bytes) const {
  const double bw = ConnectionBytesPerSecond();
  if (bw <= 0) return n_ > 0 ? sy_ / n_ : -1;
  return std::max(0.0, FirstByteSeconds()) + double(bytes) / bw;
}

uint64_t PrefetchSizer::InflightBytes(uint64_t request_bytes, uint64_t floor_bytes) const {
  const double demand = DemandBytesPerSecond(), w = RequestSeconds(request_bytes);
  // Batches larger than the budget (unet3d's 7 x 140 MiB against 1 GiB):
  // the floor's bytes are admitted ahead whatever the budget says, so
  // capping the requests that fetch them below it only leaves connections
  // idle (unet3d cold: 70-79% of the connection ceiling, 81-90% without).
  const uint64_t budget = std::max(limits_.budget_bytes, floor_bytes);
  if (demand < 0 || w < 0) return std::max(budget, request_bytes);  // not measured: fill the budget
  uint64_t want = ToBytes(std::ceil(demand * w * limits_.headroom));
  return std::clamp<uint64_t>(want, std::min(request_bytes, budget), std::max(budget, request_bytes));
}

uint64_t PrefetchSizer::WindowBytes(uint64_t request_bytes, uint64_t floor_bytes) const {
  const uint64_t inflight = InflightBytes(request_bytes);
  const uint64_t sum = inflight > std::numeric_limits<uint64_t>::max() - floor_bytes
                           ? std::numeric_limits<uint64_t>::max()
                           : inflight + floor_bytes;
  return std::max(floor_bytes, std::min(limits_.budget_bytes, sum));
}

size_t PrefetchSizer::Connections(uint64_t request_bytes, uint64_t floor_bytes) const {
  // Nothing to size by yet: as many as allowed (the window still bounds the bytes).
  if (DemandBytesPerSecond() < 0 || RequestSeconds(request_bytes) < 0) return limits_.max_connections;
  const uint64_t b = std::max<uint64_t>(request_bytes, 1);
  const uint64_t n = (InflightBytes(b, floor_bytes) + b - 1) / b;
  return static_cast<size_t>(std::clamp<uint64_t>(n, 1, limits_.max_connections));
}

}  // namespace strata::loader
