#include "base/status.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace strata {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kNotFound: return "NotFound";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kCorruption: return "Corruption";
    case Code::kIOError: return "IOError";
    case Code::kNoSpace: return "NoSpace";
    case Code::kPreconditionFailed: return "PreconditionFailed";
    case Code::kNotModified: return "NotModified";
    case Code::kThrottled: return "Throttled";
    case Code::kUnavailable: return "Unavailable";
    case Code::kDeadlineExceeded: return "DeadlineExceeded";
    case Code::kNotSupported: return "NotSupported";
    case Code::kPermissionDenied: return "PermissionDenied";
    case Code::kUnauthenticated: return "Unauthenticated";
    case Code::kAlreadyExists: return "AlreadyExists";
    case Code::kOutOfRange: return "OutOfRange";
    case Code::kCancelled: return "Cancelled";
    case Code::kInternal: return "Internal";
  }
  return "Unknown";
}

static bool DefaultRetryable(Code code) {
  return code == Code::kThrottled || code == Code::kUnavailable || code == Code::kDeadlineExceeded;
}

Status::Status(Code code, std::string message, std::string cause, std::optional<bool> retryable) {
  if (code == Code::kOk) return;
  state_ = std::make_shared<const State>(
      State{code, std::move(message), std::move(cause), retryable.value_or(DefaultRetryable(code)), {}});
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->message : kEmpty;
}

const std::string& Status::cause() const {
  static const std::string kEmpty;
  return state_ ? state_->cause : kEmpty;
}

const std::string& Status::foreign_code() const {
  static const std::string kEmpty;
  return state_ ? state_->foreign_code : kEmpty;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  State copy = *state_;
  copy.message = std::string(context) + ": " + state_->message;
  Status s;
  s.state_ = std::make_shared<const State>(std::move(copy));
  return s;
}

Status Status::WithForeignCode(std::string foreign_code) const {
  if (ok()) return *this;
  State copy = *state_;
  copy.foreign_code = std::move(foreign_code);
  Status s;
  s.state_ = std::make_shared<const State>(std::move(copy));
  return s;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(CodeName(code()));
  if (!foreign_code().empty()) {
    out += " [";
    out += foreign_code();
    out += "]";
  }
  out += ": ";
  out += message();
  if (!cause().empty()) {
    out += " (cause: ";
    out += cause();
    out += ")";
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, const Status& status) { return os << status.ToString(); }

Status NotFoundError(std::string m, std::string c) { return Status(Code::kNotFound, std::move(m), std::move(c)); }
Status InvalidArgumentError(std::string m, std::string c) {
  return Status(Code::kInvalidArgument, std::move(m), std::move(c));
}
Status CorruptionError(std::string m, std::string c) { return Status(Code::kCorruption, std::move(m), std::move(c)); }
Status IOError(std::string m, std::string c) { return Status(Code::kIOError, std::move(m), std::move(c)); }
Status NoSpaceError(std::string m, std::string c) { return Status(Code::kNoSpace, std::move(m), std::move(c)); }
Status PreconditionFailedError(std::string m, std::string c) {
  return Status(Code::kPreconditionFailed, std::move(m), std::move(c));
}
Status NotModifiedError(std::string m, std::string c) { return Status(Code::kNotModified, std::move(m), std::move(c)); }
Status ThrottledError(std::string m, std::string c) { return Status(Code::kThrottled, std::move(m), std::move(c)); }
Status UnavailableError(std::string m, std::string c) { return Status(Code::kUnavailable, std::move(m), std::move(c)); }
Status DeadlineExceededError(std::string m, std::string c) {
  return Status(Code::kDeadlineExceeded, std::move(m), std::move(c));
}
Status NotSupportedError(std::string m, std::string c) {
  return Status(Code::kNotSupported, std::move(m), std::move(c));
}
Status PermissionDeniedError(std::string m, std::string c) {
  return Status(Code::kPermissionDenied, std::move(m), std::move(c));
}
Status UnauthenticatedError(std::string m, std::string c) {
  return Status(Code::kUnauthenticated, std::move(m), std::move(c));
}
Status AlreadyExistsError(std::string m, std::string c) {
  return Status(Code::kAlreadyExists, std::move(m), std::move(c));
}
Status OutOfRangeError(std::string m, std::string c) { return Status(Code::kOutOfRange, std::move(m), std::move(c)); }
Status CancelledError(std::string m, std::string c) { return Status(Code::kCancelled, std::move(m), std::move(c)); }
Status InternalError(std::string m, std::string c) { return Status(Code::kInternal, std::move(m), std::move(c)); }

namespace internal {
void DieOnValueOfError(const Status& status) {
  // stderr directly, not the logger: this must show even with logging off.
  std::fprintf(stderr, "strata: FATAL: value() of an error Result (a bug: check ok() first): %s\n",
               status.ToString().c_str());
  std::fflush(stderr);
  std::abort();
}
}  // namespace internal

Status ErrnoToStatus(int err, std::string_view what) {
  std::string cause = std::strerror(err);
  std::string msg(what);
  switch (err) {
    case ENOENT:
    case ENOTDIR: return Status(Code::kNotFound, msg, cause);
    case ENOSPC:
    case EDQUOT: return Status(Code::kNoSpace, msg + " (disk full)", cause);
    case EACCES:
    case EPERM:
    case EROFS: return Status(Code::kPermissionDenied, msg, cause);
    case EEXIST: return Status(Code::kAlreadyExists, msg, cause);
    case EINVAL:
    case ENAMETOOLONG: return Status(Code::kInvalidArgument, msg, cause);
    case EINTR:
    case EAGAIN: return Status(Code::kUnavailable, msg, cause);
    case ETIMEDOUT: return Status(Code::kDeadlineExceeded, msg, cause);
    case EOPNOTSUPP: return Status(Code::kNotSupported, msg, cause);
    default: return Status(Code::kIOError, msg, cause);
  }
}

}  // namespace strata
