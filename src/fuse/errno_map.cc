#include "fuse/errno_map.h"

#include <cerrno>

namespace strata::fuse {

int ErrnoFor(const Status& status, FsOp op) {
  switch (status.code()) {
    case Code::kOk: return 0;
    case Code::kNotFound: return ENOENT;
    case Code::kAlreadyExists: return EEXIST;
    case Code::kNotSupported: return op == FsOp::kRename ? EXDEV : EOPNOTSUPP;
    case Code::kPermissionDenied: return EPERM;
    case Code::kUnauthenticated: return EACCES;
    case Code::kPreconditionFailed: return ENOTEMPTY;
    case Code::kInvalidArgument: return EINVAL;
    case Code::kOutOfRange: return ENAMETOOLONG;
    case Code::kNoSpace: return ENOSPC;
    case Code::kCancelled: return EINTR;
    default: return EIO;
  }
}

}  // namespace strata::fuse
