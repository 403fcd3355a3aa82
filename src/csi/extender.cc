#include "csi/extender.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "base/json_text.h"

namespace strata::csi {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxBody = 64 << 20;  // a NodeList of thousands of nodes
constexpr size_t kMaxDatasets = 256;
constexpr const char* kAnnotation = "csi.strata.dev/datasets";
constexpr const char* kDriver = "csi.strata.dev";

// Go's encoding/json matches field names case-insensitively; the scheduler sends "Pod", "NodeNames".
const json* FindField(const json& j, std::string_view name) {
  if (!j.is_object()) return nullptr;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k.size() == name.size() &&
        std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) { return tolower(a) == tolower(b); })) {
      return &it.value();
    }
  }
  return nullptr;
}

void AddDataset(std::string name, std::set<std::string>* seen, std::vector<std::string>* out) {
  while (!name.empty() && name.front() == ' ') name.erase(name.begin());
  while (!name.empty() && name.back() == ' ') name.pop_back();
  if (name.empty() || name.size() > 4096 || out->size() >= kMaxDatasets) return;
  if (seen->insert(name).second) out->push_back(std::move(name));
}

std::string NodeName(const json& node) {
  const json* meta = FindField(node, "metadata");
  const json* name = meta ? FindField(*meta, "name") : nullptr;
  return name && name->is_string() ? name->get<std::string>() : std::string();
}

}  // namespace

Result<ExtenderArgs> ParseExtenderArgs(std::string_view body) {
  if (body.size() > kMaxBody) return InvalidArgumentError("extender request over 64 MiB");
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgumentError("extender request is not a JSON object");
  ExtenderArgs a;
  std::set<std::string> seen;
  if (const json* pod = FindField(j, "Pod"); pod && pod->is_object()) {
    const json* meta = FindField(*pod, "metadata");
    const json* ann = meta ? FindField(*meta, "annotations") : nullptr;
    if (ann && ann->is_object()) {
      auto it = ann->find(kAnnotation);
      if (it != ann->end() && it->is_string()) {
        const std::string list = it->get<std::string>();
        size_t start = 0;
        while (start <= list.size()) {
          size_t comma = list.find(',', start);
          AddDataset(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start), &seen,
                     &a.datasets);
          if (comma == std::string::npos) break;
          start = comma + 1;
        }
      }
    }
    const json* spec = FindField(*pod, "spec");
    const json* volumes = spec ? FindField(*spec, "volumes") : nullptr;
    if (volumes && volumes->is_array()) {
      for (const auto& v : *volumes) {
        const json* c = FindField(v, "csi");
        if (!c || !c->is_object()) continue;
        const json* driver = FindField(*c, "driver");
        if (!driver || !driver->is_string() || driver->get<std::string>() != kDriver) continue;
        const json* attrs = FindField(*c, "volumeAttributes");
        if (!attrs || !attrs->is_object()) continue;
        auto ds = attrs->find("dataset");
        auto url = attrs->find("url");
        if (ds != attrs->end() && ds->is_string()) {
          AddDataset(ds->get<std::string>(), &seen, &a.datasets);
        } else if (url != attrs->end() && url->is_string()) {
          const std::string u = url->get<std::string>();
          AddDataset(u.substr(0, u.find('?')), &seen, &a.datasets);
        }
      }
    }
  }
  if (const json* names = FindField(j, "NodeNames"); names && names->is_array()) {
    for (const auto& n : *names) {
      if (n.is_string()) a.node_names.push_back(n.get<std::string>());
    }
  }
  if (const json* nodes = FindField(j, "Nodes"); nodes && nodes->is_object()) {
    a.has_node_list = true;
    a.nodes_json = nodes->dump();
    if (a.node_names.empty()) {
      const json* items = FindField(*nodes, "items");
      if (items && items->is_array()) {
        for (const auto& n : *items) {
          std::string name = NodeName(n);
          if (!name.empty()) a.node_names.push_back(std::move(name));
        }
      }
    }
  }
  return a;
}

Status AddMemberRecord(std::string_view record, ClusterCache* cache) {
  if (record.size() > (1 << 20)) return InvalidArgumentError("member record over 1 MiB");
  json j = json::parse(record, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgumentError("member record is not a JSON object");
  auto node = j.find("node");
  auto datasets = j.find("datasets");
  if (node == j.end() || !node->is_string() || node->get<std::string>().empty()) {
    return InvalidArgumentError("member record without a node");
  }
  if (datasets == j.end() || !datasets->is_object()) return InvalidArgumentError("member record without datasets");
  auto& per_node = (*cache)[node->get<std::string>()];
  for (auto it = datasets->begin(); it != datasets->end(); ++it) {
    if (!it.value().is_number_unsigned()) continue;
    const uint64_t add = it.value().get<uint64_t>();
    uint64_t& sum = per_node[it.key()];
    sum = add > UINT64_MAX - sum ? UINT64_MAX : sum + add;
  }
  return Status::Ok();
}

double CachedFraction(const ClusterCache& cache, const std::vector<std::string>& datasets, const std::string& node) {
  long double here = 0, anywhere = 0;
  for (const auto& [n, per_dataset] : cache) {
    for (const auto& d : datasets) {
      auto it = per_dataset.find(d);
      if (it == per_dataset.end()) continue;
      anywhere += static_cast<long double>(it->second);
      if (n == node) here += static_cast<long double>(it->second);
    }
  }
  if (anywhere <= 0) return 0;
  return static_cast<double>(here / anywhere);
}

std::string FilterResponse(const ExtenderArgs& args, const ClusterCache& cache, double min_fraction) {
  json failed = json::object();
  std::set<std::string> passed;
  // Data cached nowhere (or no strata data at all) is no reason to keep a pod off a node.
  bool cached_somewhere = false;
  for (const auto& [node, per_dataset] : cache) {
    for (const auto& d : args.datasets) {
      auto it = per_dataset.find(d);
      cached_somewhere = cached_somewhere || (it != per_dataset.end() && it->second > 0);
    }
  }
  for (const auto& n : args.node_names) {
    const double f = CachedFraction(cache, args.datasets, n);
    if (!cached_somewhere || min_fraction <= 0 || f >= min_fraction) {
      passed.insert(n);
    } else {
      char reason[160];
      snprintf(reason, sizeof reason,
               "holds %.0f%% of the pod's cached strata data, under the extender's minimum %.0f%%", f * 100,
               min_fraction * 100);
      failed[n] = reason;
    }
  }
  json out = {{"FailedNodes", failed}, {"FailedAndUnresolvableNodes", json::object()}, {"Error", ""}};
  if (args.has_node_list) {
    json nodes = json::parse(args.nodes_json, nullptr, false);
    json kept = json::array();
    if (nodes.is_object() && nodes.contains("items") && nodes["items"].is_array()) {
      for (auto& n : nodes["items"]) {
        if (passed.count(NodeName(n))) kept.push_back(n);
      }
      nodes["items"] = kept;
    }
    out["Nodes"] = nodes;
    out["NodeNames"] = nullptr;
  } else {
    json names = json::array();
    for (const auto& n : args.node_names) {
      if (passed.count(n)) names.push_back(n);
    }
    out["Nodes"] = nullptr;
    out["NodeNames"] = names;
  }
  return DumpJson(out);
}

std::string PrioritizeResponse(const ExtenderArgs& args, const ClusterCache& cache) {
  json out = json::array();
  for (const auto& n : args.node_names) {
    const double f = CachedFraction(cache, args.datasets, n);
    out.push_back({{"Host", n}, {"Score", static_cast<int64_t>(std::lround(10 * f))}});
  }
  return DumpJson(out);
}

std::string FilterError(const std::string& message) {
  return DumpJson(
      json{{"Nodes", nullptr}, {"NodeNames", nullptr}, {"FailedNodes", json::object()}, {"Error", message}});
}

}  // namespace strata::csi
