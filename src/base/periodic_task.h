// PeriodicTask: runs a function on a thread of its own every `interval`
// until destroyed (the destructor wakes the thread and joins it, so the
// function never runs after it returns). For background checks such as a
// cache's free-space floor. A thrown exception is logged, not fatal: the
// next tick runs again.
#pragma once

#include <functional>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/mutex.h"

namespace strata {

class PeriodicTask {
 public:
  // `name` names the thread (at most 15 characters are kept).
  PeriodicTask(std::string name, Duration interval, std::function<void()> tick);
  ~PeriodicTask();
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;

 private:
  void Loop();

  const std::string name_;
  const Duration interval_;
  const std::function<void()> tick_;
  Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace strata
