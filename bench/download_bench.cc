// download_bench: one large object downloaded to a file by strata's parallel
// ranged GET (object/transfer.h ParallelGetTo over the S3 store: each range is
// written at its offset as its bytes arrive, so the file write overlaps the
// download) and, in the same run, by `aws s3 cp`, against each --target
// endpoint (e.g. RGW directly and the nginx cloud-emulating proxy in front of
// it). Prints both throughputs and the ratio, plus strata's ParallelGet into
// memory (the client without the file) and strata's own CPU seconds per GB,
// and writes JSON and a PNG (bench/plot.py). Credentials come from
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. bench/download_bench.sh starts
// the servers and runs this.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"
#include "bench_output.h"
#include "object/store_url.h"
#include "object/transfer.h"

extern char** environ;

namespace strata {
namespace {

struct Args {
  std::vector<std::string> targets;  // LABEL=ENDPOINT
  std::string bucket = "strata-test";
  std::string region = "us-east-1";
  std::string key;
  uint64_t size_mib = 1024;
  uint64_t part_size_mib = 8;
  // Little's law: at 30 ms to first byte and 25 MiB/s per connection (the
  // cloud proxy), 64 ranges in flight could carry ~1.6 GB/s, more than this
  // machine's CPUs can serve, so the network is never what limits.
  int concurrency = 64;
  int runs = 1;
  bool skip_aws = false;
  std::string work_dir = "/tmp";
  std::string out = "bench/out/download.json";
  std::string plot_script;
  std::string repro;
};

struct Target {
  std::string label, endpoint;
};

struct Measured {
  double strata_s = 0, memory_s = 0, aws_s = 0;
  double strata_cpu_s = 0;  // strata's own CPU seconds for its best download to a file
};

[[noreturn]] void Die(const std::string& what, const Status& status) {
  std::cerr << "download_bench: " << what << ": " << status.ToString() << "\n";
  std::exit(1);
}

std::string StoreUrl(const Args& args, const std::string& endpoint) {
  return "s3://" + args.bucket + "?endpoint=" + endpoint + "&region=" + args.region + "&path_style=1";
}

Result<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open " + path);
  std::string data;
  std::error_code ec;
  data.resize(std::filesystem::file_size(path, ec));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (ec || done != data.size()) return IOError("short read of " + path);
  return data;
}

std::vector<std::string> ProcessEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  return env;
}

// The environment for `aws`: ours minus AWS_CA_BUNDLE (a plain-http endpoint),
// with the instance-metadata lookup off so it never leaves 127.0.0.1.
std::vector<std::string> AwsEnvironment() {
  std::vector<std::string> env;
  for (const auto& var : ProcessEnvironment()) {
    if (var.starts_with("AWS_CA_BUNDLE=") || var.starts_with("AWS_EC2_METADATA_DISABLED=")) continue;
    env.push_back(var);
  }
  env.push_back("AWS_EC2_METADATA_DISABLED=true");
  return env;
}

Result<int> Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  args.push_back(nullptr);
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int err = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return ErrnoToStatus(err, "cannot run " + argv[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ErrnoToStatus(errno, "waitpid");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Buffer MakeObject(uint64_t size) {
  std::mt19937_64 random(7);  // what Random(7) yields, without its lock per word
  MutableBuffer buffer(size);
  for (uint64_t i = 0; i + 8 <= size; i += 8) {
    uint64_t word = random();
    std::memcpy(buffer.data() + i, &word, 8);
  }
  std::memset(buffer.data() + (size / 8) * 8, 0x5a, size % 8);
  return std::move(buffer).Freeze();
}

// Makes sure the object exists with the expected size; returns its content hash.
uint64_t EnsureObject(const Args& args, object::ObjectStore& store, uint64_t size) {
  auto head = store.Head(args.key);
  Buffer data = MakeObject(size);
  uint64_t hash = XxHash3(data.data(), data.size());
  if (head.ok() && head->size == size) return hash;  // same seed, same bytes
  std::cout << "uploading " << args.size_mib << " MiB to s3://" << args.bucket << "/" << args.key << " ...\n";
  auto start = RealClock().Now();
  auto put = object::ParallelPut(store, args.key, data, args.part_size_mib << 20, 8);
  if (!put.ok()) Die("upload", put.status());
  double s = Seconds(RealClock().Now() - start);
  std::printf("  uploaded in %.2f s (%.1f MB/s)\n", s, size / s / 1e6);
  return hash;
}

// CPU seconds this process has used so far (all threads, user + system).
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

// pwrite of every byte, retried on EINTR and short writes.
Status PwriteAll(int fd, const uint8_t* data, size_t n, uint64_t offset, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, data, n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return ErrnoToStatus(errno, "write " + path);
    data += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return Status::Ok();
}

// What `aws s3 cp` does: the object into a file. Ranges are written at their
// offsets as they arrive, so the file write overlaps the download.
double TimeStrata(const Args& args, object::ObjectStore& store, uint64_t size, uint64_t hash, const std::string& file,
                  double* cpu_s) {
  double cpu_start = ProcessCpuSeconds();
  auto start = RealClock().Now();
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("strata download", ErrnoToStatus(errno, "open " + file));
  auto info = object::ParallelGetTo(
      store, args.key, args.part_size_mib << 20, args.concurrency,
      [&](uint64_t offset, const uint8_t* data, size_t n) { return PwriteAll(fd, data, n, offset, file); });
  if (!info.ok()) Die("strata download", info.status());
  if (::close(fd) != 0) Die("strata download", ErrnoToStatus(errno, "close " + file));
  double s = Seconds(RealClock().Now() - start);
  *cpu_s = ProcessCpuSeconds() - cpu_start;
  // Checked after the clock stops: the file must hold exactly the object.
  auto data = ReadFile(file);
  if (!data.ok()) Die("strata download", data.status());
  if (data->size() != size || XxHash3(data->data(), data->size()) != hash) {
    Die("strata download", CorruptionError("the downloaded file differs from the uploaded object"));
  }
  std::error_code ignore;  // the bench's own temp file: a leftover is harmless
  std::filesystem::remove(file, ignore);
  return s;
}

// ParallelGet into one buffer in memory: the client alone, without the file.
double TimeStrataMemory(const Args& args, object::ObjectStore& store, uint64_t size, uint64_t hash) {
  auto start = RealClock().Now();
  auto data = object::ParallelGet(store, args.key, args.part_size_mib << 20, args.concurrency);
  if (!data.ok()) Die("strata download to memory", data.status());
  double s = Seconds(RealClock().Now() - start);
  if (data->size() != size || XxHash3(data->data(), data->size()) != hash) {
    Die("strata download to memory", CorruptionError("downloaded bytes differ from the uploaded object"));
  }
  return s;
}

double TimeAws(const Args& args, const Target& target, uint64_t size, const std::string& file) {
  std::vector<std::string> argv = {"/usr/bin/aws",
                                   "s3",
                                   "cp",
                                   "--only-show-errors",
                                   "--endpoint-url",
                                   target.endpoint,
                                   "--region",
                                   args.region,
                                   "s3://" + args.bucket + "/" + args.key,
                                   file};
  auto start = RealClock().Now();
  auto rc = Spawn(argv, AwsEnvironment());
  double s = Seconds(RealClock().Now() - start);
  if (!rc.ok()) Die("aws s3 cp", rc.status());
  if (*rc != 0) Die("aws s3 cp", IOError("exited with status " + std::to_string(*rc)));
  std::error_code ec;
  uint64_t got = std::filesystem::file_size(file, ec);
  if (ec || got != size) Die("aws s3 cp", CorruptionError("downloaded file has the wrong size"));
  std::filesystem::remove(file, ec);
  return s;
}

// LABEL=ENDPOINT flags into targets; nullopt (after saying why) if one is malformed.
std::optional<std::vector<Target>> ParseTargets(const std::vector<std::string>& flags) {
  std::vector<Target> targets;
  for (const auto& t : flags) {
    size_t eq = t.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "download_bench: --target must be LABEL=ENDPOINT, got \"" << t << "\"\n";
      return std::nullopt;
    }
    targets.push_back({t.substr(0, eq), t.substr(eq + 1)});
  }
  return targets;
}

// One target's best of --runs for each way down, printed.
struct TargetRates {
  double strata_mbps = 0, aws_mbps = 0, memory_mbps = 0;
  nlohmann::json json;
};

TargetRates MeasureTarget(const Args& args, const Target& target, uint64_t size, uint64_t hash,
                          const std::string& file) {
  auto store = object::OpenStore(StoreUrl(args, target.endpoint));
  if (!store.ok()) Die("open " + target.endpoint, store.status());
  Measured best{1e30, 1e30, 1e30, 0};
  for (int run = 0; run < args.runs; ++run) {
    double cpu = 0, s = TimeStrata(args, **store, size, hash, file, &cpu);
    if (s < best.strata_s) best.strata_s = s, best.strata_cpu_s = cpu;
    if (!args.skip_aws) best.aws_s = std::min(best.aws_s, TimeAws(args, target, size, file));
    best.memory_s = std::min(best.memory_s, TimeStrataMemory(args, **store, size, hash));
  }
  TargetRates r;
  r.strata_mbps = size / best.strata_s / 1e6;
  r.aws_mbps = size / best.aws_s / 1e6;
  r.memory_mbps = size / best.memory_s / 1e6;
  std::printf(
      "%-12s %s: strata %.1f MB/s (%.2f s, %d ranges of %llu MiB in flight) | aws s3 cp %.1f MB/s (%.2f s) | "
      "strata/aws = %.2fx | strata into memory %.1f MB/s | strata's CPU %.2f s per GB\n",
      target.label.c_str(), target.endpoint.c_str(), r.strata_mbps, best.strata_s, args.concurrency,
      static_cast<unsigned long long>(args.part_size_mib), r.aws_mbps, best.aws_s, r.strata_mbps / r.aws_mbps,
      r.memory_mbps, best.strata_cpu_s / (size / 1e9));
  std::fflush(stdout);
  r.json = {{"label", target.label},
            {"endpoint", target.endpoint},
            {"strata_seconds", best.strata_s},
            {"aws_seconds", best.aws_s},
            {"strata_memory_seconds", best.memory_s},
            {"strata_memory_MBps", r.memory_mbps},
            {"strata_cpu_seconds", best.strata_cpu_s},
            {"strata_MBps", r.strata_mbps},
            {"aws_MBps", r.aws_mbps},
            {"ratio", r.strata_mbps / r.aws_mbps}};
  return r;
}

// The JSON and, with matplotlib, a PNG beside it.
bool WriteResults(const Args& args, const std::vector<Target>& targets, const std::vector<TargetRates>& rates,
                  uint64_t size) {
  nlohmann::json results = nlohmann::json::array();
  std::vector<double> strata_rates, aws_rates, memory_rates;
  for (const auto& r : rates) {
    strata_rates.push_back(r.strata_mbps);
    aws_rates.push_back(r.aws_mbps);
    memory_rates.push_back(r.memory_mbps);
    results.push_back(r.json);
  }
  std::vector<std::string> labels;
  for (const auto& t : targets) labels.push_back(t.label);
  nlohmann::json doc = {{"benchmark", "download"},
                        {"size_bytes", size},
                        {"part_size_bytes", args.part_size_mib << 20},
                        {"concurrency", args.concurrency},
                        {"runs", args.runs},
                        {"repro", args.repro},
                        {"targets", results},
                        {"title", "Downloading " + std::to_string(args.size_mib) + " MiB from Ceph RGW"},
                        {"charts",
                         {{{"title", "Download throughput to a file (best of " + std::to_string(args.runs) + ")"},
                           {"ylabel", "MB/s"},
                           {"groups", labels},
                           {"series",
                            {{{"label", "strata parallel ranged GET"}, {"values", strata_rates}},
                             {{"label", "aws s3 cp"}, {"values", aws_rates}},
                             {{"label", "strata into memory (no file)"}, {"values", memory_rates}}}}}}}};
  std::filesystem::path out(args.out);
  if (!bench::WriteResultsJson("download_bench", args.out, doc)) return false;
  std::cout << "wrote " << args.out << "\n";
  std::string script = args.plot_script;
  if (script.empty()) script = std::string(STRATA_BENCH_DIR) + "/plot.py";
  std::string png = out.replace_extension(".png").string();
  auto rc = Spawn({"/usr/bin/python3", script, args.out, png}, ProcessEnvironment());
  if (rc.ok() && *rc == 0) {
    std::cout << "wrote " << png << "\n";
  } else {
    std::cout << "(no plot: /usr/bin/python3 with matplotlib is needed; the figures are in " << args.out << ")\n";
  }
  return true;
}

int Main(int argc, char** argv) {
  InitLoggingFromEnv();
  Args args;
  CLI::App app{"Download one large object with strata's parallel ranged GET and with `aws s3 cp`"};
  app.add_option("--target", args.targets, "LABEL=ENDPOINT (repeatable), e.g. loopback=http://127.0.0.1:7480")
      ->required();
  app.add_option("--bucket", args.bucket, "Bucket (must exist)")->capture_default_str();
  app.add_option("--region", args.region)->capture_default_str();
  app.add_option("--key", args.key, "Object key (default bench/download-<size>MiB.bin)");
  app.add_option("--size-mib", args.size_mib, "Object size in MiB")->capture_default_str()->check(CLI::Range(1, 65536));
  app.add_option("--part-size-mib", args.part_size_mib, "Ranged GET part size")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--concurrency", args.concurrency, "strata's ranges in flight")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--runs", args.runs, "Downloads per tool and target (the best counts)")
      ->capture_default_str()
      ->check(CLI::Range(1, 20));
  app.add_flag("--skip-aws", args.skip_aws, "Time strata alone (to profile it; no ratio is meaningful)");
  app.add_option("--work-dir", args.work_dir, "Where downloaded files go (removed after each run)")
      ->capture_default_str();
  app.add_option("--out", args.out, "JSON output (a PNG is written beside it)")->capture_default_str();
  app.add_option("--plot-script", args.plot_script, "bench/plot.py (default: beside --out's bench/)");
  app.add_option("--repro", args.repro, "The command that reproduces this run (printed and recorded)");
  CLI11_PARSE(app, argc, argv);
  if (args.key.empty()) args.key = "bench/download-" + std::to_string(args.size_mib) + "MiB.bin";

  const auto targets = ParseTargets(args.targets);
  if (!targets) return 2;
  uint64_t size = args.size_mib << 20;
  std::string file = args.work_dir + "/strata-download-bench-" + std::to_string(getpid()) + ".bin";

  auto first = object::OpenStore(StoreUrl(args, (*targets)[0].endpoint));
  if (!first.ok()) Die("open " + (*targets)[0].endpoint, first.status());
  uint64_t hash = EnsureObject(args, **first, size);

  std::vector<TargetRates> rates;
  for (const auto& target : *targets) rates.push_back(MeasureTarget(args, target, size, hash, file));
  if (!WriteResults(args, *targets, rates, size)) return 1;
  if (!args.repro.empty()) std::cout << "reproduce: " << args.repro << "\n";
  return 0;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) { return strata::Main(argc, argv); }
