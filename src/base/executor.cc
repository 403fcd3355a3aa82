#include "base/executor.h"

#include <pthread.h>

#include <atomic>
#include <exception>

#include "base/log.h"

namespace strata {

Status ExceptionToStatus(std::string_view what, const char* exception_what) {
  STRATA_LOG_ERROR("{}: an exception escaped: {} (failing this operation only)", what, exception_what);
  return InternalError(std::string(what) + ": an exception escaped: " + exception_what);
}

ThreadPool::ThreadPool(size_t threads, std::string name) {
  if (threads == 0) threads = 1;
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([this] { Loop(); });
    std::string thread_name = name.substr(0, 15);  // the kernel's limit
    pthread_setname_np(threads_.back().native_handle(), thread_name.c_str());
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

size_t ThreadPool::QueueDepth() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

void ThreadPool::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    RunGuarded("thread pool task", task).IgnoreError();  // logged; the pool goes on
  }
}

void SubmitWithStatus(Executor& executor, std::function<Status()> task, std::function<void(Status)> done) {
  executor.Submit([task = std::move(task), done = std::move(done)] {
    Status st = RunGuarded("task", task);
    RunGuarded("task completion", [&] { done(std::move(st)); }).IgnoreError();
  });
}

void TaskGroup::Run(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    ++pending_;
  }
  executor_.Submit([this, task = std::move(task)] {
    Status st = RunGuarded("task group task", task);
    std::lock_guard lock(mu_);
    if (!st.ok() && first_error_.ok()) first_error_ = st;
    if (--pending_ == 0) cv_.notify_all();
  });
}

Status TaskGroup::status() {
  std::lock_guard lock(mu_);
  return first_error_;
}

void TaskGroup::Wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return pending_ == 0; });
}

void ParallelFor(size_t n, size_t parallelism, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (parallelism <= 1 || n == 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  if (parallelism > n) parallelism = n;
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::exception_ptr first;  // carried to the caller's thread
  std::vector<std::thread> threads;
  threads.reserve(parallelism);
  for (size_t t = 0; t < parallelism; ++t) {
    threads.emplace_back([&] {
      try {
        for (size_t i = next++; i < n; i = next++) fn(i);
      } catch (...) {
        next = n;  // the others stop at their next index
        std::lock_guard lock(mu);
        if (!first) first = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

bool Sequencer::RunInOrder(size_t i, const std::function<void()>& fn) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return cancelled_ || next_ == i; });
  if (cancelled_) return false;
  fn();
  ++next_;
  cv_.notify_all();
  return true;
}

void Sequencer::Cancel() {
  {
    std::lock_guard lock(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
}

}  // namespace strata
