#include "fuse/errno_map.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace strata::fuse {
namespace {

TEST(ErrnoMapTest, EveryCodeHasOneErrno) {
  EXPECT_EQ(ErrnoFor(Status::Ok()), 0);
  EXPECT_EQ(ErrnoFor(NotFoundError("x")), ENOENT);
  EXPECT_EQ(ErrnoFor(Status(Code::kAlreadyExists, "x")), EEXIST);
  EXPECT_EQ(ErrnoFor(NotSupportedError("x")), EOPNOTSUPP);
  EXPECT_EQ(ErrnoFor(NotSupportedError("x"), FsOp::kRename), EXDEV) << "mv falls back to copy + delete";
  EXPECT_EQ(ErrnoFor(Status(Code::kPermissionDenied, "chmod")), EPERM);
  EXPECT_EQ(ErrnoFor(Status(Code::kUnauthenticated, "x")), EACCES);
  EXPECT_EQ(ErrnoFor(Status(Code::kPreconditionFailed, "not empty")), ENOTEMPTY);
  EXPECT_EQ(ErrnoFor(InvalidArgumentError("x")), EINVAL);
  EXPECT_EQ(ErrnoFor(Status(Code::kOutOfRange, "name")), ENAMETOOLONG);
  EXPECT_EQ(ErrnoFor(Status(Code::kNoSpace, "x")), ENOSPC);
  EXPECT_EQ(ErrnoFor(Status(Code::kCancelled, "x")), EINTR);
  for (Code c : {Code::kIOError, Code::kUnavailable, Code::kThrottled, Code::kDeadlineExceeded, Code::kCorruption,
                 Code::kInternal, Code::kNotModified}) {
    EXPECT_EQ(ErrnoFor(Status(c, "backend")), EIO) << CodeName(c);
  }
}

}  // namespace
}  // namespace strata::fuse
