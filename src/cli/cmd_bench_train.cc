// strata bench train: accelerator utilisation (AU) with emulated accelerators,
// as DLIO / MLPerf Storage measure it, fed by strata's streaming loader over
// packed shards (train/engine.h has the method, train/rules.h the run rules).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "base/json_text.h"
#include "base/units.h"
#include "cli/cache_flags.h"
#include "cli/command.h"
#include "cli/url.h"
#include "cli/util.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "object/cloud_store.h"
#include "train/engine.h"
#include "train/generate.h"
#include "train/report.h"
#include "train/rules.h"

namespace strata::cli {
namespace {

namespace fs = std::filesystem;
using namespace strata::train;

constexpr const char* kCmd = "bench train";

struct TrainArgs {
  std::string workload = "resnet50";
  std::string accelerator = "h100";
  std::string url, generate_to;
  bool generate_only = false, shards_only = false;
  std::string emulate;  // empty: ttfb=30ms,bw=25MB/s for a generated dataset, none for --url
  uint64_t samples = 0, samples_per_file = 0, batch = 0;
  std::string record_size;
  std::string compute_time;  // a duration (base/units.h); a bare number is seconds
  double threshold = -1;
  uint64_t epochs = 2;
  std::string accelerators;
  size_t max_accelerators = 8, min_accelerators = 1;
  bool no_stop = false, quick = false;
  CacheSettings cache;  // --cache-dir, --cache-disk, --cache-ram (cache_flags.h)
  size_t prefetch_shards = 0, prefetch_batches = 8, decode_threads = 2, fetch = 16,
         connections = loader::StreamingOptions{}.max_connections;
  std::string prefetch_bytes;  // empty: the loader's default (from the RAM cache)
  bool no_cache = false;
  bool no_next_epoch_prefetch = false;
  std::string shuffle = "window";
  size_t shuffle_window = 8;
  uint64_t seed = 0;
  std::string collate = "view";
  std::string verify = "auto";
  std::string json_path, label = "strata loader";
  bool quiet = false;
};

// This process's peak resident memory (its VmHWM), in bytes.
uint64_t PeakRssBytes() {
  rusage usage{};
  return ::getrusage(RUSAGE_SELF, &usage) == 0 ? static_cast<uint64_t>(usage.ru_maxrss) * 1024 : 0;  // in KiB
}

// Removes a temporary directory however the command ends.
struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

std::string MakeTemp(const std::string& what) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/strata-bench-train-XXXXXX";
  if (!mkdtemp(pattern.data()))
    Fail(kCmd, pattern, ErrnoToStatus(errno, "cannot create a temporary directory for " + what));
  return pattern;
}

loader::Shuffle ParseShuffle(const std::string& s) {
  if (s == "none") return loader::Shuffle::kNone;
  if (s == "shards") return loader::Shuffle::kShards;
  if (s == "window") return loader::Shuffle::kWindow;
  Fail(kCmd, "--shuffle", InvalidArgumentError("expected none, shards or window, got '" + s + "'"));
}

// The workload's published parameters with the command line's overrides.
struct Plan {
  Workload w;
  double compute_s = 0;
  double threshold = 0;
};

Plan MakePlan(const TrainArgs& a) {
  Plan p;
  p.w = Check(FindWorkload(a.workload), kCmd, "--workload");
  p.compute_s = Check(ComputeTime(p.w, a.accelerator), kCmd, "--accelerator");
  if (a.samples) p.w.samples = a.samples;
  if (!a.record_size.empty()) p.w.record_size = Check(ParseSize(a.record_size), kCmd, "--record-size");
  if (a.samples_per_file) p.w.samples_per_file = a.samples_per_file;
  if (a.batch) p.w.batch = a.batch;
  if (!a.compute_time.empty()) p.compute_s = Seconds(Check(ParseDuration(a.compute_time), kCmd, "--compute-time"));
  p.threshold = a.threshold >= 0 ? a.threshold / 100.0 : p.w.threshold;
  if (p.threshold <= 0 || p.threshold > 1)
    Fail(kCmd, "--threshold", InvalidArgumentError("expected a percentage in (0, 100]"));
  if (a.epochs == 0) Fail(kCmd, "--epochs", InvalidArgumentError("must be at least 1"));
  return p;
}

std::string Quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,=@%+") ==
                        std::string::npos) {
    return s;
  }
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The command line that reproduces this run (every parameter explicit).
std::string ReproduceCommand(const TrainArgs& a, const Plan& p) {
  std::ostringstream s;
  s << "strata bench train --workload " << p.w.name << " --accelerator " << a.accelerator;
  if (!a.url.empty()) s << " --url " << Quote(a.url);
  if (!a.generate_to.empty()) s << " --generate-to " << Quote(a.generate_to);
  if (a.shards_only) s << " --shards-only";
  if (a.url.empty()) {
    s << " --samples " << p.w.samples << " --record-size " << p.w.record_size << " --samples-per-file "
      << p.w.samples_per_file;
  }
  if (a.emulate != "none") s << " --emulate " << Quote(a.emulate);
  s << " --batch " << p.w.batch << " --compute-time " << p.compute_s << " --epochs " << a.epochs;
  if (!a.accelerators.empty())
    s << " --accelerators " << a.accelerators;
  else
    s << " --max-accelerators " << a.max_accelerators;
  s << " --threshold " << p.threshold * 100;
  if (a.no_stop) s << " --no-stop";
  if (a.quick) s << " --quick";
  if (a.no_cache) s << " --no-cache";
  s << " --cache-ram " << FormatSizeExact(a.cache.ram_bytes) << " --prefetch-batches " << a.prefetch_batches
    << " --connections " << a.connections;
  if (!a.prefetch_bytes.empty()) s << " --prefetch-bytes " << a.prefetch_bytes;
  if (a.prefetch_shards) s << " --prefetch-shards " << a.prefetch_shards;
  if (a.no_next_epoch_prefetch) s << " --no-next-epoch-prefetch";
  if (a.min_accelerators > 1) s << " --min-accelerators " << a.min_accelerators;
  s << " --shuffle " << a.shuffle << " --seed " << a.seed << " --collate " << a.collate;
  if (a.verify != "auto") s << " --verify " << a.verify;
  if (!a.json_path.empty()) s << " --json " << Quote(a.json_path);
  return s.str();
}

void Say(const TrainArgs& a, const std::string& line) {
  if (!a.quiet) std::cout << line << std::endl;
}

loader::StreamingOptions LoaderOptions(const TrainArgs& a, const Plan& plan) {
  loader::StreamingOptions base;
  base.verify = Check(loader::ParseShardVerify(a.verify), kCmd, "--verify");
  base.batch_views = a.collate == "view";
  base.shuffle = ParseShuffle(a.shuffle);
  base.shuffle_window = a.shuffle_window;
  base.seed = a.seed;
  base.batch_size = plan.w.batch;
  base.prefetch_shards = a.prefetch_shards;
  base.prefetch_batches = a.prefetch_batches;
  base.decode_threads = a.decode_threads;
  base.prefetch_next_epoch = !a.no_next_epoch_prefetch;
  base.fetch_concurrency = a.fetch;
  base.max_connections = a.connections;
  base.async_cache_writes = true;  // the accelerator does not wait for the cache's fsyncs
  if (!a.prefetch_bytes.empty()) base.prefetch_bytes = Check(ParseSize(a.prefetch_bytes), kCmd, "--prefetch-bytes");
  base.cache_limit_bytes = a.cache.disk_bytes;
  base.cache_min_free = a.cache.min_free;
  base.ram_cache_bytes = a.cache.ram_bytes;
  base.cache_encryption_key_file = a.cache.encryption_key_file;  // a temporary cache root is encrypted too
  return base;
}

// The workload's dataset as the run rules size it, with `record_bytes` per sample.
DatasetShape ShapeOf(const Plan& p, uint64_t record_bytes) {
  return {p.w.batch, p.compute_s, record_bytes, p.w.samples_per_file};
}

std::string TempRoot() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

// The local directory a URL names, or "" (s3://, mem://: nothing to check).
std::string LocalPath(const std::string& url) {
  auto parsed = ParseObjectUrl(url);
  return parsed.ok() && parsed->kind == ObjectUrl::Kind::kFile ? parsed->path : std::string();
}

struct DatasetSource {
  object::ObjectStorePtr store;
  std::string prefix, where;
  nlohmann::json json;
};

// Generates the dataset (or reuses one generated with the same parameters)
// after checking the disk has room for it and the shard cache.
DatasetSource GenerateDataset(const TrainArgs& a, const Plan& plan, const loader::StreamingOptions& base, TempDir& temp,
                              const std::string& cache_path) {
  GenerateOptions g;
  g.samples = plan.w.samples;
  g.record_size = plan.w.record_size;
  g.samples_per_file = plan.w.samples_per_file;
  g.format = plan.w.format;
  g.field = plan.w.field;
  g.seed = a.seed + 1;
  g.write_files = !a.generate_to.empty() && !a.shards_only;  // files/ only where a baseline can read them
  Endpoint dst;
  if (!a.generate_to.empty())
    dst = Check(OpenTreeDestination(Check(ParseObjectUrl(a.generate_to), kCmd, a.generate_to)), kCmd, a.generate_to);
  const bool reuse = dst.store && GeneratedAlready(*dst.store, dst.key, g);
  std::vector<DiskNeed> needs;
  const std::string data_dir = a.generate_to.empty() ? TempRoot() : LocalPath(a.generate_to);
  const uint64_t shard_bytes = g.samples * g.record_size + g.samples * 2048;  // framing: generously
  if (!reuse && !data_dir.empty()) {
    if (g.write_files) needs.push_back({data_dir, g.samples * g.record_size, "sample files"});
    needs.push_back({data_dir, shard_bytes, "shards"});
  }
  if (!a.no_cache && !a.generate_only)
    needs.push_back({cache_path, std::min(base.cache_limit_bytes, shard_bytes), "shard cache"});
  Check(CheckDiskSpace(needs,
                       "for " + std::to_string(g.samples) + " samples of " + FormatBytes(double(g.record_size)) +
                           "; point TMPDIR, --generate-to or --cache-dir elsewhere, ask fewer --accelerators, or pass "
                           "a smaller --samples (its results are then marked not valid)"),
        kCmd, "--samples");
  if (!dst.store) {
    temp.path = MakeTemp("the dataset");
    dst = Check(OpenTreeDestination(Check(ParseObjectUrl(temp.path + "/data/"), kCmd, temp.path)), kCmd, temp.path);
  }
  DatasetSource src;
  if (reuse) {
    Say(a, "reusing the dataset generated with the same parameters under " + dst.UrlOf(dst.key));
  } else {
    auto gen = Check(Generate(*dst.store, dst.key, g), kCmd, dst.UrlOf(dst.key));
    Say(a, "generated " + std::to_string(gen.samples) + " samples of " + FormatBytes(double(plan.w.record_size)) +
               (g.write_files ? " as files under " + dst.UrlOf(dst.key + "files/") + " and" : " as") + " " +
               std::to_string(gen.shards) + " " + std::string(dataset::FormatName(plan.w.format)) + " shards (" +
               FormatBytes(double(gen.shard_bytes)) + ") under " + dst.UrlOf(dst.key + "shards/") + " in " +
               FormatDuration(gen.seconds));
    Check(MarkGenerated(*dst.store, dst.key, g), kCmd, dst.UrlOf(dst.key));
  }
  src.json = {{"generated", dst.UrlOf(dst.key)}, {"reused", reuse}};
  src.store = dst.store;
  if (a.emulate != "none") {
    src.store = object::EmulateCloud(src.store, Check(object::ParseCloudProfile(a.emulate), kCmd, "--emulate"));
  }
  src.prefix = dst.key + "shards/";
  src.where = dst.UrlOf(src.prefix) + (a.emulate != "none" ? " (emulated cloud: " + a.emulate + ")" : "");
  return src;
}

DatasetSource OpenDataset(const TrainArgs& a) {
  Endpoint src = Check(OpenTreeSource(Check(ParseObjectUrl(a.url), kCmd, a.url)), kCmd, a.url);
  DatasetSource d{src.store, src.key, a.url, {{"url", a.url}}};
  if (a.emulate != "none") {  // an existing dataset read as from a cloud bucket (cold runs without regenerating)
    d.store = object::EmulateCloud(d.store, Check(object::ParseCloudProfile(a.emulate), kCmd, "--emulate"));
    d.where += " (emulated cloud: " + a.emulate + ")";
  }
  return d;
}

// What the emulated bucket can give one rank (said, and kept in the JSON).
void SayBucketCeiling(const TrainArgs& a, const loader::StreamingOptions& base, nlohmann::json* dataset_json) {
  if (a.emulate == "none") return;
  const object::CloudProfile cp = Check(object::ParseCloudProfile(a.emulate), kCmd, "--emulate");
  const uint64_t shard =
      (*dataset_json)["shard_bytes"].get<uint64_t>() / std::max<uint64_t>(1, (*dataset_json)["shards"].get<uint64_t>());
  const auto ceiling = EmulatedBucketCeiling(cp, base, shard);
  if (!ceiling) return;
  (*dataset_json)["bucket_ceiling_mib_s_per_rank"] = ceiling->bytes_s / double(1 << 20);
  Say(a, "emulated bucket ceiling per rank: " + ceiling->Line());
}

// Refuses flags that do not go together; fills the defaults that depend on others.
void ResolveFlags(TrainArgs* a) {
  if (!a->url.empty() && !a->generate_to.empty()) {
    Fail(kCmd, "--url", InvalidArgumentError("give either --url (an existing packed dataset) or --generate-to"));
  }
  if (a->generate_only && a->generate_to.empty()) {
    Fail(kCmd, "--generate-only", InvalidArgumentError("--generate-only needs --generate-to"));
  }
  if (a->emulate.empty()) a->emulate = a->url.empty() ? "ttfb=30ms,bw=25MB/s" : "none";
  if (a->collate != "view" && a->collate != "copy") {
    Fail(kCmd, "--collate", InvalidArgumentError("--collate is view or copy, not '" + a->collate + "'"));
  }
}

// A dataset to generate has, unless --samples or --quick say otherwise, what
// the run rules need at the largest N (and says so).
void SizeDataset(const TrainArgs& a, const RunRules& rules, const loader::StreamingOptions& base, size_t largest_n,
                 Plan* plan) {
  const Sizing needed = SizeFor(rules, base, ShapeOf(*plan, plan->w.record_size), largest_n);
  if (a.url.empty() && !a.samples && !a.quick) plan->w.samples = needed.samples;  // else as given, or --quick's
  if (!a.url.empty() || a.quick) return;
  Say(a,
      "dataset: " + std::to_string(plan->w.samples) + " samples" +
          (plan->w.samples >= needed.samples ? " (" : " (fewer than the " + std::to_string(needed.samples) + " of ") +
          needed.Explain(rules, plan->w.batch) + ")");
}

// The dataset as it is, read before any timing.
struct Probed {
  uint64_t samples = 0;
  uint64_t shard_bytes = 0;
  uint64_t record_bytes = 0;  // payload per sample: as generated, else from the shards (framing included)
};

Probed ProbeDataset(const TrainArgs& a, const Plan& plan, const loader::StreamingOptions& base,
                    const std::string& cache_root, DatasetSource* data) {
  auto probe = Check(loader::StreamingDataset::Open(data->store, data->prefix, base), kCmd, data->where);
  Probed p;
  p.samples = probe->size();
  p.shard_bytes = probe->index().total_shard_bytes();
  data->json["samples"] = p.samples;
  data->json["shards"] = probe->index().shards.size();
  data->json["shard_bytes"] = p.shard_bytes;
  probe.reset();
  if (!a.url.empty() && !a.no_cache) {  // a generated dataset's cache was checked with it
    Check(CheckDiskSpace({{cache_root, std::min(base.cache_limit_bytes, p.shard_bytes), "shard cache"}},
                         "point --cache-dir elsewhere or run with --no-cache"),
          kCmd, "--cache-dir");
  }
  p.record_bytes = a.url.empty() || !p.samples ? plan.w.record_size : p.shard_bytes / p.samples;
  return p;
}

// Says up to which N the dataset as it is (its own shards, no rounding up)
// can give valid results, or that --quick's never are.
void SayValidity(const TrainArgs& a, const RunRules& rules, const Plan& plan, const loader::StreamingOptions& base,
                 const std::vector<size_t>& counts, const Probed& probed) {
  const size_t largest_n = *std::max_element(counts.begin(), counts.end());
  DatasetShape as_is = ShapeOf(plan, probed.record_bytes);
  as_is.samples_per_file = 1;
  const size_t sized_n = LargestSizedN(rules, base, as_is, counts, probed.samples);
  if (a.quick) {
    Say(a, "--quick: a smoke run on " + std::to_string(probed.samples) +
               " samples; its figures are not valid under the run rules");
  } else if (sized_n < largest_n) {
    const Sizing full = SizeFor(rules, base, as_is, largest_n);
    Say(a, "note: " + std::to_string(probed.samples) +
               " samples make valid results possible up to N=" + std::to_string(sized_n) + " only (" +
               full.Explain(rules, plan.w.batch) + ": " + std::to_string(full.samples) + " samples)");
  }
}

// Every N and epoch asked, each result said as it comes; `*note` says why the sweep stopped early.
std::vector<EpochResult> RunSweep(const TrainArgs& a, const RunRules& rules, const Plan& plan,
                                  const loader::StreamingOptions& base, const std::vector<size_t>& counts,
                                  const std::string& cache_root, const Probed& probed, DatasetSource* data,
                                  std::string* note) {
  Say(a, "workload " + plan.w.name + " (" + a.accelerator + "): batch " + std::to_string(plan.w.batch) + ", compute " +
             FormatDuration(plan.compute_s) + " per batch, AU threshold " +
             std::to_string(int(plan.threshold * 100 + 0.5)) + "%; " + std::to_string(probed.samples) +
             " samples from " + data->where);
  SweepOptions so;
  so.counts = counts;
  so.epochs = a.epochs;
  so.compute = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(plan.compute_s));
  so.threshold = plan.threshold;
  so.stop_below = !a.no_stop;
  so.min_n = a.min_accelerators;
  so.samples = probed.samples;
  so.batch = plan.w.batch;
  so.rules = rules;
  so.smoke = a.quick;
  SayBucketCeiling(a, base, &data->json);
  so.on_result = [&](const EpochResult& r) { Say(a, FormatResultLine(r)); };
  auto results = Check(
      Sweep(so,
            LoaderPrepare(data->store, data->prefix, base, cache_root, a.no_cache, plan.w.batch * probed.record_bytes),
            note),
      kCmd, data->where);
  if (!note->empty()) Say(a, *note);
  return results;
}

// The run as `strata plan --from-bench` and bench/plot_train.py read it.
nlohmann::json ResultsJson(const TrainArgs& a, const Plan& plan, const RunRules& rules,
                           const loader::StreamingOptions& base, const DatasetSource& data,
                           const std::vector<EpochResult>& results, const nlohmann::json& best, uint64_t budget,
                           const std::string& note, const std::string& command) {
  nlohmann::json doc = {{"tool", "strata"},
                        {"label", a.label},
                        {"workload", WorkloadJson(plan.w, a.accelerator, plan.compute_s, plan.threshold)},
                        {"dataset", data.json},
                        {"threshold", plan.threshold},
                        {"rules", rules.ToJson()},
                        {"quick", a.quick},
                        {"loader",
                         {{"shuffle", a.shuffle},
                          {"shuffle_window", a.shuffle_window},
                          {"prefetch_shards", a.prefetch_shards},
                          {"prefetch_batches", a.prefetch_batches},
                          {"decode_threads", a.decode_threads},
                          {"next_epoch_prefetch", !a.no_next_epoch_prefetch},
                          {"collate", a.collate},
                          {"verify", a.verify},
                          {"fetch_concurrency", a.fetch},
                          {"max_connections", a.connections},
                          {"prefetch_bytes", a.prefetch_bytes.empty() ? "default" : a.prefetch_bytes},
                          {"prefetch_budget_bytes", loader::PrefetchBudgetBytes(base)},
                          {"ram_cache_bytes", base.ram_cache_bytes},
                          {"cache", a.no_cache            ? "none (--no-cache)"
                                    : a.cache.dir.empty() ? "temporary directory"
                                                          : a.cache.dir}}},
                        {"results", nlohmann::json::array()},
                        {"max_accelerators", best},
                        {"peak_rss_bytes", PeakRssBytes()},
                        {"loader_budget_bytes", budget},
                        {"command", command}};
  if (!note.empty()) doc["note"] = note;
  for (const auto& r : results) doc["results"].push_back(r.ToJson());
  return doc;
}

void RunTrain(TrainArgs a) {  // a copy: the defaults that depend on other flags are resolved here
  Plan plan = MakePlan(a);
  const auto counts = Check(AcceleratorCounts(a.accelerators, a.max_accelerators), kCmd, "--accelerators");
  ResolveFlags(&a);
  const RunRules rules;
  const loader::StreamingOptions base = LoaderOptions(a, plan);
  SizeDataset(a, rules, base, *std::max_element(counts.begin(), counts.end()), &plan);

  std::string cache_root = a.cache.dir;
  TempDir temp, cache_temp;
  DatasetSource data = a.url.empty()
                           ? GenerateDataset(a, plan, base, temp, cache_root.empty() ? TempRoot() : cache_root)
                           : OpenDataset(a);
  if (a.generate_only) return;
  if (cache_root.empty()) {
    cache_temp.path = MakeTemp("the loader's shard cache");
    cache_root = cache_temp.path;
  }
  const Probed probed = ProbeDataset(a, plan, base, cache_root, &data);
  SayValidity(a, rules, plan, base, counts, probed);
  std::string note;
  const auto results = RunSweep(a, rules, plan, base, counts, cache_root, probed, &data, &note);

  nlohmann::json best = nlohmann::json::object();
  Say(a, LargestPassingLine(results, a.epochs, plan.threshold, a.no_cache, &best));
  if (a.quick) Say(a, "(--quick: no result is valid; run without it for figures to quote)");
  uint64_t budget = 0;
  Say(a, MemoryLine(results, base, plan.w.batch * probed.record_bytes, PeakRssBytes(), &budget));
  const std::string command = ReproduceCommand(a, plan);
  Say(a, "reproduce: " + command);
  if (a.json_path.empty()) return;
  // Temp + fsync + rename (a reader never sees half a result); paths in it may not be UTF-8.
  const nlohmann::json json = ResultsJson(a, plan, rules, base, data, results, best, budget, note, command);
  Check(io::WriteFileAtomicCreatingDirs(io::DefaultFileSystem(), a.json_path, DumpJson(json, 2) + "\n"), kCmd,
        a.json_path);
}

CLI::App* FindOrAddBench(CLI::App& root) {
  for (CLI::App* sub : root.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_name() == "bench") return sub;
  }
  auto* bench = root.add_subcommand("bench", "Benchmarks that reproduce training workloads");
  bench->require_subcommand(1);
  return bench;
}

CommandRegistrar registrar("bench train", [](CLI::App& root) {
  auto a = std::make_shared<TrainArgs>();
  auto* sub = FindOrAddBench(root)->add_subcommand(
      "train", "Accelerator utilisation with emulated accelerators (MLPerf Storage / DLIO), fed by strata's loader");
  sub->add_option("--workload", a->workload, "unet3d | resnet50 | cosmoflow (published MLPerf Storage parameters)")
      ->capture_default_str();
  sub->add_option("--accelerator", a->accelerator, "h100 | a100: the published compute time per batch")
      ->capture_default_str();
  sub->add_option("--url", a->url, "An existing packed dataset (s3://, file://, mem://, local path)");
  sub->add_option("--generate-to", a->generate_to,
                  "Generate the dataset here: files/ (one file per sample) and shards/ (default: a temporary dir)");
  sub->add_flag("--generate-only", a->generate_only, "Generate into --generate-to and exit");
  sub->add_flag("--shards-only", a->shards_only,
                "Generate the shards only, no files/ (half the disk; files/ are for the per-file baselines)");
  sub->add_option("--emulate", a->emulate,
                  "Cloud emulation of the store, e.g. ttfb=30ms,bw=25MB/s, or none (default: that for a generated "
                  "dataset, none for --url)")
      ->capture_default_str();
  sub->add_option("--samples", a->samples,
                  "Samples in the generated dataset (default: what the run rules need at the largest N asked)");
  sub->add_flag("--quick", a->quick,
                "Smoke run: the workload's preset sample count by default, every result marked not valid");
  sub->add_option("--record-size", a->record_size, "Bytes per sample (default: the workload's)");
  sub->add_option("--samples-per-file", a->samples_per_file, "Samples per shard (default: the workload's)");
  sub->add_option("--batch", a->batch, "Batch size per accelerator (default: the workload's)");
  sub->add_option("--compute-time", a->compute_time,
                  "Emulated compute per batch, e.g. 0.224 (seconds) or 224ms (default: published)");
  sub->add_option("--epochs", a->epochs, "Epochs per N (epoch 1 cold, later ones warm)")->capture_default_str();
  sub->add_option("--accelerators", a->accelerators, "Comma list of N, e.g. 1,2,4,8 (default: 1,2,4,... to max)");
  sub->add_option("--max-accelerators", a->max_accelerators, "Largest N of the default sweep (one node's)")
      ->capture_default_str();
  sub->add_option("--threshold", a->threshold, "AU threshold in percent (default: the workload's)");
  sub->add_flag("--no-stop", a->no_stop, "Run every N even after AU fell below the threshold");
  sub->add_option("--min-accelerators", a->min_accelerators, "Never stop the sweep before this N")
      ->capture_default_str();
  const std::string one_node = "bench train measures one node's loader, not a cache group";
  auto cache = AddCacheFlags(
      sub, {.command = kCmd,
            .defaults = {.ram_bytes = 256ull << 20, .disk_bytes = 16ull << 30},
            .refused = {{kBlockSize, "the loader caches whole shards, not blocks"},
                        {kMetadataTtl, "the loader reads its index once"},
                        {kCacheGroup, one_node},
                        {kPeerListen, one_node},
                        {kGroupSecretFile, one_node},
                        {kPeerDeadline, one_node}},
            .help = {{kCacheDir, "Loader's shard cache root (default: a temporary dir); nN/ per N"},
                     {kCacheDisk,
                      "Disk cache bound (ranks share one cache per process: the largest bound wins) "
                      "(default 16GiB)"},
                     {kCacheRam, "RAM cache (shared by the ranks, like the disk bound) (default 256MiB)"}},
            .deprecated = {{"--cache-limit", kCacheDisk}, {"--ram-cache", kCacheRam}}});
  sub->add_flag("--no-cache", a->no_cache,
                "No shard cache between epochs: every epoch reads the store (cold), as with a dataset larger "
                "than memory");
  sub->add_option("--prefetch-shards", a->prefetch_shards, "At most this many shards ahead per rank (0: no bound)")
      ->capture_default_str();
  sub->add_option("--prefetch-batches", a->prefetch_batches, "Batches queued per rank, and always prefetched at least")
      ->capture_default_str();
  sub->add_option("--prefetch-bytes", a->prefetch_bytes,
                  "Memory budget of the prefetch per rank (default: 4 x --cache-ram); sized by demand within it");
  sub->add_flag("--no-next-epoch-prefetch", a->no_next_epoch_prefetch,
                "Each epoch starts from empty queues (by default the first shards of a rank's next epoch are "
                "fetched while its current epoch ends)");
  sub->add_option("--connections", a->connections, "Store requests in flight per rank at most")->capture_default_str();
  sub->add_option("--decode-threads", a->decode_threads, "Decode threads per rank")->capture_default_str();
  sub->add_option("--fetch", a->fetch, "Ranged GETs per shard fetch")->capture_default_str();
  sub->add_option("--shuffle", a->shuffle, "none | shards | window")->capture_default_str();
  sub->add_option("--shuffle-window", a->shuffle_window, "Shards per shuffle window")->capture_default_str();
  sub->add_option("--seed", a->seed, "Shuffle seed")->capture_default_str();
  sub->add_option("--collate", a->collate,
                  "view: batches view the shard buffers (no copy per batch); copy: each column one contiguous buffer")
      ->capture_default_str();
  sub->add_option("--verify", a->verify,
                  "What fetched shards are checked against: auto (the manifest's crc32c, else sha256), sha256, off")
      ->capture_default_str();
  sub->add_option("--json", a->json_path, "Write the results as JSON here");
  sub->add_option("--label", a->label, "Name of this data path in the JSON")->capture_default_str();
  sub->add_flag("-q,--quiet", a->quiet, "Print nothing on success");
  sub->footer(
      "Each of N emulated accelerators (a thread) has its own loader (rank r of N, sharing one local cache\n"
      "directory), takes a batch, sleeps the compute time, waits at a barrier with the others, and asks for\n"
      "the next. AU = nominal compute time / (N x wall time) from the epoch's start (the loaders' queues empty)\n"
      "to its last step; MiB/s = samples/s x record size / 2^20. The sweep stops after the first N below the\n"
      "threshold. Run rules (MLPerf Storage's, adapted): a result is valid if its epoch lasts >= 100 steps and\n"
      ">= 2 s and, when cold, the dataset is >= 5 x the loaders' memory (prefetch budgets + RAM cache) and the\n"
      "store delivered in the window the bytes consumed; only valid results count toward the largest N.\n"
      "Published parameters (mlcommons/storage): unet3d 146.6 MB samples, 1 per file, batch 7, 0.323 s (H100)\n"
      "/ 0.636 s (A100), AU 90%; resnet50 114.7 KB TFRecord records, 1251 per file, batch 400, 0.224 / 0.435 s,\n"
      "90%; cosmoflow 2.83 MB TFRecord records, 1 per file, batch 1, 0.0035 / 0.00551 s, 70%.\n"
      "Example (scaled: batch and compute time divided by 12.5, same MB/s per accelerator; small budgets):\n"
      "  strata bench train --workload resnet50 --samples-per-file 100 --batch 32 --compute-time 0.01792 \\\n"
      "      --prefetch-bytes 64MiB --cache-ram 64MiB --accelerators 1,2,4 --json au.json");
  sub->callback([a, cache] {
    TrainArgs run = *a;
    run.cache = cache->Settings();
    RunTrain(std::move(run));
  });
});

}  // namespace
}  // namespace strata::cli
