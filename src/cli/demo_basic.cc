// Demo section 0: write a small dataset into the emulated cloud bucket and
// read it back, one request at a time (what a naive client gets) and with
// parallel ranged GETs (what strata does), verifying every byte.
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>

#include "base/clock.h"
#include "base/executor.h"
#include "base/hash.h"
#include "base/random.h"
#include "cli/demo.h"
#include "cli/util.h"
#include "object/transfer.h"

namespace strata::cli {
namespace {

constexpr uint64_t kLargeSize = 1 << 20;
constexpr uint64_t kSmallSize = 10 << 10;
constexpr uint64_t kRangeSize = 256 << 10;  // ranged GET part size for 1 MiB objects

struct Sizes {
  int large, small, large_sequential, small_sequential;
  int put_parallel, get_objects_parallel, get_parts_parallel, small_parallel;
};

Sizes SizesFor(bool quick) {
  if (quick) return {16, 400, 4, 20, 16, 16, 4, 64};
  return {64, 2000, 8, 50, 16, 16, 4, 64};
}

std::string KeyName(const char* format, int i) {
  char key[64];
  std::snprintf(key, sizeof(key), format, i);
  return key;
}

Buffer MakeContent(Random& random, uint64_t size) {
  MutableBuffer buffer(size);
  for (uint64_t i = 0; i < size; i += 8) {
    uint64_t word = random.Next();
    std::memcpy(buffer.data() + i, &word, std::min<uint64_t>(8, size - i));
  }
  return std::move(buffer).Freeze();
}

// Runs fn(i) for i < n, `parallel` at a time; returns the first error and the seconds taken.
Result<double> Timed(size_t n, size_t parallel, const std::function<Status(size_t)>& fn) {
  std::mutex mu;
  Status first;
  auto start = RealClock().Now();
  ParallelFor(n, std::max<size_t>(1, std::min(n, parallel)), [&](size_t i) {
    Status st = fn(i);
    if (st.ok()) return;
    std::lock_guard<std::mutex> lock(mu);
    if (first.ok()) first = st;
  });
  if (!first.ok()) return first;
  return Seconds(RealClock().Now() - start);
}

Status Verify(const std::vector<uint64_t>& hashes, size_t i, const Buffer& data, const std::string& key) {
  if (XxHash3(data.data(), data.size()) != hashes[i]) {
    return CorruptionError("read back different bytes than were written for " + key);
  }
  return Status::Ok();
}

void Report(DemoContext& ctx, const char* format, ...) __attribute__((format(printf, 2, 3)));
void Report(DemoContext& ctx, const char* format, ...) {
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof(line), format, args);
  va_end(args);
  ctx.out << "  " << line << "\n";
  ctx.out.flush();
}

Status RunBasic(DemoContext& ctx) {
  Sizes n = SizesFor(ctx.quick);
  Random random(42);
  std::vector<Buffer> large(n.large), small(n.small);
  std::vector<uint64_t> large_hash(n.large), small_hash(n.small);
  ctx.large_keys.clear();
  ctx.small_keys.clear();
  for (int i = 0; i < n.large; ++i) {
    large[i] = MakeContent(random, kLargeSize);
    large_hash[i] = XxHash3(large[i].data(), large[i].size());
    ctx.large_keys.push_back(KeyName("large/obj-%04d.bin", i));
  }
  for (int i = 0; i < n.small; ++i) {
    small[i] = MakeContent(random, kSmallSize);
    small_hash[i] = XxHash3(small[i].data(), small[i].size());
    ctx.small_keys.push_back(KeyName("small/file-%05d.bin", i));
  }
  object::ObjectStore& cloud = *ctx.cloud;
  const double large_bytes = double(n.large) * kLargeSize, small_bytes = double(n.small) * kSmallSize;

  // 1. Write the dataset.
  STRATA_ASSIGN_OR_RETURN(double put_large_s, Timed(n.large, n.put_parallel, [&](size_t i) {
                            return cloud.Put(ctx.large_keys[i], large[i]).status();
                          }));
  Report(ctx, "wrote %d x 1 MiB objects (%s) with %d PUTs in flight: %s, %s", n.large, FormatBytes(large_bytes).c_str(),
         n.put_parallel, FormatDuration(put_large_s).c_str(), FormatRate(large_bytes, put_large_s).c_str());
  STRATA_ASSIGN_OR_RETURN(double put_small_s, Timed(n.small, n.small_parallel, [&](size_t i) {
                            return cloud.Put(ctx.small_keys[i], small[i]).status();
                          }));
  Report(ctx, "wrote %d x 10 KiB files (%s) with %d PUTs in flight: %s, %.0f files/s", n.small,
         FormatBytes(small_bytes).c_str(), n.small_parallel, FormatDuration(put_small_s).c_str(),
         n.small / put_small_s);

  // 2. Large objects: one whole-object GET at a time vs parallel ranged GETs.
  STRATA_ASSIGN_OR_RETURN(double seq_s, Timed(n.large_sequential, 1, [&](size_t i) -> Status {
                            STRATA_ASSIGN_OR_RETURN(object::GetResult got, cloud.Get(ctx.large_keys[i]));
                            return Verify(large_hash, i, got.data, ctx.large_keys[i]);
                          }));
  double seq_bytes = double(n.large_sequential) * kLargeSize;
  double seq_rate = seq_bytes / seq_s;
  Report(ctx, "read %d x 1 MiB one GET at a time (a naive client): %s, %s", n.large_sequential,
         FormatDuration(seq_s).c_str(), FormatRate(seq_bytes, seq_s).c_str());
  int in_flight = n.get_objects_parallel * n.get_parts_parallel;
  STRATA_ASSIGN_OR_RETURN(double par_s, Timed(n.large, n.get_objects_parallel, [&](size_t i) -> Status {
                            STRATA_ASSIGN_OR_RETURN(Buffer data, object::ParallelGet(cloud, ctx.large_keys[i],
                                                                                     kRangeSize, n.get_parts_parallel));
                            return Verify(large_hash, i, data, ctx.large_keys[i]);
                          }));
  double par_rate = large_bytes / par_s;
  Report(ctx, "read %d x 1 MiB with parallel ranged GETs (256 KiB parts, %d in flight): %s, %s, %.1fx faster", n.large,
         in_flight, FormatDuration(par_s).c_str(), FormatRate(large_bytes, par_s).c_str(), par_rate / seq_rate);

  // 3. Small files: one at a time vs many in flight.
  STRATA_ASSIGN_OR_RETURN(double small_seq_s, Timed(n.small_sequential, 1, [&](size_t i) -> Status {
                            STRATA_ASSIGN_OR_RETURN(object::GetResult got, cloud.Get(ctx.small_keys[i]));
                            return Verify(small_hash, i, got.data, ctx.small_keys[i]);
                          }));
  double small_seq_rate = n.small_sequential / small_seq_s;
  STRATA_ASSIGN_OR_RETURN(double small_par_s, Timed(n.small, n.small_parallel, [&](size_t i) -> Status {
                            STRATA_ASSIGN_OR_RETURN(object::GetResult got, cloud.Get(ctx.small_keys[i]));
                            return Verify(small_hash, i, got.data, ctx.small_keys[i]);
                          }));
  double small_par_rate = n.small / small_par_s;
  Report(ctx, "read %d small files one at a time: %.0f files/s; all %d with %d in flight: %.0f files/s, %.1fx faster",
         n.small_sequential, small_seq_rate, n.small, n.small_parallel, small_par_rate,
         small_par_rate / small_seq_rate);
  Report(ctx, "every byte read back matched what was written (xxHash3)");

  ctx.results = {{"large_objects", n.large},
                 {"small_files", n.small},
                 {"put_large_MBps", large_bytes / put_large_s / 1e6},
                 {"put_small_files_per_s", n.small / put_small_s},
                 {"get_sequential_MBps", seq_rate / 1e6},
                 {"get_parallel_ranged_MBps", par_rate / 1e6},
                 {"get_parallel_in_flight", in_flight},
                 {"small_sequential_files_per_s", small_seq_rate},
                 {"small_parallel_files_per_s", small_par_rate}};
  ctx.charts.push_back({"1 MiB objects from an emulated cloud bucket",
                        "MB/s",
                        {"one GET at a time", "parallel ranged GETs"},
                        {{"throughput", {seq_rate / 1e6, par_rate / 1e6}}}});
  ctx.charts.push_back({"10 KiB files from an emulated cloud bucket",
                        "files/s",
                        {"one at a time", std::to_string(n.small_parallel) + " in flight"},
                        {{"files/s", {small_seq_rate, small_par_rate}}}});
  return Status::Ok();
}

DemoSectionRegistrar registrar(0, "A dataset in an emulated cloud bucket", RunBasic);

}  // namespace
}  // namespace strata::cli
