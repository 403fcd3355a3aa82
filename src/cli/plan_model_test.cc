// Unit tests for `strata plan`: the formulas against hand-worked cases and
// public write-ups of the same arithmetic, the plan's edge cases, and input
// files that must be refused with the bad field named.
#include "cli/plan_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "cli/plan_input.h"

namespace strata::cli::plan {
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
      "results": [{"accelerators": 1, "epoch": 1, "au": 0.99, "mib_per_s": 190.0},
                  {"accelerators": 2, "epoch": 1, "au": 0.70, "mib_per_s": 280.0},
                  {"accelerators": 2, "epoch": 2, "au": 0.99, "mib_per_s": 390.0}]})");
  json doc = json::parse(R"({"dataset": {"samples": 2048}, "accelerators": {"count": 4, "per_node": 4}})");
  ASSERT_TRUE(ApplyBench(bench, "au.json", &doc).ok());
  auto in = InputFromJson(doc);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_NEAR(in->samples_per_s_per_accel, 32 / 0.01792, 1e-9);
  EXPECT_NEAR(in->measured_store_bytes_s_per_node, 280.0 * (1 << 20), 1e-6);
  // Every warm epoch kept AU >= 90%: the warm rate was the demand, not a ceiling.
  EXPECT_EQ(in->measured_cache_bytes_s_per_node, 0);
  ASSERT_EQ(in->sources.size(), 1u);
  EXPECT_NE(in->sources[0].find("au.json"), std::string::npos);
  // The shard option cannot beat the loader's measured 280 MiB/s on one node.
  auto r = MakePlan(*in);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LE(Option(*r, "shards").store_bytes_s, 280.0 * (1 << 20) + 1e-6);

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

}  // namespace
}  // namespace strata::cli::plan
