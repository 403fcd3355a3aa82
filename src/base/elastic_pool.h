// A thread pool that grows with demand: a task submitted while every thread
// is busy gets a new thread (up to `max_threads`), and threads idle for
// `idle_exit` end. For work that mostly waits (blocking backend calls given
// a deadline), where a fixed pool would cap concurrency and make queued calls
// spend their deadline waiting for a thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/executor.h"

namespace strata {

class ElasticThreadPool : public Executor {
 public:
  ElasticThreadPool(size_t max_threads, std::chrono::milliseconds idle_exit, std::string name = "strata-elastic");
  // Runs what is queued, then joins every thread.
  ~ElasticThreadPool() override;
  ElasticThreadPool(const ElasticThreadPool&) = delete;
  ElasticThreadPool& operator=(const ElasticThreadPool&) = delete;

  // Never blocks: past max_threads busy threads, tasks queue.
  void Submit(std::function<void()> task) override;
  size_t threads() const;  // alive now

 private:
  void Loop(std::list<std::thread>::iterator self);
  void JoinExitedLocked(std::vector<std::thread>* joinable);

  const size_t max_threads_;
  const std::chrono::milliseconds idle_exit_;
  const std::string name_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::list<std::thread> threads_;                        // alive or exiting
  std::vector<std::list<std::thread>::iterator> exited_;  // returned from Loop, to join
  size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace strata
