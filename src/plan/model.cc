#include "plan/model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "base/units.h"

namespace strata::plan {

const std::vector<StorePreset>& StorePresets() {
  // List prices read from the providers' public pricing pages; first-byte
  // latency and per-connection bandwidth from AWS's S3 performance guidelines
  // ("roughly 100-200 ms" first byte for small objects; "one concurrent
  // request for each 85-90 MB/s"), used for all three: measure your own with
  // `strata bench train` and override --first-byte / --connection-bandwidth.
  static const std::vector<StorePreset> presets = {
      {"aws-s3-standard", "AWS S3 Standard, us-east-1 (first 50 TB; internet egress, first 10 TB)", "2025-01", 0.0004,
       0.005, 0.09, 0.023, 0.1, 85e6},
      {"gcs-standard", "Google Cloud Storage Standard, us-central1 (class B GET, class A PUT; premium egress 0-1 TB)",
       "2025-01", 0.0004, 0.005, 0.12, 0.020, 0.1, 85e6},
      {"r2", "Cloudflare R2 Standard (class B $0.36/M, class A $4.50/M; no egress fee)", "2025-01", 0.00036, 0.0045,
       0.0, 0.015, 0.1, 85e6},
  };
  return presets;
}

Result<StorePreset> FindStorePreset(const std::string& name) {
  std::string known;
  for (const auto& p : StorePresets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  return InvalidArgumentError("unknown store preset '" + name + "': expected " + known);
}

double ConnectionRate(double request_bytes, double first_byte_s, double connection_bytes_s) {
  if (request_bytes <= 0 || connection_bytes_s <= 0) return 0;
  return request_bytes / (first_byte_s + request_bytes / connection_bytes_s);
}

double ConnectionsInFlight(double bytes_s, double request_bytes, double first_byte_s, double connection_bytes_s) {
  if (bytes_s <= 0 || request_bytes <= 0 || connection_bytes_s <= 0) return 0;
  return bytes_s / request_bytes * (first_byte_s + request_bytes / connection_bytes_s);
}

double RequestCost(double requests, double per_1000) { return requests / 1000.0 * per_1000; }

double StallFraction(double stall_s, double interval_s) {
  if (interval_s <= 0) return stall_s > 0 ? 1.0 : 0.0;
  return std::min(1.0, stall_s / interval_s);
}

double YoungInterval(double checkpoint_s, double mtbf_s) {
  if (checkpoint_s <= 0 || mtbf_s <= 0) return 0;
  return std::sqrt(2 * checkpoint_s * mtbf_s);
}

double DalyInterval(double checkpoint_s, double mtbf_s) {
  if (checkpoint_s <= 0 || mtbf_s <= 0) return 0;
  if (checkpoint_s >= 2 * mtbf_s) return mtbf_s;
  const double x = checkpoint_s / (2 * mtbf_s);
  return std::sqrt(2 * checkpoint_s * mtbf_s) * (1 + std::sqrt(x) / 3 + x / 9) - checkpoint_s;
}

double CheckpointWaste(double checkpoint_s, double interval_s, double mtbf_s) {
  if (interval_s <= 0) return checkpoint_s > 0 ? 1.0 : 0.0;
  double w = checkpoint_s / interval_s;
  if (mtbf_s > 0) w += interval_s / (2 * mtbf_s);
  return std::min(1.0, w);
}

double LocalCacheHitRatio(double cache_bytes, double dataset_bytes, uint64_t nodes, double epoch) {
  if (epoch <= 1 || cache_bytes <= 0 || dataset_bytes <= 0) return 0;
  const double n = double(std::max<uint64_t>(nodes, 1));
  const double seen = 1 - std::pow(1 - 1 / n, epoch - 1);  // n == 1: everything after epoch 1
  return std::min({seen, cache_bytes / dataset_bytes, 1.0});
}

std::string HumanDuration(double seconds) {
  if (!std::isfinite(seconds)) return "forever";
  char out[32];
  if (seconds < 1) {
    std::snprintf(out, sizeof out, "%.0f ms", seconds * 1e3);
  } else if (seconds < 120) {
    std::snprintf(out, sizeof out, "%.1f s", seconds);
  } else if (seconds < 2 * 3600) {
    std::snprintf(out, sizeof out, "%.1f min", seconds / 60);
  } else if (seconds < 2 * 86400) {
    std::snprintf(out, sizeof out, "%.1f h", seconds / 3600);
  } else {
    std::snprintf(out, sizeof out, "%.1f d", seconds / 86400);
  }
  return out;
}

std::string HumanRate(double bytes_s) {
  if (!std::isfinite(bytes_s)) return "unlimited";
  char out[32];
  if (bytes_s >= 1e9) {
    std::snprintf(out, sizeof out, "%.2f GB/s", bytes_s / 1e9);
  } else {
    std::snprintf(out, sizeof out, "%.1f MB/s", bytes_s / 1e6);
  }
  return out;
}

double EffectiveHourPrice(double hour_price, double utilisation) {
  if (utilisation <= 0) return std::numeric_limits<double>::infinity();
  return hour_price / utilisation;
}

namespace {

struct Source {
  double store_bytes_s = 0;  // all nodes
  double local_bytes_s = 0;  // all nodes (0: no cache)
  double request_bytes = 0;
  double requests_per_store_byte = 0;
  // Hit ratio in epoch e (1-based).
  std::function<double(double)> hit;
};

double Inf() { return std::numeric_limits<double>::infinity(); }

OptionResult Evaluate(const PlanReport& r, const std::string& name, const std::string& how, const Source& s,
                      double cache_per_node, double ckpt_waste) {
  const PlanInput& in = r.input;
  OptionResult o;
  o.name = name;
  o.how = how;
  o.request_bytes = s.request_bytes;
  o.store_bytes_s = s.store_bytes_s;
  o.local_bytes_s = s.local_bytes_s;
  o.cache_bytes_per_node = cache_per_node;
  o.connections_needed =
      ConnectionsInFlight(r.needed_bytes_s, s.request_bytes, in.store.first_byte_s, in.store.connection_bytes_s);
  o.connections_per_node = o.connections_needed / r.nodes;
  o.hit_ratio_epoch2 = s.hit(2);
  double compute_s = 0, wall_s = 0, store_bytes = 0;
  const uint64_t epochs = std::max<uint64_t>(1, uint64_t(std::llround(in.epochs)));
  for (uint64_t e = 1; e <= epochs; ++e) {
    const double h = std::clamp(s.hit(double(e)), 0.0, 1.0);
    const double miss = (1 - h) * in.dataset_bytes, hit = h * in.dataset_bytes;
    double t = r.compute_epoch_s;
    t = std::max(t, miss > 0 ? (s.store_bytes_s > 0 ? miss / s.store_bytes_s : Inf()) : 0.0);
    t = std::max(t, hit > 0 ? (s.local_bytes_s > 0 ? hit / s.local_bytes_s : Inf()) : 0.0);
    compute_s += r.compute_epoch_s;
    wall_s += t;
    store_bytes += miss;
  }
  o.utilisation = std::isfinite(wall_s) && wall_s > 0 ? compute_s / wall_s : 0;
  o.useful_fraction = o.utilisation * (1 - ckpt_waste);
  o.job_hours = (1 - ckpt_waste) > 0 ? wall_s / (1 - ckpt_waste) / 3600 : Inf();
  o.store_bytes_per_job = store_bytes;
  o.requests_per_job = store_bytes * s.requests_per_store_byte;
  o.meets_demand = o.utilisation >= 0.9;

  const double jobs_per_month = o.job_hours > 0 && std::isfinite(o.job_hours) ? kHoursPerMonth / o.job_hours : 0;
  o.monthly.compute = double(in.accelerators) * in.accelerator_hour_price * kHoursPerMonth;
  o.monthly.storage =
      (in.dataset_bytes + double(in.checkpoints_kept) * in.checkpoint_bytes) / 1e9 * in.store.storage_per_gb_month;
  o.monthly.requests = RequestCost(o.requests_per_job * jobs_per_month, in.store.get_per_1000);
  if (in.checkpoint_bytes > 0 && in.checkpoint_interval_s > 0) {
    // One PUT per 64 MiB part of each save.
    const double saves = kHoursPerMonth * 3600 / in.checkpoint_interval_s;
    o.monthly.requests +=
        RequestCost(saves * std::ceil(in.checkpoint_bytes / (64.0 * (1 << 20))), in.store.put_per_1000);
  }
  o.monthly.egress = in.in_region ? 0 : store_bytes * jobs_per_month / 1e9 * in.store.egress_per_gb;
  o.effective_hour_price = EffectiveHourPrice(in.accelerator_hour_price, o.utilisation);
  const double useful_hours = double(in.accelerators) * kHoursPerMonth * o.useful_fraction;
  o.all_in_useful_hour_price = useful_hours > 0 ? o.monthly.total() / useful_hours : Inf();
  o.job_cost = std::isfinite(o.job_hours) ? o.monthly.total() * o.job_hours / kHoursPerMonth : Inf();
  o.within_budget = in.budget_per_month < 0 || o.monthly.total() <= in.budget_per_month;
  return o;
}

CheckpointResult PlanCheckpoints(const PlanInput& in) {
  CheckpointResult c;
  if (in.checkpoint_bytes <= 0) return c;
  c.enabled = true;
  c.sync_stall_s = in.checkpoint_bytes / in.checkpoint_bytes_s;
  c.upload_s = in.checkpoint_persist_bytes_s > 0 ? in.checkpoint_bytes / in.checkpoint_persist_bytes_s : c.sync_stall_s;
  if (in.checkpoint_snapshot_bytes_s > 0) {
    c.async_stall_s = in.checkpoint_bytes / in.checkpoint_snapshot_bytes_s;
  } else {
    c.async_stall_s = c.sync_stall_s;
    c.notes.push_back("no snapshot bandwidth (checkpoint.snapshot_bandwidth or node NVMe): async stall taken as sync");
  }
  if (c.upload_s > in.checkpoint_interval_s) {
    // The next save waits for the previous upload to finish.
    c.async_stall_s += c.upload_s - in.checkpoint_interval_s;
    c.notes.push_back("an upload (" + HumanDuration(c.upload_s) + ") outlasts the interval: async saves queue up");
  }
  c.sync_fraction = StallFraction(c.sync_stall_s, in.checkpoint_interval_s);
  c.async_fraction = StallFraction(c.async_stall_s, in.checkpoint_interval_s);
  c.young_sync_s = YoungInterval(c.sync_stall_s, in.mtbf_s);
  c.daly_sync_s = DalyInterval(c.sync_stall_s, in.mtbf_s);
  c.young_async_s = YoungInterval(c.async_stall_s, in.mtbf_s);
  c.daly_async_s = DalyInterval(c.async_stall_s, in.mtbf_s);
  c.waste_sync = CheckpointWaste(c.sync_stall_s, in.checkpoint_interval_s, in.mtbf_s);
  c.waste_async = CheckpointWaste(c.async_stall_s, in.checkpoint_interval_s, in.mtbf_s);
  if (in.mtbf_s > 0) {
    // An async save cannot usefully come more often than its upload.
    const double tau = std::max(c.daly_async_s, c.upload_s);
    c.waste_async_at_daly = CheckpointWaste(c.async_stall_s, tau, in.mtbf_s);
  }
  return c;
}

Status Positive(double v, const char* field, const std::string& what) {
  if (!(v > 0) || !std::isfinite(v))
    return InvalidArgumentError(std::string(field) + ": " + what + " must be positive");
  return Status::Ok();
}

// Without a dataset size, the histogram's: each bucket at the middle of its
// range (log scale would be better for wide buckets).
void EstimateFromHistogram(PlanReport* r) {
  PlanInput& in = r->input;
  if (in.dataset_bytes > 0 || in.histogram.empty()) return;
  double lower = 0;
  uint64_t count = 0;
  for (const auto& b : in.histogram) {
    in.dataset_bytes += double(b.count) * (lower + b.upper) / 2;
    count += b.count;
    lower = b.upper;
  }
  if (in.objects == 0) in.objects = count;
  if (in.samples == 0) in.samples = count;
  r->notes.push_back("dataset bytes estimated from the size histogram (bucket midpoints)");
}

Status Validate(const PlanInput& in) {
  STRATA_RETURN_IF_ERROR(Positive(in.dataset_bytes, "dataset.bytes", "the dataset size"));
  if (in.samples == 0) return InvalidArgumentError("dataset.samples: the sample count must be positive");
  if (in.accelerators == 0) return InvalidArgumentError("accelerators.count: must be at least 1");
  if (in.accelerators_per_node == 0) return InvalidArgumentError("accelerators.per_node: must be at least 1");
  STRATA_RETURN_IF_ERROR(Positive(in.samples_per_s_per_accel, "accelerators.samples_per_s",
                                  "samples/s per accelerator (give a workload or a measured rate)"));
  STRATA_RETURN_IF_ERROR(Positive(in.epochs, "epochs", "the epoch count"));
  if (in.epochs > 1e5) return InvalidArgumentError("epochs: at most 100000");  // one loop turn each
  STRATA_RETURN_IF_ERROR(Positive(in.store.connection_bytes_s, "store.connection_bandwidth", "the bandwidth"));
  if (in.store.first_byte_s < 0) return InvalidArgumentError("store.first_byte_latency: must not be negative");
  if (in.connections_per_node == 0) return InvalidArgumentError("store.connections_per_node: must be at least 1");
  STRATA_RETURN_IF_ERROR(Positive(in.shard_bytes, "shards.size", "the shard size"));
  STRATA_RETURN_IF_ERROR(Positive(in.shard_request_bytes, "shards.request_size", "the request size"));
  if (in.accelerator_hour_price < 0) return InvalidArgumentError("accelerators.price_per_hour: must not be negative");
  if (in.checkpoint_bytes > 0) {
    STRATA_RETURN_IF_ERROR(Positive(in.checkpoint_bytes_s, "checkpoint.bandwidth", "the storage bandwidth"));
    STRATA_RETURN_IF_ERROR(Positive(in.checkpoint_interval_s, "checkpoint.interval", "the interval"));
  }
  return Status::Ok();
}

// The four ways of feeding the accelerators, in the report's order: stream,
// local-cache, shards, cache-group.
void AddOptions(PlanReport* report, double ckpt_waste) {
  const PlanReport& r = *report;
  const PlanInput& in = r.input;
  const uint64_t nodes = uint64_t(r.nodes);
  const double nic = in.network_bytes_s > 0 ? in.network_bytes_s * r.nodes : Inf();
  const double conns = double(in.connections_per_node) * r.nodes;
  const double cache = in.nvme_bytes > 0 && in.nvme_bytes_s > 0 ? in.nvme_bytes : 0;
  const double D = in.dataset_bytes;
  std::vector<OptionResult> options;

  // Streaming the objects as they are: whole objects, large ones in parts.
  Source stream;
  stream.request_bytes = std::min(r.mean_object_bytes, in.shard_request_bytes);
  stream.store_bytes_s =
      std::min(conns * ConnectionRate(stream.request_bytes, in.store.first_byte_s, in.store.connection_bytes_s), nic);
  stream.requests_per_store_byte =
      std::ceil(r.mean_object_bytes / stream.request_bytes) / std::max(r.mean_object_bytes, 1.0);
  stream.hit = [](double) { return 0.0; };
  options.push_back(Evaluate(r, "stream", "read every object from the store every epoch", stream, 0, ckpt_waste));

  Source local = stream;
  local.local_bytes_s = cache > 0 ? in.nvme_bytes_s * r.nodes : 0;
  // strata's block cache measured on this cluster (the cache bench) caps it as well.
  if (in.measured_cache_bytes_s_per_node > 0 && local.local_bytes_s > 0)
    local.local_bytes_s = std::min(local.local_bytes_s, in.measured_cache_bytes_s_per_node * r.nodes);
  local.hit = [cache, D, nodes](double e) { return LocalCacheHitRatio(cache, D, nodes, e); };
  options.push_back(
      Evaluate(r, "local-cache", "the same objects through a block cache on each node's NVMe", local, D, ckpt_waste));

  Source shards;
  shards.request_bytes = std::min(in.shard_bytes, in.shard_request_bytes);
  shards.store_bytes_s =
      std::min(conns * ConnectionRate(shards.request_bytes, in.store.first_byte_s, in.store.connection_bytes_s), nic);
  shards.requests_per_store_byte = 1 / shards.request_bytes;
  shards.local_bytes_s = local.local_bytes_s;
  // strata's loader measured on this cluster: it cannot beat its own figures.
  if (in.measured_store_bytes_s_per_node > 0)
    shards.store_bytes_s = std::min(shards.store_bytes_s, in.measured_store_bytes_s_per_node * r.nodes);
  if (in.measured_cache_bytes_s_per_node > 0 && shards.local_bytes_s > 0)
    shards.local_bytes_s = std::min(shards.local_bytes_s, in.measured_cache_bytes_s_per_node * r.nodes);
  shards.hit = local.hit;
  options.push_back(Evaluate(r, "shards",
                             "pack into " + FormatBytes(in.shard_bytes) + " shards (`strata pack`), ranged GETs of " +
                                 FormatBytes(shards.request_bytes) + ", shard cache on NVMe",
                             shards, D, ckpt_waste));

  Source group = shards;
  // Peers serve (n-1)/n of the hits over their NICs.
  group.local_bytes_s = cache > 0 ? std::min(shards.local_bytes_s, nic) : 0;
  group.hit = [cache, D, nodes](double e) {
    return e <= 1 || cache <= 0 ? 0.0 : std::min(1.0, cache * double(nodes) / D);
  };
  options.push_back(
      Evaluate(r, "cache-group", "shards, every node's NVMe pooled into one cache", group, D / r.nodes, ckpt_waste));
  report->options = std::move(options);
}

// What limits each option: the NVMe, the requests in flight, the budget.
void AddOptionNotes(PlanReport* r) {
  const PlanInput& in = r->input;
  for (auto& o : r->options) {
    if (o.cache_bytes_per_node > 0 && in.nvme_bytes < o.cache_bytes_per_node) {
      o.notes.push_back(in.nvme_bytes > 0 ? "the dataset does not fit: " + FormatBytes(o.cache_bytes_per_node) +
                                                " per node needed, " + FormatBytes(in.nvme_bytes) + " of NVMe"
                                          : "no node NVMe given (node.nvme): nothing is cached");
    }
    if (o.connections_per_node > double(in.connections_per_node)) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "needs %.0f requests in flight per node, %llu allowed", o.connections_per_node,
                    static_cast<unsigned long long>(in.connections_per_node));
      o.notes.push_back(buf);
    }
    if (!o.within_budget) o.notes.push_back("over the budget");
  }
  if (uint64_t(r->nodes) == 1) r->options[3].notes.push_back("one node: a cache group is the local cache");
}

// Meets demand and budget at the lowest all-in price, else the best
// utilisation the budget allows, else the cheapest.
std::string Recommend(const PlanReport& r) {
  const OptionResult* best = nullptr;
  for (const auto& o : r.options) {
    if (!o.meets_demand || !o.within_budget) continue;
    if (!best || o.all_in_useful_hour_price < best->all_in_useful_hour_price * 0.99) best = &o;
  }
  char line[400];
  if (best) {
    std::snprintf(line, sizeof line, "%s: %.0f%% utilisation, $%.2f per useful accelerator-hour all in",
                  best->name.c_str(), best->utilisation * 100, best->all_in_useful_hour_price);
    return line;
  }
  const bool any_budget =
      std::any_of(r.options.begin(), r.options.end(), [](const OptionResult& o) { return o.within_budget; });
  if (any_budget) {
    for (const auto& o : r.options) {
      if (o.within_budget && (!best || o.utilisation > best->utilisation + 1e-9)) best = &o;
    }
    std::snprintf(line, sizeof line, "no option%s keeps 90%% utilisation; best: %s at %.0f%% ($%.0f a month)",
                  r.input.budget_per_month >= 0 ? " within the budget" : "", best->name.c_str(),
                  best->utilisation * 100, best->monthly.total());
    return line;
  }
  for (const auto& o : r.options) {
    if (!best || o.monthly.total() < best->monthly.total()) best = &o;
  }
  std::snprintf(line, sizeof line,
                "no option fits the budget of $%.0f a month; the cheapest is %s at $%.0f a month (%.0f%% "
                "utilisation)",
                r.input.budget_per_month, best->name.c_str(), best->monthly.total(), best->utilisation * 100);
  return line;
}

}  // namespace

Result<PlanReport> MakePlan(const PlanInput& input) {
  PlanReport r;
  r.input = input;
  PlanInput& in = r.input;
  EstimateFromHistogram(&r);
  STRATA_RETURN_IF_ERROR(Validate(in));
  if (in.objects == 0) in.objects = in.samples;

  r.nodes = std::ceil(double(in.accelerators) / double(in.accelerators_per_node));
  r.mean_sample_bytes = in.dataset_bytes / double(in.samples);
  r.mean_object_bytes = in.dataset_bytes / double(in.objects);
  r.per_accel_bytes_s = in.samples_per_s_per_accel * r.mean_sample_bytes;
  r.needed_bytes_s = r.per_accel_bytes_s * double(in.accelerators);
  r.compute_epoch_s = in.dataset_bytes / r.needed_bytes_s;
  r.checkpoint = PlanCheckpoints(in);
  AddOptions(&r, r.checkpoint.enabled ? r.checkpoint.waste_async : 0);
  AddOptionNotes(&r);
  r.recommendation = Recommend(r);
  return r;
}

}  // namespace strata::plan
