// What ckpt_kill_child saves and how, shared with ckpt_remote_kill_test,
// which checks the bucket against it after every kill.
#pragma once

#include <string>

#include "ckpt/test_util.h"
#include "ckpt/writer.h"

namespace strata::ckpt::testing {

// Every third step ~14.5 MiB (its 8 and 6 MiB tensors two-part multipart
// uploads), the others ~4 MiB: kills land in single PUTs, multipart uploads
// and commits.
inline OwnedState KillLoopState(int64_t step) { return MakeState(step, 0, step % 3 == 0 ? 8 : 2); }

inline WriterOptions KillLoopWriterOptions(const std::string& dir) {
  WriterOptions o;
  o.dir = dir;
  o.shard_bytes = 2 << 20;
  o.upload_part_size = 5 << 20;  // S3's minimum part
  // Shards go up one at a time: a kill mid-upload leaves some journaled and
  // others not, which is what the resume check needs.
  o.upload_files_in_flight = 1;
  o.keep_local = 3;  // retention runs (and is killed) on both tiers
  o.keep_remote = 3;
  return o;
}

}  // namespace strata::ckpt::testing
