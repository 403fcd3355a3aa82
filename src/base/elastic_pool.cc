#include "base/elastic_pool.h"

#include <pthread.h>

namespace strata {

ElasticThreadPool::ElasticThreadPool(size_t max_threads, std::chrono::milliseconds idle_exit, std::string name)
    : max_threads_(max_threads == 0 ? 1 : max_threads), idle_exit_(idle_exit), name_(std::move(name)) {}

ElasticThreadPool::~ElasticThreadPool() {
  std::list<std::thread> all;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  // Threads still running tasks drain the queue; each exits once it is empty.
  for (;;) {
    std::thread t;
    {
      std::lock_guard lock(mu_);
      if (threads_.empty()) break;
      t = std::move(threads_.front());
      threads_.pop_front();
    }
    // An idle thread that left earlier may be named in exited_: cleared below, unused.
    t.join();
  }
  std::lock_guard lock(mu_);
  exited_.clear();
}

void ElasticThreadPool::JoinExitedLocked(std::vector<std::thread>* joinable) {
  for (auto it : exited_) {
    joinable->push_back(std::move(*it));
    threads_.erase(it);
  }
  exited_.clear();
}

void ElasticThreadPool::Submit(std::function<void()> task) {
  std::vector<std::thread> finished;
  {
    std::lock_guard lock(mu_);
    JoinExitedLocked(&finished);
    queue_.push_back(std::move(task));
    if (idle_ < queue_.size() && threads_.size() < max_threads_) {
      threads_.emplace_back();
      auto self = std::prev(threads_.end());
      *self = std::thread([this, self] { Loop(self); });
      std::string thread_name = name_.substr(0, 15);  // the kernel's limit
      pthread_setname_np(self->native_handle(), thread_name.c_str());
    }
  }
  cv_.notify_one();
  for (auto& t : finished) t.join();  // already out of Loop: quick
}

size_t ElasticThreadPool::threads() const {
  std::lock_guard lock(mu_);
  return threads_.size() - exited_.size();
}

void ElasticThreadPool::Loop(std::list<std::thread>::iterator self) {
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    const bool woke = cv_.wait_for(lock, idle_exit_, [&] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) {
      // Stopping with nothing left (the destructor joins us), or idle for
      // idle_exit_ (the next Submit joins us).
      if (!woke) exited_.push_back(self);
      return;
    }
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    RunGuarded("thread pool task", task).IgnoreError();  // logged; the pool goes on
    task = nullptr;                                      // destroy captures outside the lock
    lock.lock();
  }
}

}  // namespace strata
