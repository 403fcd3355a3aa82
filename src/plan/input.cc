#include "plan/input.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <type_traits>

#include "base/json_text.h"
#include "base/units.h"
#include "train/workloads.h"

namespace strata::plan {
namespace {

using nlohmann::json;

Status Bad(const std::string& field, const std::string& expected, const json& got) {
  std::string shown = DumpJson(got);  // a flag's text may not be UTF-8
  if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
  return InvalidArgumentError(field + ": expected " + expected + ", got " + shown);
}

// Splits "1.2 M" into 1.2 and "m" (lower case, spaces dropped), for counts. False if no number leads.
bool SplitNumber(const std::string& text, double* number, std::string* unit) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0 || i > 24) return false;
  const std::string digits = text.substr(0, i);
  char* end = nullptr;
  *number = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || !std::isfinite(*number)) return false;
  unit->clear();
  for (size_t k = i; k < text.size(); ++k) {
    if (text[k] != ' ') unit->push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(text[k]))));
  }
  return true;
}

Result<double> NonNegative(double v, const std::string& field, const std::string& expected, const json& got) {
  if (!std::isfinite(v) || v < 0) return Bad(field, expected, got);
  return v;
}

Result<double> Number(const json& v, const std::string& field) {
  if (!v.is_number()) return Bad(field, "a number", v);
  return NonNegative(v.get<double>(), field, "a non-negative number", v);
}

Result<uint64_t> Count(const json& v, const std::string& field) {
  double d = 0;
  if (v.is_number()) {
    d = v.get<double>();
  } else if (v.is_string()) {
    std::string unit;
    if (!SplitNumber(v.get<std::string>(), &d, &unit)) return Bad(field, "a count such as 1281167 or 1.2M", v);
    if (unit == "k") {
      d *= 1e3;
    } else if (unit == "m") {
      d *= 1e6;
    } else if (unit == "g" || unit == "b") {
      d *= 1e9;
    } else if (!unit.empty()) {
      return Bad(field, "a count such as 1281167 or 1.2M", v);
    }
  } else {
    return Bad(field, "a count", v);
  }
  if (!std::isfinite(d) || d < 0 || d > 1e18) return Bad(field, "a non-negative count", v);
  return uint64_t(std::llround(d));
}

Result<bool> Bool(const json& v, const std::string& field) {
  if (!v.is_boolean()) return Bad(field, "true or false", v);
  return v.get<bool>();
}

Result<std::string> String(const json& v, const std::string& field) {
  if (!v.is_string()) return Bad(field, "a string", v);
  return v.get<std::string>();
}

// Refuses keys outside `known` (a typo would otherwise be silently ignored).
Status KnownKeys(const json& section, const std::string& name, const std::set<std::string>& known) {
  if (!section.is_object()) return Bad(name, "an object", section);
  for (const auto& [key, value] : section.items()) {
    if (known.count(key)) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    return InvalidArgumentError((name.empty() ? "" : name + ".") + key + ": unknown field (known: " + list + ")");
  }
  return Status::Ok();
}

const json* Get(const json& doc, const char* section, const char* key) {
  auto s = doc.find(section);
  if (s == doc.end() || !s->is_object()) return nullptr;
  auto k = s->find(key);
  return k == s->end() || k->is_null() ? nullptr : &*k;
}

}  // namespace

// A field's value: a JSON number in the base unit, or a string in the grammar of base/units.h.
template <typename T, typename Parse>
Result<double> UnitField(const json& value, const std::string& field, const std::string& forms, Parse parse) {
  if (value.is_number()) return NonNegative(value.get<double>(), field, forms, value);
  if (!value.is_string()) return Bad(field, forms, value);
  Result<T> r = parse(value.get<std::string>());
  if (!r.ok()) return InvalidArgumentError(field + ": " + r.status().message());
  if constexpr (std::is_same_v<T, Duration>) {
    return Seconds(*r);
  } else {
    return double(*r);
  }
}

Result<double> ParseBytesField(const json& value, const std::string& field) {
  return UnitField<uint64_t>(value, field, SizeForms(), [](const std::string& t) { return ParseSize(t); });
}

Result<double> ParseRateField(const json& value, const std::string& field) {
  return UnitField<double>(value, field, RateForms(), [](const std::string& t) { return ParseRate(t); });
}

Result<double> ParseSecondsField(const json& value, const std::string& field) {
  // A planning horizon (an MTBF, an interval) may be long; the bound only keeps the arithmetic exact.
  const DurationRules rules{.max = kForever};
  return UnitField<Duration>(value, field, DurationForms(rules),
                             [&](const std::string& t) { return ParseDuration(t, rules); });
}

void SetPath(json* into, const std::string& dotted, json value) {
  json* at = into;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!at->is_object()) *at = json::object();
    if (dot == std::string::npos) {
      (*at)[key] = std::move(value);
      return;
    }
    at = &(*at)[key];
    start = dot + 1;
  }
}

void Overlay(json* base, const json& over) {
  if (!base->is_object() || !over.is_object()) {
    *base = over;
    return;
  }
  for (const auto& [key, value] : over.items()) {
    if (value.is_object() && base->contains(key) && (*base)[key].is_object()) {
      Overlay(&(*base)[key], value);
    } else {
      (*base)[key] = value;
    }
  }
}

namespace {

// A section of the document ({} when absent or null), its keys checked.
Result<json> Section(const json& doc, const char* name, const std::set<std::string>& keys) {
  auto it = doc.find(name);
  if (it == doc.end() || it->is_null()) return json::object();
  STRATA_RETURN_IF_ERROR(KnownKeys(*it, name, keys));
  return *it;
}

// `section`.`key` read with `parse` into *out when present; the field is named once.
template <typename T, typename Parse>
Status ReadIf(const json& values, const char* section, const char* key, Parse parse, T* out) {
  if (!values.contains(key)) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(*out, parse(values[key], std::string(section) + "." + key));
  return Status::Ok();
}

Status ReadHistogram(const json& h, PlanInput* in) {
  if (!h.is_array()) return Bad("dataset.histogram", "an array of {\"le\": size, \"count\": n}", h);
  double last = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    const std::string at = "dataset.histogram[" + std::to_string(i) + "]";
    if (!h[i].is_object() || !h[i].contains("le") || !h[i].contains("count"))
      return Bad(at, "{\"le\": size, \"count\": n}", h[i]);
    SizeBucket b;
    STRATA_ASSIGN_OR_RETURN(b.upper, ParseBytesField(h[i]["le"], at + ".le"));
    STRATA_ASSIGN_OR_RETURN(b.count, Count(h[i]["count"], at + ".count"));
    if (b.upper < last) return InvalidArgumentError(at + ".le: buckets must be in increasing order");
    last = b.upper;
    in->histogram.push_back(b);
  }
  return Status::Ok();
}

Status ReadDataset(const json& doc, PlanInput* in) {
  STRATA_ASSIGN_OR_RETURN(json ds, Section(doc, "dataset", {"bytes", "samples", "objects", "histogram"}));
  STRATA_RETURN_IF_ERROR(ReadIf(ds, "dataset", "bytes", ParseBytesField, &in->dataset_bytes));
  STRATA_RETURN_IF_ERROR(ReadIf(ds, "dataset", "samples", Count, &in->samples));
  STRATA_RETURN_IF_ERROR(ReadIf(ds, "dataset", "objects", Count, &in->objects));
  if (ds.contains("histogram")) STRATA_RETURN_IF_ERROR(ReadHistogram(ds["histogram"], in));
  return Status::Ok();
}

// MLPerf Storage's published accelerator: batch / compute time samples/s,
// and its record size when the dataset's is not given.
Status ApplyWorkload(PlanInput* in) {
  auto w = train::FindWorkload(in->workload);
  if (!w.ok()) return InvalidArgumentError("accelerators.workload: " + w.status().message());
  auto compute = train::ComputeTime(*w, in->accelerator_type);
  if (!compute.ok()) return InvalidArgumentError("accelerators.type: " + compute.status().message());
  if (in->samples_per_s_per_accel == 0) in->samples_per_s_per_accel = double(w->batch) / *compute;
  if (in->dataset_bytes == 0 && in->samples > 0) in->dataset_bytes = double(in->samples) * double(w->record_size);
  if (in->samples == 0 && in->dataset_bytes > 0) in->samples = uint64_t(in->dataset_bytes / double(w->record_size));
  return Status::Ok();
}

Status ReadAccelerators(const json& doc, PlanInput* in) {
  const char* s = "accelerators";
  STRATA_ASSIGN_OR_RETURN(
      json ac, Section(doc, s, {"count", "per_node", "type", "workload", "samples_per_s", "price_per_hour"}));
  STRATA_RETURN_IF_ERROR(ReadIf(ac, s, "count", Count, &in->accelerators));
  STRATA_RETURN_IF_ERROR(ReadIf(ac, s, "per_node", Count, &in->accelerators_per_node));
  STRATA_RETURN_IF_ERROR(ReadIf(ac, s, "type", String, &in->accelerator_type));
  STRATA_RETURN_IF_ERROR(ReadIf(ac, s, "workload", String, &in->workload));
  STRATA_RETURN_IF_ERROR(ReadIf(ac, s, "samples_per_s", Number, &in->samples_per_s_per_accel));
  STRATA_RETURN_IF_ERROR(ReadIf(ac, s, "price_per_hour", Number, &in->accelerator_hour_price));
  return in->workload.empty() ? Status::Ok() : ApplyWorkload(in);
}

// A preset (default aws-s3-standard) with the fields given laid over it.
Status ReadStore(const json& doc, PlanInput* in) {
  const char* s = "store";
  STRATA_ASSIGN_OR_RETURN(
      json st, Section(doc, s,
                       {"preset", "first_byte_latency", "connection_bandwidth", "connections_per_node", "get_per_1000",
                        "put_per_1000", "egress_per_gb", "storage_per_gb_month", "in_region"}));
  std::string preset = "aws-s3-standard";
  STRATA_RETURN_IF_ERROR(ReadIf(st, s, "preset", String, &preset));
  auto p = FindStorePreset(preset);
  if (!p.ok()) return InvalidArgumentError("store.preset: " + p.status().message());
  in->store = *p;
  for (const auto& [key, price] : {std::pair{"get_per_1000", &in->store.get_per_1000},
                                   {"put_per_1000", &in->store.put_per_1000},
                                   {"egress_per_gb", &in->store.egress_per_gb},
                                   {"storage_per_gb_month", &in->store.storage_per_gb_month}}) {
    if (!st.contains(key)) continue;
    STRATA_RETURN_IF_ERROR(ReadIf(st, s, key, Number, price));
    in->store.price_date = "custom";
  }
  STRATA_RETURN_IF_ERROR(ReadIf(st, s, "first_byte_latency", ParseSecondsField, &in->store.first_byte_s));
  STRATA_RETURN_IF_ERROR(ReadIf(st, s, "connection_bandwidth", ParseRateField, &in->store.connection_bytes_s));
  STRATA_RETURN_IF_ERROR(ReadIf(st, s, "connections_per_node", Count, &in->connections_per_node));
  return ReadIf(st, s, "in_region", Bool, &in->in_region);
}

Status ReadNodeAndShards(const json& doc, PlanInput* in) {
  STRATA_ASSIGN_OR_RETURN(json nd, Section(doc, "node", {"nvme", "nvme_bandwidth", "network_bandwidth"}));
  STRATA_RETURN_IF_ERROR(ReadIf(nd, "node", "nvme", ParseBytesField, &in->nvme_bytes));
  STRATA_RETURN_IF_ERROR(ReadIf(nd, "node", "nvme_bandwidth", ParseRateField, &in->nvme_bytes_s));
  STRATA_RETURN_IF_ERROR(ReadIf(nd, "node", "network_bandwidth", ParseRateField, &in->network_bytes_s));
  if (in->nvme_bytes > 0 && in->nvme_bytes_s == 0) in->nvme_bytes_s = 2e9;  // a conservative PCIe 4 drive

  STRATA_ASSIGN_OR_RETURN(json sh, Section(doc, "shards", {"size", "request_size"}));
  STRATA_RETURN_IF_ERROR(ReadIf(sh, "shards", "size", ParseBytesField, &in->shard_bytes));
  return ReadIf(sh, "shards", "request_size", ParseBytesField, &in->shard_request_bytes);
}

// The checkpoint bench's figures, per node.
struct MeasuredCheckpoint {
  double sync = 0, async = 0, persist = 0;
};

// Measured per node (bench train, the cache and checkpoint benches).
Result<MeasuredCheckpoint> ReadMeasured(const json& doc, PlanInput* in) {
  const char* s = "measured";
  STRATA_ASSIGN_OR_RETURN(
      json me, Section(doc, s,
                       {"store_bandwidth_per_node", "cache_bandwidth_per_node", "checkpoint_sync_bandwidth_per_node",
                        "checkpoint_async_bandwidth_per_node", "checkpoint_persist_bandwidth_per_node"}));
  STRATA_RETURN_IF_ERROR(
      ReadIf(me, s, "store_bandwidth_per_node", ParseRateField, &in->measured_store_bytes_s_per_node));
  STRATA_RETURN_IF_ERROR(
      ReadIf(me, s, "cache_bandwidth_per_node", ParseRateField, &in->measured_cache_bytes_s_per_node));
  MeasuredCheckpoint m;
  STRATA_RETURN_IF_ERROR(ReadIf(me, s, "checkpoint_sync_bandwidth_per_node", ParseRateField, &m.sync));
  STRATA_RETURN_IF_ERROR(ReadIf(me, s, "checkpoint_async_bandwidth_per_node", ParseRateField, &m.async));
  STRATA_RETURN_IF_ERROR(ReadIf(me, s, "checkpoint_persist_bandwidth_per_node", ParseRateField, &m.persist));
  return m;
}

// The checkpoint section, then the checkpoint bench's figures (`measured`,
// scaled by the nodes, each saving its part in parallel) where none is given.
Status ReadCheckpoint(const json& doc, const MeasuredCheckpoint& measured, PlanInput* in) {
  const char* s = "checkpoint";
  STRATA_ASSIGN_OR_RETURN(
      json ck,
      Section(doc, s, {"bytes", "interval", "bandwidth", "snapshot_bandwidth", "persist_bandwidth", "mtbf", "keep"}));
  STRATA_RETURN_IF_ERROR(ReadIf(ck, s, "bytes", ParseBytesField, &in->checkpoint_bytes));
  STRATA_RETURN_IF_ERROR(ReadIf(ck, s, "interval", ParseSecondsField, &in->checkpoint_interval_s));
  STRATA_RETURN_IF_ERROR(ReadIf(ck, s, "bandwidth", ParseRateField, &in->checkpoint_bytes_s));
  STRATA_RETURN_IF_ERROR(ReadIf(ck, s, "snapshot_bandwidth", ParseRateField, &in->checkpoint_snapshot_bytes_s));
  STRATA_RETURN_IF_ERROR(ReadIf(ck, s, "persist_bandwidth", ParseRateField, &in->checkpoint_persist_bytes_s));
  STRATA_RETURN_IF_ERROR(ReadIf(ck, s, "mtbf", ParseSecondsField, &in->mtbf_s));
  STRATA_RETURN_IF_ERROR(ReadIf(ck, s, "keep", Count, &in->checkpoints_kept));
  const double nodes = std::ceil(double(in->accelerators) / double(std::max<uint64_t>(in->accelerators_per_node, 1)));
  // Its persist went to local disk: a storage bandwidth given explicitly describes the upload better.
  if (!ck.contains("bandwidth") && measured.sync > 0) {
    in->checkpoint_bytes_s = measured.sync * nodes;
    if (!ck.contains("persist_bandwidth") && measured.persist > 0)
      in->checkpoint_persist_bytes_s = measured.persist * nodes;
  }
  if (in->checkpoint_snapshot_bytes_s == 0 && measured.async > 0)
    in->checkpoint_snapshot_bytes_s = measured.async * nodes;
  if (in->checkpoint_snapshot_bytes_s == 0 && in->nvme_bytes_s > 0) {
    // strata's async save stages on local disk, every node in parallel.
    in->checkpoint_snapshot_bytes_s = in->nvme_bytes_s * nodes;
  }
  return Status::Ok();
}

Status ReadSources(const json& doc, PlanInput* in) {
  if (!doc.contains("sources")) return Status::Ok();
  if (!doc["sources"].is_array()) return Bad("sources", "an array of strings", doc["sources"]);
  for (const auto& s : doc["sources"]) {
    STRATA_ASSIGN_OR_RETURN(std::string text, String(s, "sources[]"));
    in->sources.push_back(text);
  }
  return Status::Ok();
}

}  // namespace

Result<PlanInput> InputFromJson(const json& doc) {
  PlanInput in;
  STRATA_RETURN_IF_ERROR(KnownKeys(doc, "",
                                   {"dataset", "accelerators", "epochs", "store", "node", "shards", "checkpoint",
                                    "budget_per_month", "measured", "sources"}));
  STRATA_RETURN_IF_ERROR(ReadDataset(doc, &in));
  STRATA_RETURN_IF_ERROR(ReadAccelerators(doc, &in));
  if (doc.contains("epochs")) {
    STRATA_ASSIGN_OR_RETURN(in.epochs, Number(doc["epochs"], "epochs"));
  }
  STRATA_RETURN_IF_ERROR(ReadStore(doc, &in));
  STRATA_RETURN_IF_ERROR(ReadNodeAndShards(doc, &in));
  STRATA_ASSIGN_OR_RETURN(const MeasuredCheckpoint measured, ReadMeasured(doc, &in));
  STRATA_RETURN_IF_ERROR(ReadCheckpoint(doc, measured, &in));
  if (doc.contains("budget_per_month")) {
    STRATA_ASSIGN_OR_RETURN(in.budget_per_month, Number(doc["budget_per_month"], "budget_per_month"));
  }
  STRATA_RETURN_IF_ERROR(ReadSources(doc, &in));
  return in;
}

namespace {

void SetIfUnset(json* doc, const char* section, const char* key, json value) {
  if (Get(*doc, section, key)) return;
  SetPath(doc, std::string(section) + "." + key, std::move(value));
}

void AddSource(json* doc, const std::string& line) {
  if (!doc->contains("sources") || !(*doc)["sources"].is_array()) (*doc)["sources"] = json::array();
  (*doc)["sources"].push_back(line);
}

// `strata bench train --json`.
Status ApplyTrainBench(const json& bench, const std::string& what, json* doc) {
  const auto bad = [&](const std::string& field, const std::string& why) {
    return InvalidArgumentError(what + ": " + field + ": " + why +
                                " (expected the JSON of `strata bench train --json`)");
  };
  if (!bench.contains("workload") || !bench["workload"].is_object()) return bad("workload", "missing");
  const json& w = bench["workload"];
  for (const char* key : {"batch", "compute_time_s", "record_size"}) {
    if (!w.contains(key) || !w[key].is_number() || !(w[key].get<double>() > 0))
      return bad(std::string("workload.") + key, "missing or not a positive number");
  }
  if (!bench.contains("results") || !bench["results"].is_array()) return bad("results", "missing or not an array");
  // The emulated accelerator's demand: batch / compute time, as in the bench.
  SetIfUnset(doc, "accelerators", "samples_per_s", w["batch"].get<double>() / w["compute_time_s"].get<double>());
  if (w.contains("name") && w["name"].is_string()) SetIfUnset(doc, "accelerators", "workload", w["name"]);
  if (w.contains("accelerator") && w["accelerator"].is_string())
    SetIfUnset(doc, "accelerators", "type", w["accelerator"]);
  // The best delivered rate of one process (one node) per epoch kind. It is
  // a ceiling only if some N fell below the AU threshold (the data path, not
  // the demand, was the limit); otherwise the loader kept up everywhere and
  // the rate caps nothing. Only results valid under the bench's run rules
  // count ("valid": true; files written before the rules have none): a cold
  // epoch served from memory filled before its clock says nothing of the store.
  const double threshold =
      bench.contains("threshold") && bench["threshold"].is_number() ? bench["threshold"].get<double>() : 0.9;
  double rate[2] = {0, 0};
  bool saturated[2] = {false, false}, measured[2] = {false, false};
  size_t ignored = 0;
  for (size_t i = 0; i < bench["results"].size(); ++i) {
    const json& r = bench["results"][i];
    const std::string at = "results[" + std::to_string(i) + "]";
    if (!r.is_object() || !r.contains("epoch") || !r["epoch"].is_number() || !r.contains("mib_per_s") ||
        !r["mib_per_s"].is_number() || !r.contains("au") || !r["au"].is_number())
      return bad(at, "needs numeric epoch, au and mib_per_s");
    if (!r.contains("valid") || !r["valid"].is_boolean() || !r["valid"].get<bool>()) {
      ++ignored;
      continue;
    }
    const int warm = r["epoch"].get<double>() > 1 ? 1 : 0;
    measured[warm] = true;
    rate[warm] = std::max(rate[warm], r["mib_per_s"].get<double>() * double(1 << 20));
    saturated[warm] = saturated[warm] || r["au"].get<double>() < threshold;
  }
  if (saturated[0]) SetIfUnset(doc, "measured", "store_bandwidth_per_node", rate[0]);
  if (saturated[1]) SetIfUnset(doc, "measured", "cache_bandwidth_per_node", rate[1]);
  const auto describe = [&](int k, const char* kind) {
    char part[96];
    if (!measured[k])
      std::snprintf(part, sizeof part, "no valid %s result", kind);
    else
      std::snprintf(part, sizeof part, "%.0f MB/s %s%s", rate[k] / 1e6, kind,
                    saturated[k] ? " (its ceiling)" : " (kept up)");
    return std::string(part);
  };
  std::string line =
      what + ": " +
      (w.contains("name") && w["name"].is_string() ? w["name"].get<std::string>() : std::string("bench")) +
      ", loader " + describe(0, "cold") + ", " + describe(1, "warm") + " per node";
  if (ignored) line += " (" + std::to_string(ignored) + " result(s) not valid under the run rules, ignored)";
  AddSource(doc, line);
  return Status::Ok();
}

// The best mb_per_s (in bytes/s) of the cache bench's runs whose name starts with `prefix`; 0 if none.
double BestRun(const json& runs, const std::string& prefix) {
  double best = 0;
  for (const auto& r : runs) {
    if (r["name"].get<std::string>().rfind(prefix, 0) == 0) best = std::max(best, r["mb_per_s"].get<double>() * 1e6);
  }
  return best;
}

// bench/cache_bench (its --out JSON): reads through CachedStore, cold from an
// emulated cloud, then warm from the RAM tier, the disk tier and the device.
Status ApplyCacheBench(const json& bench, const std::string& what, json* doc) {
  const auto bad = [&](const std::string& field, const std::string& why) {
    return InvalidArgumentError(what + ": " + field + ": " + why + " (expected the JSON of bench/cache_bench)");
  };
  if (!bench.contains("runs") || !bench["runs"].is_array()) return bad("runs", "missing or not an array");
  const json& runs = bench["runs"];
  for (size_t i = 0; i < runs.size(); ++i) {
    const json& r = runs[i];
    if (!r.is_object() || !r.contains("name") || !r["name"].is_string() || !r.contains("mb_per_s") ||
        !r["mb_per_s"].is_number() || !(r["mb_per_s"].get<double>() > 0) || !std::isfinite(r["mb_per_s"].get<double>()))
      return bad("runs[" + std::to_string(i) + "]", "needs a name and a positive mb_per_s");
  }
  // A cache larger than RAM serves from the disk tier, so its O_DIRECT rate
  // is the honest one; older outputs without it fall back to any warm run.
  const char* tier = "warm, disk tier only (O_DIRECT)";
  double warm = BestRun(runs, tier);
  if (warm == 0) {
    tier = "warm";
    warm = BestRun(runs, tier);
  }
  if (warm == 0) return bad("runs", "no warm run");
  SetIfUnset(doc, "measured", "cache_bandwidth_per_node", warm);
  // The raw device under the cache (fio-style O_DIRECT reads): the node's NVMe.
  const double device = BestRun(runs, "O_DIRECT pread");
  if (device > 0) SetIfUnset(doc, "node", "nvme_bandwidth", device);
  // Its cold reads come from EmulateCloud with a configured latency and
  // per-connection bandwidth, not from this cluster's store: shown, not used.
  const double cold = BestRun(runs, "cold");
  const std::string profile =
      bench.contains("profile") && bench["profile"].is_string() ? bench["profile"].get<std::string>() : "?";
  char line[400];
  std::snprintf(line, sizeof line,
                "%s: cache bench, %s %.0f MB/s per node, device %.0f MB/s; cold %.0f MB/s was an emulated store "
                "(%s), not used",
                what.c_str(), tier, warm / 1e6, device / 1e6, cold / 1e6, profile.c_str());
  AddSource(doc, line);
  return Status::Ok();
}

// bench/ckpt_bench (its --out JSON): one node's training stall of a
// synchronous torch.save (+ fsync) and of strata's async save of the same
// state, and strata's background persist.
Status ApplyCkptBench(const json& bench, const std::string& what, json* doc) {
  const auto bad = [&](const std::string& field, const std::string& why) {
    return InvalidArgumentError(what + ": " + field + ": " + why + " (expected the JSON of bench/ckpt_bench)");
  };
  const auto positive = [&](const json& j, const char* key, double* out) -> bool {
    if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return false;
    *out = j[key].get<double>();
    return *out > 0 && std::isfinite(*out);
  };
  double bytes = 0, async_s = 0, persist_s = 0, sync_s = 0, fsync_s = 0;
  for (const auto& [key, out] : {std::pair{"state_bytes", &bytes}, std::pair{"strata_stall_s", &async_s},
                                 std::pair{"strata_persist_s", &persist_s}}) {
    if (!positive(bench, key, out)) return bad(key, "missing or not a positive number");
  }
  // The synchronous save: torch.save then fsync; without torch, a plain
  // write + fsync of the same bytes (what any synchronous save costs at least).
  std::string sync_what = "torch.save + fsync";
  const json* torch = bench.contains("torch") ? &bench["torch"] : nullptr;
  if (torch && positive(*torch, "save_s", &sync_s)) {
    if (torch->contains("fsync_s") && !positive(*torch, "fsync_s", &fsync_s) && (*torch)["fsync_s"] != 0)
      return bad("torch.fsync_s", "not a non-negative number");
    sync_s += fsync_s;
  } else if (positive(bench, "plain_write_fsync_s", &sync_s)) {
    sync_what = "plain write + fsync";
  } else {
    return bad("torch.save_s", "missing, and no plain_write_fsync_s either");
  }
  SetIfUnset(doc, "measured", "checkpoint_sync_bandwidth_per_node", bytes / sync_s);
  SetIfUnset(doc, "measured", "checkpoint_async_bandwidth_per_node", bytes / async_s);
  SetIfUnset(doc, "measured", "checkpoint_persist_bandwidth_per_node", bytes / persist_s);
  char line[400];
  std::snprintf(line, sizeof line,
                "%s: checkpoint bench, %s state: sync save (%s) stalls %s, strata's async save %s, "
                "persist %.0f MB/s per node",
                what.c_str(), FormatBytes(bytes).c_str(), sync_what.c_str(), HumanDuration(sync_s).c_str(),
                HumanDuration(async_s).c_str(), bytes / persist_s / 1e6);
  AddSource(doc, line);
  return Status::Ok();
}

}  // namespace

Status ApplyBench(const json& bench, const std::string& what, json* doc) {
  const char* kinds =
      "expected the JSON of `strata bench train --json` (with workload), bench/cache_bench (runs, summary) or "
      "bench/ckpt_bench (state_bytes)";
  if (!bench.is_object()) return InvalidArgumentError(what + ": (top level): not an object (" + kinds + ")");
  // The benches name themselves ("bench"); older outputs are told by their fields.
  std::string kind;
  if (bench.contains("bench") && bench["bench"].is_string()) {
    kind = bench["bench"].get<std::string>();
  } else if (bench.contains("workload") || bench.contains("results")) {
    kind = "train";
  } else if (bench.contains("runs") && bench.contains("summary")) {
    kind = "cache_bench";
  } else if (bench.contains("state_bytes")) {
    kind = "ckpt_bench";
  }
  if (kind == "train") return ApplyTrainBench(bench, what, doc);
  if (kind == "cache_bench") return ApplyCacheBench(bench, what, doc);
  if (kind == "ckpt_bench") return ApplyCkptBench(bench, what, doc);
  if (!kind.empty()) return InvalidArgumentError(what + ": bench: unknown bench \"" + kind + "\" (" + kinds + ")");
  return InvalidArgumentError(what + ": (top level): not a bench result (" + kinds + ")");
}

Status ApplyProfile(const json& profile, const std::string& what, json* doc) {
  const auto bad = [&](const std::string& field, const std::string& why) {
    return InvalidArgumentError(what + ": " + field + ": " + why + " (expected the JSON of `strata profile --json`)");
  };
  if (!profile.is_object()) return bad("(top level)", "not an object");
  for (const char* key : {"files", "unique_bytes"}) {
    if (!profile.contains(key) || !profile[key].is_number() || profile[key].get<double>() < 0)
      return bad(key, "missing or not a non-negative number");
  }
  const double files = profile["files"].get<double>();
  SetIfUnset(doc, "dataset", "bytes", profile["unique_bytes"]);
  SetIfUnset(doc, "dataset", "samples", profile["files"]);
  SetIfUnset(doc, "dataset", "objects", profile["files"]);
  if (profile.contains("size_histogram") && profile["size_histogram"].is_array())
    SetIfUnset(doc, "dataset", "histogram", profile["size_histogram"]);
  // The profiled job's own pace (files opened per second) over its accelerators.
  if (profile.contains("opens_per_s") && profile["opens_per_s"].is_number() && !Get(*doc, "accelerators", "workload") &&
      !Get(*doc, "accelerators", "samples_per_s")) {
    double count = 1;
    if (const json* c = Get(*doc, "accelerators", "count"); c && c->is_number())
      count = std::max(1.0, c->get<double>());
    SetPath(doc, "accelerators.samples_per_s", profile["opens_per_s"].get<double>() / count);
  }
  char line[400];
  std::snprintf(line, sizeof line, "%s: %.0f files, %s touched", what.c_str(), files,
                FormatBytes(profile["unique_bytes"].get<double>()).c_str());
  AddSource(doc, line);
  return Status::Ok();
}

}  // namespace strata::plan
