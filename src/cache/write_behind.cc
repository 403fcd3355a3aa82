#include "cache/write_behind.h"

#include <pthread.h>

#include "base/executor.h"
#include "base/log.h"

namespace strata::cache {

WriteBehind::WriteBehind(WriteBehindOptions options) : options_(std::move(options)) {
  for (size_t i = 0; i < std::max<size_t>(options_.threads, 1); ++i) {
    threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), options_.name.substr(0, 15).c_str());
      Loop();
    });
  }
}

WriteBehind::~WriteBehind() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

bool WriteBehind::TryQueue(uint64_t bytes, std::function<void()> write) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || (bytes_ > 0 && bytes_ + bytes > options_.max_bytes)) return false;
    bytes_ += bytes;
    queue_.push_back(Job{bytes, std::move(write)});
  }
  cv_.notify_one();
  return true;
}

void WriteBehind::Drain() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return bytes_ == 0; });
}

uint64_t WriteBehind::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

void WriteBehind::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued was written
    Job job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Status st = RunGuarded(options_.name, job.write);
    if (!st.ok()) STRATA_LOG_WARN("{}: a write failed: {}", options_.name, st.ToString());
    job.write = nullptr;  // what it holds (the block's bytes) goes before the bound is released
    lock.lock();
    bytes_ -= job.bytes;
    if (bytes_ == 0) idle_cv_.notify_all();
  }
}

}  // namespace strata::cache
