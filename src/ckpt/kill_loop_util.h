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

// The crash loop of ckpt_tier_crash_test (ckpt_tier_child): ~7.5 MiB a step
// in 2 shards, saved faster than the bucket behind the cloud proxy takes it.
// keep_local 2, keep_remote 3 as in issue 31; the backlog its default, keep_remote.
inline OwnedState TierLoopState(int64_t step) { return MakeState(step, 0, 4); }

inline constexpr int kTierKeepLocal = 2;
inline constexpr int kTierKeepRemote = 3;
inline constexpr size_t kTierBacklog = kTierKeepRemote;  // the default: BacklogLimit::Steps

inline WriterOptions TierLoopWriterOptions(const std::string& dir) {
  WriterOptions o;
  o.dir = dir;
  o.shard_bytes = 4 << 20;
  o.upload_part_size = 5 << 20;  // S3's minimum part
  o.keep_local = kTierKeepLocal;
  o.keep_remote = kTierKeepRemote;
  o.backlog_policy = BacklogPolicy::kWait;  // and the default backlog: kTierBacklog steps
  return o;
}

}  // namespace strata::ckpt::testing
