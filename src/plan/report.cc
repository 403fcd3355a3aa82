// `strata plan`'s report: the terminal table and the JSON (model.h).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "base/units.h"
#include "plan/model.h"

namespace strata::plan {
namespace {

// JSON has no infinity: an impossible figure is null.
nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::string Money(double v) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, v >= 100 ? "$%.0f" : "$%.2f", v);
  return buf;
}

std::string Fixed(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string Pad(std::string s, size_t width, bool right = true) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

std::string Rate(double bytes_s) { return HumanRate(bytes_s); }

}  // namespace

nlohmann::json ToJson(const PlanReport& r) {
  const PlanInput& in = r.input;
  nlohmann::json j = {
      {"tool", "strata plan"},
      {"input",
       {{"dataset", {{"bytes", in.dataset_bytes}, {"samples", in.samples}, {"objects", in.objects}}},
        {"accelerators",
         {{"count", in.accelerators},
          {"per_node", in.accelerators_per_node},
          {"type", in.accelerator_type},
          {"workload", in.workload},
          {"samples_per_s", in.samples_per_s_per_accel},
          {"price_per_hour", in.accelerator_hour_price}}},
        {"epochs", in.epochs},
        {"store",
         {{"preset", in.store.name},
          {"price_date", in.store.price_date},
          {"first_byte_latency_s", in.store.first_byte_s},
          {"connection_bandwidth", in.store.connection_bytes_s},
          {"connections_per_node", in.connections_per_node},
          {"get_per_1000", in.store.get_per_1000},
          {"put_per_1000", in.store.put_per_1000},
          {"egress_per_gb", in.store.egress_per_gb},
          {"storage_per_gb_month", in.store.storage_per_gb_month},
          {"in_region", in.in_region}}},
        {"node",
         {{"nvme", in.nvme_bytes}, {"nvme_bandwidth", in.nvme_bytes_s}, {"network_bandwidth", in.network_bytes_s}}},
        {"shards", {{"size", in.shard_bytes}, {"request_size", in.shard_request_bytes}}},
        {"checkpoint",
         {{"bytes", in.checkpoint_bytes},
          {"interval_s", in.checkpoint_interval_s},
          {"bandwidth", in.checkpoint_bytes_s},
          {"snapshot_bandwidth", in.checkpoint_snapshot_bytes_s},
          {"persist_bandwidth", in.checkpoint_persist_bytes_s},
          {"mtbf_s", in.mtbf_s},
          {"keep", in.checkpoints_kept}}},
        {"budget_per_month", in.budget_per_month < 0 ? nlohmann::json(nullptr) : nlohmann::json(in.budget_per_month)},
        {"sources", in.sources}}},
      {"nodes", r.nodes},
      {"mean_sample_bytes", r.mean_sample_bytes},
      {"mean_object_bytes", r.mean_object_bytes},
      {"per_accelerator_bytes_s", r.per_accel_bytes_s},
      {"needed_bytes_s", r.needed_bytes_s},
      {"compute_epoch_s", r.compute_epoch_s},
      {"recommendation", r.recommendation},
      {"notes", r.notes},
      {"options", nlohmann::json::array()}};
  for (const auto& o : r.options) {
    j["options"].push_back({{"name", o.name},
                            {"how", o.how},
                            {"request_bytes", o.request_bytes},
                            {"store_bytes_s", Num(o.store_bytes_s)},
                            {"local_bytes_s", Num(o.local_bytes_s)},
                            {"connections_needed", o.connections_needed},
                            {"connections_per_node", o.connections_per_node},
                            {"cache_bytes_per_node", o.cache_bytes_per_node},
                            {"hit_ratio_epoch2", o.hit_ratio_epoch2},
                            {"utilisation", o.utilisation},
                            {"useful_fraction", o.useful_fraction},
                            {"job_hours", Num(o.job_hours)},
                            {"job_cost", Num(o.job_cost)},
                            {"requests_per_job", o.requests_per_job},
                            {"store_bytes_per_job", o.store_bytes_per_job},
                            {"monthly",
                             {{"compute", o.monthly.compute},
                              {"storage", o.monthly.storage},
                              {"requests", o.monthly.requests},
                              {"egress", o.monthly.egress},
                              {"total", o.monthly.total()}}},
                            {"effective_hour_price", Num(o.effective_hour_price)},
                            {"all_in_useful_hour_price", Num(o.all_in_useful_hour_price)},
                            {"meets_demand", o.meets_demand},
                            {"within_budget", o.within_budget},
                            {"notes", o.notes}});
  }
  const CheckpointResult& c = r.checkpoint;
  j["checkpoint"] = {{"enabled", c.enabled},
                     {"sync_stall_s", c.sync_stall_s},
                     {"async_stall_s", c.async_stall_s},
                     {"upload_s", c.upload_s},
                     {"sync_fraction", c.sync_fraction},
                     {"async_fraction", c.async_fraction},
                     {"young_interval_sync_s", c.young_sync_s},
                     {"daly_interval_sync_s", c.daly_sync_s},
                     {"young_interval_async_s", c.young_async_s},
                     {"daly_interval_async_s", c.daly_async_s},
                     {"waste_sync", c.waste_sync},
                     {"waste_async", c.waste_async},
                     {"waste_async_at_daly", c.waste_async_at_daly},
                     {"notes", c.notes}};
  return j;
}

std::string FormatReport(const PlanReport& r) {
  const PlanInput& in = r.input;
  std::ostringstream s;
  s << "job: " << in.accelerators << " x " << in.accelerator_type;
  if (!in.workload.empty()) s << " (" << in.workload << ")";
  s << " at " << Fixed("%.1f", in.samples_per_s_per_accel) << " samples/s each, " << r.nodes << " node"
    << (r.nodes > 1 ? "s" : "") << ", " << in.epochs << " epoch" << (in.epochs != 1 ? "s" : "") << "\n";
  for (const auto& src : in.sources) s << "  measured: " << src << "\n";
  s << "dataset: " << FormatBytes(in.dataset_bytes) << " in " << in.samples << " samples (" << in.objects
    << " objects of " << FormatBytes(r.mean_object_bytes) << " on average)\n";
  s << "needed bandwidth: " << Rate(r.needed_bytes_s) << " (" << Rate(r.per_accel_bytes_s)
    << " per accelerator); an epoch takes " << HumanDuration(r.compute_epoch_s) << " if data keeps up\n";
  s << "store: " << (in.store.name.empty() ? "custom" : in.store.name);
  if (!in.store.price_date.empty()) s << " (list prices of " << in.store.price_date << ")";
  s << ": first byte " << HumanDuration(in.store.first_byte_s) << ", " << Rate(in.store.connection_bytes_s)
    << " per connection, " << in.connections_per_node << " connections per node"
    << (in.in_region                  ? ", same region (no egress)"
        : in.store.egress_per_gb == 0 ? ", no egress fee"
                                      : ", egress charged (--in-region if compute is in the store's region)")
    << "\n\n";

  s << Pad("option", 12, false) << Pad("util", 6) << Pad("conns/node", 12) << Pad("cache/node", 12)
    << Pad("compute", 10) << Pad("storage", 10) << Pad("requests", 10) << Pad("egress", 10) << Pad("$/useful h", 12)
    << Pad("(compute/util)", 16) << "\n";
  for (const auto& o : r.options) {
    s << Pad(o.name, 12, false) << Pad(Fixed("%.0f%%", o.utilisation * 100), 6)
      << Pad(Fixed("%.0f", std::ceil(o.connections_per_node)), 12)
      << Pad(o.cache_bytes_per_node > 0 ? FormatBytes(o.cache_bytes_per_node) : "-", 12)
      << Pad(Money(o.monthly.compute), 10) << Pad(Money(o.monthly.storage), 10) << Pad(Money(o.monthly.requests), 10)
      << Pad(Money(o.monthly.egress), 10) << Pad(Money(o.all_in_useful_hour_price), 12)
      << Pad(Money(o.effective_hour_price), 16) << "\n";
  }
  s << "(monthly USD with the job run back to back for " << kHoursPerMonth
    << " h, so a faster option runs more jobs and moves more bytes: compare $/useful h; util = accelerator\n"
       " utilisation from data stalls; cache/node = for a warm 2nd epoch)\n";
  for (const auto& o : r.options) {
    s << "  " << o.name << ": " << o.how << "; store " << Rate(o.store_bytes_s) << " in requests of "
      << FormatBytes(o.request_bytes);
    if (o.hit_ratio_epoch2 > 0) s << ", epoch-2 hit ratio " << Fixed("%.0f%%", o.hit_ratio_epoch2 * 100);
    s << ", " << Fixed("%.3g", o.requests_per_job) << " GETs per job; a job takes " << HumanDuration(o.job_hours * 3600)
      << " and costs " << Money(o.job_cost);
    for (const auto& n : o.notes) s << "; " << n;
    s << "\n";
  }
  const CheckpointResult& c = r.checkpoint;
  if (c.enabled) {
    s << "\ncheckpoints: " << FormatBytes(in.checkpoint_bytes) << " every " << HumanDuration(in.checkpoint_interval_s)
      << ": synchronous save stalls " << HumanDuration(c.sync_stall_s) << " (" << Fixed("%.1f%%", c.sync_fraction * 100)
      << "), async save " << HumanDuration(c.async_stall_s) << " (" << Fixed("%.1f%%", c.async_fraction * 100)
      << "), upload " << HumanDuration(c.upload_s) << "\n";
    if (in.mtbf_s > 0) {
      s << "  MTBF " << HumanDuration(in.mtbf_s) << ": optimal interval sync " << HumanDuration(c.daly_sync_s)
        << " (Daly; Young " << HumanDuration(c.young_sync_s) << "), async " << HumanDuration(c.daly_async_s)
        << " (Young " << HumanDuration(c.young_async_s) << "); waste now sync " << Fixed("%.1f%%", c.waste_sync * 100)
        << ", async " << Fixed("%.1f%%", c.waste_async * 100) << ", async at the optimum "
        << Fixed("%.1f%%", c.waste_async_at_daly * 100) << "\n";
    }
    for (const auto& n : c.notes) s << "  note: " << n << "\n";
  }
  for (const auto& n : r.notes) s << "note: " << n << "\n";
  s << "\nrecommendation: " << r.recommendation << "\n";
  return s.str();
}

nlohmann::json Charts(const PlanReport& report) {
  nlohmann::json groups = nlohmann::json::array(), util = groups, all_in = groups, effective = groups;
  nlohmann::json compute = groups, storage = groups, requests = groups, egress = groups;
  const nlohmann::json j = ToJson(report);
  for (const auto& o : j["options"]) {
    groups.push_back(o["name"]);
    util.push_back(o["utilisation"].get<double>() * 100);
    all_in.push_back(o["all_in_useful_hour_price"]);
    effective.push_back(o["effective_hour_price"]);
    compute.push_back(o["monthly"]["compute"]);
    storage.push_back(o["monthly"]["storage"]);
    requests.push_back(o["monthly"]["requests"]);
    egress.push_back(o["monthly"]["egress"]);
  }
  return {
      {"title", "strata plan: " + std::to_string(report.input.accelerators) + " x " + report.input.accelerator_type},
      {"charts",
       {{{"title", "Accelerator utilisation"},
         {"ylabel", "%"},
         {"groups", groups},
         {"series", {{{"label", "utilisation"}, {"values", util}}}}},
        {{"title", "Cost per useful accelerator-hour"},
         {"ylabel", "USD"},
         {"groups", groups},
         {"series", {{{"label", "all in"}, {"values", all_in}}, {{"label", "compute / util"}, {"values", effective}}}}},
        {{"title", "Monthly cost"},
         {"ylabel", "USD"},
         {"groups", groups},
         {"series",
          {{{"label", "compute"}, {"values", compute}},
           {{"label", "storage"}, {"values", storage}},
           {{"label", "requests"}, {"values", requests}},
           {{"label", "egress"}, {"values", egress}}}}}}}};
}

}  // namespace strata::plan
