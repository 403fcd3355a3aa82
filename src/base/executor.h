// Executors run closures on background threads. Code that needs concurrency
// takes an Executor& so tests can substitute an inline one.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/status.h"

namespace strata {

// Logs an exception that reached a thread's or task's boundary (with `what`:
// the thread or operation) and returns it as Internal.
Status ExceptionToStatus(std::string_view what, const char* exception_what);

// The boundary of a thread or task: runs `fn` (returning void or Status); an
// exception escaping it (a bug, bad_alloc, a throwing library) is logged with
// `what` and becomes Internal, failing this one operation instead of ending
// the process (std::terminate) as it would at a thread's top.
template <typename Fn>
Status RunGuarded(std::string_view what, Fn&& fn) {
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<Fn&>>) {
      fn();
      return Status::Ok();
    } else {
      return fn();
    }
  } catch (const std::exception& e) {
    return ExceptionToStatus(what, e.what());
  } catch (...) {
    return ExceptionToStatus(what, "an exception not derived from std::exception");
  }
}

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `task` at some point; never blocks on the task itself. Thread-safe.
  virtual void Submit(std::function<void()> task) = 0;
};

// Fixed-size pool of threads with a FIFO queue. The destructor drains the
// queue and joins the threads. A task that throws is logged and dropped (the
// pool and the process go on); one whose caller waits reports through its own
// channel (TaskGroup::Wait, SubmitWithStatus).
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

// Runs `task` on `executor` and calls `done` with its Status (Internal when it
// threw), so the waiter of this one operation sees the failure.
void SubmitWithStatus(Executor& executor, std::function<Status()> task, std::function<void(Status)> done);

// Waits for a set of submitted tasks: Add() before Submit, Done() at the end of
// each task (Run() does both). Wait() blocks until all are done. A task that
// throws still counts as done; status() is then Internal (the first one).
class TaskGroup {
 public:
  explicit TaskGroup(Executor& executor) : executor_(executor) {}
  ~TaskGroup() { Wait(); }
  void Run(std::function<void()> task);
  void Wait();
  Status status();  // OK, or the first task's escaped exception as Internal

 private:
  Executor& executor_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t pending_ = 0;
  Status first_error_;
};

// Runs fn(i) for i in [0, n) with at most `parallelism` running at once on
// fresh threads, and waits. For bounded fan-out (parallel parts, ranged GETs).
// An exception from fn is carried to the caller's thread (rethrown after every
// worker has finished), as if fn had run there: never std::terminate.
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
