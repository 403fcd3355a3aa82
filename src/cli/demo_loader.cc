// Demo section: accelerator utilisation (AU) with emulated accelerators, as
// MLPerf Storage measures it. A ResNet-50-like dataset (114.7 KB records) in
// the emulated cloud bucket is read by N accelerators two ways: strata's
// streaming loader over packed TFRecord shards (epoch 1 cold, epoch 2 from
// the local shard cache), and one GET per sample file the way a PyTorch
// DataLoader over a map-style dataset reads (8 workers per accelerator).
// Batch and compute time are the published ones divided by 25, so each
// accelerator asks for the same MB/s as an H100 does. AU excludes the first
// step, so each rank needs many more steps than its sources prefetch (16
// batches for the per-file reader) or the epoch would be read during that
// step: the slow per-file path therefore runs fewer N (it takes longest).
#include <cmath>
#include <cstdio>
#include <memory>

#include "cli/bench_train_engine.h"
#include "cli/demo.h"
#include "cli/util.h"

namespace strata::cli {
namespace {

using namespace strata::cli::train;

struct AuRow {
  double cold = 0, warm = 0, files = 0;
};

Status RunAuDemo(DemoContext& ctx) {
  Workload w = *FindWorkload("resnet50");
  const double scale = 25;
  const size_t batch = size_t(double(w.batch) / scale);  // 16
  const double compute_s = w.compute_h100_s / scale;     // 9.0 ms
  const double threshold = w.threshold;
  const uint64_t samples = ctx.quick ? 1024 : 4096;
  const uint64_t per_shard = 64;
  const size_t file_workers = 8;
  const std::vector<size_t> counts = ctx.quick ? std::vector<size_t>{1, 2, 4} : std::vector<size_t>{1, 2, 4, 8};
  const std::vector<size_t> file_counts = ctx.quick ? std::vector<size_t>{1, 2} : std::vector<size_t>{1, 2, 4};

  GenerateOptions g;
  g.samples = samples;
  g.record_size = w.record_size;
  g.samples_per_file = per_shard;
  g.format = w.format;
  g.field = w.field;
  g.parallel = 8;
  STRATA_ASSIGN_OR_RETURN(GenerateResult gen, Generate(*ctx.local, "au/", g));
  char line[320];
  std::snprintf(line, sizeof(line),
                "  dataset: %llu ResNet-50-like samples of %s, as files and as %llu TFRecord shards of %llu samples\n"
                "  accelerators: batch %zu, %.1f ms compute per batch (H100's %.0f MiB/s each), AU threshold %.0f%%\n",
                static_cast<unsigned long long>(gen.samples), FormatBytes(double(w.record_size)).c_str(),
                static_cast<unsigned long long>(gen.shards), static_cast<unsigned long long>(per_shard), batch,
                compute_s * 1e3, double(batch) * double(w.record_size) / compute_s / double(1 << 20), threshold * 100);
  ctx.out << line;
  ctx.out.flush();

  SweepOptions so;
  so.counts = counts;
  so.compute = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(compute_s));
  so.threshold = threshold;
  so.stop_below = false;
  so.samples = gen.samples;
  so.batch = batch;

  loader::StreamingOptions base;
  base.batch_size = batch;
  base.seed = 1;
  so.epochs = 2;
  STRATA_ASSIGN_OR_RETURN(auto loader_results,
                          Sweep(so, LoaderPrepare(ctx.cloud, "au/shards/", base, ctx.work_dir + "/au-cache"), nullptr));

  auto keys = std::make_shared<std::vector<std::string>>();
  for (uint64_t i = 0; i < gen.samples; ++i) {
    char key[48];
    std::snprintf(key, sizeof(key), "au/files/%08llu.%s", static_cast<unsigned long long>(i), w.field.c_str());
    keys->push_back(key);
  }
  so.epochs = 1;  // no cache on this path: every epoch is the same
  so.counts = file_counts;
  PrepareFn files = [&](size_t world) -> Result<Prepared> {
    FileSourceOptions fo{world, batch, file_workers, 2, 1};
    Prepared p;
    p.expected_samples = keys->size();
    p.factory = [store = ctx.cloud, keys, fo](size_t rank, uint64_t epoch) -> Result<std::unique_ptr<RankSource>> {
      return MakeFileSource(store, keys, fo, rank, epoch);
    };
    return p;
  };
  STRATA_ASSIGN_OR_RETURN(auto file_results, Sweep(so, files, nullptr));

  std::vector<AuRow> rows(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    for (const auto& r : loader_results) {
      if (r.accelerators == counts[i]) (r.epoch == 1 ? rows[i].cold : rows[i].warm) = r.au;
    }
    for (const auto& r : file_results) {
      if (r.accelerators == counts[i]) rows[i].files = r.au;
    }
  }
  ctx.out << "     N   strata cold   strata warm   one GET per file (" << file_workers << " workers each)\n";
  for (size_t i = 0; i < counts.size(); ++i) {
    const bool ran = i < file_counts.size();
    std::snprintf(line, sizeof(line), "  %4zu   %10.1f%%   %10.1f%%   %15s\n", counts[i], 100 * rows[i].cold,
                  100 * rows[i].warm, ran ? (std::to_string(int(100 * rows[i].files + 0.5)) + "%").c_str() : "-");
    ctx.out << line;
  }
  const size_t best_cold = LargestPassing(loader_results, 1, threshold);
  const size_t best_warm = LargestPassing(loader_results, 2, threshold);
  const size_t best_files = LargestPassing(file_results, 1, threshold);
  std::snprintf(line, sizeof(line),
                "  -> accelerators kept at >= %.0f%% AU: strata %zu cold, %zu warm; one file per sample %zu\n",
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
                 {"file_workers_per_accelerator", file_workers},
                 {"largest_n", {{"strata_cold", best_cold}, {"strata_warm", best_warm}, {"files", best_files}}},
                 {"strata", loader_json},
                 {"files", files_json}};
  DemoChart chart{"Accelerator utilisation (emulated H100s, ResNet-50-like records)", "AU %", {}, {}};
  std::vector<double> cold, warm, per_file;
  for (size_t i = 0; i < counts.size(); ++i) {
    chart.groups.push_back("N=" + std::to_string(counts[i]));
    cold.push_back(100 * rows[i].cold);
    warm.push_back(100 * rows[i].warm);
    per_file.push_back(i < file_counts.size() ? 100 * rows[i].files : std::nan(""));  // null: no bar
  }
  chart.series = {
      {"strata loader, shards (cold)", cold}, {"strata loader, shards (warm)", warm}, {"one GET per file", per_file}};
  ctx.charts.push_back(std::move(chart));
  return Status::Ok();
}

DemoSectionRegistrar registrar(30, "Accelerator utilisation: packed shards vs one file per sample", RunAuDemo);

}  // namespace
}  // namespace strata::cli
