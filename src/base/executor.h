// Executors run closures on background threads. Code that needs concurrency
// takes an Executor& so tests can substitute an inline one.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strata {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `task` at some point; never blocks on the task itself. Thread-safe.
  virtual void Submit(std::function<void()> task) = 0;
};

// Fixed-size pool of threads with a FIFO queue. The destructor drains the
// queue and joins the threads.
class ThreadPool : public Executor {
 public:
  explicit ThreadPool(size_t threads, std::string name = "strata-pool");
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Submit(std::function<void()> task) override;
  size_t size() const { return threads_.size(); }
  size_t QueueDepth() const;

 private:
  void Loop();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

// Runs tasks on the caller's thread, immediately (for tests).
class InlineExecutor : public Executor {
 public:
  void Submit(std::function<void()> task) override { task(); }
};

// Waits for a set of submitted tasks: Add() before Submit, Done() at the end of
// each task (Run() does both). Wait() blocks until all are done.
class TaskGroup {
 public:
  explicit TaskGroup(Executor& executor) : executor_(executor) {}
  ~TaskGroup() { Wait(); }
  void Run(std::function<void()> task);
  void Wait();

 private:
  Executor& executor_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t pending_ = 0;
};

// Runs fn(i) for i in [0, n) with at most `parallelism` running at once on
// fresh threads, and waits. For bounded fan-out (parallel parts, ranged GETs).
void ParallelFor(size_t n, size_t parallelism, const std::function<void(size_t)>& fn);

// Lets ParallelFor workers run one step strictly in index order, e.g. to hash
// parts read in parallel as one stream: RunInOrder(i, fn) waits until the
// steps of 0..i-1 have run, runs fn (serially, under a lock), then lets i+1
// go. A worker that fails or skips its index before its step must Cancel(),
// which releases every waiter with false. Relies on indices being handed out
// in increasing order (ParallelFor does), so the lowest one never waits on a
// higher one. Thread-safe.
class Sequencer {
 public:
  bool RunInOrder(size_t i, const std::function<void()>& fn);
  void Cancel();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t next_ = 0;
  bool cancelled_ = false;
};

}  // namespace strata
