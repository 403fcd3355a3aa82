// strata cp SRC DST [--recursive] [--parallel N] [--part-size S]: copies
// objects between any two stores and local files/directories. Small objects
// are copied N at a time; large ones (> part size) one at a time with N
// parallel ranged GETs streamed into a local file or a parallel multipart
// PUT (object/transfer.h), never held whole in memory.
#include <iostream>
#include <mutex>

#include "base/executor.h"
#include "base/units.h"
#include "cli/command.h"
#include "cli/url.h"
#include "cli/util.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "object/file_store.h"
#include "object/transfer.h"

namespace strata::cli {
namespace {

struct CpArgs {
  std::string src, dst;
  bool recursive = false;
  int parallel = 16;
  std::string part_size = "8MiB";
  bool quiet = false;
};

struct Job {
  std::string src_key, dst_key;
  uint64_t size = 0;
};

struct Plan {
  Endpoint src, dst;
  std::vector<Job> jobs;
  uint64_t total_bytes = 0;
};

Plan PlanTree(const CpArgs& args, const ObjectUrl& src_url, const ObjectUrl& dst_url) {
  Plan plan;
  plan.src = Check(OpenTreeSource(src_url), "cp", args.src);
  auto objects = Check(object::ListAll(*plan.src.store, plan.src.key), "cp", args.src);
  if (objects.empty()) Fail("cp", args.src, NotFoundError("no objects to copy"));
  plan.dst = Check(OpenTreeDestination(dst_url), "cp", args.dst);
  for (const auto& object : objects) {
    std::string rel = object.key.substr(plan.src.key.size());
    if (rel.empty() || rel.back() == '/') continue;  // "directory" marker objects
    plan.jobs.push_back({object.key, plan.dst.key + rel, object.size});
    plan.total_bytes += object.size;
  }
  return plan;
}

Plan PlanSingle(const CpArgs& args, const ObjectUrl& src_url, const ObjectUrl& dst_url) {
  Plan plan;
  plan.src = Check(OpenObject(src_url), "cp", args.src);
  object::ObjectInfo info = Check(plan.src.store->Head(plan.src.key), "cp", plan.src.UrlOf(plan.src.key));
  plan.dst = Check(OpenObjectDestination(dst_url, BaseName(plan.src.key)), "cp", args.dst);
  if (plan.src.UrlOf(plan.src.key) == plan.dst.UrlOf(plan.dst.key) && src_url.store_url == dst_url.store_url) {
    Fail("cp", args.dst, InvalidArgumentError("source and destination are the same object"));
  }
  plan.jobs.push_back({plan.src.key, plan.dst.key, info.size});
  plan.total_bytes = info.size;
  return plan;
}

// Downloads a large object straight into a local file: ranges are written
// where they belong as they arrive (no whole-object buffer) into a temp file
// that is renamed over the destination only once complete and synced.
Status DownloadToFile(const Plan& plan, const Job& job, uint64_t part_size, int parallel) {
  const std::string dst_url = plan.dst.UrlOf(job.dst_key);
  // The key may come from a remote listing: refuse one that escapes the directory.
  Status valid = object::ValidateFileKey(job.dst_key);
  if (!valid.ok()) return valid.WithContext(dst_url);
  io::PosixFileSystem fs;
  const std::string path = io::JoinPath(plan.dst.local_dir, job.dst_key);
  STRATA_RETURN_IF_ERROR(fs.CreateDirs(io::ParentDir(path)).WithContext(dst_url));
  auto writer = io::AtomicFileWriter::Create(fs, path);
  if (!writer.ok()) return writer.status().WithContext(dst_url);
  Status write_error;  // kept apart so a full disk is not blamed on the source
  std::mutex mu;
  auto got = object::ParallelGetTo(*plan.src.store, job.src_key, part_size, parallel,
                                   [&](uint64_t offset, const uint8_t* data, size_t n) {
                                     Status st = (*writer)->WriteAt(offset, data, n);
                                     if (!st.ok()) {
                                       std::lock_guard<std::mutex> lock(mu);
                                       if (write_error.ok()) write_error = st;
                                     }
                                     return st;
                                   });
  if (!got.ok()) {
    std::lock_guard<std::mutex> lock(mu);
    return write_error.ok() ? got.status().WithContext(plan.src.UrlOf(job.src_key)) : write_error;
  }
  return (*writer)->Commit();
}

// Copies one object; returns the bytes copied. Errors name the failing side.
// Small objects go whole; large ones stream in parts (to a local file, or as
// ranged GETs feeding a multipart upload), so memory stays near
// parallel x part size whatever the object's size.
Result<uint64_t> CopyOne(const Plan& plan, const Job& job, uint64_t part_size, int parallel) {
  if (job.size > part_size) {
    if (!plan.dst.local_dir.empty()) {
      STRATA_RETURN_IF_ERROR(DownloadToFile(plan, job, part_size, parallel));
      return job.size;
    }
    auto copied = object::ParallelCopy(*plan.src.store, job.src_key, *plan.dst.store, job.dst_key, part_size, parallel);
    if (!copied.ok()) {
      return copied.status().WithContext("copy " + plan.src.UrlOf(job.src_key) + " to " + plan.dst.UrlOf(job.dst_key));
    }
    return copied->size;
  }
  auto got = plan.src.store->Get(job.src_key);
  if (!got.ok()) return got.status().WithContext(plan.src.UrlOf(job.src_key));
  uint64_t size = got->data.size();
  auto put = plan.dst.store->Put(job.dst_key, std::move(got->data));
  if (!put.ok()) return put.status().WithContext(plan.dst.UrlOf(job.dst_key));
  return size;
}

void RunCp(const CpArgs& args) {
  const char* cmd = "cp";
  if (args.parallel < 1 || args.parallel > 1024) {
    Fail(cmd, "--parallel", InvalidArgumentError("must be between 1 and 1024"));
  }
  uint64_t part_size = Check(ParseSize(args.part_size), cmd, "--part-size");
  if (part_size < (64u << 10) || part_size > (5ull << 30)) {
    Fail(cmd, "--part-size", InvalidArgumentError("must be between 64KiB and 5GiB"));
  }
  ObjectUrl src_url = Check(ParseObjectUrl(args.src), cmd, args.src);
  ObjectUrl dst_url = Check(ParseObjectUrl(args.dst), cmd, args.dst);
  Plan plan = args.recursive ? PlanTree(args, src_url, dst_url) : PlanSingle(args, src_url, dst_url);

  std::vector<const Job*> small, large;
  for (const auto& job : plan.jobs) (job.size > part_size ? large : small).push_back(&job);
  std::mutex mu;
  Status first_error;
  std::atomic<bool> failed{false};
  std::optional<Progress> progress;
  progress.emplace("copied", plan.jobs.size(), plan.total_bytes);
  auto run = [&](const Job& job) {
    if (failed.load()) return;
    auto copied = CopyOne(plan, job, part_size, args.parallel);
    if (copied.ok()) {
      progress->Add(1, *copied);
      return;
    }
    std::lock_guard<std::mutex> lock(mu);
    if (!failed.exchange(true)) first_error = copied.status();
  };
  if (!small.empty()) {
    ParallelFor(small.size(), std::min<size_t>(args.parallel, small.size()), [&](size_t i) { run(*small[i]); });
  }
  for (const Job* job : large) run(*job);
  std::string summary = progress->Summary();
  uint64_t done = progress->objects();
  progress.reset();  // clears the progress line before anything else is printed

  if (!first_error.ok()) {
    Fail(cmd, "",
         first_error.WithContext("copied " + std::to_string(done) + " of " + std::to_string(plan.jobs.size()) +
                                 " objects, then"));
  }
  if (!args.quiet) std::cout << summary << "\n";
}

CommandRegistrar registrar("cp", [](CLI::App& root) {
  auto args = std::make_shared<CpArgs>();
  auto* sub = root.add_subcommand("cp", "Copy objects between stores and local files or directories");
  sub->add_option("src", args->src, "Source: s3://bucket/key, file:///path, mem://name/key or a local path")
      ->required();
  sub->add_option("dst", args->dst, "Destination; ending in '/' (or an existing directory) means \"into\"")->required();
  sub->add_flag("-r,--recursive", args->recursive, "Copy every object under SRC (a prefix or directory) into DST");
  sub->add_option("-j,--parallel", args->parallel, "Objects (and ranged parts) in flight at once")
      ->capture_default_str();
  sub->add_option("--part-size", args->part_size, "Objects above this size move in parts of this size")
      ->capture_default_str();
  sub->add_flag("-q,--quiet", args->quiet, "Do not print the summary line");
  sub->footer([] {
    return std::string(
        "A progress bar (objects, bytes, MB/s, ETA) is drawn on stderr when it is a terminal; a summary line\n"
        "goes to stdout at the end. With --recursive the contents of SRC land directly under DST.\n"
        "Examples: strata cp -r ./dataset 's3://bucket/dataset/?endpoint=http://127.0.0.1:7480'\n"
        "          strata cp s3://bucket/big.bin /tmp/ --parallel 32 --part-size 16MiB");
  });
  sub->callback([args] { RunCp(*args); });
});

}  // namespace
}  // namespace strata::cli
