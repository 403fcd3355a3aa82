// Status and Result<T>: the error model for everything below the front ends.
// A Status carries a code, a message a user can act on, the underlying cause
// (free text: errno text, curl error, "HTTP 503"...), whether a retry may
// help, and optionally a foreign error code: the code a wire protocol gave or
// must give for this error (the S3 XML code "NoSuchKey", "SlowDown"...). Code
// decides what callers do; the foreign code only lets a front end answer in
// its protocol's terms, so it is a field of its own, never parsed from text.
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
  // The protocol's own error code ("NoSuchKey"), empty when none was given.
  const std::string& foreign_code() const;
  // Whether retrying the same operation may succeed. Defaults by code
  // (Throttled, Unavailable, DeadlineExceeded are retryable).
  bool retryable() const { return state_ && state_->retryable; }

  // Returns a copy whose message is prefixed with `context: ` (code, cause,
  // foreign code and retryable kept).
  Status WithContext(std::string_view context) const;
  // Returns a copy carrying `foreign_code` (empty clears it); OK stays OK.
  Status WithForeignCode(std::string foreign_code) const;
  std::string ToString() const;  // "NotFound [NoSuchKey]: message (cause: ...)"

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
    std::string foreign_code;
  };
  std::shared_ptr<const State> state_;  // null means OK; shared so copies are cheap
};

std::ostream& operator<<(std::ostream& os, const Status& status);

// Shorthands, one per code, so call sites read naturally:
//   return NotFoundError("no such key " + key);
// A code's default retryability applies; pass it explicitly to Status(...)
// to override.
Status NotFoundError(std::string message, std::string cause = {});
Status InvalidArgumentError(std::string message, std::string cause = {});
Status CorruptionError(std::string message, std::string cause = {});
Status IOError(std::string message, std::string cause = {});
Status NoSpaceError(std::string message, std::string cause = {});
Status PreconditionFailedError(std::string message, std::string cause = {});
Status NotModifiedError(std::string message, std::string cause = {});
Status ThrottledError(std::string message, std::string cause = {});
Status UnavailableError(std::string message, std::string cause = {});
Status DeadlineExceededError(std::string message, std::string cause = {});
Status NotSupportedError(std::string message, std::string cause = {});
Status PermissionDeniedError(std::string message, std::string cause = {});
Status UnauthenticatedError(std::string message, std::string cause = {});
Status AlreadyExistsError(std::string message, std::string cause = {});
Status OutOfRangeError(std::string message, std::string cause = {});
Status CancelledError(std::string message, std::string cause = {});
Status InternalError(std::string message, std::string cause = {});

// Translates an errno value at the boundary (ENOENT -> NotFound, ENOSPC -> NoSpace, ...).
Status ErrnoToStatus(int err, std::string_view what);

namespace internal {
// Prints `status` and where the bad access happened to stderr, then aborts.
[[noreturn]] void DieOnValueOfError(const Status& status);
}  // namespace internal

// A value or the Status saying why there is none. Check ok() before taking
// the value: value(), operator* and operator-> on an error Result are a
// programming bug, so they print the status and abort the process (they do not
// return an empty or default value). Use value_or() when a fallback will do.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status(Code::kInternal, "Result constructed from OK status");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & { return Checked(); }
  const T& value() const& { return Checked(); }
  T&& value() && { return std::move(Checked()); }
  T& operator*() & { return Checked(); }
  const T& operator*() const& { return Checked(); }
  // By value on temporaries so `for (auto& x : *Fn())` does not dangle.
  T operator*() && { return std::move(Checked()); }
  T* operator->() { return &Checked(); }
  const T* operator->() const { return &Checked(); }

  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }

 private:
  T& Checked() {
    if (!value_.has_value()) [[unlikely]]
      internal::DieOnValueOfError(status_);
    return *value_;
  }
  const T& Checked() const {
    if (!value_.has_value()) [[unlikely]]
      internal::DieOnValueOfError(status_);
    return *value_;
  }

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
