// Unit tests for `strata bench train`'s arithmetic: the AU of known
// timelines (SummarizeEpoch), the run rules (CheckRules, the sizes they
// need, "largest N" counting only valid results), the dataset generated
// without sample files and the store byte counter.
#include <gtest/gtest.h>

#include "dataset/manifest.h"
#include "object/mem_store.h"
#include "train/engine.h"
#include "train/generate.h"
#include "train/report.h"

namespace strata::train {
namespace {

using std::chrono::milliseconds;

// A rank whose steps end at `ends` (ms after t0), each with `compute_ms`
// measured and a batch of 8 samples of 4096 bytes.
RankTimeline Rank(TimePoint t0, std::vector<int> ends, int compute_ms) {
  RankTimeline r;
  r.start = t0;
  r.realtime = true;
  r.first_batch = t0 + milliseconds(ends.empty() ? 0 : ends[0] - compute_ms);
  for (int e : ends) {
    r.step_end.push_back(t0 + milliseconds(e));
    r.compute.push_back(milliseconds(compute_ms));
    r.batches.push_back({8, 8 * 4096});
  }
  return r;
}

TEST(SummarizeEpochTest, AuFromKnownStepTimesOverTheWholeEpoch) {
  const TimePoint t0{};
  // The first batch after 88 ms (filling the empty pipeline counts), then
  // steps of 20 ms for 10 ms of nominal compute: 4 steps x 10 ms in 160 ms.
  auto res =
      SummarizeEpoch(1, milliseconds(10), {Rank(t0, {100, 120, 140, 160}, 12), Rank(t0, {100, 120, 140, 160}, 12)});
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->accelerators, 2u);
  EXPECT_EQ(res->epoch, 2u);
  EXPECT_EQ(res->steps, 4u);
  EXPECT_EQ(res->samples, 64u);
  EXPECT_NEAR(res->au, 8 * 0.010 / (2 * 0.160), 1e-12);         // 0.25
  EXPECT_NEAR(res->au_dlio, 8 * 0.012 / (2 * 0.160), 1e-12);    // measured sleeps: 0.3
  EXPECT_NEAR(res->samples_per_s, 64 / 0.160, 1e-9);            // 8 batches of 8 in 160 ms
  EXPECT_NEAR(res->mib_per_s, 400.0 * 4096 / (1 << 20), 1e-9);  // 1.5625
  EXPECT_NEAR(res->measured_s, 0.160, 1e-12);
  EXPECT_NEAR(res->first_batch_s, 0.088, 1e-12);
  EXPECT_NEAR(res->first_step_s, 0.100, 1e-12);
  EXPECT_TRUE(res->realtime_accelerators);

  // Steps exactly as long as the compute from the start: AU 1.
  auto full = SummarizeEpoch(0, milliseconds(20), {Rank(t0, {20, 40, 60}, 20)});
  ASSERT_TRUE(full.ok());
  EXPECT_NEAR(full->au, 1.0, 1e-12);
}

TEST(SummarizeEpochTest, ARankWithFewerStepsCountsOnlyItsSteps) {
  const TimePoint t0{};
  auto slow = Rank(t0, {100, 120, 140}, 10);
  slow.realtime = false;
  auto res = SummarizeEpoch(0, milliseconds(10), {Rank(t0, {100, 120, 140, 160}, 10), slow});
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_NEAR(res->au, (4 + 3) * 0.010 / (2 * 0.160), 1e-12);  // 7 steps, the window to the last end
  EXPECT_FALSE(res->realtime_accelerators);
}

TEST(SummarizeEpochTest, NoStepsOrInconsistentTimelinesAreRefused) {
  const TimePoint t0{};
  EXPECT_EQ(SummarizeEpoch(0, milliseconds(10), {Rank(t0, {}, 10)}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(SummarizeEpoch(0, milliseconds(10), {}).status().code(), Code::kInvalidArgument);
  auto bad = Rank(t0, {100, 120}, 10);
  bad.compute.pop_back();
  EXPECT_EQ(SummarizeEpoch(0, milliseconds(10), {bad}).status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(SummarizeEpoch(0, milliseconds(10), {Rank(t0, {100}, 10)}).ok());  // one step is a window
}

// An epoch that meets every rule: 200 steps over 4 s, cold, the dataset 10 x
// the loaders' memory, every consumed byte fetched inside the window.
RuleInputs Valid() { return {true, 200, 4.0, 1000 << 20, 100 << 20, 1010 << 20, true, false}; }

bool Mentions(const RuleCheck& c, const std::string& what) {
  for (const auto& f : c.failures)
    if (f.find(what) != std::string::npos) return true;
  return false;
}

TEST(RunRulesTest, EachRuleFailsOnItsOwn) {
  const RunRules rules;
  EXPECT_TRUE(CheckRules(rules, Valid()).valid) << CheckRules(rules, Valid()).Summary();
  EXPECT_EQ(CheckRules(rules, Valid()).Summary(), "valid");

  RuleInputs fits = Valid();
  fits.memory_bytes = fits.dataset_bytes / 4;  // the dataset is only 4 x the loaders' memory
  RuleCheck c = CheckRules(rules, fits);
  EXPECT_FALSE(c.valid);
  EXPECT_TRUE(Mentions(c, "fits in memory")) << c.Summary();
  EXPECT_EQ(c.Summary().rfind("not valid: fits in memory", 0), 0u) << c.Summary();
  fits.cold = false;  // a warm epoch reads the local cache by design: no memory rule
  EXPECT_TRUE(CheckRules(rules, fits).valid);

  RuleInputs few = Valid();
  few.steps = 99;
  EXPECT_TRUE(Mentions(CheckRules(rules, few), "99 steps < 100"));
  RuleInputs brief = Valid();
  brief.seconds = 1.5;
  EXPECT_TRUE(Mentions(CheckRules(rules, brief), "1.50 s < 2 s"));

  RuleInputs prefilled = Valid();
  prefilled.store_bytes = prefilled.dataset_bytes / 2;
  EXPECT_TRUE(Mentions(CheckRules(rules, prefilled), "served from memory"));
  prefilled.store_counted = false;  // nothing to compare (a source without a counter)
  EXPECT_TRUE(CheckRules(rules, prefilled).valid);

  RuleInputs smoke = Valid();
  smoke.smoke = true;
  EXPECT_TRUE(Mentions(CheckRules(rules, smoke), "--quick"));
}

TEST(RunRulesTest, SizesFollowTheRules) {
  const RunRules rules;
  EXPECT_EQ(MinStepsFor(rules, 0.1), 100u);   // 100 steps last 10 s
  EXPECT_EQ(MinStepsFor(rules, 0.01), 200u);  // 2 s of 10 ms steps
  EXPECT_EQ(MinStepsFor(rules, 0), 100u);

  loader::StreamingOptions o;
  o.prefetch_bytes = 64 << 20;
  o.ram_cache_bytes = 32 << 20;
  // Per rank the budget (or two batches when larger) and the batch in use; the RAM cache once.
  EXPECT_EQ(LoaderMemoryBytes(o, 4, 1 << 20), 4 * (65ull << 20) + (32 << 20));
  EXPECT_EQ(LoaderMemoryBytes(o, 2, 40 << 20), 2 * (120ull << 20) + (32 << 20));

  // Steps: 200 x 4 ranks x batch 8 = 6400 samples; memory: 5 x 1 MiB of 1 KiB samples = 5120.
  EXPECT_EQ(RequiredSamples(rules, 4, 8, 0.01, 1024, 1, 1 << 20), 6400u);
  // Memory: 5 x 10 MiB = 51200 samples, rounded up to whole shards of 1000.
  EXPECT_EQ(RequiredSamples(rules, 4, 8, 0.01, 1024, 1000, 10 << 20), 52000u);
}

EpochResult Result(size_t n, uint64_t epoch, double au, bool valid) {
  EpochResult r;
  r.accelerators = n;
  r.epoch = epoch;
  r.au = au;
  r.rules.valid = valid;
  if (!valid) r.rules.failures.push_back("fits in memory");
  return r;
}

TEST(RunRulesTest, LargestNCountsOnlyValidResults) {
  // N=4 passes the threshold but its dataset fitted in memory: it does not count.
  std::vector<EpochResult> results = {Result(1, 1, 0.95, true), Result(2, 1, 0.93, true), Result(4, 1, 0.99, false),
                                      Result(4, 2, 0.97, true)};
  EXPECT_EQ(LargestPassing(results, 1, 0.9), 2u);
  EXPECT_EQ(LargestPassing(results, 2, 0.9), 4u);
  EXPECT_EQ(LargestPassing(results, 1, 0.94), 1u);
  const nlohmann::json j = results[2].ToJson();
  EXPECT_EQ(j["valid"], false);
  EXPECT_EQ(j["not_valid"][0], "fits in memory");
}

// Packing from sample bytes made on the fly gives the same shards as packing
// the written files, without writing them.
TEST(GenerateTest, ShardsWithoutFilesAreTheSame) {
  GenerateOptions g;
  g.samples = 37;
  g.record_size = 3000;
  g.samples_per_file = 4;
  auto with = object::MakeMemStore("with"), without = object::MakeMemStore("without");
  auto a = Generate(*with, "d/", g);
  ASSERT_TRUE(a.ok()) << a.status();
  g.write_files = false;
  auto b = Generate(*without, "d/", g);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->samples, 37u);
  EXPECT_EQ(b->samples, 37u);
  EXPECT_EQ(a->shards, 10u);
  EXPECT_EQ(b->shards, a->shards);
  EXPECT_EQ(b->shard_bytes, a->shard_bytes);
  EXPECT_EQ(b->file_bytes, 0u);
  EXPECT_TRUE(with->Head("d/files/00000036.bin").ok());
  EXPECT_EQ(without->Head("d/files/00000000.bin").status().code(), Code::kNotFound);
  for (const char* key : {"d/shards/manifest.json", "d/shards/index.json"}) {
    auto x = with->Get(key), y = without->Get(key);
    ASSERT_TRUE(x.ok() && y.ok()) << key;
    EXPECT_EQ(x->data.size(), y->data.size()) << key;
  }
  auto list = without->List({"d/shards/", "", "", "", 1000});
  ASSERT_TRUE(list.ok());
  for (const auto& o : list->objects) {
    auto x = with->Get(o.key), y = without->Get(o.key);
    ASSERT_TRUE(x.ok() && y.ok()) << o.key;
    EXPECT_TRUE(x->data == y->data) << o.key;
  }
}

TEST(ByteCountingStoreTest, CountsWhatGetsAndRangesReturn) {
  auto mem = object::MakeMemStore("counted");
  ASSERT_TRUE(mem->Put("k", Buffer::Copy(std::string(1000, 'x'))).ok());
  ByteCountingStore counted(mem);
  ASSERT_TRUE(counted.Get("k").ok());
  EXPECT_EQ(counted.bytes(), 1000u);
  object::GetOptions range;
  range.range = object::ByteRange::Of(10, 90);
  ASSERT_TRUE(counted.Get("k", range).ok());
  EXPECT_EQ(counted.bytes(), 1090u);
  uint64_t seen = 0;
  ASSERT_TRUE(counted
                  .ReadRangeTo("k", "", 100, 400,
                               [&](uint64_t, const uint8_t*, size_t n) {
                                 seen += n;
                                 return Status::Ok();
                               })
                  .ok());
  EXPECT_EQ(seen, 400u);
  EXPECT_EQ(counted.bytes(), 1490u);  // counted once, whichever way the base delivers ranges
  EXPECT_FALSE(counted.Get("missing").ok());
  EXPECT_EQ(counted.bytes(), 1490u);
}

}  // namespace
}  // namespace strata::train
