// Demo section: an async checkpoint's training stall vs a synchronous save
// of the same tensors and vs a plain memcpy of the same bytes (memory speed,
// measured in the same run), then the background upload to the emulated
// bucket and a verified load of the newest valid checkpoint back from it.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

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

// What the section measures, in seconds.
struct Figures {
  uint64_t staging_bytes = 0;
  double prefault = 0, memcpy = 0, sync = 0, async = 0, persist = 0, upload = 0, load = 0;
  SaveStats first, staged;  // the first (synchronous) save's and the async save's staging
  size_t memcpy_threads = 0;
  int64_t loaded_step = 0;
};

WriterOptions DemoWriterOptions(DemoContext& ctx, uint64_t state_bytes) {
  WriterOptions o;
  o.dir = io::JoinPath(ctx.work_dir, "ckpt");
  o.remote = ctx.cloud;
  // Shards of <= 16 MiB uploaded 16 at a time as single PUTs: 16 connections'
  // worth of bandwidth without multipart.
  o.shard_bytes = 16ull << 20;
  o.upload_part_size = 64ull << 20;
  o.upload_files_in_flight = 16;
  o.upload_concurrency = 4;
  o.keep_local = 2;
  o.keep_remote = 2;
  // The state's size (+ room for shard headers): the staging memory is mapped
  // and faulted in on a background thread at Open, so even the first save
  // copies at memory speed instead of paying page faults in the stall.
  o.staging_bytes = state_bytes + (4ull << 20) + state_bytes / 256;
  return o;
}

// A synchronous save (step 1) then async ones (steps 2, 3), all uploaded.
Status Save(DemoContext& ctx, const State& model, Figures* f) {
  const WriterOptions o = DemoWriterOptions(ctx, model.total);
  f->staging_bytes = o.staging_bytes;
  f->memcpy_threads = o.stage_threads;
  Clock& clock = RealClock();
  TimePoint t0 = clock.Now();
  STRATA_ASSIGN_OR_RETURN(auto writer, CheckpointWriter::Open(o));
  STRATA_RETURN_IF_ERROR(writer->WaitStagingReady());  // a trainer would be building its model meanwhile
  f->prefault = Seconds(clock.Now() - t0);
  STRATA_ASSIGN_OR_RETURN(f->memcpy, MemcpyBaselineSeconds(model.views, o.stage_threads));

  // Synchronous: save and wait until it is durable (what a blocking
  // torch.save costs). Its staging part is the first save's stall.
  t0 = clock.Now();
  STRATA_ASSIGN_OR_RETURN(SaveHandle sync, writer->Save(1, model.views));
  f->first = sync.stats();
  STRATA_RETURN_IF_ERROR(sync.Wait());
  f->sync = Seconds(clock.Now() - t0);

  // Async: training continues as soon as Save returns. Checkpoints are
  // minutes apart in training, so the previous upload has finished by then.
  // Best of two, as the memcpy: one core's hiccup should not be the figure.
  for (int64_t step : {2, 3}) {
    STRATA_RETURN_IF_ERROR(writer->WaitForUploads());
    t0 = clock.Now();
    STRATA_ASSIGN_OR_RETURN(SaveHandle async, writer->Save(step, model.views, R"({"demo":true})"));
    const double stall = Seconds(clock.Now() - t0);
    if (step == 2 || stall < f->async) {
      f->async = stall;
      f->staged = async.stats();
    }
    STRATA_RETURN_IF_ERROR(async.Wait());
    f->persist = Seconds(async.stats().persist);
    STRATA_RETURN_IF_ERROR(async.WaitUploaded());
    f->upload = Seconds(async.stats().upload);
  }
  return writer->WaitForUploads();
}

// The newest valid checkpoint from the bucket, verified and compared byte for byte.
Status LoadBack(DemoContext& ctx, const State& model, Figures* f) {
  auto remote = StoreLocation(ctx.cloud, 8 << 20, 16);
  const TimePoint t0 = RealClock().Now();
  // Quick lookup: Load below verifies every byte it downloads (kBytes would download twice).
  STRATA_ASSIGN_OR_RETURN(CheckpointInfo latest, Latest(*remote, VerifyLevel::kQuick));
  STRATA_ASSIGN_OR_RETURN(LoadedCheckpoint loaded, Load(*remote, latest.step, {.verify = true, .parallelism = 8}));
  f->load = Seconds(RealClock().Now() - t0);
  f->loaded_step = latest.step;
  for (const auto& v : model.views) {
    const LoadedTensor* t = loaded.Find(v.name);
    if (!t || t->data.size() != v.size || std::memcmp(t->data.data(), v.data, v.size) != 0) {
      return CorruptionError("demo: loaded checkpoint differs from what was saved: " + v.name);
    }
  }
  return Status::Ok();
}

void Print(DemoContext& ctx, const State& model, const Figures& f) {
  const double gb = double(model.total) / 1e9;
  char line[320];
  std::snprintf(line, sizeof(line), "state: %zu tensors, %s (shards written in parallel, hashed while writing)",
                model.views.size(), FormatBytes(double(model.total)).c_str());
  Say(ctx, line);
  std::snprintf(line, sizeof(line), "staging memory (%s) mapped + faulted in on a background thread after open: %s",
                FormatBytes(double(f.staging_bytes)).c_str(), FormatDuration(f.prefault).c_str());
  Say(ctx, line);
  std::snprintf(line, sizeof(line), "synchronous save (until durable): %s", FormatDuration(f.sync).c_str());
  Say(ctx, line);
  std::snprintf(line, sizeof(line),
                "async save stall (best of 2): %s = %.1f ms per GB staged (copying %s%s); first save: %.1f ms per GB%s",
                FormatDuration(f.async).c_str(), f.async * 1e3 / gb, FormatDuration(Seconds(f.staged.copy)).c_str(),
                f.staged.cold_staging ? " into fresh memory" : "", Seconds(f.first.stall) * 1e3 / gb,
                f.first.cold_staging ? " (memory not yet faulted in)" : "");
  Say(ctx, line);
  std::snprintf(line, sizeof(line),
                "  memory speed, same run: memcpy of the same bytes (%zu threads, pre-faulted) %.1f ms per GB; "
                "the stall is %.2fx that",
                f.memcpy_threads, f.memcpy * 1e3 / gb, f.async / std::max(f.memcpy, 1e-9));
  Say(ctx, line);
  std::snprintf(line, sizeof(line), "  -> training stalls %.1fx less; persisted in the background in %s (%s)",
                f.sync / std::max(f.async, 1e-6), FormatDuration(f.persist).c_str(),
                FormatRate(double(model.total), f.persist).c_str());
  Say(ctx, line);
  std::snprintf(line, sizeof(line), "uploaded to the emulated bucket in the background: %s (%s), commit marker last",
                FormatDuration(f.upload).c_str(), FormatRate(double(model.total), f.upload).c_str());
  Say(ctx, line);
  std::snprintf(line, sizeof(line), "latest valid in the bucket: step %lld; loaded + verified in %s, byte-exact",
                static_cast<long long>(f.loaded_step), FormatDuration(f.load).c_str());
  Say(ctx, line);
}

void Record(DemoContext& ctx, const State& model, const Figures& f) {
  const double gb = double(model.total) / 1e9, first = Seconds(f.first.stall);
  ctx.results = {{"state_bytes", model.total},
                 {"tensors", model.views.size()},
                 {"staging_prefault_s", f.prefault},
                 {"sync_save_s", f.sync},
                 {"async_stall_s", f.async},
                 {"async_stall_ms_per_GB", f.async * 1e3 / gb},
                 {"first_stall_s", first},
                 {"first_stall_ms_per_GB", first * 1e3 / gb},
                 {"first_save_cold_staging", f.first.cold_staging},
                 {"memcpy_s", f.memcpy},
                 {"memcpy_threads", f.memcpy_threads},
                 {"memcpy_ms_per_GB", f.memcpy * 1e3 / gb},
                 {"stall_over_memcpy", f.async / std::max(f.memcpy, 1e-9)},
                 {"stall_ratio", f.sync / std::max(f.async, 1e-6)},
                 {"persist_s", f.persist},
                 {"upload_s", f.upload},
                 {"load_verified_s", f.load}};
  ctx.charts.push_back({"Checkpoint: time training is blocked",
                        "milliseconds",
                        {"sync save", "first stall", "async stall", "memcpy, same bytes"},
                        {{"stall", {f.sync * 1e3, first * 1e3, f.async * 1e3, f.memcpy * 1e3}}}});
}

Status RunCkpt(DemoContext& ctx) {
  const State model = MakeModel(ctx.quick ? (64ull << 20) : (256ull << 20));
  Figures f;
  STRATA_RETURN_IF_ERROR(Save(ctx, model, &f));
  STRATA_RETURN_IF_ERROR(LoadBack(ctx, model, &f));
  Print(ctx, model, f);
  Record(ctx, model, f);
  return Status::Ok();
}

DemoSectionRegistrar registrar(40, "Checkpoints: async save vs synchronous", RunCkpt);

}  // namespace
}  // namespace strata::cli
