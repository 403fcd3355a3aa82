// Unit tests for `strata plan`: the formulas against hand-worked cases and
// public write-ups of the same arithmetic, the plan's edge cases, and input
// files that must be refused with the bad field named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "plan/input.h"
#include "plan/model.h"

namespace strata::plan {
namespace {

using nlohmann::json;

// Young, "A first order approximation to the optimum checkpoint interval",
// CACM 17(9), 1974: tau = sqrt(2 delta M). Daly, "A higher order estimate of
// the optimum checkpoint interval for restart dumps", FGCS 22(3), 2006,
// eq. 37: tau = sqrt(2 delta M)[1 + 1/3 sqrt(delta/2M) + 1/9 (delta/2M)] - delta
// for delta < 2M, tau = M otherwise. Hand-worked: delta = 5 min, M = 24 h =
// 1440 min: Young = sqrt(2 x 5 x 1440) = 120 min; delta/2M = 1/576, so Daly
// = 120 x (1 + 1/72 + 1/5184) - 5 = 116.69 min.
TEST(PlanFormulaTest, YoungAndDalyIntervals) {
  EXPECT_NEAR(YoungInterval(300, 86400), 7200, 1e-9);
  EXPECT_NEAR(DalyInterval(300, 86400) / 60, 120 * (1 + 1.0 / 72 + 1.0 / 5184) - 5, 1e-9);
  EXPECT_NEAR(DalyInterval(300, 86400) / 60, 116.69, 0.01);
  // A checkpoint as long as two MTBFs: checkpoint every MTBF (Daly's rule).
  EXPECT_EQ(DalyInterval(200, 100), 100);
  EXPECT_EQ(YoungInterval(0, 100), 0);  // free checkpoints: no optimum to give
  EXPECT_EQ(DalyInterval(300, 0), 0);   // no failures
  // At Young's interval the first-order waste is sqrt(2 delta / M): 2 x 5/120.
  EXPECT_NEAR(CheckpointWaste(300, 7200, 86400), 300.0 / 7200 + 7200.0 / (2 * 86400), 1e-12);
  EXPECT_NEAR(CheckpointWaste(300, 7200, 86400), std::sqrt(2 * 300.0 / 86400), 1e-12);
}

// The issue's example: a checkpoint that stalls 8 GPUs for 3 minutes every
// hour wastes 3/60 = 5% of the run, 0.4 GPU-hours every hour.
TEST(PlanFormulaTest, ThreeMinuteStallEveryHourIsFivePercent) {
  EXPECT_NEAR(StallFraction(180, 3600), 0.05, 1e-12);
  EXPECT_NEAR(8 * StallFraction(180, 3600), 0.4, 1e-12);
  EXPECT_EQ(StallFraction(10, 0), 1.0);

  // The same through a plan: 180 GB written at 1 GB/s (synchronous: 180 s).
  PlanInput in;
  in.dataset_bytes = 1e12;
  in.samples = 1000000;
  in.accelerators = 8;
  in.samples_per_s_per_accel = 100;
  in.store = *FindStorePreset("aws-s3-standard");
  in.checkpoint_bytes = 180e9;
  in.checkpoint_bytes_s = 1e9;
  in.checkpoint_snapshot_bytes_s = 18e9;  // staging at 18 GB/s: 10 s
  in.checkpoint_interval_s = 3600;
  auto r = MakePlan(in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->checkpoint.sync_stall_s, 180, 1e-9);
  EXPECT_NEAR(r->checkpoint.sync_fraction, 0.05, 1e-12);
  EXPECT_NEAR(r->checkpoint.async_stall_s, 10, 1e-9);
  EXPECT_NEAR(r->checkpoint.async_fraction, 10.0 / 3600, 1e-12);
  EXPECT_EQ(r->checkpoint.young_sync_s, 0);  // no MTBF given
}

// AWS S3 pricing (us-east-1, S3 Standard): GET $0.0004 per 1,000 requests,
// storage $0.023 per GB-month. A billion 5 KB objects read once cost $400 in
// GETs; storing them (5 TB) costs $115 a month: one epoch's requests cost
// more than 3 months of storage, as the issue says.
TEST(PlanFormulaTest, BillionSmallObjectsCostMoreInGetsThanStorage) {
  const StorePreset s3 = *FindStorePreset("aws-s3-standard");
  EXPECT_EQ(s3.get_per_1000, 0.0004);
  EXPECT_EQ(s3.storage_per_gb_month, 0.023);
  EXPECT_FALSE(s3.price_date.empty());
  EXPECT_NEAR(RequestCost(1e9, s3.get_per_1000), 400, 1e-9);
  EXPECT_NEAR(1e9 * 5e3 / 1e9 * s3.storage_per_gb_month, 115, 1e-9);
  // R2 charges no egress; every preset carries its date.
  EXPECT_EQ(FindStorePreset("r2")->egress_per_gb, 0);
  for (const auto& p : StorePresets()) EXPECT_FALSE(p.price_date.empty()) << p.name;
  EXPECT_FALSE(FindStorePreset("azure").ok());
}

// Little's law (L = lambda W): 1 GB/s in 100 KB objects is 10,000 requests/s;
// each takes 100 ms to the first byte plus 100 KB / 85 MB/s = 1.18 ms, so
// 10,000 x 0.10118 = 1011.8 requests in flight. AWS's S3 performance guide:
// "make one concurrent request for each 85-90 MB/s": large requests with no
// latency need 10 GB/s / 85 MB/s = 117.6 connections.
TEST(PlanFormulaTest, LittlesLawConnections) {
  EXPECT_NEAR(ConnectionsInFlight(1e9, 1e5, 0.1, 85e6), 1e4 * (0.1 + 1e5 / 85e6), 1e-6);
  EXPECT_NEAR(ConnectionsInFlight(1e9, 1e5, 0.1, 85e6), 1011.8, 0.05);
  EXPECT_NEAR(ConnectionsInFlight(10e9, 16e6, 0, 85e6), 117.65, 0.01);
  // One connection with 16 MB requests and 100 ms first byte: 16e6 / (0.1 + 0.188) s.
  EXPECT_NEAR(ConnectionRate(16e6, 0.1, 85e6), 16e6 / (0.1 + 16e6 / 85e6), 1e-6);
  EXPECT_EQ(ConnectionsInFlight(0, 1e5, 0.1, 85e6), 0);
}

TEST(PlanFormulaTest, EffectivePriceAndCacheHits) {
  // $2 per accelerator-hour at 80% utilisation: $2.50 per useful hour.
  EXPECT_NEAR(EffectiveHourPrice(2, 0.8), 2.5, 1e-12);
  EXPECT_TRUE(std::isinf(EffectiveHourPrice(2, 0)));
  // One node sees everything in epoch 1; two nodes reshuffled see half, then 3/4.
  EXPECT_EQ(LocalCacheHitRatio(1e12, 1e11, 1, 1), 0);
  EXPECT_EQ(LocalCacheHitRatio(1e12, 1e11, 1, 2), 1);
  EXPECT_NEAR(LocalCacheHitRatio(1e12, 1e11, 2, 2), 0.5, 1e-12);
  EXPECT_NEAR(LocalCacheHitRatio(1e12, 1e11, 2, 3), 0.75, 1e-12);
  EXPECT_NEAR(LocalCacheHitRatio(1e10, 1e11, 1, 5), 0.1, 1e-12);  // a tenth fits
}

// Hand-worked: one accelerator wanting 100 samples/s of 1 MB (100 MB/s) from
// a store giving 4 connections x 10 MB/s (no first-byte latency) = 40 MB/s.
// Streaming: every epoch takes 2.5 x the compute time, utilisation 40%. With
// an NVMe cache holding everything, epoch 2 runs at full speed: 2 epochs of
// compute in 2.5 + 1 epoch times = 57.1%.
PlanInput HandWorked() {
  PlanInput in;
  in.dataset_bytes = 1e9;
  in.samples = 1000;
  in.accelerators = 1;
  in.accelerators_per_node = 1;
  in.samples_per_s_per_accel = 100;
  in.epochs = 2;
  in.accelerator_hour_price = 2;
  in.store = *FindStorePreset("aws-s3-standard");
  in.store.first_byte_s = 0;
  in.store.connection_bytes_s = 10e6;
  in.connections_per_node = 4;
  in.nvme_bytes = 2e9;
  in.nvme_bytes_s = 1e9;
  return in;
}

const OptionResult& Option(const PlanReport& r, const std::string& name) {
  for (const auto& o : r.options) {
    if (o.name == name) return o;
  }
  static OptionResult none;
  ADD_FAILURE() << "no option " << name;
  return none;
}

TEST(PlanModelTest, HandWorkedUtilisation) {
  auto r = MakePlan(HandWorked());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->needed_bytes_s, 100e6, 1e-6);
  EXPECT_NEAR(r->compute_epoch_s, 10, 1e-9);
  EXPECT_NEAR(Option(*r, "stream").utilisation, 0.4, 1e-9);
  EXPECT_NEAR(Option(*r, "local-cache").utilisation, 2 / 3.5, 1e-9);
  EXPECT_EQ(Option(*r, "local-cache").hit_ratio_epoch2, 1);
  EXPECT_NEAR(Option(*r, "local-cache").cache_bytes_per_node, 1e9, 1e-6);
  // Streaming: 2 epochs x 1000 whole-object GETs; the cache: the first only.
  EXPECT_NEAR(Option(*r, "stream").requests_per_job, 2000, 1e-6);
  EXPECT_NEAR(Option(*r, "local-cache").requests_per_job, 1000, 1e-6);
  // Little's law at 100 MB/s, 1 MB requests at 10 MB/s each: 10 in flight (4 allowed).
  EXPECT_NEAR(Option(*r, "stream").connections_needed, 10, 1e-9);
  EXPECT_FALSE(Option(*r, "stream").meets_demand);
  // Compute for a month: 1 accelerator x $2 x 730 h; effective $2 / 0.4 = $5.
  EXPECT_NEAR(Option(*r, "stream").monthly.compute, 1460, 1e-9);
  EXPECT_NEAR(Option(*r, "stream").effective_hour_price, 5, 1e-9);
  // Streaming's job: 2 epochs of 25 s = 50 s; 730 h / 50 s jobs a month,
  // each 2 GB out of the region at $0.09 and 2000 GETs at $0.0004 / 1000.
  const double jobs = 730 * 3600 / 50.0;
  EXPECT_NEAR(Option(*r, "stream").job_hours, 50.0 / 3600, 1e-12);
  EXPECT_NEAR(Option(*r, "stream").monthly.egress, jobs * 2 * 0.09, 1e-6);
  EXPECT_NEAR(Option(*r, "stream").monthly.requests, jobs * 2000 * 0.0004 / 1000, 1e-6);
  EXPECT_NEAR(Option(*r, "stream").monthly.storage, 0.023, 1e-12);  // 1 GB
  // Shards read in 16 MiB requests (capped at the shard size: 256 MiB).
  EXPECT_NEAR(Option(*r, "shards").request_bytes, 16.0 * (1 << 20), 1e-6);

  PlanInput same_region = HandWorked();
  same_region.in_region = true;
  EXPECT_EQ(Option(*MakePlan(same_region), "stream").monthly.egress, 0);
}

TEST(PlanModelTest, ZeroBudgetLeavesNoOptionWithinIt) {
  PlanInput in = HandWorked();
  in.budget_per_month = 0;
  auto r = MakePlan(in);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const auto& o : r->options) EXPECT_FALSE(o.within_budget) << o.name;
  EXPECT_NE(r->recommendation.find("no option fits the budget of $0 a month"), std::string::npos) << r->recommendation;
  // A budget only the cheapest option fits: the recommendation is the best within it.
  double lowest = 1e300;
  std::string cheapest_name;
  for (const auto& o : r->options) {
    if (o.monthly.total() < lowest) lowest = o.monthly.total(), cheapest_name = o.name;
  }
  in.budget_per_month = lowest + 0.01;
  r = MakePlan(in);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Option(*r, cheapest_name).within_budget);
  EXPECT_EQ(r->recommendation.rfind("no option within the budget keeps 90% utilisation; best: " + cheapest_name, 0), 0u)
      << r->recommendation;
  // Free accelerators and prices: zero cost fits a zero budget.
  in.budget_per_month = 0;
  in.accelerator_hour_price = 0;
  in.store.get_per_1000 = in.store.put_per_1000 = in.store.egress_per_gb = in.store.storage_per_gb_month = 0;
  r = MakePlan(in);
  ASSERT_TRUE(r.ok());
  for (const auto& o : r->options) EXPECT_TRUE(o.within_budget) << o.name;
}

TEST(PlanModelTest, DatasetLargerThanEveryCache) {
  PlanInput in = HandWorked();
  in.dataset_bytes = 100e12;  // 100 TB over 4 nodes of 1 TB NVMe
  in.samples = 100000000;
  in.accelerators = 32;
  in.accelerators_per_node = 8;
  in.nvme_bytes = 1e12;
  in.epochs = 3;
  auto r = MakePlan(in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->nodes, 4);
  EXPECT_NEAR(Option(*r, "local-cache").hit_ratio_epoch2, 0.01, 1e-12);
  EXPECT_NEAR(Option(*r, "cache-group").hit_ratio_epoch2, 0.04, 1e-12);
  EXPECT_NEAR(Option(*r, "cache-group").cache_bytes_per_node, 25e12, 1e-3);
  for (const auto& o : r->options) {
    EXPECT_TRUE(std::isfinite(o.utilisation)) << o.name;
    EXPECT_GT(o.utilisation, 0) << o.name;
  }
  bool noted = false;
  for (const auto& n : Option(*r, "cache-group").notes) noted |= n.find("does not fit") != std::string::npos;
  EXPECT_TRUE(noted);
  // No NVMe at all: the cache options read the store every epoch, like streaming.
  in.nvme_bytes = 0;
  r = MakePlan(in);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(Option(*r, "local-cache").utilisation, Option(*r, "stream").utilisation, 1e-12);
}

// MLPerf Storage (mlcommons/storage resnet50_h100.yaml): batch 400, 0.224 s
// compute, 114,660-byte records: 1785.7 samples/s, 204.75 MB/s per H100.
TEST(PlanInputTest, WorkloadGivesPerAcceleratorRate) {
  auto in = InputFromJson(json::parse(R"({"dataset": {"samples": 1281167},
      "accelerators": {"count": 8, "workload": "resnet50", "type": "h100"}})"));
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_NEAR(in->samples_per_s_per_accel, 400 / 0.224, 1e-9);
  EXPECT_NEAR(in->dataset_bytes, 1281167.0 * 114660, 1);
  auto r = MakePlan(*in);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->per_accel_bytes_s, 204.75e6, 1e3);
  EXPECT_NEAR(r->needed_bytes_s, 8 * 204.75e6, 1e4);
  auto a100 = InputFromJson(json::parse(R"({"accelerators": {"workload": "unet3d", "type": "a100"}})"));
  ASSERT_TRUE(a100.ok());
  EXPECT_NEAR(a100->samples_per_s_per_accel, 7 / 0.636, 1e-9);
}

TEST(PlanInputTest, UnitsParse) {
  EXPECT_EQ(*ParseRateField("100Gbit/s", "x"), 12.5e9);
  EXPECT_EQ(*ParseRateField("100Gbps", "x"), 12.5e9);
  EXPECT_EQ(*ParseRateField("2GiB/s", "x"), 2.0 * (1 << 30));
  EXPECT_EQ(*ParseRateField("85 MB/s", "x"), 85e6);
  EXPECT_EQ(*ParseBytesField("1.5TB", "x"), 1.5e12);
  EXPECT_EQ(*ParseBytesField("256MiB", "x"), 256.0 * (1 << 20));
  EXPECT_EQ(*ParseBytesField(4096, "x"), 4096);
  EXPECT_EQ(*ParseSecondsField("5min", "x"), 300);
  EXPECT_EQ(*ParseSecondsField("250ms", "x"), 0.25);
  EXPECT_EQ(*ParseSecondsField("3d", "x"), 259200);
  EXPECT_FALSE(ParseBytesField("1.5 parsecs", "x").ok());
  EXPECT_FALSE(ParseBytesField(-1, "x").ok());
  EXPECT_FALSE(ParseRateField("85MB", "x").ok());  // a size, not a rate
}

// Each bad document is refused with a message starting with the field's path.
TEST(PlanInputTest, BadFilesNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"store": {"first_byte_latency": "fast"}})", "store.first_byte_latency: expected a duration"},
      {R"({"store": {"preset": "azure"}})", "store.preset: unknown store preset 'azure'"},
      {R"({"dataset": {"byte": 1}})", "dataset.byte: unknown field"},
      {R"({"dataset": {"bytes": [1]}})", "dataset.bytes: expected a size"},
      {R"({"dataset": {"histogram": [{"le": 10, "count": 1}, {"le": 20, "count": "many"}]}})",
       "dataset.histogram[1].count: expected a count"},
      {R"({"dataset": {"histogram": [{"le": 20, "count": 1}, {"le": 10, "count": 1}]}})",
       "dataset.histogram[1].le: buckets must be in increasing order"},
      {R"({"accelerators": {"workload": "bert"}})", "accelerators.workload: unknown workload 'bert'"},
      {R"({"accelerators": {"workload": "resnet50", "type": "tpu"}})", "accelerators.type: unknown accelerator"},
      {R"({"accelerators": {"count": -3}})", "accelerators.count: expected a non-negative count"},
      {R"({"checkpoint": {"bandwidth": "fast"}})", "checkpoint.bandwidth: expected a rate"},
      {R"({"store": {"in_region": "yes"}})", "store.in_region: expected true or false"},
      {R"({"epoch": 3})", "epoch: unknown field"},
      {R"({"node": 5})", "node: expected an object"},
  };
  for (const auto& [text, want] : cases) {
    auto in = InputFromJson(json::parse(text));
    ASSERT_FALSE(in.ok()) << text;
    EXPECT_EQ(in.status().message().rfind(want, 0), 0u) << text << " -> " << in.status().message();
  }
  // A flag's text that is not UTF-8 (strata plan --accelerators $'\xff'): shown with U+FFFD, not
  // nlohmann's type_error 316 in place of the message.
  json odd = {{"accelerators", {{"count", "\xff"}}}};
  Result<PlanInput> in = InvalidArgumentError("not run");
  ASSERT_NO_THROW(in = InputFromJson(odd));
  EXPECT_EQ(in.status().message(),
            "accelerators.count: expected a count such as 1281167 or 1.2M, got \"\xEF\xBF\xBD\"");
  // Parsed, but not plannable: the missing field is named.
  const std::vector<std::pair<std::string, std::string>> unplannable = {
      {R"({})", "dataset.bytes"},
      {R"({"dataset": {"bytes": "1TB"}})", "dataset.samples"},
      {R"({"dataset": {"bytes": "1TB", "samples": 10}})", "accelerators.samples_per_s"},
      {R"({"dataset": {"bytes": "1TB", "samples": 10}, "accelerators": {"samples_per_s": 5, "count": 0}})",
       "accelerators.count"},
      {R"({"dataset": {"bytes": "1TB", "samples": 10}, "accelerators": {"samples_per_s": 5}, "epochs": 1e12})",
       "epochs: at most"},
      {R"({"dataset": {"bytes": "1TB", "samples": 10}, "accelerators": {"samples_per_s": 5},
           "checkpoint": {"bytes": "1GB"}})",
       "checkpoint.bandwidth"},
  };
  for (const auto& [text, want] : unplannable) {
    auto in = InputFromJson(json::parse(text));
    ASSERT_TRUE(in.ok()) << text << ": " << in.status();
    auto r = MakePlan(*in);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().message().rfind(want, 0), 0u) << text << " -> " << r.status().message();
  }
}

TEST(PlanInputTest, FlagsOverlayTheFile) {
  json doc = json::parse(R"({"store": {"preset": "r2", "connections_per_node": 8}, "epochs": 2})");
  json flags;
  SetPath(&flags, "store.connections_per_node", 32);
  SetPath(&flags, "accelerators.count", 16);
  Overlay(&doc, flags);
  EXPECT_EQ(doc["store"]["preset"], "r2");
  EXPECT_EQ(doc["store"]["connections_per_node"], 32);
  EXPECT_EQ(doc["accelerators"]["count"], 16);
  EXPECT_EQ(doc["epochs"], 2);
}

// The JSON `strata bench train --json` writes (cmd_bench_train.cc), trimmed.
TEST(PlanInputTest, FromBenchUsesMeasuredRates) {
  const json bench =
      json::parse(R"({"tool": "strata", "threshold": 0.9, "workload": {"name": "resnet50", "accelerator": "h100",
      "record_size": 114660, "batch": 32, "compute_time_s": 0.01792},
      "results": [{"accelerators": 1, "epoch": 1, "au": 0.99, "mib_per_s": 190.0, "valid": true},
                  {"accelerators": 2, "epoch": 1, "au": 0.70, "mib_per_s": 280.0, "valid": true},
                  {"accelerators": 4, "epoch": 1, "au": 0.60, "mib_per_s": 900.0, "valid": false},
                  {"accelerators": 8, "epoch": 1, "au": 0.30, "mib_per_s": 950.0},
                  {"accelerators": 2, "epoch": 2, "au": 0.99, "mib_per_s": 390.0, "valid": true}]})");
  json doc = json::parse(R"({"dataset": {"samples": 2048}, "accelerators": {"count": 4, "per_node": 4}})");
  ASSERT_TRUE(ApplyBench(bench, "au.json", &doc).ok());
  auto in = InputFromJson(doc);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_NEAR(in->samples_per_s_per_accel, 32 / 0.01792, 1e-9);
  // The 900 and 950 MiB/s points are not valid under the run rules (the second predates them): ignored.
  EXPECT_NEAR(in->measured_store_bytes_s_per_node, 280.0 * (1 << 20), 1e-6);
  // Every warm epoch kept AU >= 90%: the warm rate was the demand, not a ceiling.
  EXPECT_EQ(in->measured_cache_bytes_s_per_node, 0);
  ASSERT_EQ(in->sources.size(), 1u);
  EXPECT_NE(in->sources[0].find("au.json"), std::string::npos);
  EXPECT_NE(in->sources[0].find("2 result(s) not valid under the run rules, ignored"), std::string::npos)
      << in->sources[0];
  // The shard option cannot beat the loader's measured 280 MiB/s on one node.
  auto r = MakePlan(*in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LE(Option(*r, "shards").store_bytes_s, 280.0 * (1 << 20) + 1e-6);

  // A file with no valid result gives the demand but no measured rate.
  json only_invalid = bench;
  for (auto& r : only_invalid["results"]) r["valid"] = false;
  json fresh = json::parse(R"({"dataset": {"samples": 2048}, "accelerators": {"count": 4, "per_node": 4}})");
  ASSERT_TRUE(ApplyBench(only_invalid, "old.json", &fresh).ok());
  auto none = InputFromJson(fresh);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->measured_store_bytes_s_per_node, 0);
  EXPECT_EQ(none->measured_cache_bytes_s_per_node, 0);
  EXPECT_NEAR(none->samples_per_s_per_accel, 32 / 0.01792, 1e-9);
  ASSERT_EQ(none->sources.size(), 1u);
  EXPECT_NE(none->sources[0].find("no valid cold result"), std::string::npos) << none->sources[0];

  auto bad = ApplyBench(json::parse(R"({"workload": {"batch": 4}, "results": []})"), "x.json", &doc);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("x.json: workload.compute_time_s"), std::string::npos) << bad.message();
  bad = ApplyBench(json::parse(R"([1, 2])"), "x.json", &doc);
  EXPECT_FALSE(bad.ok());
}

TEST(PlanInputTest, FromProfileGivesTheDataset) {
  const json profile = json::parse(R"({"tool": "strata profile", "files": 500, "unique_bytes": 5e7,
      "opens_per_s": 400, "size_histogram": [{"le": 131072, "count": 500}]})");
  json doc = json::parse(R"({"accelerators": {"count": 2}})");
  ASSERT_TRUE(ApplyProfile(profile, "p.json", &doc).ok());
  auto in = InputFromJson(doc);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->dataset_bytes, 5e7);
  EXPECT_EQ(in->samples, 500u);
  EXPECT_EQ(in->objects, 500u);
  EXPECT_EQ(in->samples_per_s_per_accel, 200);  // 400 opens/s over 2 accelerators
  ASSERT_EQ(in->histogram.size(), 1u);
  auto bad = ApplyProfile(json::parse(R"({"files": "many"})"), "p.json", &doc);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("p.json: files"), std::string::npos) << bad.message();
}

TEST(PlanReportTest, JsonAndTableCarryEveryOption) {
  auto r = MakePlan(HandWorked());
  ASSERT_TRUE(r.ok());
  const json j = ToJson(*r);
  ASSERT_EQ(j["options"].size(), 4u);
  EXPECT_EQ(j["options"][0]["name"], "stream");
  EXPECT_NEAR(j["options"][0]["utilisation"].get<double>(), 0.4, 1e-9);
  EXPECT_TRUE(j["options"][0]["monthly"].contains("egress"));
  const std::string table = FormatReport(*r);
  for (const char* name : {"stream", "local-cache", "shards", "cache-group", "recommendation:"})
    EXPECT_NE(table.find(name), std::string::npos) << name;
}

// bench/cache_bench's JSON, as written by `build/bench/cache_bench --objects 8
// --size-mib 1 --out cache.json` on this VM (unchanged but for line breaks).
constexpr const char* kCacheBench =
    R"j({"bench": "cache_bench", "block_bytes": 4194304, "cold_stats": {"bytes_from_backend": 8388608,)j"
    R"j( "misses": 8, "ram_hits": 16}, "object_bytes": 1048576, "objects": 8,)j"
    R"j( "profile": "ttfb=30ms,bw=25000000B/s", "runs": [{"mb_per_s": 8809.841774611263,)j"
    R"j( "name": "memcpy (baseline)", "readers": 1, "seconds": 0.000952186}, {"mb_per_s": 1846.286444622134,)j"
    R"j( "name": "memcpy (baseline)", "readers": 4, "seconds": 0.004543503}, {"mb_per_s": 32.84460105100587,)j"
    R"j( "name": "cold (emulated cloud)", "readers": 4, "seconds": 0.25540295},)j"
    R"j( {"mb_per_s": 9947.099684343584, "name": "warm, RAM tier", "readers": 1, "seconds": 0.000843322},)j"
    R"j( {"mb_per_s": 6148.387631114684, "name": "warm, RAM tier", "readers": 4, "seconds": 0.001364359},)j"
    R"j( {"mb_per_s": 3237.2686502826227, "name": "warm, disk tier only (page cache)", "readers": 1,)j"
    R"j( "seconds": 0.002591261}, {"mb_per_s": 1462.3264680908035, "name": "warm,)j"
    R"j( disk tier only (page cache)", "readers": 4, "seconds": 0.005736481}, {"mb_per_s": 23.15470948223396,)j"
    R"j( "name": "warm, disk tier only (O_DIRECT)", "readers": 1, "seconds": 0.362285176},)j"
    R"j( {"mb_per_s": 255.34553679646643, "name": "warm, disk tier only (O_DIRECT)", "readers": 4,)j"
    R"j( "seconds": 0.032851986}, {"mb_per_s": 140.02919580638184, "name": "O_DIRECT pread 4 MiB",)j"
    R"j( "readers": 1, "seconds": 0.060140144}, {"mb_per_s": 216.81207436664533,)j"
    R"j( "name": "O_DIRECT pread 4 MiB", "readers": 4, "seconds": 0.038841822}],)j"
    R"j( "summary": {"cold_seconds": 0.25540295, "disk_direct_fraction_of_fio_1": 0.16600222141024065,)j"
    R"j( "disk_direct_fraction_of_fio_4": 1.182327972500658, "every_warm_faster_than_cold": false,)j"
    R"j( "speedup": 302.8534177929664, "warm_fraction_of_memcpy_1": 1.1290894818349337,)j"
    R"j( "warm_fraction_of_memcpy_4": 3.3301374491611075, "warm_seconds": 0.000843322}})j";

TEST(PlanInputTest, FromCacheBenchUsesTheWarmDiskTierAndTheDevice) {
  const json bench = json::parse(kCacheBench);
  const double warm = bench["runs"][8]["mb_per_s"].get<double>() * 1e6;     // disk tier, O_DIRECT, best
  const double device = bench["runs"][10]["mb_per_s"].get<double>() * 1e6;  // fio-style O_DIRECT, best
  json doc = json::parse(R"({"dataset": {"bytes": "100GB", "samples": 1000000},
      "accelerators": {"count": 16, "per_node": 8, "workload": "resnet50"}, "node": {"nvme": "3.5TiB"}})");
  auto before = InputFromJson(doc);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE(ApplyBench(bench, "cache.json", &doc).ok());
  auto in = InputFromJson(doc);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_NEAR(in->measured_cache_bytes_s_per_node, warm, 1e-3);
  EXPECT_NEAR(in->nvme_bytes_s, device, 1e-3);  // not the 2 GB/s assumed without it
  EXPECT_EQ(before->nvme_bytes_s, 2e9);
  // Its cold reads came from an emulated store: they say nothing of this cluster's.
  EXPECT_EQ(in->measured_store_bytes_s_per_node, 0);
  ASSERT_EQ(in->sources.size(), 1u);
  EXPECT_NE(in->sources[0].find("cache.json: cache bench"), std::string::npos) << in->sources[0];
  EXPECT_NE(in->sources[0].find("not used"), std::string::npos) << in->sources[0];
  // Both cached options now get at most the measured rate from the cache, on each of 2 nodes.
  auto r = MakePlan(*in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(Option(*r, "local-cache").local_bytes_s, 2 * std::min(warm, device), 1e-3);
  EXPECT_NEAR(Option(*r, "shards").local_bytes_s, 2 * std::min(warm, device), 1e-3);
  auto r0 = MakePlan(*before);
  ASSERT_TRUE(r0.ok());
  EXPECT_NEAR(Option(*r0, "local-cache").local_bytes_s, 2 * 2e9, 1e-3);
  // A figure given explicitly wins over the bench's.
  json given = json::parse(R"({"node": {"nvme_bandwidth": "6GB/s"}})");
  ASSERT_TRUE(ApplyBench(bench, "cache.json", &given).ok());
  EXPECT_EQ(given["node"]["nvme_bandwidth"], "6GB/s");
}

// bench/ckpt_bench's JSON, as written by `build/bench/ckpt_bench --gib 0.25
// --reps 1 --out ckpt.json` on this VM (the torch.save baseline included).
constexpr const char* kCkptBench =
    R"j({"bench": "ckpt_bench", "dir": "/tmp/plan2/ck", "first_stall_meets_aim": false,)j"
    R"j( "load_average_1m": 6.173828125, "load_byte_exact": true, "load_verified_GBps": 0.5828109147558767,)j"
    R"j( "load_verified_fraction_of_plain_read": 0.8250772918207723, "load_verified_s": 0.46058755799458595,)j"
    R"j( "load_verified_sha256_GBps": 0.4793614457440124,)j"
    R"j( "load_verified_sha256_fraction_of_plain_read": 0.6786253198834276,)j"
    R"j( "load_verified_sha256_s": 0.5599854940010118, "memcpy_1thread_s": 0.035702093,)j"
    R"j( "memcpy_2thread_ms_per_GB": 93.52708607912064, "memcpy_2thread_s": 0.025105986,)j"
    R"j( "persist_fraction_of_plain_write": 0.7505654115442484, "plain_read_GBps": 0.7063712945846993,)j"
    R"j( "plain_read_s": 0.3800203349965159, "plain_write_GBps": 0.5623533724763774,)j"
    R"j( "plain_write_fsync_s": 0.47734301799937384,)j"
    R"j( "reproduce": "build/bench/ckpt_bench --gib 0.25 --reps 1 --no-cold --dir /tmp/plan2/ck --out /tmp/plan2/ckpt.json",)j"
    R"j( "reps": 1, "sha256_GBps_1thread": 1.5237720526108267, "staging_prefault_s": 0.03869025799940573,)j"
    R"j( "stall_aim_ms_per_GB": 50.0, "stall_meets_aim": false,)j"
    R"j( "stall_ratio_torch_over_strata": 6.613268353979453, "state_bytes": 268435456,)j"
    R"j( "strata_first_stall_ms_per_GB": 86.27288788557051, "strata_first_stall_s": 0.023158702,)j"
    R"j( "strata_persist_GBps": 0.4220829904460282, "strata_persist_s": 0.635977905,)j"
    R"j( "strata_stall_ms_per_GB": 114.50778692960739,)j"
    R"j( "strata_stall_over_memcpy_1thread": 0.8609565271145309,)j"
    R"j( "strata_stall_over_memcpy_2thread": 1.224327536867104, "strata_stall_s": 0.03073795, "tensors": 17,)j"
    R"j( "torch": {"bytes": 268435456, "fsync_s": 0.3747322549970704, "save_s": 0.20327831200120272,)j"
    R"j( "torch": "1.13.0a0"}, "xxh3_GBps_1thread": 9.363965689091543})j";

TEST(PlanInputTest, FromCkptBenchFeedsTheCheckpointStalls) {
  const json bench = json::parse(kCkptBench);
  const double state = bench["state_bytes"].get<double>();
  const double sync_s = bench["torch"]["save_s"].get<double>() + bench["torch"]["fsync_s"].get<double>();
  const double async_s = bench["strata_stall_s"].get<double>();
  const double persist_s = bench["strata_persist_s"].get<double>();
  // 16 accelerators, 8 per node: 2 nodes, each saving half of a 10 GB state.
  json doc = json::parse(R"({"dataset": {"bytes": "100GB", "samples": 1000000},
      "accelerators": {"count": 16, "per_node": 8, "workload": "resnet50"},
      "checkpoint": {"bytes": "10GB", "interval": "1h", "mtbf": "24h"}})");
  // Without a storage bandwidth there is no checkpoint plan.
  auto none = InputFromJson(doc);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(MakePlan(*none).ok());
  ASSERT_TRUE(ApplyBench(bench, "ckpt.json", &doc).ok());
  auto in = InputFromJson(doc);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_NEAR(in->checkpoint_bytes_s, 2 * state / sync_s, 1e-3);
  EXPECT_NEAR(in->checkpoint_snapshot_bytes_s, 2 * state / async_s, 1e-3);
  EXPECT_NEAR(in->checkpoint_persist_bytes_s, 2 * state / persist_s, 1e-3);
  ASSERT_EQ(in->sources.size(), 1u);
  EXPECT_NE(in->sources[0].find("ckpt.json: checkpoint bench"), std::string::npos) << in->sources[0];
  auto r = MakePlan(*in);
  ASSERT_TRUE(r.ok()) << r.status();
  // The stalls scale from the bench's state to this job's half per node.
  const double per_node = 10e9 / 2;
  EXPECT_NEAR(r->checkpoint.sync_stall_s, per_node / state * sync_s, 1e-9);
  EXPECT_NEAR(r->checkpoint.async_stall_s, per_node / state * async_s, 1e-9);
  EXPECT_NEAR(r->checkpoint.upload_s, per_node / state * persist_s, 1e-9);
  EXPECT_LT(r->checkpoint.async_stall_s, r->checkpoint.sync_stall_s);  // as measured
  EXPECT_GT(r->checkpoint.young_sync_s, r->checkpoint.young_async_s);

  // An explicit storage bandwidth wins, and the bench's local persist does not
  // stand in for that storage's upload.
  json given = json::parse(R"({"dataset": {"bytes": "100GB", "samples": 1000000},
      "accelerators": {"count": 8, "workload": "resnet50"},
      "checkpoint": {"bytes": "10GB", "bandwidth": "1GB/s"}})");
  ASSERT_TRUE(ApplyBench(bench, "ckpt.json", &given).ok());
  in = InputFromJson(given);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->checkpoint_bytes_s, 1e9);
  EXPECT_EQ(in->checkpoint_persist_bytes_s, 0);
  EXPECT_NEAR(in->checkpoint_snapshot_bytes_s, state / async_s, 1e-3);

  // Without torch, the plain write + fsync is the synchronous save.
  json no_torch = bench;
  no_torch.erase("torch");
  json doc2 = json::object();
  ASSERT_TRUE(ApplyBench(no_torch, "ckpt.json", &doc2).ok());
  EXPECT_NEAR(doc2["measured"]["checkpoint_sync_bandwidth_per_node"].get<double>(),
              state / bench["plain_write_fsync_s"].get<double>(), 1e-3);
}

TEST(PlanInputTest, UnknownOrBrokenBenchFilesNameTheFileAndField) {
  json doc = json::object();
  auto st = ApplyBench(json::parse(R"({"hello": 1})"), "odd.json", &doc);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("odd.json: (top level): not a bench result"), std::string::npos) << st.message();
  st = ApplyBench(json::parse(R"({"bench": "gateway_bench"})"), "gw.json", &doc);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("gw.json: bench: unknown bench \"gateway_bench\""), std::string::npos) << st.message();
  json cache = json::parse(kCacheBench);
  cache["runs"][1]["mb_per_s"] = "fast";
  st = ApplyBench(cache, "cache.json", &doc);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cache.json: runs[1]: needs a name and a positive mb_per_s"), std::string::npos)
      << st.message();
  json ckpt = json::parse(kCkptBench);
  ckpt.erase("strata_stall_s");
  st = ApplyBench(ckpt, "ckpt.json", &doc);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("ckpt.json: strata_stall_s: missing"), std::string::npos) << st.message();
  EXPECT_EQ(doc, json::object());  // nothing applied from a refused file
  // A bad measured figure in the plan document names its field.
  auto in = InputFromJson(json::parse(R"({"measured": {"checkpoint_async_bandwidth_per_node": "quick"}})"));
  ASSERT_FALSE(in.ok());
  EXPECT_NE(in.status().message().find("measured.checkpoint_async_bandwidth_per_node: expected a rate"),
            std::string::npos)
      << in.status().message();
}

}  // namespace
}  // namespace strata::plan
