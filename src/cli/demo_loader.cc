// Demo section: accelerator utilisation (AU) with emulated accelerators, as
// MLPerf Storage measures it. A ResNet-50-like dataset (114.7 KB records) in
// the emulated cloud bucket is read by N accelerators two ways: strata's
// streaming loader over packed TFRecord shards (epoch 1 cold, epoch 2 from
// the local shard cache), and one GET per sample file the way a PyTorch
// DataLoader over a map-style dataset reads (8 workers per accelerator).
// Batch and compute time are the published ones divided by 25, so each
// accelerator asks for the same MB/s as an H100 does. Every figure is
// checked against bench train's run rules (cli/bench_train_rules.h): the
// dataset is sized by them for the largest N (with 64 MiB prefetch budgets,
// so it need not be large), the per-file path reads the part of it the rules
// need at each N (it is slow), and a figure that is not valid is not shown.
// --quick: a small dataset, every figure marked not valid.
#include <cmath>
#include <cstdio>
#include <memory>

#include "cli/bench_train_engine.h"
#include "cli/demo.h"
#include "cli/util.h"

namespace strata::cli {
namespace {

using namespace strata::cli::train;

struct AuCell {
  double au = std::nan("");  // NaN: not run or not valid
  std::string why;           // the rules' verdict when not valid
};
struct AuRow {
  AuCell cold, warm, files;
};

AuCell CellOf(const EpochResult& r) {
  AuCell c;
  if (r.rules.valid)
    c.au = r.au;
  else
    c.why = r.rules.Summary();
  return c;
}

std::string Show(const AuCell& c) {
  if (!std::isnan(c.au)) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f%%", 100 * c.au);
    return b;
  }
  return c.why.empty() ? "-" : "not valid";
}

// The per-file path: rank r of N reads its part of the first `limit(N)`
// files, `workers` threads each with 2 batches ahead.
PrepareFn FilePrepare(object::ObjectStorePtr cloud, std::shared_ptr<const std::vector<std::string>> all, size_t batch,
                      size_t workers, std::function<uint64_t(size_t)> limit, uint64_t batch_bytes) {
  auto counted = std::make_shared<ByteCountingStore>(std::move(cloud));
  return [=](size_t world) -> Result<Prepared> {
    const size_t n = std::min<size_t>(all->size(), limit(world));
    auto keys = std::make_shared<std::vector<std::string>>(all->begin(), all->begin() + n);
    FileSourceOptions fo{world, batch, workers, 2, 1};
    Prepared p;
    p.expected_samples = keys->size();
    p.memory_bytes = world * (workers * fo.prefetch + 1) * batch_bytes;
    p.store_bytes = [counted] { return counted->bytes(); };
    p.every_epoch_cold = true;  // no cache on this path
    p.factory = [counted, keys, fo](size_t rank, uint64_t epoch) -> Result<std::unique_ptr<RankSource>> {
      return MakeFileSource(counted, keys, fo, rank, epoch);
    };
    return p;
  };
}

Status RunAuDemo(DemoContext& ctx) {
  Workload w = *FindWorkload("resnet50");
  const RunRules rules;
  const double scale = 25;
  const size_t batch = size_t(double(w.batch) / scale);  // 16
  const double compute_s = w.compute_h100_s / scale;     // 9.0 ms
  const double threshold = w.threshold;
  const uint64_t per_shard = 64;
  const size_t file_workers = 8;
  const std::vector<size_t> counts = ctx.quick ? std::vector<size_t>{1, 2} : std::vector<size_t>{1, 2, 4};
  const std::vector<size_t> file_counts = ctx.quick ? std::vector<size_t>{1} : std::vector<size_t>{1, 2};
  const uint64_t batch_bytes = batch * w.record_size;

  loader::StreamingOptions base;
  base.batch_size = batch;
  base.seed = 1;
  base.prefetch_bytes = 64ull << 20;  // per rank: covers 195 MiB/s at ~0.2 s per cold request
  base.ram_cache_bytes = 32ull << 20;
  const uint64_t rule_samples = RequiredSamples(rules, counts.back(), batch, compute_s, w.record_size, per_shard,
                                                LoaderMemoryBytes(base, counts.back(), batch_bytes));
  GenerateOptions g;
  g.samples = ctx.quick ? 1024 : rule_samples;
  g.record_size = w.record_size;
  g.samples_per_file = per_shard;
  g.format = w.format;
  g.field = w.field;
  g.parallel = 8;
  STRATA_ASSIGN_OR_RETURN(GenerateResult gen, Generate(*ctx.local, "au/", g));
  char line[400];
  std::snprintf(line, sizeof(line),
                "  dataset: %llu ResNet-50-like samples of %s, as files and as %llu TFRecord shards of %llu samples\n"
                "  accelerators: batch %zu, %.1f ms compute per batch (H100's %.0f MiB/s each), AU threshold %.0f%%\n",
                static_cast<unsigned long long>(gen.samples), FormatBytes(double(w.record_size)).c_str(),
                static_cast<unsigned long long>(gen.shards), static_cast<unsigned long long>(per_shard), batch,
                compute_s * 1e3, double(batch) * double(w.record_size) / compute_s / double(1 << 20), threshold * 100);
  ctx.out << line;
  std::snprintf(line, sizeof(line),
                "  run rules: each epoch timed from empty queues, >= %llu steps and %g s; cold, the dataset >= %g x "
                "the loaders' memory (%s prefetch per rank + a %s RAM cache)\n",
                static_cast<unsigned long long>(rules.min_steps), rules.min_seconds, rules.memory_factor,
                FormatBytes(double(base.prefetch_bytes)).c_str(), FormatBytes(double(base.ram_cache_bytes)).c_str());
  ctx.out << line;
  if (ctx.quick) ctx.out << "  --quick: a smoke run on a small dataset; no AU figure of it is valid\n";
  ctx.out.flush();

  SweepOptions so;
  so.counts = counts;
  so.compute = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(compute_s));
  so.threshold = threshold;
  so.stop_below = false;
  so.samples = gen.samples;
  so.batch = batch;
  so.rules = rules;
  so.smoke = ctx.quick;
  so.epochs = 2;
  STRATA_ASSIGN_OR_RETURN(
      auto loader_results,
      Sweep(so, LoaderPrepare(ctx.cloud, "au/shards/", base, ctx.work_dir + "/au-cache", false, batch_bytes), nullptr));

  auto keys = std::make_shared<std::vector<std::string>>();
  for (uint64_t i = 0; i < gen.samples; ++i) {
    char key[48];
    std::snprintf(key, sizeof(key), "au/files/%08llu.%s", static_cast<unsigned long long>(i), w.field.c_str());
    keys->push_back(key);
  }
  so.epochs = 1;  // no cache on this path: every epoch is the same
  so.counts = file_counts;
  so.samples = 0;  // each N reads its own part
  auto file_limit = [&](size_t world) -> uint64_t {
    if (ctx.quick) return keys->size();
    return RequiredSamples(rules, world, batch, compute_s, w.record_size, 1,
                           world * (file_workers * 2 + 1) * batch_bytes);
  };
  STRATA_ASSIGN_OR_RETURN(
      auto file_results,
      Sweep(so, FilePrepare(ctx.cloud, keys, batch, file_workers, file_limit, batch_bytes), nullptr));

  std::vector<AuRow> rows(counts.size());
  std::string why;  // one reason a figure is not shown, for the legend
  for (size_t i = 0; i < counts.size(); ++i) {
    for (const auto& r : loader_results) {
      if (r.accelerators == counts[i]) (r.epoch == 1 ? rows[i].cold : rows[i].warm) = CellOf(r);
    }
    for (const auto& r : file_results) {
      if (r.accelerators == counts[i]) rows[i].files = CellOf(r);
    }
    for (const AuCell* c : {&rows[i].cold, &rows[i].warm, &rows[i].files})
      if (why.empty() && !c->why.empty()) why = "N=" + std::to_string(counts[i]) + ": " + c->why;
  }
  ctx.out << "     N   strata cold   strata warm   one GET per file (" << file_workers << " workers each)\n";
  for (size_t i = 0; i < counts.size(); ++i) {
    std::snprintf(line, sizeof(line), "  %4zu   %11s   %11s   %15s\n", counts[i], Show(rows[i].cold).c_str(),
                  Show(rows[i].warm).c_str(), Show(rows[i].files).c_str());
    ctx.out << line;
  }
  if (!why.empty()) ctx.out << "  (not valid under the run rules, not shown: " << why << ")\n";
  const size_t best_cold = LargestPassing(loader_results, 1, threshold);
  const size_t best_warm = LargestPassing(loader_results, 2, threshold);
  const size_t best_files = LargestPassing(file_results, 1, threshold);
  std::snprintf(line, sizeof(line),
                "  -> accelerators kept at >= %.0f%% AU (valid results): strata %zu cold, %zu warm; one file per "
                "sample %zu\n",
                threshold * 100, best_cold, best_warm, best_files);
  ctx.out << line;
  ctx.out << "  (full comparison with PyTorch's DataLoader, local and over s3fs: bench/train_bench.sh)\n";

  nlohmann::json loader_json = nlohmann::json::array(), files_json = nlohmann::json::array();
  for (const auto& r : loader_results) loader_json.push_back(r.ToJson());
  for (const auto& r : file_results) files_json.push_back(r.ToJson());
  ctx.results = {{"samples", gen.samples},
                 {"record_size", w.record_size},
                 {"batch", batch},
                 {"compute_s", compute_s},
                 {"threshold", threshold},
                 {"rules", rules.ToJson()},
                 {"quick", ctx.quick},
                 {"prefetch_bytes", base.prefetch_bytes},
                 {"ram_cache_bytes", base.ram_cache_bytes},
                 {"file_workers_per_accelerator", file_workers},
                 {"largest_n", {{"strata_cold", best_cold}, {"strata_warm", best_warm}, {"files", best_files}}},
                 {"strata", loader_json},
                 {"files", files_json}};
  DemoChart chart{
      "Accelerator utilisation (emulated H100s, ResNet-50-like records; valid results only)", "AU %", {}, {}};
  std::vector<double> cold, warm, per_file;
  for (size_t i = 0; i < counts.size(); ++i) {
    chart.groups.push_back("N=" + std::to_string(counts[i]));
    cold.push_back(100 * rows[i].cold.au);  // NaN: no bar
    warm.push_back(100 * rows[i].warm.au);
    per_file.push_back(100 * rows[i].files.au);
  }
  chart.series = {
      {"strata loader, shards (cold)", cold}, {"strata loader, shards (warm)", warm}, {"one GET per file", per_file}};
  ctx.charts.push_back(std::move(chart));
  return Status::Ok();
}

DemoSectionRegistrar registrar(30, "Accelerator utilisation: packed shards vs one file per sample", RunAuDemo);

}  // namespace
}  // namespace strata::cli
