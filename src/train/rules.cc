// The run rules of `strata bench train` (see rules.h for what
// they adapt from MLPerf Storage and why).
#include "train/rules.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "base/units.h"

namespace strata::train {

namespace fs = std::filesystem;

nlohmann::json RunRules::ToJson() const {
  return {{"window", "opens at the epoch's start with empty loader queues; the time to fill them counts"},
          {"min_steps", min_steps},
          {"min_seconds", min_seconds},
          {"memory_factor", memory_factor},
          {"memory_basis", "the loaders' prefetch budgets (or two batches) + batch in use per rank, + the RAM cache"}};
}

std::string RuleCheck::Summary() const {
  if (valid) return "valid";
  std::string s = "not valid: ";
  for (size_t i = 0; i < failures.size(); ++i) s += (i ? "; " : "") + failures[i];
  return s;
}

RuleCheck CheckRules(const RunRules& rules, const RuleInputs& in) {
  RuleCheck c;
  char line[256];
  if (in.smoke) c.failures.push_back("--quick smoke run");
  if (in.cold && double(in.dataset_bytes) < rules.memory_factor * double(in.memory_bytes)) {
    std::snprintf(line, sizeof line, "fits in memory (dataset %s < %g x the loaders' %s)",
                  FormatBytes(double(in.dataset_bytes)).c_str(), rules.memory_factor,
                  FormatBytes(double(in.memory_bytes)).c_str());
    c.failures.push_back(line);
  }
  if (in.steps < rules.min_steps) {
    std::snprintf(line, sizeof line, "too short (%llu steps < %llu)", static_cast<unsigned long long>(in.steps),
                  static_cast<unsigned long long>(rules.min_steps));
    c.failures.push_back(line);
  }
  if (in.seconds < rules.min_seconds) {
    std::snprintf(line, sizeof line, "too short (%.2f s < %g s)", in.seconds, rules.min_seconds);
    c.failures.push_back(line);
  }
  if (in.cold && in.store_counted && in.store_bytes < in.dataset_bytes) {
    std::snprintf(line, sizeof line, "served from memory (%s fetched in the window for %s consumed)",
                  FormatBytes(double(in.store_bytes)).c_str(), FormatBytes(double(in.dataset_bytes)).c_str());
    c.failures.push_back(line);
  }
  c.valid = c.failures.empty();
  return c;
}

uint64_t MinStepsFor(const RunRules& rules, double compute_s) {
  uint64_t steps = rules.min_steps;
  if (compute_s > 0) steps = std::max<uint64_t>(steps, uint64_t(std::ceil(rules.min_seconds / compute_s - 1e-9)));
  return std::max<uint64_t>(steps, 1);
}

uint64_t LoaderMemoryBytes(const loader::StreamingOptions& base, size_t world, uint64_t batch_bytes) {
  const uint64_t ahead = std::max(loader::PrefetchBudgetBytes(base), 2 * batch_bytes);
  return uint64_t(world) * (ahead + batch_bytes) + base.ram_cache_bytes;
}

uint64_t RequiredSamples(const RunRules& rules, size_t world, uint64_t batch, double compute_s, uint64_t record_bytes,
                         uint64_t samples_per_file, uint64_t memory_bytes) {
  const uint64_t by_steps = MinStepsFor(rules, compute_s) * uint64_t(std::max<size_t>(world, 1)) * batch;
  const uint64_t by_memory =
      record_bytes ? uint64_t(std::ceil(rules.memory_factor * double(memory_bytes) / double(record_bytes))) : 0;
  const uint64_t k = std::max<uint64_t>(samples_per_file, 1);
  const uint64_t samples = std::max<uint64_t>({by_steps, by_memory, 1});
  return (samples + k - 1) / k * k;
}

std::string Sizing::Explain(const RunRules& rules, uint64_t batch) const {
  char factor[32];
  std::snprintf(factor, sizeof factor, "%g", rules.memory_factor);
  return "what the run rules need at N=" + std::to_string(largest_n) + ": " + std::to_string(steps) + " steps of " +
         std::to_string(batch) + " per accelerator, and " + factor + " x the loaders' memory of " +
         FormatBytes(double(memory_bytes));
}

Sizing SizeFor(const RunRules& rules, const loader::StreamingOptions& base, const DatasetShape& shape,
               size_t largest_n) {
  Sizing z;
  z.largest_n = largest_n;
  z.memory_bytes = LoaderMemoryBytes(base, largest_n, shape.batch * shape.record_bytes);
  z.steps = MinStepsFor(rules, shape.compute_s);
  z.samples = RequiredSamples(rules, largest_n, shape.batch, shape.compute_s, shape.record_bytes,
                              shape.samples_per_file, z.memory_bytes);
  return z;
}

size_t LargestSizedN(const RunRules& rules, const loader::StreamingOptions& base, const DatasetShape& shape,
                     const std::vector<size_t>& counts, uint64_t samples) {
  size_t best = 0;
  for (size_t n : counts) {
    if (SizeFor(rules, base, shape, n).samples <= samples) best = std::max(best, n);
  }
  return best;
}

namespace {

// The nearest existing directory at or above `path`.
fs::path ExistingParent(fs::path p) {
  std::error_code ec;
  p = fs::absolute(p, ec);
  while (!p.empty() && !fs::exists(p, ec)) {
    if (p == p.parent_path()) break;
    p = p.parent_path();
  }
  return p;
}

}  // namespace

Status CheckDiskSpace(const std::vector<DiskNeed>& needs, const std::string& hint) {
  struct Device {
    fs::path where;
    uint64_t bytes = 0;
    std::string parts;
  };
  std::map<dev_t, Device> devices;
  for (const auto& n : needs) {
    if (n.bytes == 0) continue;
    const fs::path at = ExistingParent(n.path);
    struct stat st {};
    if (::stat(at.c_str(), &st) != 0) continue;  // not a local path (e.g. s3://): nothing to check
    Device& d = devices[st.st_dev];
    if (d.where.empty()) d.where = at;
    d.bytes += n.bytes;
    d.parts += (d.parts.empty() ? "" : " + ") + FormatBytes(double(n.bytes)) + " " + n.what;
  }
  for (const auto& [dev, d] : devices) {
    std::error_code ec;
    const fs::space_info space = fs::space(d.where, ec);
    if (ec) continue;
    if (space.available < d.bytes) {
      return NoSpaceError("needs " + FormatBytes(double(d.bytes)) + " on the filesystem of " + d.where.string() + " (" +
                          d.parts + "), " + FormatBytes(double(space.available)) + " available" +
                          (hint.empty() ? "" : ": " + hint));
    }
  }
  return Status::Ok();
}

}  // namespace strata::train
