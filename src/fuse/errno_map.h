// The one Status -> errno translation of the mount (see fs/object_fs.h for
// the codes the namespace returns). Pure; no FUSE headers.
#pragma once

#include "base/status.h"

namespace strata::fuse {

// The operation an error came from, where it changes the errno.
enum class FsOp { kOther, kRename };

// 0 for OK. NotFound -> ENOENT, AlreadyExists -> EEXIST, NotSupported ->
// EOPNOTSUPP (EXDEV for rename, so mv(1) falls back to copy + delete),
// PermissionDenied -> EPERM, Unauthenticated -> EACCES, PreconditionFailed ->
// ENOTEMPTY (a directory not empty), InvalidArgument -> EINVAL, OutOfRange
// -> ENAMETOOLONG, NoSpace -> ENOSPC, Cancelled -> EINTR, everything else
// (backend and local I/O failures, timeouts, corruption) -> EIO.
int ErrnoFor(const Status& status, FsOp op = FsOp::kOther);

}  // namespace strata::fuse
