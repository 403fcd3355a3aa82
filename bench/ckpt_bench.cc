// Checkpoint benchmark: the training stall of strata's async save vs a
// synchronous torch.save of the same state (Debian's python3 + torch in a
// subprocess), strata's persist throughput as a fraction of a plain
// sequential write + fsync of the same bytes measured in the same run, and
// load time with full verification.
//
//   ckpt_bench [--gib 4] [--dir /tmp/strata-ckpt-bench] [--out bench/out/ckpt.json]
//              [--python /usr/bin/python3] [--no-torch] [--io-threads 4]
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/buffer.h"
#include "base/clock.h"
#include "ckpt/reader.h"
#include "ckpt/writer.h"
#include "io/durable.h"
#include "io/file_system.h"

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
  size_t io_threads = 4;
};

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

nlohmann::json RunTorch(const Args& a, const std::vector<uint64_t>& sizes) {
  std::string cmd = a.python + " " + a.torch_script + " " + JoinPath(a.dir, "torch.pt");
  for (auto n : sizes) cmd += " " + std::to_string(n);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {{"error", "popen failed"}};
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  int rc = ::pclose(p);
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (rc != 0 || j.is_discarded()) return {{"error", "torch baseline failed (exit " + std::to_string(rc) + ")"}};
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  std::error_code ignore_ec;
  Args a;
  a.torch_script = ParentDir(__FILE__) + "/ckpt_bench_torch.py";  // beside this source file
  if (const char* env = std::getenv("STRATA_SOURCE_DIR"))
    a.torch_script = std::string(env) + "/bench/ckpt_bench_torch.py";
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--gib")
      a.gib = std::stod(next());
    else if (k == "--dir")
      a.dir = next();
    else if (k == "--out")
      a.out = next();
    else if (k == "--python")
      a.python = next();
    else if (k == "--no-torch")
      a.torch = false;
    else if (k == "--torch-script")
      a.torch_script = next();
    else if (k == "--io-threads")
      a.io_threads = std::stoul(next());
    else {
      std::cerr << "usage: ckpt_bench [--gib N] [--dir D] [--out F] [--python P] [--no-torch] [--io-threads N]\n";
      return 2;
    }
  }
  std::filesystem::remove_all(a.dir, ignore_ec);
  if (!DefaultFileSystem().CreateDirs(a.dir).ok()) return 1;
  const uint64_t total = static_cast<uint64_t>(a.gib * (1ull << 30));
  const std::vector<uint64_t> sizes = TensorSizes(total);
  const double gb = double(total) / 1e9;
  nlohmann::json result = {{"state_bytes", total}, {"tensors", sizes.size()}, {"dir", a.dir}};
  std::printf("state: %zu tensors, %.2f GiB, in %s\n", sizes.size(), double(total) / (1ull << 30), a.dir.c_str());

  // 1. torch.save first, in its own process, before we allocate our copy.
  if (a.torch) {
    nlohmann::json t = RunTorch(a, sizes);
    result["torch"] = t;
    if (t.contains("save_s")) {
      std::printf("torch.save (synchronous):           %8.3f s  (+ fsync %.3f s)\n", t["save_s"].get<double>(),
                  t["fsync_s"].get<double>());
    } else {
      std::printf("torch baseline: %s\n", t.dump().c_str());
    }
  }

  // The training state: every page touched.
  std::vector<MutableBuffer> bufs;
  std::vector<TensorView> views;
  for (size_t i = 0; i < sizes.size(); ++i) {
    MutableBuffer b(sizes[i]);
    for (uint64_t off = 0; off < b.size(); off += 4096) {
      std::memset(b.data() + off, int((i * 131 + off / 4096) & 0xff), std::min<uint64_t>(4096, b.size() - off));
    }
    views.push_back({"layer" + std::to_string(i) + ".weight", "F32", {int64_t(sizes[i] / 4)}, b.data(), sizes[i]});
    bufs.push_back(std::move(b));
  }

  // 2. Plain sequential write + fsync of the same bytes.
  const double plain_s = PlainWrite(JoinPath(a.dir, "plain.bin"), bufs);
  result["plain_write_fsync_s"] = plain_s;
  result["plain_write_GBps"] = gb / plain_s;
  std::printf("plain sequential write + fsync:     %8.3f s  (%.2f GB/s)\n", plain_s, gb / plain_s);

  // 3. strata: a cold save (the staging pool maps its pages), then warm ones.
  WriterOptions o;
  o.dir = JoinPath(a.dir, "strata");
  o.io_threads = a.io_threads;
  o.keep_local = 1;
  auto writer = CheckpointWriter::Open(o);
  if (!writer.ok()) {
    std::cerr << writer.status() << "\n";
    return 1;
  }
  std::vector<double> stalls, persists;
  for (int step = 1; step <= 3; ++step) {
    double t0 = Now();
    auto h = (*writer)->Save(step, views, R"({"bench":true})");
    double stall = Now() - t0;
    if (!h.ok() || !h->Wait().ok()) {
      std::cerr << "save failed: " << (h.ok() ? h->Wait() : h.status()) << "\n";
      return 1;
    }
    stalls.push_back(stall);
    persists.push_back(Seconds(h->stats().persist));
    std::printf("strata save %d: stall %8.1f ms (%.1f ms/GB)%s, persist %.3f s (%.2f GB/s)\n", step, stall * 1e3,
                stall * 1e3 / gb, step == 1 ? " [cold staging pool]" : "", persists.back(), gb / persists.back());
  }
  const double stall = std::min(stalls[1], stalls[2]);
  const double persist = std::min(persists[1], persists[2]);
  result["strata_cold_stall_s"] = stalls[0];
  result["strata_stall_s"] = stall;
  result["strata_stall_ms_per_GB"] = stall * 1e3 / gb;
  result["strata_persist_s"] = persist;
  result["strata_persist_GBps"] = gb / persist;
  result["persist_fraction_of_plain_write"] = plain_s / persist;
  if (result.contains("torch") && result["torch"].contains("save_s")) {
    result["stall_ratio_torch_over_strata"] = result["torch"]["save_s"].get<double>() / stall;
  }
  writer->reset();

  // 4. Load with full verification (page cache dropped for the shards first).
  auto loc = std::move(OpenLocalLocation(DefaultFileSystem(), o.dir)).value();
  Evict(o.dir);
  double t0 = Now();
  auto latest = Latest(*loc);
  auto loaded = latest.ok() ? Load(*loc, latest->step, {.verify = true, .parallelism = 4}) : latest.status();
  const double load_s = Now() - t0;
  if (!loaded.ok()) {
    std::cerr << "load failed: " << loaded.status() << "\n";
    return 1;
  }
  bool exact = loaded->tensors.size() == views.size();
  for (size_t i = 0; exact && i < views.size(); ++i) {
    exact = std::memcmp(loaded->Find(views[i].name)->data.data(), views[i].data, views[i].size) == 0;
  }
  result["load_verified_s"] = load_s;
  result["load_verified_GBps"] = gb / load_s;
  result["load_byte_exact"] = exact;
  std::printf("load latest + verify (cold cache):  %8.3f s  (%.2f GB/s), byte-exact: %s\n", load_s, gb / load_s,
              exact ? "yes" : "NO");
  std::printf(
      "stall: strata %.1f ms (%.1f ms/GB) vs torch.save %.3f s -> %.0fx less; persist at %.0f%% of plain write+fsync\n",
      stall * 1e3, stall * 1e3 / gb,
      result.contains("torch") && result["torch"].contains("save_s") ? result["torch"]["save_s"].get<double>() : 0.0,
      result.value("stall_ratio_torch_over_strata", 0.0), 100 * plain_s / persist);

  std::filesystem::remove_all(a.dir, ignore_ec);
  DefaultFileSystem().CreateDirs(ParentDir(a.out)).IgnoreError();
  std::ofstream(a.out) << result.dump(2) << "\n";
  std::printf("wrote %s\n", a.out.c_str());
  return exact ? 0 : 1;
}
