#include "base/periodic_task.h"

#include <pthread.h>

#include <utility>

#include "base/executor.h"

namespace strata {

PeriodicTask::PeriodicTask(std::string name, Duration interval, std::function<void()> tick)
    : name_(std::move(name)), interval_(interval), tick_(std::move(tick)), thread_([this] { Loop(); }) {}

PeriodicTask::~PeriodicTask() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  thread_.join();
}

void PeriodicTask::Loop() {
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  MutexLock lock(mu_);
  while (!cv_.WaitFor(lock, interval_, [this]() REQUIRES(mu_) { return stop_; })) {
    lock.Unlock();
    RunGuarded(name_, tick_).IgnoreError();  // logged; the next tick runs again
    lock.Lock();
  }
}

}  // namespace strata
