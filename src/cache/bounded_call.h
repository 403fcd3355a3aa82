// RunBounded: one backend call on a pool, waited for up to a deadline, then
// left to finish (and fill the cache) in the background. Internal to
// CachedStore (cached_store*.cc).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/executor.h"
#include "base/mutex.h"
#include "base/status.h"

namespace strata::cache {

// Bounds the threads of a bucket's wait pool: far above what a gateway's
// workers x parallel block fetches ask for at once, far below a thread storm.
inline constexpr size_t kMaxWaitThreads = 512;

template <typename T>
struct BoundedCall {
  Mutex mu;
  CondVar cv;
  std::optional<Result<T>> result GUARDED_BY(mu);
};

template <typename T>
Result<T> RunBounded(Executor& pool, Duration timeout, std::function<Result<T>()> fn, const std::string& what) {
  auto call = std::make_shared<BoundedCall<T>>();
  pool.Submit([call, fn = std::move(fn), what] {
    Result<T> r = InternalError("not run");
    Status st = RunGuarded(what, [&] { r = fn(); });
    if (!st.ok()) r = st;
    MutexLock lock(call->mu);
    call->result = std::move(r);
    call->cv.NotifyAll();
  });
  MutexLock lock(call->mu);
  // Real time: a hung backend does not advance a test's fake clock.
  if (!call->cv.WaitFor(lock, timeout, [&]() REQUIRES(call->mu) { return call->result.has_value(); })) {
    return Status(Code::kDeadlineExceeded,
                  what + ": no answer from the store within " +
                      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) + " ms",
                  "", /*retryable=*/true);
  }
  return *call->result;
}

}  // namespace strata::cache
