// `strata plan`'s inputs: a JSON document (a file, with the command line's
// flags laid over it) into a PlanInput, and measured figures from
// `strata bench train --json`, the cache and checkpoint benches and
// `strata profile --json`. Every error names
// the field ("store.first_byte_latency: ..."). No I/O here: callers read files.
//
// The document (every field optional except what the plan needs):
//   {"dataset": {"bytes": "1.2TB", "samples": 1281167, "objects": 1281167,
//                "histogram": [{"le": "128KiB", "count": 1000}, ...]},
//    "accelerators": {"count": 8, "per_node": 8, "type": "h100", "workload": "resnet50",
//                     "samples_per_s": 1785.7, "price_per_hour": 2.5},
//    "epochs": 10,
//    "store": {"preset": "aws-s3-standard", "first_byte_latency": "100ms",
//              "connection_bandwidth": "85MB/s", "connections_per_node": 64,
//              "get_per_1000": 0.0004, "put_per_1000": 0.005, "egress_per_gb": 0.09,
//              "storage_per_gb_month": 0.023, "in_region": false},
//    "node": {"nvme": "3.5TiB", "nvme_bandwidth": "6GB/s", "network_bandwidth": "100Gbit/s"},
//    "shards": {"size": "256MiB", "request_size": "16MiB"},
//    "checkpoint": {"bytes": "140GB", "interval": "1h", "bandwidth": "2GB/s",
//                   "snapshot_bandwidth": "20GB/s", "persist_bandwidth": "4GB/s", "mtbf": "24h", "keep": 3},
//    "measured": {"store_bandwidth_per_node": "1GB/s", "cache_bandwidth_per_node": "3GB/s",
//                 "checkpoint_sync_bandwidth_per_node": "500MB/s", "checkpoint_async_bandwidth_per_node": "20GB/s",
//                 "checkpoint_persist_bandwidth_per_node": "1.5GB/s"},
//    "budget_per_month": 250000}
// Sizes, rates and durations: a JSON number (bytes, bytes/s, seconds) or a
// string in strata's one grammar (base/units.h): "1.5TB" (kB MB GB TB PB are
// powers of 1000), "800GiB" or "800G" (powers of 1024); "85MB/s",
// "100Gbit/s"; "250ms", "30s", "5min"/"5m", "2h", "3d".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "plan/model.h"

namespace strata::plan {

// Parsers for one field's value; `field` names it in the error.
Result<double> ParseBytesField(const nlohmann::json& value, const std::string& field);
Result<double> ParseRateField(const nlohmann::json& value, const std::string& field);
Result<double> ParseSecondsField(const nlohmann::json& value, const std::string& field);

// The document above into a PlanInput (presets and workloads resolved).
Result<PlanInput> InputFromJson(const nlohmann::json& doc);

// Sets `*into`[path...] = value, creating objects on the way ("store.preset").
void SetPath(nlohmann::json* into, const std::string& dotted, nlohmann::json value);
// Recursively lays `over` on `base` (objects merged, other values replaced).
void Overlay(nlohmann::json* base, const nlohmann::json& over);

// Fills the document from a bench's JSON, told apart by its "bench" field or
// its fields; only fields not already set. `what` names the file in errors.
// - `strata bench train --json`: the workload, accelerator type and
//   per-accelerator rate (batch / compute time), and the data path's measured
//   cold (epoch 1) and warm rates per node where they were the ceiling, from
//   results valid under the bench's run rules only ("valid": true).
// - bench/cache_bench: the block cache's warm disk-tier (O_DIRECT) rate as
//   measured.cache_bandwidth_per_node and the device's as node.nvme_bandwidth
//   (its cold reads were from an emulated store: not used).
// - bench/ckpt_bench: one node's sync save (torch.save + fsync), async save
//   stall and persist as measured.checkpoint_{sync,async,persist}_bandwidth_per_node.
Status ApplyBench(const nlohmann::json& bench, const std::string& what, nlohmann::json* doc);
// Fills the dataset (bytes, files, size histogram) and, if not set, the
// measured sample rate from `strata profile --json` output.
Status ApplyProfile(const nlohmann::json& profile, const std::string& what, nlohmann::json* doc);

}  // namespace strata::plan
