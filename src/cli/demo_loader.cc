// Demo section: accelerator utilisation (AU) with emulated accelerators, as
// MLPerf Storage measures it. A ResNet-50-like dataset (114.7 KB records) in
// the emulated cloud bucket is read by N accelerators two ways: strata's
// streaming loader over packed TFRecord shards (epoch 1 cold, epoch 2 from
// the local shard cache), and one GET per sample file the way a PyTorch
// DataLoader over a map-style dataset reads (8 workers per accelerator).
// Batch and compute time are the published ones divided by 25, so each
// accelerator asks for the same MB/s as an H100 does. Every figure is
// checked against bench train's run rules (train/rules.h): the
// dataset is sized by them for the largest N (with 64 MiB prefetch budgets,
// so it need not be large), the per-file path reads the part of it the rules
// need at each N (it is slow), and a figure that is not valid is not shown.
// --quick: a small dataset, every figure marked not valid.
#include <cmath>
#include <cstdio>
#include <memory>

#include "base/units.h"
#include "cli/demo.h"
#include "train/engine.h"
#include "train/generate.h"
#include "train/report.h"
#include "train/rules.h"

namespace strata::cli {
namespace {

using namespace strata::train;

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

// The section's workload: ResNet-50's records, batch and compute time divided
// by 25 (the same MB/s per accelerator as an H100), 64 samples per shard.
struct AuSetup {
  Workload w = *FindWorkload("resnet50");
  RunRules rules;
  size_t batch = size_t(double(w.batch) / 25);  // 16
  double compute_s = w.compute_h100_s / 25;     // 9.0 ms
  double threshold = w.threshold;
  uint64_t per_shard = 64;
  size_t file_workers = 8;
  std::vector<size_t> counts, file_counts;
  loader::StreamingOptions base;
  uint64_t batch_bytes() const { return batch * w.record_size; }
};

AuSetup MakeSetup(bool quick) {
  AuSetup s;
  s.counts = quick ? std::vector<size_t>{1, 2} : std::vector<size_t>{1, 2, 4};
  s.file_counts = quick ? std::vector<size_t>{1} : std::vector<size_t>{1, 2};
  s.base.batch_size = s.batch;
  s.base.seed = 1;
  s.base.prefetch_bytes = 64ull << 20;  // per rank: covers 195 MiB/s at ~0.2 s per cold request
  s.base.ram_cache_bytes = 32ull << 20;
  return s;
}

// The dataset, sized by the run rules for the largest N (small with --quick),
// as files and as shards in the demo's bucket; its description printed.
Result<GenerateResult> GenerateAuDataset(DemoContext& ctx, const AuSetup& s) {
  const uint64_t rule_samples =
      RequiredSamples(s.rules, s.counts.back(), s.batch, s.compute_s, s.w.record_size, s.per_shard,
                      LoaderMemoryBytes(s.base, s.counts.back(), s.batch_bytes()));
  GenerateOptions g;
  g.samples = ctx.quick ? 1024 : rule_samples;
  g.record_size = s.w.record_size;
  g.samples_per_file = s.per_shard;
  g.format = s.w.format;
  g.field = s.w.field;
  g.parallel = 8;
  STRATA_ASSIGN_OR_RETURN(GenerateResult gen, Generate(*ctx.local, "au/", g));
  char line[400];
  std::snprintf(line, sizeof(line),
                "  dataset: %llu ResNet-50-like samples of %s, as files and as %llu TFRecord shards of %llu samples\n"
                "  accelerators: batch %zu, %.1f ms compute per batch (H100's %.0f MiB/s each), AU threshold %.0f%%\n",
                static_cast<unsigned long long>(gen.samples), FormatBytes(double(s.w.record_size)).c_str(),
                static_cast<unsigned long long>(gen.shards), static_cast<unsigned long long>(s.per_shard), s.batch,
                s.compute_s * 1e3, double(s.batch) * double(s.w.record_size) / s.compute_s / double(1 << 20),
                s.threshold * 100);
  ctx.out << line;
  std::snprintf(line, sizeof(line),
                "  run rules: each epoch timed from empty queues, >= %llu steps and %g s; cold, the dataset >= %g x "
                "the loaders' memory (%s prefetch per rank + a %s RAM cache)\n",
                static_cast<unsigned long long>(s.rules.min_steps), s.rules.min_seconds, s.rules.memory_factor,
                FormatBytes(double(s.base.prefetch_bytes)).c_str(),
                FormatBytes(double(s.base.ram_cache_bytes)).c_str());
  ctx.out << line;
  if (ctx.quick) ctx.out << "  --quick: a smoke run on a small dataset; no AU figure of it is valid\n";
  ctx.out.flush();
  return gen;
}

struct AuResults {
  std::vector<EpochResult> loader, files;
};

// strata's loader over the shards (epoch 1 cold, epoch 2 warm), then one GET
// per sample file over the part of the files the rules need at each N.
Result<AuResults> RunAuSweeps(DemoContext& ctx, const AuSetup& s, uint64_t samples) {
  SweepOptions so;
  so.counts = s.counts;
  so.compute = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s.compute_s));
  so.threshold = s.threshold;
  so.stop_below = false;
  so.samples = samples;
  so.batch = s.batch;
  so.rules = s.rules;
  so.smoke = ctx.quick;
  so.epochs = 2;
  AuResults r;
  STRATA_ASSIGN_OR_RETURN(
      r.loader,
      Sweep(so, LoaderPrepare(ctx.cloud, "au/shards/", s.base, ctx.work_dir + "/au-cache", false, s.batch_bytes()),
            nullptr));

  auto keys = std::make_shared<std::vector<std::string>>();
  for (uint64_t i = 0; i < samples; ++i) {
    char key[48];
    std::snprintf(key, sizeof(key), "au/files/%08llu.%s", static_cast<unsigned long long>(i), s.w.field.c_str());
    keys->push_back(key);
  }
  so.epochs = 1;  // no cache on this path: every epoch is the same
  so.counts = s.file_counts;
  so.samples = 0;  // each N reads its own part
  auto file_limit = [&](size_t world) -> uint64_t {
    if (ctx.quick) return keys->size();
    return RequiredSamples(s.rules, world, s.batch, s.compute_s, s.w.record_size, 1,
                           world * (s.file_workers * 2 + 1) * s.batch_bytes());
  };
  STRATA_ASSIGN_OR_RETURN(
      r.files, Sweep(so, FilePrepare(ctx.cloud, keys, s.batch, s.file_workers, file_limit, s.batch_bytes()), nullptr));
  return r;
}

// One row per N (valid results only), the largest N each path kept busy.
std::vector<AuRow> PrintAuTable(DemoContext& ctx, const AuSetup& s, const AuResults& results) {
  std::vector<AuRow> rows(s.counts.size());
  std::string why;  // one reason a figure is not shown, for the legend
  for (size_t i = 0; i < s.counts.size(); ++i) {
    for (const auto& r : results.loader) {
      if (r.accelerators == s.counts[i]) (r.epoch == 1 ? rows[i].cold : rows[i].warm) = CellOf(r);
    }
    for (const auto& r : results.files) {
      if (r.accelerators == s.counts[i]) rows[i].files = CellOf(r);
    }
    for (const AuCell* c : {&rows[i].cold, &rows[i].warm, &rows[i].files})
      if (why.empty() && !c->why.empty()) why = "N=" + std::to_string(s.counts[i]) + ": " + c->why;
  }
  ctx.out << "     N   strata cold   strata warm   one GET per file (" << s.file_workers << " workers each)\n";
  char line[400];
  for (size_t i = 0; i < s.counts.size(); ++i) {
    std::snprintf(line, sizeof(line), "  %4zu   %11s   %11s   %15s\n", s.counts[i], Show(rows[i].cold).c_str(),
                  Show(rows[i].warm).c_str(), Show(rows[i].files).c_str());
    ctx.out << line;
  }
  if (!why.empty()) ctx.out << "  (not valid under the run rules, not shown: " << why << ")\n";
  std::snprintf(line, sizeof(line),
                "  -> accelerators kept at >= %.0f%% AU (valid results): strata %zu cold, %zu warm; one file per "
                "sample %zu\n",
                s.threshold * 100, LargestPassing(results.loader, 1, s.threshold),
                LargestPassing(results.loader, 2, s.threshold), LargestPassing(results.files, 1, s.threshold));
  ctx.out << line;
  ctx.out << "  (full comparison with PyTorch's DataLoader, local and over s3fs: bench/train_bench.sh)\n";
  return rows;
}

void KeepAuResults(DemoContext& ctx, const AuSetup& s, uint64_t samples, const AuResults& results,
                   const std::vector<AuRow>& rows) {
  nlohmann::json loader_json = nlohmann::json::array(), files_json = nlohmann::json::array();
  for (const auto& r : results.loader) loader_json.push_back(r.ToJson());
  for (const auto& r : results.files) files_json.push_back(r.ToJson());
  ctx.results = {{"samples", samples},
                 {"record_size", s.w.record_size},
                 {"batch", s.batch},
                 {"compute_s", s.compute_s},
                 {"threshold", s.threshold},
                 {"rules", s.rules.ToJson()},
                 {"quick", ctx.quick},
                 {"prefetch_bytes", s.base.prefetch_bytes},
                 {"ram_cache_bytes", s.base.ram_cache_bytes},
                 {"file_workers_per_accelerator", s.file_workers},
                 {"largest_n",
                  {{"strata_cold", LargestPassing(results.loader, 1, s.threshold)},
                   {"strata_warm", LargestPassing(results.loader, 2, s.threshold)},
                   {"files", LargestPassing(results.files, 1, s.threshold)}}},
                 {"strata", loader_json},
                 {"files", files_json}};
  DemoChart chart{
      "Accelerator utilisation (emulated H100s, ResNet-50-like records; valid results only)", "AU %", {}, {}};
  std::vector<double> cold, warm, per_file;
  for (size_t i = 0; i < s.counts.size(); ++i) {
    chart.groups.push_back("N=" + std::to_string(s.counts[i]));
    cold.push_back(100 * rows[i].cold.au);  // NaN: no bar
    warm.push_back(100 * rows[i].warm.au);
    per_file.push_back(100 * rows[i].files.au);
  }
  chart.series = {
      {"strata loader, shards (cold)", cold}, {"strata loader, shards (warm)", warm}, {"one GET per file", per_file}};
  ctx.charts.push_back(std::move(chart));
}

Status RunAuDemo(DemoContext& ctx) {
  const AuSetup setup = MakeSetup(ctx.quick);
  STRATA_ASSIGN_OR_RETURN(GenerateResult gen, GenerateAuDataset(ctx, setup));
  STRATA_ASSIGN_OR_RETURN(AuResults results, RunAuSweeps(ctx, setup, gen.samples));
  const std::vector<AuRow> rows = PrintAuTable(ctx, setup, results);
  KeepAuResults(ctx, setup, gen.samples, results, rows);
  return Status::Ok();
}

DemoSectionRegistrar registrar(30, "Accelerator utilisation: packed shards vs one file per sample", RunAuDemo);

}  // namespace
}  // namespace strata::cli
