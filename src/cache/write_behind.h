// WriteBehind: writes into a slower tier (the disk) done by background
// threads from a queue bounded in bytes, so the read that produced the bytes
// never waits on the disk. A write that would pass the bound is refused at
// once (the caller counts the block as not admitted) instead of queueing:
// when the disk cannot keep up, a cold read goes on at the store's pace and
// the cache keeps what the disk could take. A write larger than the whole
// bound is taken when the queue is empty.
//
// Reusable by any tier: the caller supplies the write (and, when readers must
// find bytes still queued, keeps them itself; BlockCache does). Thread-safe.
// The destructor runs what is queued, then joins.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strata::cache {

struct WriteBehindOptions {
  uint64_t max_bytes = 256ull << 20;  // queued and running writes together
  size_t threads = 1;                 // one sequential writer saturates most local disks
  std::string name = "strata-write-behind";
};

class WriteBehind {
 public:
  explicit WriteBehind(WriteBehindOptions options);
  ~WriteBehind();
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;

  // Queues `write`, which holds `bytes` of the bound until it returns. False,
  // with nothing queued, when the bound would be passed.
  bool TryQueue(uint64_t bytes, std::function<void()> write);
  // Waits until nothing is queued or running (tests, benchmarks, close).
  void Drain();
  uint64_t bytes() const;  // queued and running now
  uint64_t max_bytes() const { return options_.max_bytes; }

 private:
  struct Job {
    uint64_t bytes;
    std::function<void()> write;
  };
  void Loop();

  const WriteBehindOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<Job> queue_;
  uint64_t bytes_ = 0;  // of queue_ and the jobs running
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace strata::cache
