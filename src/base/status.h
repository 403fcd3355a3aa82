// Status and Result<T>: the error model for everything below the front ends.
// A Status carries a code, a message a user can act on, the underlying cause
// (errno text, curl error, S3 XML code...) and whether a retry may help.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace strata {

enum class Code {
  kOk = 0,
  kNotFound,            // object, key, bucket, file, upload id
  kInvalidArgument,     // caller's input is malformed or out of its domain
  kCorruption,          // data failed a checksum or structural check
  kIOError,             // local I/O failed
  kNoSpace,             // local disk or quota full
  kPreconditionFailed,  // If-Match / If-None-Match / ETag mismatch
  kNotModified,         // conditional GET matched (HTTP 304)
  kThrottled,           // SlowDown / 503 / 429: back off and retry
  kUnavailable,         // transient network/server failure
  kDeadlineExceeded,    // timeout
  kNotSupported,        // the operation cannot be honoured by this backend
  kPermissionDenied,    // authenticated but not allowed (AccessDenied, EACCES)
  kUnauthenticated,     // credentials missing or wrong (SignatureDoesNotMatch)
  kAlreadyExists,       // create-only put / mkdir on existing name
  kOutOfRange,          // a byte range outside the object (InvalidRange)
  kCancelled,
  kInternal,  // a bug: an invariant did not hold
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message, std::string cause = {}, std::optional<bool> retryable = {});

  static Status Ok() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  Code code() const { return state_ ? state_->code : Code::kOk; }
  const std::string& message() const;
  const std::string& cause() const;
  // Whether retrying the same operation may succeed. Defaults by code
  // (Throttled, Unavailable, DeadlineExceeded are retryable).
  bool retryable() const { return state_ && state_->retryable; }

  // Returns a copy whose message is prefixed with `context: `.
  Status WithContext(std::string_view context) const;
  std::string ToString() const;  // "NotFound: message (cause: ...)"

  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct State {
    Code code;
    std::string message;
    std::string cause;
    bool retryable;
  };
  std::shared_ptr<const State> state_;  // null means OK; shared so copies are cheap
};

std::ostream& operator<<(std::ostream& os, const Status& status);

// Shorthands, so call sites read naturally: return NotFound("no such key ", key);
Status NotFoundError(std::string message, std::string cause = {});
Status InvalidArgumentError(std::string message, std::string cause = {});
Status CorruptionError(std::string message, std::string cause = {});
Status IOError(std::string message, std::string cause = {});
Status InternalError(std::string message, std::string cause = {});
Status NotSupportedError(std::string message, std::string cause = {});
Status UnavailableError(std::string message, std::string cause = {});

// Translates an errno value at the boundary (ENOENT -> NotFound, ENOSPC -> NoSpace, ...).
Status ErrnoToStatus(int err, std::string_view what);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status(Code::kInternal, "Result constructed from OK status");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  // By value on temporaries so `for (auto& x : *Fn())` does not dangle.
  T operator*() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace strata

#define STRATA_CONCAT_INNER(a, b) a##b
#define STRATA_CONCAT(a, b) STRATA_CONCAT_INNER(a, b)

#define STRATA_RETURN_IF_ERROR(expr) \
  do {                               \
    ::strata::Status _st = (expr);   \
    if (!_st.ok()) return _st;       \
  } while (0)

#define STRATA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#define STRATA_ASSIGN_OR_RETURN(lhs, expr) STRATA_ASSIGN_OR_RETURN_IMPL(STRATA_CONCAT(_res_, __LINE__), lhs, expr)
