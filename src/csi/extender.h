// Pods go where their data is: a Kubernetes scheduler extender (the scheduler's
// HTTP/JSON extender API, verbs "filter" and "prioritize") that scores each node
// by the fraction of the pod's strata datasets already cached there, from what
// the cache group's members publish in etcd (group::PublishCachedRecord: per
// member, its node and the bytes it caches of each dataset).
//
// A pod's datasets: the annotation csi.strata.dev/datasets (comma-separated
// dataset names, the volume_context "dataset" of its PersistentVolumes, which the
// extender cannot resolve without the API server) plus its inline CSI volumes of
// driver csi.strata.dev (volumeAttributes "dataset", else "url" without its query).
// The fraction on a node is the bytes of those datasets cached there over the
// bytes cached of them anywhere in the group (the group holds each block once).
// The parsers are bounds-checked and fuzzed (fuzz_csi_extender).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::csi {

// node -> dataset -> cached bytes.
using ClusterCache = std::map<std::string, std::map<std::string, uint64_t>>;

struct ExtenderArgs {
  std::vector<std::string> datasets;  // the pod's, deduplicated
  std::vector<std::string> node_names;
  std::string nodes_json;  // "Nodes" (a NodeList) when the scheduler sent objects, else empty
  bool has_node_list = false;
};
Result<ExtenderArgs> ParseExtenderArgs(std::string_view body);

// Adds one member record ({"node": N, "datasets": {NAME: BYTES}}) to `cache`.
Status AddMemberRecord(std::string_view record, ClusterCache* cache);

// Fraction (0..1) of `datasets`' cached bytes that sit on `node`; 0 when none is cached anywhere.
double CachedFraction(const ClusterCache& cache, const std::vector<std::string>& datasets, const std::string& node);

// ExtenderFilterResult: nodes holding less than `min_fraction` of the pod's
// cached data fail (with the fraction as the reason); min_fraction 0 keeps every
// node, and a pod whose datasets are cached nowhere (or that has none) is never filtered.
std::string FilterResponse(const ExtenderArgs& args, const ClusterCache& cache, double min_fraction);
// HostPriorityList: score = round(10 x fraction) per node (the extender API's 0..10).
std::string PrioritizeResponse(const ExtenderArgs& args, const ClusterCache& cache);
// {"Error": message} / [] for a request that could not be parsed.
std::string FilterError(const std::string& message);

}  // namespace strata::csi
