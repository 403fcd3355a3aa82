// What `strata bench train` and the demo say about a sweep (report.h).
#include "train/report.h"

#include <algorithm>
#include <cstdio>

#include "base/units.h"
#include "train/rules.h"

namespace strata::train {

size_t LargestPassing(const std::vector<EpochResult>& results, uint64_t epoch, double threshold) {
  size_t best = 0;
  for (const auto& r : results) {
    if (r.epoch == epoch && r.rules.valid && r.au >= threshold) best = std::max(best, r.accelerators);
  }
  return best;
}

std::string FormatResultLine(const EpochResult& r) {
  char line[512];
  std::snprintf(line, sizeof(line),
                "N=%3zu epoch %llu (%s): AU %5.1f%%  %10.1f samples/s  %8.1f MiB/s  (%llu steps, %.2f s from empty "
                "queues, first batch after %.2f s)\n      store %s fetched in the window / %s consumed; %s",
                r.accelerators, static_cast<unsigned long long>(r.epoch), r.cold ? "cold" : "warm", 100 * r.au,
                r.samples_per_s, r.mib_per_s, static_cast<unsigned long long>(r.steps), r.measured_s, r.first_batch_s,
                r.store_counted ? FormatBytes(double(r.store_bytes)).c_str() : "(not counted)",
                FormatBytes(double(r.bytes)).c_str(), r.rules.Summary().c_str());
  return line;
}

std::string LargestPassingLine(const std::vector<EpochResult>& results, uint64_t epochs, double threshold,
                               bool every_epoch_cold, nlohmann::json* best) {
  std::string line = "largest N with AU >= " + std::to_string(int(threshold * 100 + 0.5)) + "% and a valid result:";
  for (uint64_t e = 1; e <= epochs; ++e) {
    const size_t n = LargestPassing(results, e, threshold);
    (*best)[std::to_string(e)] = n;
    line += (e > 1 ? "," : "") + std::string(" epoch ") + std::to_string(e) +
            (e == 1 || every_epoch_cold ? " (cold): " : " (warm): ") + std::to_string(n);
  }
  return line;
}

std::string MemoryLine(const std::vector<EpochResult>& results, const loader::StreamingOptions& base,
                       uint64_t batch_bytes, uint64_t peak_rss_bytes, uint64_t* budget_out) {
  size_t most_ranks = 1;
  for (const auto& r : results) most_ranks = std::max<size_t>(most_ranks, r.accelerators);
  const uint64_t prefetch = loader::PrefetchBudgetBytes(base);
  const uint64_t budget = LoaderMemoryBytes(base, most_ranks, batch_bytes);
  const uint64_t peak = peak_rss_bytes;
  *budget_out = budget;
  const std::string parts = " (" + std::to_string(most_ranks) + " x (prefetch " + FormatBytes(double(prefetch)) +
                            " or two batches, + the batch in use) + RAM cache " +
                            FormatBytes(double(base.ram_cache_bytes)) + ")";
  return "peak RSS " + FormatBytes(double(peak)) +
         (peak <= budget ? ", within the loaders' budgets of " + FormatBytes(double(budget)) + parts
                         : ", the loaders' budgets of " + FormatBytes(double(budget)) + parts + " + " +
                               FormatBytes(double(peak - budget)) + " fixed overhead");
}

std::string BucketCeiling::Line() const {
  return std::to_string(connections) + " connections x " + FormatBytes(per_connection_bytes_s) + "/s (requests of " +
         FormatBytes(double(request_bytes)) + ") = " + FormatBytes(bytes_s) + "/s";
}

std::optional<BucketCeiling> EmulatedBucketCeiling(const object::CloudProfile& profile,
                                                   const loader::StreamingOptions& base, uint64_t shard_bytes) {
  const uint64_t conc = std::max<size_t>(base.fetch_concurrency, 1);
  const uint64_t part = std::min<uint64_t>(
      shard_bytes, std::clamp<uint64_t>((shard_bytes + conc - 1) / conc, base.min_part_bytes, 16ull << 20));
  if (profile.bytes_per_second_per_connection <= 0 || part == 0) return std::nullopt;
  BucketCeiling c;
  c.connections = base.max_connections;
  c.request_bytes = part;
  c.per_connection_bytes_s =
      double(part) / (Seconds(profile.first_byte) + double(part) / profile.bytes_per_second_per_connection);
  c.bytes_s = c.per_connection_bytes_s * double(base.max_connections);
  return c;
}

nlohmann::json WorkloadJson(const Workload& w, std::string_view accelerator, double compute_s, double threshold) {
  return {{"name", w.name},
          {"accelerator", std::string(accelerator)},
          {"format", std::string(dataset::FormatName(w.format))},
          {"record_size", w.record_size},
          {"samples_per_file", w.samples_per_file},
          {"batch", w.batch},
          {"compute_time_s", compute_s},
          {"threshold", threshold},
          {"samples", w.samples},
          {"per_accelerator_demand_mib_s",
           compute_s > 0 ? double(w.batch) * double(w.record_size) / compute_s / double(1 << 20) : 0}};
}

}  // namespace strata::train
