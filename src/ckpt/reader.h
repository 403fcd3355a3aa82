// Reading checkpoints: open (hash chain from the commit marker down to every
// shard's size), verify (optionally every byte: SHA-256 per shard and xxh3
// per tensor, so a problem names the shard AND the tensor), find the newest
// valid one, load in parallel with verification, and pull a checkpoint from
// one Location to another. All functions are thread-safe as far as the
// Location is; none modifies the source.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/buffer.h"
#include "base/status.h"
#include "ckpt/format.h"
#include "ckpt/location.h"

namespace strata::ckpt {

struct CheckpointInfo {
  int64_t step = 0;
  GlobalManifest manifest;
  std::vector<RankManifest> ranks;  // indexed by rank
  uint64_t TotalBytes() const;      // sum of shard sizes
  size_t NumTensors() const;
  // The tensor named `name` (first rank that has it), or nullptr.
  const TensorEntry* Find(const std::string& name, int* rank = nullptr) const;
  // The manifest of rank `rank`, or nullptr when the checkpoint has no such rank.
  const RankManifest* Rank(int rank) const;
};

enum class VerifyLevel {
  kQuick,  // commit marker, manifest hashes, every shard present with its recorded size
  // + every byte: each shard's whole-file xxh3 (tens of GB/s; SHA-256 for
  // manifests without it), each tensor's xxh3, shard headers match the manifest
  kBytes,
  kFull,  // kBytes + the SHA-256 of every shard (~1-2 GB/s per core)
};

struct Problem {
  std::string file;    // the shard or manifest concerned
  std::string tensor;  // the tensor concerned, or empty
  std::string what;
  bool unreadable = false;  // a read failed (I/O, network, access): nothing is known about the bytes
  Code code = Code::kOk;    // when unreadable: the failed read's code (Unavailable, IOError...)
};

struct VerifyReport {
  int64_t step = 0;
  bool committed = false;  // a well-formed commit marker matching the manifest
  std::vector<Problem> problems;
  bool ok() const { return committed && problems.empty(); }
  // Some bytes could not be read, and none that were read is wrong: the copy
  // may well be intact (a retry may tell), so it must not be treated as damaged.
  bool OnlyUnreadable() const;
  // OK; when OnlyUnreadable(), the failed read's code (Unavailable, Throttled,
  // IOError...: nothing is known to be wrong, a retry may tell); else
  // Corruption (NotFound when not committed) listing the problems.
  Status ToStatus() const;
  std::string ToString() const;
};

// Committed and consistent (kQuick checks), or Corruption/NotFound naming
// what is wrong, or the code of a read that failed (Unavailable, IOError...)
// when nothing read was wrong: then the checkpoint may well be intact.
Result<CheckpointInfo> OpenCheckpoint(Location& loc, int64_t step);

// Whether a status from OpenCheckpoint / Verify / ReadRankCommit proves the
// step torn: its marker or manifest is definitely absent (NotFound) or its own
// bytes fail verification (Corruption). Any other error (Unavailable,
// Throttled, IOError, DeadlineExceeded, out of descriptors...) proves nothing:
// retention keeps such a step and Latest() does not skip past it.
bool ProvenTorn(const Status& st);

VerifyReport Verify(Location& loc, int64_t step, VerifyLevel level, int parallelism = 4);
// The newest checkpoint passing `level`; torn, partial and corrupt ones
// (truncated, zeroed or flipped bytes) are skipped (and described in
// *skipped when given). NotFound if none. A step that could not be read
// (a 503, a timeout, EIO, EMFILE: nothing found wrong, but not every byte
// seen) ends the search with that error rather than being skipped: a resuming
// job must never silently load an older checkpoint because of a transient
// failure. The caller retries (the error is retryable when the read's was). The default reads every byte: cheap
// for a local checkpoint just written (page cache, xxh3); kQuick is the
// opt-out when the caller verifies while loading anyway (e.g. from a store).
Result<CheckpointInfo> Latest(Location& loc, VerifyLevel level = VerifyLevel::kBytes,
                              std::vector<VerifyReport>* skipped = nullptr);

struct LoadedTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  Buffer data;  // a slice of its shard's buffer (no copy)
};

struct LoadedCheckpoint {
  CheckpointInfo info;
  std::vector<LoadedTensor> tensors;  // rank order, then manifest order
  std::string metadata;               // rank 0's user metadata (JSON text)
  const LoadedTensor* Find(const std::string& name) const;
};

struct LoadOptions {
  // Every byte checked against the manifest: the whole-shard xxh3 while
  // reading (tensors named on a mismatch), or SHA-256 + per-tensor xxh3 for
  // manifests without it (or with verify_sha256).
  bool verify = true;
  int parallelism = 4;  // shards read at once
  int rank = -1;        // only this rank's tensors; -1 = every rank
  // Also check each shard's SHA-256 (~1-2 GB/s per core instead of tens).
  bool verify_sha256 = false;
};

// Reads every shard (of `rank`, or all) into owned buffers, in parallel.
Result<LoadedCheckpoint> Load(Location& loc, int64_t step, const LoadOptions& options = {});

// Reads the named tensors straight into caller memory (`targets`: name ->
// destination of exactly the tensor's size bytes, caller-owned, untouched on
// NotFound/InvalidArgument). Verifies each tensor's xxh3 when options.verify.
// With options.rank >= 0 names are looked up in that rank's part only (ranks
// may use the same names, e.g. DDP replicas): NotFound names the rank and the
// step when it lacks one, InvalidArgument when the checkpoint has no such rank.
// With -1 each name comes from the first rank that has it.
struct Target {
  void* data = nullptr;
  uint64_t size = 0;
};
Status LoadInto(Location& loc, int64_t step, const std::map<std::string, Target>& targets,
                const LoadOptions& options = {});

// Copies shard `shard` of `rank` (a committed rank manifest of `step`) from
// `from` to `to` in parts (memory bounded by the parts in flight, whatever
// the shard's size), checking its bytes against the manifest (whole-shard
// xxh3, or SHA-256 for manifests without it) before the copy becomes visible:
// else Corruption naming the shard and the tensors that differ, and no file
// at `to`. Returns the destination's ETag ("" for a local directory).
// `cancelled`, when given, is asked before every part is read: true aborts
// the copy with Cancelled (a multipart upload is aborted, nothing appears).
Result<std::string> CopyShard(Location& from, int64_t step, const RankManifest& rank, uint32_t shard, Location& to,
                              const std::function<bool()>& cancelled = nullptr);

// Copies a committed checkpoint from `from` to `to`: every shard streamed and
// verified on the way (CopyShard), then the manifests, the commit marker
// last, so `to` never holds a committed copy that was not verified. On
// failure `to` has no commit for `step` (and nothing at all if it had
// nothing before), so a retry starts afresh. AlreadyExists if `to` already
// has a copy whose every byte verifies; a damaged one is replaced.
Status Pull(Location& from, int64_t step, Location& to, int parallelism = 4);

}  // namespace strata::ckpt
