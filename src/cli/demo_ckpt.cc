// Demo section: an async checkpoint's training stall vs a synchronous save
// of the same tensors, then the background upload to the emulated bucket and
// a verified load of the newest valid checkpoint back from it.
#include <cstdio>
#include <cstring>

#include "base/clock.h"
#include "ckpt/reader.h"
#include "ckpt/writer.h"
#include "cli/demo.h"
#include "cli/util.h"
#include "io/file_system.h"

namespace strata::cli {
namespace {

using namespace strata::ckpt;

struct State {
  std::vector<MutableBuffer> bytes;
  std::vector<TensorView> views;
  uint64_t total = 0;
};

// Mixed sizes like a model's state_dict: a few large matrices, many small vectors.
State MakeModel(uint64_t target) {
  State s;
  const uint64_t sizes[] = {16 << 20, 4 << 20, 1 << 20, 64 << 10, 4 << 10};
  for (int i = 0; s.total < target; ++i) {
    uint64_t n = std::min<uint64_t>(sizes[i % 5], target - s.total);
    n -= n % 4;
    if (n == 0) break;
    MutableBuffer b(n);
    for (uint64_t k = 0; k < n; k += 4096)
      std::memset(b.data() + k, (i * 31 + k / 4096) & 0xff, std::min<uint64_t>(4096, n - k));
    s.views.push_back({"layer" + std::to_string(i) + ".weight", "F32", {int64_t(n / 4)}, b.data(), n});
    s.total += n;
    s.bytes.push_back(std::move(b));
  }
  return s;
}

void Say(DemoContext& ctx, const std::string& line) {
  ctx.out << "  " << line << "\n";
  ctx.out.flush();
}

Status RunCkpt(DemoContext& ctx) {
  State model = MakeModel(ctx.quick ? (64ull << 20) : (256ull << 20));
  WriterOptions o;
  o.dir = JoinPath(ctx.work_dir, "ckpt");
  o.remote = ctx.cloud;
  // Shards of <= 16 MiB uploaded 16 at a time as single PUTs: 16 connections'
  // worth of bandwidth without multipart.
  o.shard_bytes = 16ull << 20;
  o.upload_part_size = 64ull << 20;
  o.upload_files_in_flight = 16;
  o.upload_concurrency = 4;
  o.keep_local = 2;
  o.keep_remote = 2;
  STRATA_ASSIGN_OR_RETURN(auto writer, CheckpointWriter::Open(o));
  Clock& clock = RealClock();

  // Synchronous: save and wait until it is durable (what a blocking
  // torch.save costs). It also maps the staging pool's pages once.
  TimePoint t0 = clock.Now();
  STRATA_ASSIGN_OR_RETURN(SaveHandle sync, writer->Save(1, model.views));
  const double cold_stall = Seconds(sync.stats().stall);
  STRATA_RETURN_IF_ERROR(sync.Wait());
  const double sync_stall = Seconds(clock.Now() - t0);

  // Async: training continues as soon as Save returns.
  t0 = clock.Now();
  STRATA_ASSIGN_OR_RETURN(SaveHandle async, writer->Save(2, model.views, R"({"demo":true})"));
  const double async_stall = Seconds(clock.Now() - t0);
  STRATA_RETURN_IF_ERROR(async.Wait());
  const double persist = Seconds(async.stats().persist);
  STRATA_RETURN_IF_ERROR(async.WaitUploaded());
  const double upload = Seconds(async.stats().upload);
  STRATA_RETURN_IF_ERROR(writer->WaitForUploads());

  const double gb = double(model.total) / 1e9;
  char line[256];
  std::snprintf(line, sizeof(line), "state: %zu tensors, %s (shards written in parallel, SHA-256 while writing)",
                model.views.size(), FormatBytes(double(model.total)).c_str());
  Say(ctx, line);
  std::snprintf(line, sizeof(line), "synchronous save (until durable): %s", FormatDuration(sync_stall).c_str());
  Say(ctx, line);
  std::snprintf(line, sizeof(line),
                "async save stall: %s (%.1f ms per GB staged; staging the first save, pages not yet mapped: %s)",
                FormatDuration(async_stall).c_str(), async_stall * 1e3 / gb, FormatDuration(cold_stall).c_str());
  Say(ctx, line);
  std::snprintf(line, sizeof(line), "  -> training stalls %.1fx less; persisted in the background in %s (%s)",
                sync_stall / std::max(async_stall, 1e-6), FormatDuration(persist).c_str(),
                FormatRate(double(model.total), persist).c_str());
  Say(ctx, line);
  std::snprintf(line, sizeof(line), "uploaded to the emulated bucket in the background: %s (%s), commit marker last",
                FormatDuration(upload).c_str(), FormatRate(double(model.total), upload).c_str());
  Say(ctx, line);

  auto remote = StoreLocation(ctx.cloud, 8 << 20, 16);
  t0 = clock.Now();
  STRATA_ASSIGN_OR_RETURN(CheckpointInfo latest, Latest(*remote));
  STRATA_ASSIGN_OR_RETURN(LoadedCheckpoint loaded, Load(*remote, latest.step, {.verify = true, .parallelism = 8}));
  const double load_s = Seconds(clock.Now() - t0);
  for (size_t i = 0; i < model.views.size(); ++i) {
    const LoadedTensor* t = loaded.Find(model.views[i].name);
    if (!t || t->data.size() != model.views[i].size ||
        std::memcmp(t->data.data(), model.views[i].data, t->data.size()) != 0) {
      return CorruptionError("demo: loaded checkpoint differs from what was saved: " + model.views[i].name);
    }
  }
  std::snprintf(line, sizeof(line), "latest valid in the bucket: step %lld; loaded + verified in %s, byte-exact",
                static_cast<long long>(latest.step), FormatDuration(load_s).c_str());
  Say(ctx, line);

  ctx.results = {{"state_bytes", model.total},
                 {"tensors", model.views.size()},
                 {"sync_save_s", sync_stall},
                 {"async_stall_s", async_stall},
                 {"async_stall_ms_per_GB", async_stall * 1e3 / gb},
                 {"cold_stall_s", cold_stall},
                 {"stall_ratio", sync_stall / std::max(async_stall, 1e-6)},
                 {"persist_s", persist},
                 {"upload_s", upload},
                 {"load_verified_s", load_s}};
  ctx.charts.push_back({"Checkpoint: time training is blocked",
                        "seconds",
                        {"synchronous save", "strata async save"},
                        {{"stall", {sync_stall, async_stall}}}});
  return Status::Ok();
}

DemoSectionRegistrar registrar(40, "Checkpoints: async save vs synchronous", RunCkpt);

}  // namespace
}  // namespace strata::cli
