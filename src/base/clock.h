// Time behind an interface so tests control it: code takes a Clock&, tests
// pass a FakeClock and Advance() it instead of sleeping. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace strata {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;      // monotonic
  virtual WallTime WallNow() const = 0;   // calendar time
  virtual void SleepFor(Duration d) = 0;  // a FakeClock blocks until Advance()d past it
  void SleepUntil(TimePoint t) {
    auto now = Now();
    if (t > now) SleepFor(t - now);
  }
};

// The process-wide real clock.
Clock& RealClock();

// Manual clock. SleepFor blocks the calling thread until another thread
// Advance()s time far enough; with auto_advance set, SleepFor advances the
// clock itself and returns at once (handy for single-threaded tests of code
// that sleeps, e.g. retry backoff).
class FakeClock : public Clock {
 public:
  explicit FakeClock(bool auto_advance = false) : auto_advance_(auto_advance) {}
  TimePoint Now() const override;
  WallTime WallNow() const override;
  void SleepFor(Duration d) override;
  void Advance(Duration d);
  // Total time slept through SleepFor (useful to assert on backoff).
  Duration TotalSlept() const;
  // Number of threads currently blocked in SleepFor.
  int Sleepers() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Duration elapsed_{0};
  Duration slept_{0};
  int sleepers_ = 0;
  bool auto_advance_;
};

// Seconds as a double, for reports.
inline double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace strata
