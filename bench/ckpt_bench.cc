// Checkpoint benchmark: the training stall of strata's async save vs a
// synchronous torch.save of the same state (Debian's python3 + torch in a
// subprocess), strata's persist throughput as a fraction of a plain
// sequential write + fsync of the same bytes measured in the same run, and
// load time with full verification. The stall is also put against "memory
// speed": a plain memcpy (1 and 2 threads) of the same tensors into
// pre-faulted memory, measured in the same run. The first save is measured
// with the staging memory prefaulted at Open (staging_bytes) and, for
// comparison, with a writer that maps it during the first save. The
// steady-state stall is judged against the aim of 50 ms per GB staged; the
// plain write+fsync and strata's warm saves are both timed best of --reps.
//
//   ckpt_bench [--gib 4] [--reps 3] [--dir /tmp/strata-ckpt-bench] [--out bench/out/ckpt.json]
//              [--python /usr/bin/python3] [--no-torch] [--no-cold] [--io-threads 4]
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/buffer.h"
#include "base/clock.h"
#include "base/hash.h"
#include "bench_output.h"
#include "ckpt/reader.h"
#include "ckpt/writer.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "testing/subprocess.h"

using namespace strata;
using namespace strata::ckpt;

namespace {

struct Args {
  double gib = 4;
  std::string dir = "/tmp/strata-ckpt-bench";
  std::string out = "bench/out/ckpt.json";
  std::string python = "/usr/bin/python3";
  std::string torch_script;
  bool torch = true;
  bool cold = true;  // also measure a writer without staging_bytes (first save maps its memory)
  size_t io_threads = 4;
  int reps = 3;  // best of: plain write+fsync, and strata's warm saves
};

constexpr double kStallAimMsPerGB = 50;

double Now() { return Seconds(RealClock().Now().time_since_epoch()); }

// Mixed sizes, cycling: large matrices down to small vectors.
std::vector<uint64_t> TensorSizes(uint64_t total) {
  const uint64_t cycle[] = {64 << 20, 16 << 20, 4 << 20, 1 << 20, 256 << 10, 4 << 10, 32 << 20, 8 << 20};
  std::vector<uint64_t> sizes;
  uint64_t sum = 0;
  for (size_t i = 0; sum < total; ++i) {
    uint64_t n = std::min<uint64_t>(cycle[i % 8], total - sum);
    n -= n % 4;
    if (n == 0) break;
    sizes.push_back(n);
    sum += n;
  }
  return sizes;
}

// Drops the page cache of every file under dir (so loads read from disk).
void Evict(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    int fd = ::open(e.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// A plain sequential write of the same bytes into one file, then fsync.
double PlainWrite(const std::string& path, const std::vector<MutableBuffer>& bufs) {
  double t0 = Now();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  for (const auto& b : bufs) {
    for (uint64_t off = 0; off < b.size();) {
      ssize_t n = ::write(fd, b.data() + off, std::min<uint64_t>(8 << 20, b.size() - off));
      if (n <= 0) return -1;
      off += n;
    }
  }
  ::fsync(fd);
  ::close(fd);
  double s = Now() - t0;
  ::unlink(path.c_str());
  return s;
}

// Single-thread hash speeds (GB/s) over `n` bytes already in memory; best of 3.
std::pair<double, double> HashSpeeds(const void* data, uint64_t n) {
  double xxh = 0, sha = 0;
  for (int rep = 0; rep < 3; ++rep) {
    double t0 = Now();
    volatile uint64_t x = XxHash3(data, n);
    (void)x;
    xxh = std::max(xxh, double(n) / 1e9 / (Now() - t0));
    t0 = Now();
    Sha256Digest d = Sha256(data, n);
    (void)d;
    sha = std::max(sha, double(n) / 1e9 / (Now() - t0));
  }
  return {xxh, sha};
}

// The raw disk: every shard file under dir read once (4 threads, 8 MiB
// preads into a reused buffer, no hashing, no fresh memory); returns seconds.
// Reads every shard into memory allocated for it and held until all are read,
// as a load must (4 threads, no hashing, no parsing): the yardstick for load.
double PlainRead(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".safetensors") files.push_back(e.path());
  }
  std::vector<std::unique_ptr<char[]>> held(files.size());
  std::atomic<size_t> next{0};
  const double t0 = Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (size_t i = next++; i < files.size(); i = next++) {
        int fd = ::open(files[i].c_str(), O_RDONLY);
        if (fd < 0) continue;
        struct stat st;
        if (::fstat(fd, &st) == 0) {
          held[i].reset(new char[st.st_size]);
          for (off_t off = 0; off < st.st_size;) {
            ssize_t n = ::pread(fd, held[i].get() + off, std::min<off_t>(8 << 20, st.st_size - off), off);
            if (n <= 0) break;
            off += n;
          }
        }
        ::close(fd);
      }
    });
  }
  for (auto& t : threads) t.join();
  return Now() - t0;
}

nlohmann::json RunTorch(const Args& a, const std::vector<uint64_t>& sizes) {
  std::vector<std::string> argv = {a.python, a.torch_script, io::JoinPath(a.dir, "torch.pt")};  // no shell
  for (auto n : sizes) argv.push_back(std::to_string(n));
  testing::RunOptions options;
  options.timeout = std::chrono::hours(1);  // torch.save of --gib GiB, twice
  auto run = testing::RunCommand(argv, {}, std::nullopt, options);
  if (!run.ok()) return {{"error", "torch baseline: " + run.status().ToString()}};
  auto j = nlohmann::json::parse(run->stdout_text, nullptr, false);
  if (run->exit_code != 0 || j.is_discarded()) {
    return {{"error", "torch baseline failed (exit " + std::to_string(run->exit_code) + ")"}};
  }
  return j;
}

// The command line into `a`: nullopt to run, or the exit code once CLI11 has printed help or a
// clear error (a malformed number is a message and exit code 2, not an uncaught exception).
std::optional<int> ParseArgs(int argc, char** argv, Args* a) {
  a->torch_script = std::string(STRATA_BENCH_DIR) + "/ckpt_bench_torch.py";
  if (const char* env = std::getenv("STRATA_SOURCE_DIR"))
    a->torch_script = std::string(env) + "/bench/ckpt_bench_torch.py";
  CLI::App app("strata's checkpoint writer and reader against torch.save and plain write+fsync");
  bool no_torch = false, no_cold = false;
  app.add_option("--gib", a->gib, "Checkpoint size")->capture_default_str()->check(CLI::Range(0.001, 1024.0));
  app.add_option("--reps", a->reps, "Best of N")->capture_default_str()->check(CLI::Range(1, 100));
  app.add_option("--dir", a->dir, "Work directory")->capture_default_str();
  app.add_option("--out", a->out, "JSON output")->capture_default_str();
  app.add_option("--python", a->python, "Python with torch, for the baseline")->capture_default_str();
  app.add_flag("--no-torch", no_torch, "No torch.save baseline");
  app.add_flag("--no-cold", no_cold, "No writer without staging_bytes");
  app.add_option("--torch-script", a->torch_script, "The torch baseline's script")->capture_default_str();
  app.add_option("--io-threads", a->io_threads, "Writer I/O threads")->capture_default_str()->check(CLI::Range(1, 256));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  a->torch = !no_torch;
  a->cold = !no_cold;
  return std::nullopt;
}

// 1. torch.save, in its own process, before we allocate our copy.
void MeasureTorch(const Args& a, const std::vector<uint64_t>& sizes, nlohmann::json* result) {
  nlohmann::json t = RunTorch(a, sizes);
  (*result)["torch"] = t;
  if (t.contains("save_s")) {
    std::printf("torch.save (synchronous):           %8.3f s  (+ fsync %.3f s)\n", t["save_s"].get<double>(),
                t["fsync_s"].get<double>());
  } else {
    std::printf("torch baseline: %s\n", t.dump().c_str());
  }
}

// The training state: every page touched.
struct TrainingState {
  std::vector<MutableBuffer> bufs;
  std::vector<TensorView> views;
};

TrainingState MakeState(const std::vector<uint64_t>& sizes) {
  TrainingState state;
  for (size_t i = 0; i < sizes.size(); ++i) {
    MutableBuffer b(sizes[i]);
    for (uint64_t off = 0; off < b.size(); off += 4096) {
      std::memset(b.data() + off, int((i * 131 + off / 4096) & 0xff), std::min<uint64_t>(4096, b.size() - off));
    }
    state.views.push_back(
        {"layer" + std::to_string(i) + ".weight", "F32", {int64_t(sizes[i] / 4)}, b.data(), sizes[i]});
    state.bufs.push_back(std::move(b));
  }
  return state;
}

// 2. Plain sequential write + fsync of the same bytes, best of reps (as
// strata's persist below), so neither side gets more tries.
double MeasurePlainWrite(const Args& a, const TrainingState& state, double gb, nlohmann::json* result) {
  double plain_s = -1;
  for (int r = 0; r < a.reps; ++r) {
    const double s = PlainWrite(io::JoinPath(a.dir, "plain.bin"), state.bufs);
    if (s > 0 && (plain_s < 0 || s < plain_s)) plain_s = s;
  }
  (*result)["plain_write_fsync_s"] = plain_s;
  (*result)["plain_write_GBps"] = gb / plain_s;
  std::printf("plain sequential write + fsync:     %8.3f s  (%.2f GB/s, best of %d)\n", plain_s, gb / plain_s, a.reps);
  return plain_s;
}

// 3. Memory speed: the floor for any stall that copies the state. The
// 2-thread memcpy is measured again before every save (memory speed on a
// shared host moves during a run); the best seen is the yardstick.
struct MemorySpeed {
  double one_thread_s = -1, two_threads_s = -1;
};

MemorySpeed MeasureMemory(const TrainingState& state, double gb, nlohmann::json* result) {
  MemorySpeed m;
  m.one_thread_s = MemcpyBaselineSeconds(state.views, 1).value_or(-1);
  m.two_threads_s = MemcpyBaselineSeconds(state.views, 2).value_or(-1);
  (*result)["memcpy_1thread_s"] = m.one_thread_s;
  (*result)["memcpy_2thread_s"] = m.two_threads_s;
  (*result)["memcpy_2thread_ms_per_GB"] = m.two_threads_s * 1e3 / gb;
  std::printf(
      "memory speed: memcpy into pre-faulted memory, 1 thread %.1f ms (%.2f GB/s), 2 threads %.1f ms (%.2f GB/s)\n",
      m.one_thread_s * 1e3, gb / m.one_thread_s, m.two_threads_s * 1e3, gb / m.two_threads_s);
  return m;
}

// One save, its stall against a 2-thread memcpy measured just before (the
// best memcpy seen kept in `*memory`); nullopt if it failed.
std::optional<SaveStats> TimedSave(CheckpointWriter& w, int step, const char* label, const TrainingState& state,
                                   double gb, MemorySpeed* memory) {
  const double mem_now = MemcpyBaselineSeconds(state.views, 2).value_or(-1);
  if (mem_now > 0) memory->two_threads_s = std::min(memory->two_threads_s, mem_now);
  const double t0 = Now();
  auto h = w.Save(step, state.views, R"({"bench":true})");
  const double stall = Now() - t0;
  Status st = h.ok() ? h->Wait() : h.status();
  if (!st.ok()) {
    std::cerr << "save failed: " << st << "\n";
    return std::nullopt;
  }
  SaveStats stats = h->stats();
  const double persist = Seconds(stats.persist);
  std::printf(
      "strata save %d %-22s stall %7.1f ms (%5.1f ms/GB, %.2fx a memcpy-2t just before; copy %.1f ms, wait %.1f ms), "
      "persist %.3f s (%.2f GB/s)%s\n",
      step, label, stall * 1e3, stall * 1e3 / gb, stall / mem_now, Seconds(stats.copy) * 1e3, Seconds(stats.wait) * 1e3,
      persist, gb / persist, stats.cold_staging ? " [staging freshly mapped]" : "");
  return stats;
}

// strata's first save and the best of its warm ones.
struct StrataSaves {
  double first_stall_s = 0, stall_s = 0, persist_s = 0;
};

// 4. strata: staging memory prefaulted at Open (the training loop would run
// meanwhile), then a first save and warm ones. nullopt if a step failed.
std::optional<StrataSaves> MeasureStrataSaves(const Args& a, const WriterOptions& o, const TrainingState& state,
                                              double gb, MemorySpeed* memory, nlohmann::json* result) {
  double t_open = Now();
  auto writer = CheckpointWriter::Open(o);
  if (!writer.ok()) {
    std::cerr << writer.status() << "\n";
    return std::nullopt;
  }
  if (Status st = (*writer)->WaitStagingReady(); !st.ok()) {
    std::cerr << st << "\n";
    return std::nullopt;
  }
  const double prefault_s = Now() - t_open;
  (*result)["staging_prefault_s"] = prefault_s;
  std::printf("staging memory (%.2f GB) mapped + faulted in the background after Open: %.3f s\n",
              double(o.staging_bytes) / 1e9, prefault_s);
  std::vector<SaveStats> runs;
  for (int step = 1; step <= 1 + a.reps; ++step) {
    auto st = TimedSave(**writer, step, step == 1 ? "[first, prefaulted]" : "[warm]", state, gb, memory);
    if (!st) return std::nullopt;
    runs.push_back(*st);
  }
  StrataSaves s;
  s.first_stall_s = Seconds(runs[0].stall);
  s.stall_s = Seconds(runs[1].stall);
  s.persist_s = Seconds(runs[1].persist);
  for (size_t r = 2; r < runs.size(); ++r) {  // warm saves: best of reps
    s.stall_s = std::min(s.stall_s, Seconds(runs[r].stall));
    s.persist_s = std::min(s.persist_s, Seconds(runs[r].persist));
  }
  return s;
}

void RecordSaves(const StrataSaves& s, const MemorySpeed& memory, double plain_s, double gb, nlohmann::json* result) {
  nlohmann::json& r = *result;
  r["stall_aim_ms_per_GB"] = kStallAimMsPerGB;
  r["stall_meets_aim"] = s.stall_s * 1e3 / gb <= kStallAimMsPerGB;
  r["first_stall_meets_aim"] = s.first_stall_s * 1e3 / gb <= kStallAimMsPerGB;
  r["strata_first_stall_s"] = s.first_stall_s;
  r["strata_first_stall_ms_per_GB"] = s.first_stall_s * 1e3 / gb;
  r["strata_stall_s"] = s.stall_s;
  r["strata_stall_ms_per_GB"] = s.stall_s * 1e3 / gb;
  r["memcpy_2thread_s"] = memory.two_threads_s;  // best seen in the run
  r["memcpy_2thread_ms_per_GB"] = memory.two_threads_s * 1e3 / gb;
  r["strata_stall_over_memcpy_2thread"] = s.stall_s / memory.two_threads_s;
  r["strata_stall_over_memcpy_1thread"] = s.stall_s / memory.one_thread_s;
  r["strata_persist_s"] = s.persist_s;
  r["strata_persist_GBps"] = gb / s.persist_s;
  r["persist_fraction_of_plain_write"] = plain_s / s.persist_s;
  if (r.contains("torch") && r["torch"].contains("save_s")) {
    r["stall_ratio_torch_over_strata"] = r["torch"]["save_s"].get<double>() / s.stall_s;
  }
}

// 5. For comparison: no staging_bytes, so the first save faults its memory in.
bool MeasureUnprefaulted(const Args& a, const WriterOptions& o, const TrainingState& state, double gb,
                         MemorySpeed* memory, nlohmann::json* result) {
  WriterOptions c = o;
  c.dir = io::JoinPath(a.dir, "strata-cold");
  c.staging_bytes = 0;
  auto cw = CheckpointWriter::Open(c);
  if (!cw.ok()) return false;
  auto st = TimedSave(**cw, 1, "[first, not prefaulted]", state, gb, memory);
  if (!st) return false;
  (*result)["strata_unprefaulted_first_stall_s"] = Seconds(st->stall);
  cw->reset();
  std::error_code ignore_ec;
  std::filesystem::remove_all(c.dir, ignore_ec);
  return true;
}

// The raw disk's read of the shards (cold cache) against which loads are judged.
double MeasurePlainRead(const std::string& dir, double gb, nlohmann::json* result) {
  // An untimed pass first: on a VM, memory the guest never touched costs far
  // more on first use than after, and whichever load ran first would pay it.
  Evict(dir);
  PlainRead(dir);
  Evict(dir);
  const double read_s = PlainRead(dir);
  (*result)["plain_read_s"] = read_s;
  (*result)["plain_read_GBps"] = gb / read_s;
  std::printf("plain read of the shards into memory (cold cache, 4 threads, no hashing): %.3f s (%.2f GB/s)\n", read_s,
              gb / read_s);
  return read_s;
}

// 6. Load with full verification (page cache dropped for the shards first):
// the default (whole-shard xxh3) and with SHA-256 as well. nullopt if a load
// failed, else whether every tensor came back byte for byte.
std::optional<bool> MeasureLoads(const std::string& dir, const TrainingState& state, double gb,
                                 nlohmann::json* result) {
  const auto [xxh_gbps, sha_gbps] = HashSpeeds(state.views[0].data, state.views[0].size);
  (*result)["xxh3_GBps_1thread"] = xxh_gbps;
  (*result)["sha256_GBps_1thread"] = sha_gbps;
  std::printf("hash speed, 1 thread, in memory: xxh3 %.1f GB/s, SHA-256 %.2f GB/s\n", xxh_gbps, sha_gbps);
  const double read_s = MeasurePlainRead(dir, gb, result);
  auto loc = std::move(OpenLocalLocation(io::DefaultFileSystem(), dir)).value();
  bool exact = true;
  for (bool sha : {false, true}) {
    Evict(dir);
    double t0 = Now();
    auto latest = Latest(*loc, VerifyLevel::kQuick);  // Load verifies every byte itself
    auto loaded = latest.ok() ? Load(*loc, latest->step, {.verify = true, .parallelism = 4, .verify_sha256 = sha})
                              : latest.status();
    const double load_s = Now() - t0;
    if (!loaded.ok()) {
      std::cerr << "load failed: " << loaded.status() << "\n";
      return std::nullopt;
    }
    const auto& views = state.views;
    bool same = loaded->tensors.size() == views.size();
    for (size_t i = 0; same && i < views.size(); ++i) {
      same = std::memcmp(loaded->Find(views[i].name)->data.data(), views[i].data, views[i].size) == 0;
    }
    exact = exact && same;
    const std::string key = sha ? "load_verified_sha256" : "load_verified";
    (*result)[key + "_s"] = load_s;
    (*result)[key + "_GBps"] = gb / load_s;
    (*result)[key + "_fraction_of_plain_read"] = read_s / load_s;
    std::printf("load latest + verify %-14s (cold cache): %8.3f s  (%.2f GB/s, %.0f%% of plain read), byte-exact: %s\n",
                sha ? "(+SHA-256)" : "(xxh3)", load_s, gb / load_s, 100 * read_s / load_s, same ? "yes" : "NO");
  }
  (*result)["load_byte_exact"] = exact;
  return exact;
}

// The stall against torch.save, memory speed and the aim; the load average.
void PrintSummary(const Args& a, const StrataSaves& s, const MemorySpeed& memory, double plain_s, double gb,
                  nlohmann::json* result) {
  const double stall = s.stall_s, first = s.first_stall_s, mem2 = memory.two_threads_s;
  std::string versus_torch = "(torch.save not run)";
  if (result->contains("stall_ratio_torch_over_strata")) {
    char text[96];
    std::snprintf(text, sizeof(text), "vs torch.save %.3f s -> %.0fx less", (*result)["torch"]["save_s"].get<double>(),
                  (*result)["stall_ratio_torch_over_strata"].get<double>());
    versus_torch = text;
  }
  std::printf(
      "stall: strata %.1f ms (%.1f ms/GB, %.2fx a 2-thread memcpy; first save %.1f ms) %s; persist at %.0f%% "
      "of plain write+fsync\n",
      stall * 1e3, stall * 1e3 / gb, stall / mem2, first * 1e3, versus_torch.c_str(), 100 * plain_s / s.persist_s);
  // The floor is the machine's memory speed: an aim below it cannot pass here.
  std::printf(
      "stall vs the aim of %.0f ms/GB: %s (warm saves, best of %d: %.1f ms/GB; first save %.1f ms/GB: %s; "
      "memory speed here, a 2-thread memcpy: %.1f ms/GB)\n",
      kStallAimMsPerGB, stall * 1e3 / gb <= kStallAimMsPerGB ? "PASS" : "FAIL", a.reps, stall * 1e3 / gb,
      first * 1e3 / gb, first * 1e3 / gb <= kStallAimMsPerGB ? "PASS" : "FAIL", mem2 * 1e3 / gb);
  double load_avg[3] = {0, 0, 0};
  if (::getloadavg(load_avg, 3) == 3) (*result)["load_average_1m"] = load_avg[0];
  std::printf("load average at the end: %.2f (2 cores shared: figures move with it)\n", load_avg[0]);
}

}  // namespace

int main(int argc, char** argv) {
  std::error_code ignore_ec;
  Args a;
  if (const std::optional<int> exit_code = ParseArgs(argc, argv, &a)) return *exit_code;
  std::filesystem::remove_all(a.dir, ignore_ec);
  if (!io::DefaultFileSystem().CreateDirs(a.dir).ok()) return 1;
  const uint64_t total = static_cast<uint64_t>(a.gib * (1ull << 30));
  const std::vector<uint64_t> sizes = TensorSizes(total);
  const double gb = double(total) / 1e9;
  std::string reproduce = "build/bench/ckpt_bench";
  for (int i = 1; i < argc; ++i) reproduce += std::string(" ") + argv[i];
  nlohmann::json result = {
      {"state_bytes", total}, {"tensors", sizes.size()}, {"dir", a.dir}, {"reps", a.reps}, {"reproduce", reproduce}};
  result["bench"] = "ckpt_bench";  // how `strata plan --from-bench` tells it apart
  std::printf("reproduce: %s\n", reproduce.c_str());
  std::printf("state: %zu tensors, %.2f GiB, in %s\n", sizes.size(), double(total) / (1ull << 30), a.dir.c_str());

  if (a.torch) MeasureTorch(a, sizes, &result);
  const TrainingState state = MakeState(sizes);
  const double plain_s = MeasurePlainWrite(a, state, gb, &result);
  MemorySpeed memory = MeasureMemory(state, gb, &result);
  WriterOptions o;
  o.dir = io::JoinPath(a.dir, "strata");
  o.io_threads = a.io_threads;
  o.keep_local = 1;
  o.staging_bytes = total + (64ull << 20);  // + room for shard headers and alignment
  const std::optional<StrataSaves> saves = MeasureStrataSaves(a, o, state, gb, &memory, &result);
  if (!saves) return 1;
  RecordSaves(*saves, memory, plain_s, gb, &result);
  if (a.cold && !MeasureUnprefaulted(a, o, state, gb, &memory, &result)) return 1;
  const std::optional<bool> exact = MeasureLoads(o.dir, state, gb, &result);
  if (!exact) return 1;
  PrintSummary(a, *saves, memory, plain_s, gb, &result);

  std::filesystem::remove_all(a.dir, ignore_ec);
  if (!bench::WriteResultsJson("ckpt_bench", a.out, result)) return 1;
  std::printf("wrote %s\n", a.out.c_str());
  return *exact ? 0 : 1;
}
