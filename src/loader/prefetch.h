// PrefetchSizer: how many bytes the loader keeps in flight, from what the
// consumer takes and what a connection to the store gives (Little's law).
//
// To deliver D bytes/s when one request of b bytes takes W(b) = first byte +
// b / (bytes/s per connection), D x W(b) bytes must be in flight (D / b
// requests arriving per second, each in the system for W(b)). The sizer
// measures D as the consumer's pace while it is not waiting for the loader
// (time starved by the loader is not demand), and W from the store reads the
// loader timed, and answers:
//   InflightBytes = D x W(b) x headroom, within [one request, budget], or
//                   within the floor when that is larger (its bytes are
//                   admitted ahead anyway: see WindowBytes)
//   WindowBytes   = bytes allowed ahead of the consumer (in flight, landed or
//                   decoded): at least `floor` (prefetch_batches whole
//                   batches, or as many as the budget holds when they are
//                   that large, at least two: pipeline.cc), else
//                   InflightBytes + floor, at most the budget.
// Before a measurement exists the demand is taken as unbounded (start-up
// fills the budget: the consumer is waiting).
//
// Pure bookkeeping over a Clock: tests drive it with a FakeClock.
// Not thread-safe: the loader calls it under its own mutex.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/clock.h"

namespace strata::loader {

struct PrefetchLimits {
  uint64_t budget_bytes = 1ull << 30;          // bytes ahead of the consumer at most (beyond the floor)
  size_t max_connections = 256;                // store requests in flight at most
  double headroom = 1.5;                       // over Little's law: jitter, and catching up after a stall
  Duration horizon = std::chrono::seconds(4);  // measurements older than about this fade out
};

class PrefetchSizer {
 public:
  PrefetchSizer(PrefetchLimits limits, Clock& clock);

  // The consumer took `bytes`, having waited `waited` for them since its previous take.
  void OnConsumed(uint64_t bytes, Duration waited);
  // A read from the store: `bytes` over `connections` parallel ranged GETs took `elapsed`.
  void OnFetched(uint64_t bytes, size_t connections, Duration elapsed);

  // Estimates; a negative value: not measured yet (demand: also when the consumer never worked).
  double DemandBytesPerSecond() const;
  // One request of `bytes` on one connection; negative when nothing was fetched yet.
  double RequestSeconds(uint64_t bytes) const;
  double FirstByteSeconds() const;  // negative until requests of different sizes separate it from bandwidth
  double ConnectionBytesPerSecond() const;

  // `floor_bytes`: as WindowBytes'; when larger than the budget it is the cap.
  uint64_t InflightBytes(uint64_t request_bytes, uint64_t floor_bytes = 0) const;
  uint64_t WindowBytes(uint64_t request_bytes, uint64_t floor_bytes) const;
  // Requests in flight to cover InflightBytes, within [1, max_connections];
  // max_connections before both demand and request time are measured.
  size_t Connections(uint64_t request_bytes, uint64_t floor_bytes = 0) const;

  const PrefetchLimits& limits() const { return limits_; }

 private:
  PrefetchLimits limits_;
  Clock& clock_;
  // Demand: bytes taken and the consumer's own (non-waiting) time, both
  // halved whenever the time exceeds the horizon (recent pace counts most).
  bool consumed_once_ = false;
  TimePoint last_take_{};
  double taken_bytes_ = 0, busy_seconds_ = 0;
  // Requests: decayed sums for a least-squares fit elapsed = first_byte + x / bandwidth, x = bytes per connection.
  double n_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;
};

}  // namespace strata::loader
