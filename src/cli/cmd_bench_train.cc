// strata bench train: accelerator utilisation (AU) with emulated accelerators,
// as DLIO / MLPerf Storage measure it, fed by strata's streaming loader over
// packed shards (cli/bench_train_engine.h has the method).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/units.h"
#include "cli/bench_train_engine.h"
#include "cli/cache_flags.h"
#include "cli/command.h"
#include "cli/url.h"
#include "cli/util.h"
#include "object/cloud_store.h"

namespace strata::cli {
namespace {

namespace fs = std::filesystem;
using namespace strata::cli::train;

constexpr const char* kCmd = "bench train";

struct TrainArgs {
  std::string workload = "resnet50";
  std::string accelerator = "h100";
  std::string url, generate_to;
  bool generate_only = false;
  std::string emulate;  // empty: ttfb=30ms,bw=25MB/s for a generated dataset, none for --url
  uint64_t samples = 0, samples_per_file = 0, batch = 0;
  std::string record_size;
  std::string compute_time;  // a duration (base/units.h); a bare number is seconds
  double threshold = -1;
  uint64_t epochs = 2;
  std::string accelerators;
  size_t max_accelerators = 64, min_accelerators = 1;
  bool no_stop = false;
  CacheSettings cache;  // --cache-dir, --cache-disk, --cache-ram (cache_flags.h)
  size_t prefetch_shards = 0, prefetch_batches = 8, decode_threads = 2, fetch = 16,
         connections = loader::StreamingOptions{}.max_connections;
  std::string prefetch_bytes;  // empty: the loader's default (from the RAM cache)
  bool no_cache = false;
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
  if (a.no_cache) s << " --no-cache";
  s << " --cache-ram " << FormatSizeExact(a.cache.ram_bytes) << " --prefetch-batches " << a.prefetch_batches
    << " --connections " << a.connections;
  if (!a.prefetch_bytes.empty()) s << " --prefetch-bytes " << a.prefetch_bytes;
  if (a.prefetch_shards) s << " --prefetch-shards " << a.prefetch_shards;
  if (a.min_accelerators > 1) s << " --min-accelerators " << a.min_accelerators;
  s << " --shuffle " << a.shuffle << " --seed " << a.seed << " --collate " << a.collate;
  if (a.verify != "auto") s << " --verify " << a.verify;
  if (!a.json_path.empty()) s << " --json " << Quote(a.json_path);
  return s.str();
}

nlohmann::json WorkloadJson(const TrainArgs& a, const Plan& p) {
  return {{"name", p.w.name},
          {"accelerator", a.accelerator},
          {"format", std::string(dataset::FormatName(p.w.format))},
          {"record_size", p.w.record_size},
          {"samples_per_file", p.w.samples_per_file},
          {"batch", p.w.batch},
          {"compute_time_s", p.compute_s},
          {"threshold", p.threshold},
          {"samples", p.w.samples},
          {"per_accelerator_demand_mib_s",
           p.compute_s > 0 ? double(p.w.batch) * double(p.w.record_size) / p.compute_s / double(1 << 20) : 0}};
}

void Say(const TrainArgs& a, const std::string& line) {
  if (!a.quiet) std::cout << line << std::endl;
}

void RunTrain(TrainArgs a) {  // a copy: the defaults that depend on other flags are resolved here
  Plan plan = MakePlan(a);
  const auto counts = Check(AcceleratorCounts(a.accelerators, a.max_accelerators), kCmd, "--accelerators");
  if (!a.url.empty() && !a.generate_to.empty()) {
    Fail(kCmd, "--url", InvalidArgumentError("give either --url (an existing packed dataset) or --generate-to"));
  }
  if (a.generate_only && a.generate_to.empty()) {
    Fail(kCmd, "--generate-only", InvalidArgumentError("--generate-only needs --generate-to"));
  }
  if (a.emulate.empty()) a.emulate = a.url.empty() ? "ttfb=30ms,bw=25MB/s" : "none";
  if (a.collate != "view" && a.collate != "copy") {
    Fail(kCmd, "--collate", InvalidArgumentError("--collate is view or copy, not '" + a.collate + "'"));
  }
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
  base.fetch_concurrency = a.fetch;
  base.max_connections = a.connections;
  base.async_cache_writes = true;  // the accelerator does not wait for the cache's fsyncs
  if (!a.prefetch_bytes.empty()) base.prefetch_bytes = Check(ParseSize(a.prefetch_bytes), kCmd, "--prefetch-bytes");
  base.cache_limit_bytes = a.cache.disk_bytes;
  base.ram_cache_bytes = a.cache.ram_bytes;

  TempDir temp;
  object::ObjectStorePtr store;
  std::string prefix, where;
  nlohmann::json dataset_json;
  if (a.url.empty()) {
    Endpoint dst;
    if (a.generate_to.empty()) {
      temp.path = MakeTemp("the dataset");
      dst = Check(OpenTreeDestination(Check(ParseObjectUrl(temp.path + "/data/"), kCmd, temp.path)), kCmd, temp.path);
    } else {
      dst = Check(OpenTreeDestination(Check(ParseObjectUrl(a.generate_to), kCmd, a.generate_to)), kCmd, a.generate_to);
    }
    GenerateOptions g;
    g.samples = plan.w.samples;
    g.record_size = plan.w.record_size;
    g.samples_per_file = plan.w.samples_per_file;
    g.format = plan.w.format;
    g.field = plan.w.field;
    g.seed = a.seed + 1;
    auto gen = Check(Generate(*dst.store, dst.key, g), kCmd, dst.UrlOf(dst.key));
    Say(a, "generated " + std::to_string(gen.samples) + " samples of " + FormatBytes(double(plan.w.record_size)) +
               " as files under " + dst.UrlOf(dst.key + "files/") + " and " + std::to_string(gen.shards) + " " +
               std::string(dataset::FormatName(plan.w.format)) + " shards (" + FormatBytes(double(gen.shard_bytes)) +
               ") under " + dst.UrlOf(dst.key + "shards/") + " in " + FormatDuration(gen.seconds));
    dataset_json = {{"generated", dst.UrlOf(dst.key)}, {"shards", gen.shards}, {"shard_bytes", gen.shard_bytes}};
    if (a.generate_only) return;
    store = dst.store;
    if (a.emulate != "none") {
      store = object::EmulateCloud(store, Check(object::ParseCloudProfile(a.emulate), kCmd, "--emulate"));
    }
    prefix = dst.key + "shards/";
    where = dst.UrlOf(prefix) + (a.emulate != "none" ? " (emulated cloud: " + a.emulate + ")" : "");
  } else {
    Endpoint src = Check(OpenTreeSource(Check(ParseObjectUrl(a.url), kCmd, a.url)), kCmd, a.url);
    store = src.store;
    prefix = src.key;
    where = a.url;
    if (a.emulate != "none") {  // an existing dataset read as from a cloud bucket (cold runs without regenerating)
      store = object::EmulateCloud(store, Check(object::ParseCloudProfile(a.emulate), kCmd, "--emulate"));
      where += " (emulated cloud: " + a.emulate + ")";
    }
    dataset_json = {{"url", a.url}};
  }

  std::string cache_root = a.cache.dir;
  TempDir cache_temp;
  if (cache_root.empty()) {
    cache_temp.path = MakeTemp("the loader's shard cache");
    cache_root = cache_temp.path;
  }
  // The dataset's real size and field names, before any timing.
  auto probe = Check(loader::StreamingDataset::Open(store, prefix, base), kCmd, where);
  const uint64_t total = probe->size();
  dataset_json["samples"] = total;
  dataset_json["shards"] = probe->index().shards.size();
  dataset_json["shard_bytes"] = probe->index().total_shard_bytes();
  probe.reset();

  Say(a, "workload " + plan.w.name + " (" + a.accelerator + "): batch " + std::to_string(plan.w.batch) + ", compute " +
             FormatDuration(plan.compute_s) + " per batch, AU threshold " +
             std::to_string(int(plan.threshold * 100 + 0.5)) + "%; " + std::to_string(total) + " samples from " +
             where);
  SweepOptions so;
  so.counts = counts;
  so.epochs = a.epochs;
  so.compute = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(plan.compute_s));
  so.threshold = plan.threshold;
  so.stop_below = !a.no_stop;
  so.min_n = a.min_accelerators;
  so.samples = total;
  so.batch = plan.w.batch;
  if (a.emulate != "none") {
    // What the emulated bucket can give one rank: its connections, each
    // paying the first byte per request of the size the loader asks for.
    const object::CloudProfile cp = Check(object::ParseCloudProfile(a.emulate), kCmd, "--emulate");
    const uint64_t shard = dataset_json["shard_bytes"].get<uint64_t>() / std::max<uint64_t>(1, dataset_json["shards"]);
    const uint64_t conc = std::max<size_t>(base.fetch_concurrency, 1);
    const uint64_t part =
        std::min<uint64_t>(shard, std::clamp<uint64_t>((shard + conc - 1) / conc, base.min_part_bytes, 16ull << 20));
    if (cp.bytes_per_second_per_connection > 0 && part > 0) {
      const double per_conn =
          double(part) / (Seconds(cp.first_byte) + double(part) / cp.bytes_per_second_per_connection);
      const double ceiling = per_conn * double(base.max_connections);
      dataset_json["bucket_ceiling_mib_s_per_rank"] = ceiling / double(1 << 20);
      Say(a, "emulated bucket ceiling per rank: " + std::to_string(base.max_connections) + " connections x " +
                 FormatBytes(per_conn) + "/s (requests of " + FormatBytes(double(part)) +
                 ") = " + FormatBytes(ceiling) + "/s");
    }
  }
  so.on_result = [&](const EpochResult& r) {
    Say(a, FormatResultLine(r) + (r.epoch == 1 || a.no_cache ? "  (cold cache)" : "  (warm cache)"));
  };
  std::string note;
  auto results = Check(Sweep(so, LoaderPrepare(store, prefix, base, cache_root, a.no_cache), &note), kCmd, where);
  if (!note.empty()) Say(a, note);

  nlohmann::json best = nlohmann::json::object();
  std::string summary = "largest N with AU >= " + std::to_string(int(plan.threshold * 100 + 0.5)) + "%:";
  for (uint64_t e = 1; e <= a.epochs; ++e) {
    size_t n = LargestPassing(results, e, plan.threshold);
    best[std::to_string(e)] = n;
    summary += (e > 1 ? "," : "") + std::string(" epoch ") + std::to_string(e) + ": " + std::to_string(n);
  }
  Say(a, summary);
  // What the loaders may hold, to set the peak against: per rank the prefetch
  // budget, or two whole batches when they are larger (always kept ahead),
  // the batch in use, and the RAM cache, which ranks of one process share.
  const uint64_t batch_bytes = plan.w.batch * plan.w.record_size;
  const uint64_t prefetch = loader::PrefetchBudgetBytes(base);
  size_t most_ranks = 1;
  for (const auto& r : results) most_ranks = std::max<size_t>(most_ranks, r.accelerators);
  const uint64_t budget = most_ranks * (std::max(prefetch, 2 * batch_bytes) + batch_bytes) + base.ram_cache_bytes;
  const uint64_t peak = PeakRssBytes();
  const std::string parts = " (" + std::to_string(most_ranks) + " x (prefetch " + FormatBytes(double(prefetch)) +
                            " or two batches, + the batch in use) + RAM cache " +
                            FormatBytes(double(base.ram_cache_bytes)) + ")";
  Say(a, "peak RSS " + FormatBytes(double(peak)) +
             (peak <= budget ? ", within the loaders' budgets of " + FormatBytes(double(budget)) + parts
                             : ", the loaders' budgets of " + FormatBytes(double(budget)) + parts + " + " +
                                   FormatBytes(double(peak - budget)) + " fixed overhead"));
  const std::string command = ReproduceCommand(a, plan);
  Say(a, "reproduce: " + command);
  if (a.json_path.empty()) return;
  nlohmann::json doc = {{"tool", "strata"},
                        {"label", a.label},
                        {"workload", WorkloadJson(a, plan)},
                        {"dataset", dataset_json},
                        {"threshold", plan.threshold},
                        {"loader",
                         {{"shuffle", a.shuffle},
                          {"shuffle_window", a.shuffle_window},
                          {"prefetch_shards", a.prefetch_shards},
                          {"prefetch_batches", a.prefetch_batches},
                          {"decode_threads", a.decode_threads},
                          {"collate", a.collate},
                          {"verify", a.verify},
                          {"fetch_concurrency", a.fetch},
                          {"max_connections", a.connections},
                          {"prefetch_bytes", a.prefetch_bytes.empty() ? "default" : a.prefetch_bytes},
                          {"cache", a.no_cache            ? "none (--no-cache)"
                                    : a.cache.dir.empty() ? "temporary directory"
                                                          : a.cache.dir}}},
                        {"results", nlohmann::json::array()},
                        {"max_accelerators", best},
                        {"peak_rss_bytes", peak},
                        {"loader_budget_bytes", budget},
                        {"command", command}};
  if (!note.empty()) doc["note"] = note;
  for (const auto& r : results) doc["results"].push_back(r.ToJson());
  std::ofstream out(a.json_path);
  out << doc.dump(2) << "\n";
  out.close();
  if (!out) Fail(kCmd, a.json_path, IOError("cannot write " + a.json_path));
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
  sub->add_option("--emulate", a->emulate,
                  "Cloud emulation of the store, e.g. ttfb=30ms,bw=25MB/s, or none (default: that for a generated "
                  "dataset, none for --url)")
      ->capture_default_str();
  sub->add_option("--samples", a->samples, "Samples in the generated dataset (default: per workload, small)");
  sub->add_option("--record-size", a->record_size, "Bytes per sample (default: the workload's)");
  sub->add_option("--samples-per-file", a->samples_per_file, "Samples per shard (default: the workload's)");
  sub->add_option("--batch", a->batch, "Batch size per accelerator (default: the workload's)");
  sub->add_option("--compute-time", a->compute_time,
                  "Emulated compute per batch, e.g. 0.224 (seconds) or 224ms (default: published)");
  sub->add_option("--epochs", a->epochs, "Epochs per N (epoch 1 cold, later ones warm)")->capture_default_str();
  sub->add_option("--accelerators", a->accelerators, "Comma list of N, e.g. 1,2,4,8 (default: 1,2,4,... to max)");
  sub->add_option("--max-accelerators", a->max_accelerators, "Largest N of the default sweep")->capture_default_str();
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
      "the next. AU = nominal compute time / (N x wall time), from the end of the first step to the end of the\n"
      "epoch; MiB/s = samples/s x record size / 2^20. The sweep stops after the first N below the threshold.\n"
      "Published parameters (mlcommons/storage): unet3d 146.6 MB samples, 1 per file, batch 7, 0.323 s (H100)\n"
      "/ 0.636 s (A100), AU 90%; resnet50 114.7 KB TFRecord records, 1251 per file, batch 400, 0.224 / 0.435 s,\n"
      "90%; cosmoflow 2.83 MB TFRecord records, 1 per file, batch 1, 0.0035 / 0.00551 s, 70%.\n"
      "Example (small, scaled: batch and compute time divided by 12.5, same MB/s per accelerator):\n"
      "  strata bench train --workload resnet50 --samples 2048 --batch 32 --compute-time 0.01792 \\\n"
      "      --accelerators 1,2,4,8 --json au.json");
  sub->callback([a, cache] {
    TrainArgs run = *a;
    run.cache = cache->Settings();
    RunTrain(std::move(run));
  });
});

}  // namespace
}  // namespace strata::cli
