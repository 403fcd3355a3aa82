#include "base/clock.h"

#include <thread>

namespace strata {
namespace {
class SystemClock : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override { return std::chrono::system_clock::now(); }
  void SleepFor(Duration d) override {
    if (d.count() > 0) std::this_thread::sleep_for(d);
  }
};
}  // namespace

Clock& RealClock() {
  static SystemClock clock;
  return clock;
}

// Fake time starts at an arbitrary fixed point so tests are reproducible.
static const TimePoint kFakeEpoch{std::chrono::hours(1000)};
static const WallTime kFakeWallEpoch{std::chrono::seconds(1'700'000'000)};

TimePoint FakeClock::Now() const {
  std::lock_guard lock(mu_);
  return kFakeEpoch + elapsed_;
}

WallTime FakeClock::WallNow() const {
  std::lock_guard lock(mu_);
  return kFakeWallEpoch + std::chrono::duration_cast<std::chrono::system_clock::duration>(elapsed_);
}

void FakeClock::SleepFor(Duration d) {
  if (d.count() <= 0) return;  // like a real sleep; a negative d must not reduce TotalSlept()
  std::unique_lock lock(mu_);
  slept_ += d;
  if (auto_advance_) {
    elapsed_ += d;
    cv_.notify_all();
    return;
  }
  Duration until = elapsed_ + d;
  ++sleepers_;
  cv_.notify_all();
  cv_.wait(lock, [&] { return elapsed_ >= until; });
  --sleepers_;
}

void FakeClock::Advance(Duration d) {
  std::lock_guard lock(mu_);
  elapsed_ += d;
  cv_.notify_all();
}

Duration FakeClock::TotalSlept() const {
  std::lock_guard lock(mu_);
  return slept_;
}

int FakeClock::Sleepers() const {
  std::lock_guard lock(mu_);
  return sleepers_;
}

}  // namespace strata
