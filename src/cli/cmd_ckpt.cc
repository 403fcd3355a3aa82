// strata ckpt ls | show | verify | pull | gc: inspect and manage checkpoints
// in a local directory or an object store URL.
#include <algorithm>
#include <charconv>
#include <iostream>
#include <nlohmann/json.hpp>

#include "ckpt/commit.h"
#include "ckpt/reader.h"
#include "cli/cache_flags.h"
#include "cli/command.h"
#include "cli/util.h"
#include "group/group_store.h"
#include "object/store_url.h"

namespace strata::cli {
namespace {

using namespace strata::ckpt;

struct CkptArgs {
  std::string location, destination, step = "latest";
  bool quick = false, tensors = false, json = false, dry_run = false, all = false;
  int keep = 0;
  int parallelism = 4;
};

std::unique_ptr<Location> OpenLoc(const std::string& cmd, const std::string& where) {
  return Check(OpenLocation(where), cmd, where);
}

// "latest" (the newest checkpoint whose every byte verifies; with `quick`,
// whose markers, manifests and sizes do) or a step number.
int64_t ResolveStep(const std::string& cmd, Location& loc, const std::string& step, bool quick = false) {
  if (step == "latest") {
    return Check(Latest(loc, quick ? VerifyLevel::kQuick : VerifyLevel::kBytes), cmd, loc.Describe()).step;
  }
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(step.data(), step.data() + step.size(), v);
  // Whole and in range (strtoll clamped 20 digits to the largest step, which then "did not exist").
  if (ec != std::errc() || end != step.data() + step.size() || v < 0) {
    Fail(cmd, step, InvalidArgumentError("STEP must be a number (0 to 2^63-1) or 'latest'"));
  }
  return v;
}

std::string Date(int64_t ms) { return FormatTime(WallTime(std::chrono::milliseconds(ms))); }

void RunLs(const CkptArgs& a) {
  auto loc = OpenLoc("ckpt ls", a.location);
  auto steps = Check(loc->ListSteps(), "ckpt ls", a.location);
  std::printf("%-16s %-10s %6s %8s %12s  %s\n", "STEP", "STATE", "RANKS", "TENSORS", "SIZE", "SAVED");
  for (int64_t s : steps) {
    auto info = OpenCheckpoint(*loc, s);
    if (info.ok()) {
      std::printf("%-16s %-10s %6d %8zu %12s  %s\n", StepDirName(s).c_str(), "committed", info->manifest.world_size,
                  info->NumTensors(), FormatBytes(double(info->TotalBytes())).c_str(),
                  Date(info->manifest.wall_time_ms).c_str());
    } else if (a.all) {
      const Code c = info.status().code();
      const char* state = c == Code::kNotFound ? "torn" : c == Code::kCorruption ? "corrupt" : "unreadable";
      std::printf("%-16s %-10s %6s %8s %12s  %s\n", StepDirName(s).c_str(), state, "-", "-", "-",
                  info.status().message().c_str());
    }
  }
}

void RunShow(const CkptArgs& a) {
  auto loc = OpenLoc("ckpt show", a.location);
  int64_t step = ResolveStep("ckpt show", *loc, a.step);
  CheckpointInfo info = Check(OpenCheckpoint(*loc, step), "ckpt show", loc->Describe() + " " + StepDirName(step));
  if (a.json) {
    nlohmann::json j = nlohmann::json::parse(EncodeGlobalManifest(info.manifest));
    j["ranks_detail"] = nlohmann::json::array();
    for (const auto& r : info.ranks) j["ranks_detail"].push_back(nlohmann::json::parse(EncodeRankManifest(r)));
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "location:   " << loc->Describe() << "\n"
            << "step:       " << step << "\n"
            << "saved:      " << Date(info.manifest.wall_time_ms) << "\n"
            << "world size: " << info.manifest.world_size << "\n"
            << "tensors:    " << info.NumTensors() << "\n"
            << "size:       " << FormatBytes(double(info.TotalBytes())) << "\n"
            << "metadata:   " << info.manifest.metadata << "\n";
  for (const auto& r : info.ranks) {
    for (const auto& s : r.shards) std::cout << "  " << s.file << "  " << s.size << "  sha256:" << s.sha256 << "\n";
  }
  if (!a.tensors) return;
  for (const auto& r : info.ranks) {
    for (const auto& t : r.tensors) {
      std::string shape;
      for (auto d : t.shape) shape += (shape.empty() ? "" : ",") + std::to_string(d);
      std::printf("  %-40s %-5s [%s] %s @%llu +%llu\n", t.name.c_str(), t.dtype.c_str(), shape.c_str(),
                  r.shards[t.shard].file.c_str(), (unsigned long long)t.offset, (unsigned long long)t.size);
    }
  }
}

void RunVerify(const CkptArgs& a) {
  auto loc = OpenLoc("ckpt verify", a.location);
  std::vector<int64_t> steps;
  if (a.step == "all") {
    steps = Check(loc->ListSteps(), "ckpt verify", a.location);
  } else {
    steps.push_back(ResolveStep("ckpt verify", *loc, a.step, a.quick));
  }
  Status worst;
  for (int64_t s : steps) {
    VerifyReport r = Verify(*loc, s, a.quick ? VerifyLevel::kQuick : VerifyLevel::kFull, a.parallelism);
    if (r.ok()) {
      std::cout << StepDirName(s) << ": OK" << (a.quick ? " (quick)" : " (every byte)") << "\n";
      continue;
    }
    const char* state = r.OnlyUnreadable() ? "UNREADABLE (retry)" : r.committed ? "CORRUPT" : "NOT COMMITTED";
    std::cout << StepDirName(s) << ": " << state << "\n";
    for (const auto& p : r.problems) {
      std::cout << "  " << p.file << (p.tensor.empty() ? "" : " tensor '" + p.tensor + "'") << ": " << p.what << "\n";
    }
    if (worst.ok() || r.committed) worst = r.ToStatus();
  }
  std::cout.flush();
  if (!worst.ok()) Fail("ckpt verify", a.location, worst);
}

// The source read through this process's member of the cache group: each
// block is asked of its owner, which fetches it from the bucket once.
std::unique_ptr<Location> OpenGroupSource(const CkptArgs& a, const CacheSettings& c) {
  const char* cmd = "ckpt pull";
  if (a.location.find("://") == std::string::npos) {
    Fail(cmd, "--cache-group", InvalidArgumentError("a cache group reads a store URL, not a local directory"));
  }
  object::ObjectStorePtr bucket = Check(object::OpenStore(a.location), cmd, a.location);
  group::GroupStoreOptions go;
  go.url = c.group;
  go.listen = c.peer_listen;
  go.secret_file = c.group_secret_file;
  go.deadline = std::chrono::duration_cast<std::chrono::milliseconds>(c.peer_deadline);
  go.cache_dir = c.dir;
  go.disk_bytes = c.disk_bytes;
  go.disk_min_free = c.min_free;
  go.ram_bytes = c.ram_bytes;
  go.block_size = c.block_size;
  go.sealer = CacheSealer(cmd, c, c.dir);
  auto store = Check(group::JoinGroupStore(bucket, go), cmd, c.group);
  return StoreLocation(std::move(store));
}

void RunPull(const CkptArgs& a, const CacheSettings& c) {
  auto from = c.group.empty() ? OpenLoc("ckpt pull", a.location) : OpenGroupSource(a, c);
  auto to = OpenLoc("ckpt pull", a.destination);
  std::vector<int64_t> candidates;
  if (a.step == "latest") {
    // The newest that copies with every shard verified: Pull checks the bytes
    // on the way, so they are read once (not verified first, then copied).
    candidates = Check(from->ListSteps(), "ckpt pull", a.location);
    std::reverse(candidates.begin(), candidates.end());
  } else {
    candidates.push_back(ResolveStep("ckpt pull", *from, a.step));
  }
  Status st = NotFoundError("no valid checkpoint in " + from->Describe());
  for (int64_t step : candidates) {
    if (a.step == "latest") {
      Status open = OpenCheckpoint(*from, step).status();
      if (ProvenTorn(open)) continue;  // torn or partial
      // Unreadable right now: never an older checkpoint in its place.
      if (!open.ok()) Fail("ckpt pull", from->Describe(), open);
    }
    st = Pull(*from, step, *to, a.parallelism);
    if (st.ok()) {
      std::cout << "pulled " << StepDirName(step) << " to " << to->Describe() << " (verified)\n";
      return;
    }
    if (a.step != "latest" || st.code() != Code::kCorruption) break;
    std::cerr << "skipping " << StepDirName(step) << ": " << st.ToString() << "\n";
  }
  Fail("ckpt pull", from->Describe(), st);
}

void RunGc(const CkptArgs& a) {
  auto loc = OpenLoc("ckpt gc", a.location);
  auto deleted = Check(RetainNewest(*loc, a.keep, {}, nullptr, nullptr, a.dry_run), "ckpt gc", a.location);
  for (int64_t s : deleted) std::cout << (a.dry_run ? "would delete " : "deleted ") << StepDirName(s) << "\n";
  if (deleted.empty()) std::cout << "nothing to delete\n";
}

CommandRegistrar registrar("ckpt", [](CLI::App& root) {
  auto a = std::make_shared<CkptArgs>();
  auto* ckpt = root.add_subcommand("ckpt", "Inspect and manage checkpoints (a local directory or a store URL)");
  ckpt->require_subcommand(1);
  const char* where = "Checkpoint directory or store URL (file:///dir, s3://bucket/prefix?..., mem://name)";

  auto* ls = ckpt->add_subcommand("ls", "List checkpoints (committed ones; --all adds torn and corrupt)");
  ls->add_option("location", a->location, where)->required();
  ls->add_flag("--all", a->all, "Also list torn (uncommitted) and corrupt checkpoints");
  ls->callback([a] { RunLs(*a); });

  auto* show = ckpt->add_subcommand("show", "Show a checkpoint's manifest");
  show->add_option("location", a->location, where)->required();
  show->add_option("step", a->step, "Step number or 'latest' (the newest valid one)");
  show->add_flag("--tensors", a->tensors, "List every tensor");
  show->add_flag("--json", a->json, "Print the manifests as JSON");
  show->callback([a] { RunShow(*a); });

  auto* verify = ckpt->add_subcommand("verify", "Verify checkpoints: every byte (SHA-256 per shard, xxh3 per tensor)");
  verify->add_option("location", a->location, where)->required();
  verify->add_option("step", a->step, "Step number, 'latest' or 'all'");
  verify->add_flag("--quick", a->quick, "Only markers, manifest hashes and shard sizes");
  verify->add_option("-j,--parallel", a->parallelism, "Shards verified at once");
  verify->footer("Names the shard and the tensor of every problem. Exits 5 on corruption, 3 if not committed.");
  verify->callback([a] { RunVerify(*a); });

  auto* pull = ckpt->add_subcommand("pull", "Copy a checkpoint (e.g. from the store to a local directory), verified");
  pull->add_option("source", a->location, where)->required();
  pull->add_option("destination", a->destination, "Where to copy it")->required();
  pull->add_option("step", a->step, "Step number or 'latest' (the newest that copies with every byte verified)");
  pull->add_option("-j,--parallel", a->parallelism, "Shards copied at once");
  // The cache is the group member's: without --cache-group, pull reads the source directly.
  const group::GroupStoreOptions go;
  auto cache = AddCacheFlags(
      pull,
      {.command = "ckpt pull",
       .defaults = {.ram_bytes = go.ram_bytes,
                    .disk_bytes = go.disk_bytes,
                    .block_size = go.block_size,
                    .peer_deadline = go.deadline},
       .refused = {{kMetadataTtl, "a checkpoint is read once; its metadata is not kept"}},
       .needs_group = kGroupMemberFlags | kCacheRam | kCacheDisk | kCacheDir | kCacheFreeSpace | kBlockSize |
                      kCacheEncryptionKeyFile,
       .help = {{kCacheGroup,
                 "Read the source through a cache group: etcd://HOST:PORT/GROUP or static://HOST:PORT,... "
                 "(N nodes pulling one checkpoint fetch each block from the bucket once; keep every member "
                 "running until all have pulled)"},
                {kCacheDir, "With --cache-group: where this member keeps its blocks (default: none, RAM only)"}}});
  pull->callback([a, cache] { RunPull(*a, cache->Settings()); });

  auto* gc = ckpt->add_subcommand("gc", "Delete all but the newest N valid checkpoints, and torn leftovers");
  gc->add_option("location", a->location, where)->required();
  gc->add_option("--keep", a->keep, "How many valid checkpoints to keep (>= 1)")->required();
  gc->add_flag("-n,--dry-run", a->dry_run, "Only print what would be deleted");
  gc->footer(
      "Never deletes the newest valid checkpoint, nor the newest one whose every byte verifies (read in full). "
      "A checkpoint is deleted as torn only when its marker or manifest is missing or wrong; one that cannot be "
      "read (a 503, a timeout, an I/O error) is kept, with a warning, for the next run. "
      "Do not run while a writer saves into the same location.");
  gc->callback([a] { RunGc(*a); });
});

}  // namespace
}  // namespace strata::cli
