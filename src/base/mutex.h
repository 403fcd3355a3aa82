// A mutex the compiler can check: clang's -Wthread-safety proves at compile
// time that every member marked GUARDED_BY(mu_) is touched only with mu_ held
// and that every function marked REQUIRES(mu_) is called with it held. Under
// gcc the annotations expand to nothing (the same code, unchecked).
//
//   class Counter {
//     void Inc() { MutexLock lock(mu_); ++n_; }
//     void IncLocked() REQUIRES(mu_) { ++n_; }
//     Mutex mu_;
//     int n_ GUARDED_BY(mu_) = 0;
//   };
//
// Waits: `cv.Wait(lock, pred)` on a CondVar (std::condition_variable_any
// underneath, since it waits on the Mutex itself). The predicate runs with the
// mutex held, which the analysis cannot see through a lambda: name guarded
// members there via a REQUIRES helper, or mark the lambda NO_THREAD_SAFETY_ANALYSIS.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define STRATA_TSA(x) __attribute__((x))
#else
#define STRATA_TSA(x)
#endif

#define CAPABILITY(x) STRATA_TSA(capability(x))
#define SCOPED_CAPABILITY STRATA_TSA(scoped_lockable)
#define GUARDED_BY(x) STRATA_TSA(guarded_by(x))
#define PT_GUARDED_BY(x) STRATA_TSA(pt_guarded_by(x))
#define REQUIRES(...) STRATA_TSA(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) STRATA_TSA(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) STRATA_TSA(acquire_capability(__VA_ARGS__))
#define RELEASE(...) STRATA_TSA(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) STRATA_TSA(try_acquire_capability(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) STRATA_TSA(assert_capability(x))
#define RETURN_CAPABILITY(x) STRATA_TSA(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS STRATA_TSA(no_thread_safety_analysis)

namespace strata {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds it (where it cannot see so itself).
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  std::mutex mu_;
};

// Holds a Mutex for its scope (std::lock_guard, checked). Unlock/Lock let a
// scope drop the lock around a slow call and take it back.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() {
    held_ = false;
    mu_.unlock();
  }
  void Lock() ACQUIRE() {
    mu_.lock();
    held_ = true;
  }
  Mutex& mutex() const { return mu_; }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// A condition variable waiting on a held MutexLock.
class CondVar {
 public:
  template <typename Pred>
  void Wait(MutexLock& lock, Pred pred) {
    cv_.wait(lock.mutex(), std::move(pred));
  }
  // False if `pred` still fails after `timeout`.
  template <typename Rep, typename Period, typename Pred>
  bool WaitFor(MutexLock& lock, std::chrono::duration<Rep, Period> timeout, Pred pred) {
    return cv_.wait_for(lock.mutex(), timeout, std::move(pred));
  }
  template <typename Clock, typename Dur, typename Pred>
  bool WaitUntil(MutexLock& lock, std::chrono::time_point<Clock, Dur> deadline, Pred pred) {
    return cv_.wait_until(lock.mutex(), deadline, std::move(pred));
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable_any cv_;
};

}  // namespace strata
