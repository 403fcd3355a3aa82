#include "ckpt/reader.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include "base/coding.h"
#include "base/executor.h"
#include "base/hash.h"
#include "base/log.h"
#include "ckpt/shard_hasher.h"
#include "ckpt/staging.h"

namespace strata::ckpt {
namespace {

constexpr uint64_t kChunk = 8ull << 20;
constexpr uint64_t kHugeMin = 2ull << 20;  // smaller shards: plain heap memory

std::string Sha256Hex(std::string_view s) { return ToHex(Sha256(s)); }

std::string What(const Status& st, std::string_view missing) {
  return st.code() == Code::kNotFound ? std::string(missing) : st.ToString();
}

// A failed read as a problem: a missing file or a structural error is damage;
// anything else (I/O, network, access) leaves the bytes unknown.
Problem ReadProblem(std::string file, std::string tensor, const Status& st, std::string_view missing) {
  const Code c = st.code();
  bool damage = c == Code::kNotFound || c == Code::kCorruption || c == Code::kInvalidArgument || c == Code::kOutOfRange;
  return {std::move(file), std::move(tensor), What(st, missing), !damage, damage ? Code::kOk : c};
}

// Follows the hash chain COMMITTED -> manifest.json -> rank manifests.
std::optional<CheckpointInfo> ReadChain(Location& loc, int64_t step, VerifyReport* r) {
  r->step = step;
  const std::string commit_name(kCommitFile), manifest_name(kManifestFile);
  auto commit = loc.ReadSmall(step, kCommitFile, 4096);
  if (!commit.ok()) {
    r->problems.push_back(
        ReadProblem(commit_name, "", commit.status(), "missing: never committed (torn, partial or in progress)"));
    return std::nullopt;
  }
  auto digest = ParseCommit(*commit);
  if (!digest.ok()) {
    r->problems.push_back({commit_name, "", digest.status().message()});
    return std::nullopt;
  }
  auto text = loc.ReadSmall(step, kManifestFile, kMaxManifestBytes);
  if (!text.ok()) {
    r->problems.push_back(ReadProblem(manifest_name, "", text.status(), "missing although the commit marker exists"));
    return std::nullopt;
  }
  if (Sha256Hex(*text) != *digest) {
    r->problems.push_back({manifest_name, "", "SHA-256 does not match the commit marker"});
    return std::nullopt;
  }
  r->committed = true;
  auto global = ParseGlobalManifest(*text);
  if (!global.ok() || global->step != step) {
    r->problems.push_back({manifest_name, "", global.ok() ? "names another step" : global.status().message()});
    return std::nullopt;
  }
  CheckpointInfo info;
  info.step = step;
  info.manifest = std::move(*global);
  for (const auto& ref : info.manifest.ranks) {
    auto rank_text = loc.ReadSmall(step, ref.manifest, kMaxManifestBytes);
    if (!rank_text.ok()) {
      r->problems.push_back(ReadProblem(ref.manifest, "", rank_text.status(), "missing"));
      continue;
    }
    if (Sha256Hex(*rank_text) != ref.sha256) {
      r->problems.push_back({ref.manifest, "", "SHA-256 does not match manifest.json"});
      continue;
    }
    auto rm = ParseRankManifest(*rank_text);
    if (!rm.ok() || rm->rank != ref.rank || rm->step != step || rm->world_size != info.manifest.world_size) {
      r->problems.push_back({ref.manifest, "", rm.ok() ? "rank, step or world size disagree" : rm.status().message()});
      continue;
    }
    info.ranks.push_back(std::move(*rm));
  }
  if (!r->problems.empty()) return std::nullopt;
  return info;
}

// Every shard present with its recorded size; tensors past a truncation named.
void CheckShardSizes(Location& loc, const CheckpointInfo& info, VerifyReport* r,
                     std::unordered_map<std::string, uint64_t>* sizes) {
  auto files = loc.ListFiles(info.step);
  if (!files.ok()) {
    r->problems.push_back(ReadProblem(StepDirName(info.step), "", files.status(), "missing"));
    return;
  }
  for (const auto& f : *files) (*sizes)[f.name] = f.size;
  for (const auto& rm : info.ranks) {
    for (uint32_t s = 0; s < rm.shards.size(); ++s) {
      const ShardEntry& shard = rm.shards[s];
      auto it = sizes->find(shard.file);
      if (it == sizes->end()) {
        r->problems.push_back({shard.file, "", "missing"});
        continue;
      }
      if (it->second == shard.size) continue;
      r->problems.push_back({shard.file, "",
                             "size " + std::to_string(it->second) + " bytes, manifest says " +
                                 std::to_string(shard.size) + (it->second < shard.size ? " (truncated)" : "")});
      for (const auto& t : rm.tensors) {
        if (t.shard == s && t.offset + t.size > it->second) {
          r->problems.push_back({shard.file, t.name, "lies beyond the end of the truncated shard"});
        }
      }
    }
  }
}

std::vector<const TensorEntry*> TensorsOf(const RankManifest& rm, uint32_t shard) {
  std::vector<const TensorEntry*> out;
  for (const auto& t : rm.tensors) {
    if (t.shard == shard) out.push_back(&t);
  }
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  return out;
}

// The shard's safetensors header must describe the manifest's tensors.
void CheckHeader(std::string_view file, std::string_view prefix, uint64_t file_size,
                 const std::vector<const TensorEntry*>& tensors, std::vector<Problem>* problems) {
  auto header = ParseSafetensorsHeader(prefix, file_size);
  if (!header.ok()) {
    problems->push_back({std::string(file), "", header.status().message()});
    return;
  }
  std::unordered_map<std::string, const SafetensorsTensor*> by_name;
  for (const auto& t : header->tensors) by_name[t.name] = &t;
  for (const TensorEntry* t : tensors) {
    auto it = by_name.find(t->name);
    if (it == by_name.end() || it->second->dtype != t->dtype || it->second->shape != t->shape ||
        header->data_start + it->second->begin != t->offset || it->second->end - it->second->begin != t->size) {
      problems->push_back({std::string(file), t->name, "shard header disagrees with the manifest"});
    }
  }
}

// Streams one shard: whole-file xxh3 (SHA-256 too at kFull, or when the
// manifest has no xxh3), per-tensor xxh3 and the header check.
void VerifyShardBytes(Location& loc, int64_t step, const RankManifest& rm, uint32_t s, uint64_t actual,
                      VerifyLevel level, std::vector<Problem>* problems) {
  const ShardEntry& shard = rm.shards[s];
  auto tensors = TensorsOf(rm, s);
  const bool sha = level == VerifyLevel::kFull || !shard.xxh3;
  ShardHasher hasher(tensors, {.sha256 = sha, .per_tensor = true});
  std::vector<uint8_t> chunk(std::min<uint64_t>(kChunk, std::max<uint64_t>(actual, 1)));
  const uint64_t n = std::min(actual, shard.size);
  std::string prefix;
  for (uint64_t off = 0; off < n; off += chunk.size()) {
    const uint64_t len = std::min<uint64_t>(chunk.size(), n - off);
    Status st = loc.ReadAt(step, shard.file, off, len, chunk.data());
    if (!st.ok()) {
      problems->push_back(ReadProblem(shard.file, "", st, "missing"));
      return;
    }
    hasher.Update(chunk.data(), len);
    if (off == 0) prefix.assign(reinterpret_cast<const char*>(chunk.data()), len);
  }
  if (prefix.size() >= 8) {
    const uint64_t hlen = DecodeFixed64(prefix.data());
    if (hlen <= kMaxHeaderBytes && hlen + 8 > prefix.size() && hlen + 8 <= n) {
      prefix.resize(hlen + 8);
      Status st = loc.ReadAt(step, shard.file, 0, hlen + 8, prefix.data());
      if (!st.ok()) prefix.clear();
    }
  }
  CheckHeader(shard.file, prefix, actual, tensors, problems);
  if (actual == shard.size) {
    if (shard.xxh3 && hasher.Xxh3() != *shard.xxh3) {
      problems->push_back({shard.file, "", "xxh3 mismatch: the shard's bytes changed"});
    }
    if (sha && hasher.Sha256Hex() != shard.sha256) {
      problems->push_back({shard.file, "", "SHA-256 mismatch: the shard's bytes changed"});
    }
  }
  for (const TensorEntry* t : hasher.BadTensors()) {
    problems->push_back({shard.file, t->name, "xxh3 mismatch: the tensor's bytes changed"});
  }
}

// Reads one shard into fresh memory, hashing each chunk right after it
// arrives (still in cache) so verification overlaps the reading.
Result<Buffer> ReadShard(Location& loc, int64_t step, const RankManifest& rm, uint32_t s, const LoadOptions& options,
                         std::vector<Problem>* problems) {
  const ShardEntry& shard = rm.shards[s];
  // Page faults on fresh memory cost more than the read itself on some
  // machines (VMs): huge pages, faulted in one call, cut that 512x.
  std::shared_ptr<const void> owner;
  uint8_t* dst = nullptr;
  if (shard.size >= kHugeMin) {
    STRATA_ASSIGN_OR_RETURN(auto region, StagingRegion::Map(shard.size));
    region->Prefault();
    dst = region->data();
    owner = std::move(region);
  } else {
    auto bytes = std::make_shared<std::vector<uint8_t>>(shard.size);
    dst = bytes->data();
    owner = std::move(bytes);
  }
  const bool fast = options.verify && shard.xxh3 && !options.verify_sha256;
  auto tensors = TensorsOf(rm, s);
  ShardHasher hasher(tensors, {.sha256 = options.verify && !fast, .per_tensor = options.verify && !fast});
  // Local: chunks small enough to hash while cache-hot; remote: one call,
  // which the store location splits into parallel ranged GETs itself.
  const uint64_t chunk = loc.is_local() ? kChunk : std::max<uint64_t>(shard.size, 1);
  for (uint64_t off = 0; off < shard.size; off += chunk) {
    const uint64_t n = std::min(chunk, shard.size - off);
    STRATA_RETURN_IF_ERROR(loc.ReadAt(step, shard.file, off, n, dst + off));
    if (options.verify) hasher.Update(dst + off, n);
  }
  if (fast && hasher.Xxh3() != *shard.xxh3) {
    problems->push_back({shard.file, "", "xxh3 mismatch: the shard's bytes changed"});
    for (const TensorEntry* t : BadTensorsIn(dst, shard.size, tensors)) {
      problems->push_back({shard.file, t->name, "xxh3 mismatch"});
    }
  } else if (options.verify && !fast) {
    if (hasher.Sha256Hex() != shard.sha256) problems->push_back({shard.file, "", "SHA-256 mismatch"});
    for (const TensorEntry* t : hasher.BadTensors()) problems->push_back({shard.file, t->name, "xxh3 mismatch"});
  }
  return Buffer::Wrap(std::move(owner), dst, shard.size);
}

Status ProblemsToStatus(const std::vector<Problem>& problems, int64_t step) {
  if (problems.empty()) return Status::Ok();
  VerifyReport r;
  r.step = step;
  r.committed = true;
  r.problems = problems;
  return r.ToStatus();
}

}  // namespace

uint64_t CheckpointInfo::TotalBytes() const {
  uint64_t total = 0;
  for (const auto& r : ranks) {
    for (const auto& s : r.shards) total += s.size;
  }
  return total;
}

size_t CheckpointInfo::NumTensors() const {
  size_t n = 0;
  for (const auto& r : ranks) n += r.tensors.size();
  return n;
}

const TensorEntry* CheckpointInfo::Find(const std::string& name, int* rank) const {
  for (const auto& r : ranks) {
    for (const auto& t : r.tensors) {
      if (t.name != name) continue;
      if (rank) *rank = r.rank;
      return &t;
    }
  }
  return nullptr;
}

bool VerifyReport::OnlyUnreadable() const {
  return !problems.empty() &&
         std::all_of(problems.begin(), problems.end(), [](const Problem& p) { return p.unreadable; });
}

std::string VerifyReport::ToString() const {
  if (ok()) return StepDirName(step) + ": OK";
  std::string s = StepDirName(step) + ":";
  for (const auto& p : problems) {
    s += " [" + p.file + (p.tensor.empty() ? "" : " tensor '" + p.tensor + "'") + ": " + p.what + "]";
  }
  return s;
}

Status VerifyReport::ToStatus() const {
  if (ok()) return Status::Ok();
  if (OnlyUnreadable()) {
    const Code c = problems.front().code == Code::kOk ? Code::kUnavailable : problems.front().code;
    return Status(c, "checkpoint " + ToString() + " (could not be read; nothing found wrong)");
  }
  if (!committed) return NotFoundError("checkpoint " + ToString());
  return CorruptionError("checkpoint " + ToString());
}

bool ProvenTorn(const Status& st) { return st.code() == Code::kNotFound || st.code() == Code::kCorruption; }

Result<CheckpointInfo> OpenCheckpoint(Location& loc, int64_t step) {
  VerifyReport r;
  auto info = ReadChain(loc, step, &r);
  if (!info) return r.ToStatus().WithContext(loc.Describe());
  std::unordered_map<std::string, uint64_t> sizes;
  CheckShardSizes(loc, *info, &r, &sizes);
  if (!r.ok()) return r.ToStatus().WithContext(loc.Describe());
  return std::move(*info);
}

VerifyReport Verify(Location& loc, int64_t step, VerifyLevel level, int parallelism) {
  VerifyReport r;
  auto info = ReadChain(loc, step, &r);
  if (!info) return r;
  std::unordered_map<std::string, uint64_t> sizes;
  CheckShardSizes(loc, *info, &r, &sizes);
  if (level == VerifyLevel::kQuick) return r;
  std::vector<std::pair<const RankManifest*, uint32_t>> shards;
  for (const auto& rm : info->ranks) {
    for (uint32_t s = 0; s < rm.shards.size(); ++s) {
      if (sizes.count(rm.shards[s].file)) shards.push_back({&rm, s});
    }
  }
  std::vector<std::vector<Problem>> found(shards.size());
  ParallelFor(shards.size(), std::max(1, parallelism), [&](size_t i) {
    const auto& [rm, s] = shards[i];
    VerifyShardBytes(loc, step, *rm, s, sizes.at(rm->shards[s].file), level, &found[i]);
  });
  for (auto& f : found) {
    for (auto& p : f) {
      bool dup = std::any_of(r.problems.begin(), r.problems.end(),
                             [&](const Problem& q) { return q.file == p.file && q.tensor == p.tensor; });
      if (!dup) r.problems.push_back(std::move(p));
    }
  }
  return r;
}

namespace {
std::string NotFallingBack(const Location& loc) {
  return "the newest candidate in " + loc.Describe() +
         " could not be checked; not falling back to an older checkpoint (retry)";
}
}  // namespace

Result<CheckpointInfo> Latest(Location& loc, VerifyLevel level, std::vector<VerifyReport>* skipped) {
  STRATA_ASSIGN_OR_RETURN(auto steps, loc.ListSteps());
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    VerifyReport r = Verify(loc, *it, level);
    if (r.ok()) {
      auto info = OpenCheckpoint(loc, *it);
      if (info.ok()) return info;
      if (!ProvenTorn(info.status())) return info.status().WithContext(NotFallingBack(loc));
      r = Verify(loc, *it, VerifyLevel::kQuick);  // changed under us: report and go on
    }
    // Perhaps the newest good one: an older one is never loaded in its place.
    if (r.OnlyUnreadable()) return r.ToStatus().WithContext(NotFallingBack(loc));
    STRATA_LOG_INFO("ckpt: skipping {} in {}: {}", StepDirName(*it), loc.Describe(), r.ToString());
    if (skipped) skipped->push_back(std::move(r));
  }
  return NotFoundError("no valid checkpoint in " + loc.Describe());
}

const RankManifest* CheckpointInfo::Rank(int rank) const {
  for (const auto& r : ranks) {
    if (r.rank == rank) return &r;
  }
  return nullptr;
}

const LoadedTensor* LoadedCheckpoint::Find(const std::string& name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Result<LoadedCheckpoint> Load(Location& loc, int64_t step, const LoadOptions& options) {
  STRATA_ASSIGN_OR_RETURN(CheckpointInfo info, OpenCheckpoint(loc, step));
  if (options.rank >= static_cast<int>(info.ranks.size())) {
    return InvalidArgumentError("rank " + std::to_string(options.rank) + " not in checkpoint of world size " +
                                std::to_string(info.ranks.size()));
  }
  std::vector<std::pair<const RankManifest*, uint32_t>> shards;
  for (const auto& rm : info.ranks) {
    if (options.rank >= 0 && rm.rank != options.rank) continue;
    for (uint32_t s = 0; s < rm.shards.size(); ++s) shards.push_back({&rm, s});
  }
  std::vector<Buffer> data(shards.size());
  std::vector<std::vector<Problem>> problems(shards.size());
  std::vector<Status> errors(shards.size());
  ParallelFor(shards.size(), std::max(1, options.parallelism), [&](size_t i) {
    const auto& [rm, s] = shards[i];
    auto buf = ReadShard(loc, step, *rm, s, options, &problems[i]);
    if (buf.ok()) data[i] = std::move(*buf);
    errors[i] = buf.status();
  });
  std::vector<Problem> all;
  for (size_t i = 0; i < shards.size(); ++i) {
    if (!errors[i].ok()) return errors[i].WithContext("loading " + StepDirName(step) + " from " + loc.Describe());
    all.insert(all.end(), problems[i].begin(), problems[i].end());
  }
  STRATA_RETURN_IF_ERROR(ProblemsToStatus(all, step));
  LoadedCheckpoint out;
  for (size_t i = 0; i < shards.size(); ++i) {
    const auto& [rm, s] = shards[i];
    for (const auto& t : rm->tensors) {
      if (t.shard == s) out.tensors.push_back({t.name, t.dtype, t.shape, data[i].Slice(t.offset, t.size)});
    }
  }
  out.metadata = info.manifest.metadata;
  out.info = std::move(info);
  return out;
}

Status LoadInto(Location& loc, int64_t step, const std::map<std::string, Target>& targets, const LoadOptions& options) {
  STRATA_ASSIGN_OR_RETURN(CheckpointInfo info, OpenCheckpoint(loc, step));
  if (options.rank >= 0 && !info.Rank(options.rank)) {
    return InvalidArgumentError("rank " + std::to_string(options.rank) + " is not in " + StepDirName(step) +
                                " (world size " + std::to_string(info.ranks.size()) + ")");
  }
  // name -> (tensor, its shard) over the selected rank(s); one pass, so a
  // state_dict of many thousand tensors costs no quadratic lookup.
  std::unordered_map<std::string_view, std::pair<const TensorEntry*, const ShardEntry*>> index;
  for (const auto& rm : info.ranks) {
    if (options.rank >= 0 && rm.rank != options.rank) continue;
    for (const auto& t : rm.tensors) index.try_emplace(t.name, &t, &rm.shards[t.shard]);
  }
  const std::string where =
      options.rank >= 0 ? "rank " + std::to_string(options.rank) + " of " + StepDirName(step) : StepDirName(step);
  struct Job {
    const TensorEntry* entry;
    const ShardEntry* shard;
    Target target;
  };
  std::vector<Job> jobs;
  for (const auto& [name, target] : targets) {
    auto it = index.find(name);
    if (it == index.end()) return NotFoundError("tensor '" + name + "' is not in " + where + " in " + loc.Describe());
    const auto [t, shard] = it->second;
    if (target.size != t->size || (t->size > 0 && !target.data)) {
      return InvalidArgumentError("tensor '" + name + "' has " + std::to_string(t->size) +
                                  " bytes; the destination has " + std::to_string(target.size));
    }
    jobs.push_back({t, shard, target});
  }
  std::vector<Status> errors(jobs.size());
  ParallelFor(jobs.size(), std::max(1, options.parallelism), [&](size_t i) {
    const Job& j = jobs[i];
    errors[i] = loc.ReadAt(step, j.shard->file, j.entry->offset, j.entry->size, j.target.data);
    if (errors[i].ok() && options.verify && XxHash3(j.target.data, j.entry->size) != j.entry->xxh3) {
      errors[i] = CorruptionError(StepDirName(step) + "/" + j.shard->file + " tensor '" + j.entry->name +
                                  "': xxh3 mismatch: the tensor's bytes changed");
    }
  });
  for (const auto& st : errors) STRATA_RETURN_IF_ERROR(st);
  return Status::Ok();
}

Result<std::string> CopyShard(Location& from, int64_t step, const RankManifest& rm, uint32_t s, Location& to,
                              const std::function<bool()>& cancelled) {
  const ShardEntry& shard = rm.shards.at(s);
  const std::string where = StepDirName(step) + "/" + shard.file + " in " + from.Describe();
  STRATA_ASSIGN_OR_RETURN(uint64_t size, from.FileSize(step, shard.file));
  if (size != shard.size) {
    return CorruptionError(where + ": size " + std::to_string(size) + " bytes, manifest says " +
                           std::to_string(shard.size) + "; not copying it");
  }
  const auto tensors = TensorsOf(rm, s);
  const bool xxh = shard.xxh3.has_value();
  ShardHasher hasher(tensors, {.sha256 = !xxh, .per_tensor = true});
  object::PartSource source = [&](uint64_t offset, uint64_t n) -> Result<Buffer> {
    if (cancelled && cancelled()) return CancelledError("copy of " + where + " cancelled");
    MutableBuffer part(n);
    STRATA_RETURN_IF_ERROR(from.ReadAt(step, shard.file, offset, n, part.data()));
    return std::move(part).Freeze();
  };
  object::StreamPutHooks hooks;
  hooks.in_order = [&](uint64_t, const Buffer& part) {
    hasher.Update(part.data(), part.size());
    return Status::Ok();
  };
  hooks.before_commit = [&]() -> Status {
    if (xxh ? hasher.Xxh3() == *shard.xxh3 : hasher.Sha256Hex() == shard.sha256) return Status::Ok();
    std::string names;
    for (const TensorEntry* t : hasher.BadTensors()) names += (names.empty() ? "'" : ", '") + t->name + "'";
    return CorruptionError(where + ": " + (xxh ? "xxh3" : "SHA-256") + " mismatch: the shard's bytes changed" +
                           (names.empty() ? "" : " (tensor " + names + ")") + "; not copying it");
  };
  return to.WriteFileFrom(step, shard.file, size, source, hooks);
}

namespace {

// Manifests and markers of a committed checkpoint, exactly as committed:
// each text re-read from `from` must still hash to what its parent records.
Status CopyManifests(Location& from, int64_t step, const CheckpointInfo& info, Location& to) {
  for (const auto& ref : info.manifest.ranks) {
    STRATA_ASSIGN_OR_RETURN(std::string text, from.ReadSmall(step, ref.manifest, kMaxManifestBytes));
    if (Sha256Hex(text) != ref.sha256) return CorruptionError(ref.manifest + " changed while being copied");
    STRATA_RETURN_IF_ERROR(to.WriteFile(step, ref.manifest, Buffer::FromString(text)));
    STRATA_RETURN_IF_ERROR(to.WriteFile(step, RankCommitName(ref.rank), Buffer::FromString(EncodeCommit(ref.sha256))));
  }
  STRATA_ASSIGN_OR_RETURN(std::string marker, from.ReadSmall(step, kCommitFile, 4096));
  STRATA_ASSIGN_OR_RETURN(std::string digest, ParseCommit(marker));
  STRATA_ASSIGN_OR_RETURN(std::string text, from.ReadSmall(step, kManifestFile, kMaxManifestBytes));
  if (Sha256Hex(text) != digest) return CorruptionError(std::string(kManifestFile) + " changed while being copied");
  STRATA_RETURN_IF_ERROR(to.WriteFile(step, kManifestFile, Buffer::FromString(text)));
  return to.WriteFile(step, kCommitFile, Buffer::FromString(marker));  // last
}

// Commit markers first, so a partial copy never counts as committed.
void WithdrawCommit(Location& to, int64_t step, const CheckpointInfo& info) {
  to.Remove(step, kCommitFile).IgnoreError();
  for (const auto& ref : info.manifest.ranks) to.Remove(step, RankCommitName(ref.rank)).IgnoreError();
}

}  // namespace

Status Pull(Location& from, int64_t step, Location& to, int parallelism) {
  STRATA_ASSIGN_OR_RETURN(CheckpointInfo info, OpenCheckpoint(from, step));
  const bool existed = to.ListFiles(step).ok();
  if (to.FileSize(step, kCommitFile).ok()) {
    VerifyReport there = Verify(to, step, VerifyLevel::kBytes, parallelism);
    if (there.ok()) {
      return AlreadyExistsError(StepDirName(step) + " is already committed in " + to.Describe());
    }
    if (there.OnlyUnreadable()) {  // perhaps intact: never withdraw a copy we could not read
      return UnavailableError("could not check the copy already committed in " + to.Describe() + ": " +
                              there.ToString());
    }
    // A damaged copy: it stops counting now and is replaced by a verified one.
    STRATA_RETURN_IF_ERROR(to.Remove(step, kCommitFile));
  }
  std::vector<std::pair<const RankManifest*, uint32_t>> shards;
  for (const auto& rm : info.ranks) {
    for (uint32_t s = 0; s < rm.shards.size(); ++s) shards.push_back({&rm, s});
  }
  std::vector<Status> errors(shards.size());
  ParallelFor(shards.size(), std::max(1, parallelism),
              [&](size_t i) { errors[i] = CopyShard(from, step, *shards[i].first, shards[i].second, to).status(); });
  Status st;
  for (const auto& e : errors) {
    if (!e.ok()) {
      st = e;
      break;
    }
  }
  if (st.ok()) st = CopyManifests(from, step, info, to);
  if (st.ok()) st = Verify(to, step, VerifyLevel::kQuick).ToStatus().WithContext("checking the copy's manifests");
  if (!st.ok()) {
    WithdrawCommit(to, step, info);
    if (!existed) to.RemoveStep(step).IgnoreError();  // nothing was there: leave nothing
    return st.WithContext("pulling " + StepDirName(step) + " from " + from.Describe() + " to " + to.Describe());
  }
  return Status::Ok();
}

}  // namespace strata::ckpt
