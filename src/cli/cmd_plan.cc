// strata plan: sizes and prices the storage a training job needs, from flags,
// a JSON file and measurements (`strata bench train --json`, the cache and
// checkpoint benches, `strata profile --json`). The arithmetic is in src/plan/model.h.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "base/json_text.h"
#include "cli/command.h"
#include "cli/demo.h"
#include "plan/input.h"
#include "plan/model.h"
#include "plan/yaml.h"

namespace strata::cli {
namespace {

constexpr const char* kCmd = "plan";

struct PlanArgs {
  std::string config;
  std::vector<std::string> from_bench;
  std::string from_profile;
  std::map<std::string, std::string> values;  // dotted field -> flag text
  std::string png;
  bool in_region = false, json = false, list_presets = false;
};

// A flag's text as the JSON value the file would hold: numbers and booleans
// as such, everything else (sizes with units, names) as a string.
nlohmann::json Scalar(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  // "nan" and "1e999" stay text: as numbers they would be JSON's null in the error message.
  if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(v)) return v;
  return text;
}

std::string ReadFileText(const std::string& path) {
  std::ifstream f(path);
  if (!f) Fail(kCmd, path, NotFoundError("cannot open " + path));
  std::stringstream buf;
  buf << f.rdbuf();
  return buf.str();
}

bool IsYamlPath(const std::string& path) {
  const auto ends = [&](const char* e) {
    const size_t n = std::strlen(e);
    return path.size() > n && path.compare(path.size() - n, n, e) == 0;
  };
  return ends(".yaml") || ends(".yml");
}

nlohmann::json ReadJsonFile(const std::string& path) {
  auto doc = nlohmann::json::parse(ReadFileText(path), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) Fail(kCmd, path, InvalidArgumentError("not valid JSON"));
  return doc;
}

void RunPlan(const PlanArgs& a) {
  if (a.list_presets) {
    for (const auto& p : plan::StorePresets()) {
      std::printf("%-16s %s; list prices of %s: GET $%g/1000, PUT $%g/1000, egress $%g/GB, storage $%g/GB-month\n",
                  p.name.c_str(), p.description.c_str(), p.price_date.c_str(), p.get_per_1000, p.put_per_1000,
                  p.egress_per_gb, p.storage_per_gb_month);
    }
    return;
  }
  nlohmann::json doc = nlohmann::json::object();
  std::optional<plan::YamlDocument> yaml;  // a YAML config: its field lines, for errors
  if (!a.config.empty()) {
    if (IsYamlPath(a.config)) {
      yaml = Check(plan::ParseYaml(ReadFileText(a.config)), kCmd, a.config);
      doc = yaml->doc;
    } else {
      doc = ReadJsonFile(a.config);
    }
    if (!doc.is_object()) Fail(kCmd, a.config, InvalidArgumentError("(top level): expected a mapping of fields"));
  }
  nlohmann::json flags = nlohmann::json::object();
  for (const auto& [field, text] : a.values) plan::SetPath(&flags, field, Scalar(text));
  if (a.in_region) plan::SetPath(&flags, "store.in_region", true);
  plan::Overlay(&doc, flags);
  for (const auto& path : a.from_bench) Check(plan::ApplyBench(ReadJsonFile(path), path, &doc), kCmd, path);
  if (!a.from_profile.empty())
    Check(plan::ApplyProfile(ReadJsonFile(a.from_profile), a.from_profile, &doc), kCmd, a.from_profile);
  const std::string where = a.config.empty() ? std::string("(flags)") : a.config;
  auto parsed = plan::InputFromJson(doc);
  if (!parsed.ok() && yaml) {
    // Name the line of the offending field in the YAML file.
    Fail(kCmd, where, Status(parsed.status().code(), plan::WithLine(*yaml, parsed.status().message())));
  }
  auto input = Check(std::move(parsed), kCmd, where);
  auto report = Check(plan::MakePlan(input), kCmd, where);
  if (!a.png.empty()) {
    const nlohmann::json charts = plan::Charts(report);
    Status st = PlotCharts(charts, a.png);
    if (!st.ok()) std::cerr << "strata: plan: no PNG: " << st.message() << "\n";
  }
  if (a.json) {
    std::cout << DumpJson(plan::ToJson(report), 2) << "\n";
  } else {
    std::cout << plan::FormatReport(report);
  }
}

CommandRegistrar registrar("plan", [](CLI::App& root) {
  auto a = std::make_shared<PlanArgs>();
  auto* sub = root.add_subcommand(
      "plan", "Size and price the storage of a training job: bandwidth, utilisation, connections, cache, cost");
  sub->add_option("-c,--config", a->config,
                  "JSON or YAML (.yaml/.yml) file with the inputs (flags override it; see below)");
  sub->add_option(
      "--from-bench", a->from_bench,
      "JSON of `strata bench train --json`, bench/cache_bench or bench/ckpt_bench: measured rates (repeatable)");
  sub->add_option("--from-profile", a->from_profile, "JSON of `strata profile --json`: the dataset as the job read it");
  // Each flag sets one field of the JSON document, named in errors.
  const std::vector<std::tuple<const char*, const char*, const char*>> fields = {
      {"--dataset-bytes", "dataset.bytes", "Dataset size (1.2TB, 800GiB)"},
      {"--samples", "dataset.samples", "Samples in the dataset"},
      {"--objects", "dataset.objects", "Objects the dataset is stored as now (default: one per sample)"},
      {"--accelerators", "accelerators.count", "Accelerators in the job (default 8)"},
      {"--per-node", "accelerators.per_node", "Accelerators per node (default 8)"},
      {"--accelerator", "accelerators.type", "h100 | a100 (MLPerf Storage compute times)"},
      {"--workload", "accelerators.workload", "unet3d | resnet50 | cosmoflow: MLPerf Storage's per-accelerator rate"},
      {"--samples-per-s", "accelerators.samples_per_s", "Measured samples/s per accelerator (instead of a workload)"},
      {"--price-per-hour", "accelerators.price_per_hour", "USD per accelerator-hour"},
      {"--epochs", "epochs", "Epochs per job (default 1)"},
      {"--store", "store.preset", "aws-s3-standard | gcs-standard | r2 (list prices, dated; default aws)"},
      {"--first-byte", "store.first_byte_latency", "First-byte latency (default 100ms)"},
      {"--connection-bandwidth", "store.connection_bandwidth", "Bandwidth of one connection (default 85MB/s)"},
      {"--connections", "store.connections_per_node", "Requests in flight per node at most (default 64)"},
      {"--get-price", "store.get_per_1000", "USD per 1,000 GETs"},
      {"--put-price", "store.put_per_1000", "USD per 1,000 PUTs"},
      {"--egress-price", "store.egress_per_gb", "USD per GB out of the store's region"},
      {"--storage-price", "store.storage_per_gb_month", "USD per GB-month"},
      {"--nvme", "node.nvme", "NVMe per node for a cache (3.5TiB)"},
      {"--nvme-bandwidth", "node.nvme_bandwidth", "NVMe read bandwidth per node (6GB/s)"},
      {"--network-bandwidth", "node.network_bandwidth", "NIC bandwidth per node (100Gbit/s)"},
      {"--shard-size", "shards.size", "Shard size for the shard options (default 256MiB)"},
      {"--request-size", "shards.request_size", "Ranged GET size reading shards (default 16MiB)"},
      {"--ckpt-bytes", "checkpoint.bytes", "Checkpoint size (model + optimizer state)"},
      {"--ckpt-interval", "checkpoint.interval", "Time between checkpoints (default 1h)"},
      {"--ckpt-bandwidth", "checkpoint.bandwidth", "Write bandwidth to durable storage, whole job"},
      {"--ckpt-snapshot-bandwidth", "checkpoint.snapshot_bandwidth",
       "Staging bandwidth of an async save, whole job (default: NVMe x nodes)"},
      {"--mtbf", "checkpoint.mtbf", "Mean time between failures of the whole job (24h)"},
      {"--ckpt-keep", "checkpoint.keep", "Checkpoints kept in storage (default 3)"},
      {"--budget", "budget_per_month", "USD per month the job may cost"},
  };
  for (const auto& [flag, field, help] : fields) {
    std::string key = field;
    sub->add_option_function<std::string>(
        flag, [a, key](const std::string& v) { a->values[key] = v; }, help);
  }
  sub->add_flag("--in-region", a->in_region, "Compute runs in the store's region: no egress charge");
  sub->add_flag("--json", a->json, "Print the report as JSON");
  sub->add_option("--png", a->png, "Also plot the options here (needs /usr/bin/python3 with matplotlib)");
  sub->add_flag("--list-presets", a->list_presets, "List the store presets with their prices and dates");
  sub->footer(
      "For each way of feeding the accelerators (stream the objects, a local NVMe cache, shards, a cache group)\n"
      "the plan gives the accelerator utilisation, requests in flight (Little's law), the cache for a warm 2nd\n"
      "epoch, the monthly cost (compute, storage, requests, egress) and the cost per useful accelerator-hour,\n"
      "plus checkpoint stalls (sync vs async) and the Young/Daly interval. Example:\n"
      "  strata plan --workload resnet50 --accelerator h100 --accelerators 64 --samples 1281167 --epochs 90 \\\n"
      "      --nvme 3.5TiB --nvme-bandwidth 6GB/s --price-per-hour 2.5 --ckpt-bytes 1GB --ckpt-bandwidth 1GB/s \\\n"
      "      --mtbf 24h\n"
      "The --config JSON or YAML has the same fields (dataset.bytes, store.preset, checkpoint.mtbf, ...): see README.");
  sub->callback([a] { RunPlan(*a); });
});

}  // namespace
}  // namespace strata::cli
