// A store decorator for checkpoint tests: records every mutation in order
// and can fail new objects after some appeared (a store going away mid-upload).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "object/store_wrapper.h"

namespace strata::ckpt::testing {

// Records every mutation in order (an object appears at a successful Put or
// CompleteMultipartUpload) and, once armed, fails new objects after `k` appeared.
class RecordingStore : public object::StoreWrapper {
 public:
  struct Event {
    std::string op;  // "create" (a Put or multipart upload begins), "object" (it appeared), "delete"
    std::string key;
  };
  explicit RecordingStore(object::ObjectStorePtr inner) : object::StoreWrapper(std::move(inner)) {}
  using object::StoreWrapper::CreateMultipartUpload;
  using object::StoreWrapper::Put;

  void FailNewObjectsAfter(int k) {
    std::lock_guard lock(mu_);
    fail_after_ = k;
    objects_ = 0;
  }
  void Heal() {
    std::lock_guard lock(mu_);
    fail_after_ = -1;
  }
  std::vector<Event> TakeEvents() {
    std::lock_guard lock(mu_);
    return std::exchange(events_, {});
  }

  Result<object::ObjectInfo> Put(std::string_view key, Buffer data, const object::PutOptions& o) override {
    STRATA_RETURN_IF_ERROR(Begin(key));
    return Done(key, object::StoreWrapper::Put(key, std::move(data), o));
  }
  Result<std::string> CreateMultipartUpload(std::string_view key, const object::PutOptions& o) override {
    STRATA_RETURN_IF_ERROR(Begin(key));
    return object::StoreWrapper::CreateMultipartUpload(key, o);
  }
  Result<object::ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view id,
                                                     const std::vector<object::CompletedPart>& parts,
                                                     const object::CompleteOptions& o) override {
    return Done(key, object::StoreWrapper::CompleteMultipartUpload(key, id, parts, o));
  }
  Status Delete(std::string_view key) override {
    Status st = object::StoreWrapper::Delete(key);
    std::lock_guard lock(mu_);
    if (st.ok()) events_.push_back({"delete", std::string(key)});
    return st;
  }

 private:
  Status Begin(std::string_view key) {
    std::lock_guard lock(mu_);
    if (fail_after_ >= 0 && objects_ >= fail_after_) return UnavailableError("injected: store went away");
    events_.push_back({"create", std::string(key)});
    return Status::Ok();
  }
  Result<object::ObjectInfo> Done(std::string_view key, Result<object::ObjectInfo> r) {
    std::lock_guard lock(mu_);
    if (r.ok()) {
      ++objects_;
      events_.push_back({"object", std::string(key)});
    }
    return r;
  }

  std::mutex mu_;
  std::vector<Event> events_;
  int fail_after_ = -1;
  int objects_ = 0;
};

// Holds every new object (a Put or a multipart upload begins) while closed:
// uploads that cannot finish yet, to see what a writer does meanwhile.
class GatedStore : public object::StoreWrapper {
 public:
  explicit GatedStore(object::ObjectStorePtr inner) : object::StoreWrapper(std::move(inner)) {}
  using object::StoreWrapper::CreateMultipartUpload;
  using object::StoreWrapper::Put;

  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  void Open() {
    {
      std::lock_guard lock(mu_);
      closed_ = false;
    }
    cv_.notify_all();
  }
  // Waits (up to `timeout`) until an upload is held at the gate.
  bool WaitForHeld(std::chrono::seconds timeout = std::chrono::seconds(30)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return held_ > 0; });
  }

  Result<object::ObjectInfo> Put(std::string_view key, Buffer data, const object::PutOptions& o) override {
    Pass();
    return object::StoreWrapper::Put(key, std::move(data), o);
  }
  Result<std::string> CreateMultipartUpload(std::string_view key, const object::PutOptions& o) override {
    Pass();
    return object::StoreWrapper::CreateMultipartUpload(key, o);
  }

 private:
  void Pass() {
    std::unique_lock lock(mu_);
    ++held_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !closed_; });
    --held_;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  int held_ = 0;
};

}  // namespace strata::ckpt::testing
