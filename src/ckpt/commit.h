// Commit protocol helpers shared by the writer (local and remote) and tools.
// Thread-safe as far as the Location is.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "ckpt/format.h"
#include "ckpt/location.h"

namespace strata::ckpt {

// Writes `manifest` (a rank manifest) and then its rank commit marker.
Status WriteRankCommit(Location& loc, const RankManifest& manifest);

// The rank manifest whose commit marker for `rank` is present and matches,
// or NotFound (not committed yet) / Corruption. *sha256: the manifest's hash;
// *manifest_text: its bytes, as checked against the marker.
Result<RankManifest> ReadRankCommit(Location& loc, int64_t step, int rank, std::string* sha256 = nullptr,
                                    std::string* manifest_text = nullptr);

// The coordinator's job: waits (polling every `poll`, until `deadline` on
// `clock`) for all `world_size` rank commits of `step` in `loc` whose
// manifests carry `attempt` (parts left by another attempt, e.g. one that
// crashed, are never paired with this one's), then writes manifest.json and
// LAST the global COMMITTED marker. DeadlineExceeded naming the missing ranks
// (and the attempt of a stale part); Cancelled once `cancelled()` is true.
Status CommitGlobal(Location& loc, int64_t step, int world_size, const std::string& attempt, Clock& clock,
                    TimePoint deadline, Duration poll, const std::function<bool()>& cancelled = nullptr);

// The global commit of a job of one rank whose part (`manifest`, hashing to
// `digest`) was just written to `loc`: what CommitGlobal writes, without
// reading the part back (no other rank can have withdrawn it); on a store two
// requests instead of seven.
Status CommitSingleRank(Location& loc, const RankManifest& manifest, const std::string& digest);

// The newest step in `loc` with a valid global commit marker (cheap: the
// hash chain and shard sizes), or nullopt. A newer step that could not be
// read (not ProvenTorn) gives its error instead of an older step.
Result<std::optional<int64_t>> NewestCommitted(Location& loc);

// Retention: deletes all but the newest `keep` valid checkpoints, and torn
// leftovers older than the newest valid one; never one in `protect`, and
// never the newest checkpoint whose every byte verifies (a newer one may only
// look valid, and deleting the last good one would lose everything): when
// none of the `keep` kept verifies, nothing is deleted. Steps are judged
// newest first; those older than the `keep` newest valid ones are
// superseded whatever they hold and are deleted without being read (the
// others are read several at once, so `valid` must be thread-safe). `valid` (OK: valid) defaults to
// OpenCheckpoint(loc, step).status(); a step is torn only when it is
// ProvenTorn, twice (asked again just before the deletion, so a body damaged
// in transit does not condemn it); any other error keeps the step, with a
// warning, until a later pass can read it. `verified` (asked newest first,
// until one holds) defaults to Verify(loc, step, kBytes).ok(). Returns the
// steps deleted (or that would be, with dry_run); failures to delete are
// logged and skipped.
Result<std::vector<int64_t>> RetainNewest(Location& loc, int keep, const std::set<int64_t>& protect = {},
                                          std::function<Status(int64_t)> valid = nullptr,
                                          std::function<bool(int64_t)> verified = nullptr, bool dry_run = false);

}  // namespace strata::ckpt
