#include "ckpt/commit.h"

#include <algorithm>
#include <optional>

#include "base/executor.h"
#include "base/hash.h"
#include "base/log.h"
#include "ckpt/reader.h"

namespace strata::ckpt {

Status WriteRankCommit(Location& loc, const RankManifest& manifest) {
  const std::string text = EncodeRankManifest(manifest);
  STRATA_RETURN_IF_ERROR(loc.WriteFile(manifest.step, RankManifestName(manifest.rank), Buffer::FromString(text)));
  return loc.WriteFile(manifest.step, RankCommitName(manifest.rank),
                       Buffer::FromString(EncodeCommit(ToHex(Sha256(text)))));
}

Result<RankManifest> ReadRankCommit(Location& loc, int64_t step, int rank, std::string* sha256,
                                    std::string* manifest_text) {
  STRATA_ASSIGN_OR_RETURN(std::string marker, loc.ReadSmall(step, RankCommitName(rank), 4096));
  STRATA_ASSIGN_OR_RETURN(std::string digest, ParseCommit(marker));
  STRATA_ASSIGN_OR_RETURN(std::string text, loc.ReadSmall(step, RankManifestName(rank), kMaxManifestBytes));
  if (ToHex(Sha256(text)) != digest) {
    return CorruptionError(RankManifestName(rank) + " of " + StepDirName(step) + " does not match its commit marker");
  }
  STRATA_ASSIGN_OR_RETURN(RankManifest m, ParseRankManifest(text));
  if (m.step != step || m.rank != rank) {
    return CorruptionError(RankManifestName(rank) + " of " + StepDirName(step) + " names another step or rank");
  }
  if (sha256) *sha256 = std::move(digest);
  if (manifest_text) *manifest_text = std::move(text);
  return m;
}

namespace {

// manifest.json over the rank parts (their digests as checked), then LAST the marker.
Status WriteGlobalCommit(Location& loc, const std::vector<RankManifest>& ranks,
                         const std::vector<std::string>& digests) {
  GlobalManifest g;
  g.step = ranks[0].step;
  g.world_size = static_cast<int>(ranks.size());
  g.attempt = ranks[0].attempt;
  g.wall_time_ms = ranks[0].wall_time_ms;
  g.metadata = ranks[0].metadata;
  for (size_t r = 0; r < ranks.size(); ++r)
    g.ranks.push_back({static_cast<int>(r), RankManifestName(static_cast<int>(r)), digests[r]});
  const std::string text = EncodeGlobalManifest(g);
  STRATA_RETURN_IF_ERROR(loc.WriteFile(g.step, kManifestFile, Buffer::FromString(text)));
  return loc.WriteFile(g.step, kCommitFile, Buffer::FromString(EncodeCommit(ToHex(Sha256(text)))));
}

}  // namespace

Status CommitGlobal(Location& loc, int64_t step, int world_size, const std::string& attempt, Clock& clock,
                    TimePoint deadline, Duration poll, const std::function<bool()>& cancelled) {
  std::vector<RankManifest> ranks(world_size);
  std::vector<std::string> digests(world_size);  // of the manifests as checked, not as re-read later
  std::vector<bool> have(world_size, false);
  for (;;) {
    std::string missing;
    for (int r = 0; r < world_size; ++r) {
      if (have[r]) continue;
      auto m = ReadRankCommit(loc, step, r, &digests[r]);
      if (m.ok() && m->world_size == world_size && m->attempt == attempt) {
        ranks[r] = std::move(*m);
        have[r] = true;
        continue;
      }
      missing += (missing.empty() ? "" : ",") + std::to_string(r);
      if (m.ok() && m->attempt != attempt) missing += " (a part of attempt '" + m->attempt + "')";
    }
    if (missing.empty()) {
      // Every marker again, just before committing: a rank that has started
      // another attempt meanwhile withdrew its marker before touching its shards.
      for (int r = 0; r < world_size; ++r) {
        std::string now;
        if (!ReadRankCommit(loc, step, r, &now).ok() || now != digests[r]) {
          have[r] = false;
          missing += (missing.empty() ? "" : ",") + std::to_string(r) + " (withdrawn meanwhile)";
        }
      }
      if (missing.empty()) break;
    }
    if (cancelled && cancelled()) {
      return CancelledError("stopped waiting for the commits of ranks " + missing + " of " + StepDirName(step) +
                            " in " + loc.Describe());
    }
    if (clock.Now() >= deadline) {
      return DeadlineExceededError("gave up waiting for the commits of ranks " + missing + " of " + StepDirName(step) +
                                   " (attempt '" + attempt + "') in " + loc.Describe());
    }
    clock.SleepFor(poll);
  }
  return WriteGlobalCommit(loc, ranks, digests);
}

Status CommitSingleRank(Location& loc, const RankManifest& manifest, const std::string& digest) {
  if (manifest.world_size != 1) return InvalidArgumentError("CommitSingleRank is for a job of one rank");
  return WriteGlobalCommit(loc, {manifest}, {digest});
}

Result<std::optional<int64_t>> NewestCommitted(Location& loc) {
  STRATA_ASSIGN_OR_RETURN(auto steps, loc.ListSteps());
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    auto info = OpenCheckpoint(loc, *it);
    if (info.ok()) return std::optional<int64_t>(*it);
    if (!ProvenTorn(info.status())) return info.status();  // perhaps the newest: never an older one instead
  }
  return std::optional<int64_t>();
}

Result<std::vector<int64_t>> RetainNewest(Location& loc, int keep, const std::set<int64_t>& protect,
                                          std::function<Status(int64_t)> valid, std::function<bool(int64_t)> verified,
                                          bool dry_run) {
  if (keep < 1) return InvalidArgumentError("retention must keep at least one checkpoint");
  if (!valid) valid = [&loc](int64_t s) { return OpenCheckpoint(loc, s).status(); };
  if (!verified) verified = [&loc](int64_t s) { return Verify(loc, s, VerifyLevel::kBytes).ok(); };
  STRATA_ASSIGN_OR_RETURN(auto steps, loc.ListSteps());
  std::vector<int64_t> good, torn, deleted, beyond;
  // Newest first: once `keep` steps proved valid, every older one is
  // superseded whatever it holds, so it is not read (on a store, a round trip
  // or more each). The steps still needed are read at once.
  std::reverse(steps.begin(), steps.end());
  for (size_t at = 0; at < steps.size();) {
    if (good.size() >= static_cast<size_t>(keep)) {
      beyond.assign(steps.begin() + at, steps.end());
      break;
    }
    const size_t n = std::min(steps.size() - at, static_cast<size_t>(keep) - good.size());
    std::vector<Status> st(n);
    ParallelFor(n, n, [&](size_t i) { st[i] = valid(steps[at + i]); });
    for (size_t i = 0; i < n; ++i) {
      const int64_t s = steps[at + i];
      if (st[i].ok()) {
        good.push_back(s);
      } else if (ProvenTorn(st[i])) {
        torn.push_back(s);
      } else {
        // Unknown, not torn: neither deleted nor counted as valid; the next pass looks again.
        STRATA_LOG_WARN("ckpt: retention in {} keeps {}: it could not be read ({}); retried at the next pass",
                        loc.Describe(), StepDirName(s), st[i].ToString());
      }
    }
    at += n;
  }
  if (good.empty()) return deleted;  // nothing valid: keep everything for inspection
  const int64_t newest = good.front();
  std::vector<int64_t> doomed = beyond;
  std::sort(torn.begin(), torn.end());
  for (int64_t s : torn) {
    if (s < newest) doomed.push_back(s);
  }
  std::erase_if(doomed, [&](int64_t s) { return s == newest || protect.count(s) > 0; });
  if (doomed.empty()) return deleted;  // before verifying: on a remote store that reads every byte
  std::optional<int64_t> safe;         // the newest whose bytes verify, among the kept ones
  for (auto it = good.begin(); it != good.end() && !safe; ++it) {
    if (verified(*it)) safe = *it;
  }
  if (!safe) {
    STRATA_LOG_WARN("ckpt: retention in {} deletes nothing: no checkpoint verifies", loc.Describe());
    return deleted;
  }
  std::erase(doomed, *safe);
  std::sort(doomed.begin(), doomed.end());
  // On a store several at once: each deletion is round trips, not work. A
  // local one at a time, so an interrupted pass leaves at most one half-deleted step.
  std::vector<Status> st(doomed.size());
  std::vector<std::string> kept(doomed.size());  // why a step that looked torn stays
  ParallelFor(doomed.size(), loc.is_local() ? 1 : 4, [&](size_t i) {
    const int64_t s = doomed[i];
    if (std::binary_search(torn.begin(), torn.end(), s)) {
      // Proven torn once; a second read must agree (a reply damaged in transit does not repeat).
      if (Status again = valid(s); !ProvenTorn(again)) {
        kept[i] = again.ok() ? std::string("valid") : again.ToString();
        return;
      }
    }
    st[i] = dry_run ? Status::Ok() : loc.RemoveStep(s);
  });
  for (size_t i = 0; i < doomed.size(); ++i) {
    if (!kept[i].empty()) {
      STRATA_LOG_WARN("ckpt: retention in {} keeps {}: it looked torn, then {}", loc.Describe(), StepDirName(doomed[i]),
                      kept[i]);
    } else if (st[i].ok()) {
      deleted.push_back(doomed[i]);
    } else {
      STRATA_LOG_WARN("ckpt: retention could not delete {} in {}: {}", StepDirName(doomed[i]), loc.Describe(),
                      st[i].ToString());
    }
  }
  return deleted;
}

}  // namespace strata::ckpt
