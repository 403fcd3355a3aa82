#include "ckpt/format.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "ckpt/location.h"
#include "ckpt/reader.h"
#include "ckpt/shard_hasher.h"
#include "object/mem_store.h"

namespace strata::ckpt {
namespace {

RankManifest SampleManifest() {
  RankManifest m;
  m.step = 42;
  m.rank = 1;
  m.world_size = 2;
  m.wall_time_ms = 1700000000000;
  m.metadata = R"({"lr":0.1,"epoch":3})";
  m.shards = {{"rank-00001-shard-00000.safetensors", 1000, std::string(64, 'a'), std::nullopt}};
  m.tensors = {{"w", "F32", {2, 3}, 0, 100, 24, 7}, {"b", "BF16", {}, 0, 124, 2, 9}};
  return m;
}

TEST(CkptFormat, RankManifestRoundTrip) {
  RankManifest m = SampleManifest();
  auto parsed = ParseRankManifest(EncodeRankManifest(m));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->step, 42);
  EXPECT_EQ(parsed->rank, 1);
  EXPECT_EQ(parsed->world_size, 2);
  EXPECT_EQ(parsed->metadata, R"({"epoch":3,"lr":0.1})");
  ASSERT_EQ(parsed->tensors.size(), 2u);
  EXPECT_EQ(parsed->tensors[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(parsed->tensors[1].xxh3, 9u);
  EXPECT_EQ(parsed->shards[0].sha256, std::string(64, 'a'));
  EXPECT_FALSE(parsed->shards[0].xxh3.has_value());  // manifests from before the field still parse
}

TEST(CkptFormat, ShardXxh3RoundTripsAndIsChecked) {
  RankManifest m = SampleManifest();
  m.shards[0].xxh3 = 0xfedcba9876543210ull;
  auto parsed = ParseRankManifest(EncodeRankManifest(m));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->shards[0].xxh3, 0xfedcba9876543210ull);
  std::string text = EncodeRankManifest(m);
  const std::string key = "\"xxh3\": " + std::to_string(*m.shards[0].xxh3);
  ASSERT_NE(text.find(key), std::string::npos);
  text.replace(text.find(key), key.size(), "\"xxh3\":\"no\"");
  EXPECT_EQ(ParseRankManifest(text).status().code(), Code::kCorruption);
}

TEST(CkptFormat, AttemptRoundTripsAndIsOptional) {
  RankManifest m = SampleManifest();
  EXPECT_EQ(EncodeRankManifest(m).find("attempt"), std::string::npos);  // absent when empty
  EXPECT_EQ(ParseRankManifest(EncodeRankManifest(m))->attempt, "");
  m.attempt = "job-7/restart-2";
  auto parsed = ParseRankManifest(EncodeRankManifest(m));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->attempt, "job-7/restart-2");
  GlobalManifest g;
  g.step = 7;
  g.attempt = "a1";
  g.ranks = {{0, RankManifestName(0), std::string(64, '0')}};
  EXPECT_EQ(ParseGlobalManifest(EncodeGlobalManifest(g))->attempt, "a1");
  for (const std::string& bad : {std::string(R"("attempt": "")"), std::string(R"("attempt": 5)"),
                                 R"("attempt": ")" + std::string(kMaxAttemptBytes + 1, 'x') + "\""}) {
    std::string text = EncodeRankManifest(m);
    const std::string good = R"("attempt": "job-7/restart-2")";
    ASSERT_NE(text.find(good), std::string::npos);
    text.replace(text.find(good), good.size(), bad);
    ASSERT_TRUE(nlohmann::json::accept(text)) << text;  // still JSON: the attempt itself is refused
    EXPECT_EQ(ParseRankManifest(text).status().code(), Code::kCorruption) << bad;
  }
}

TEST(CkptFormat, RankManifestRejectsInconsistencies) {
  RankManifest m = SampleManifest();
  m.tensors[0].offset = 990;  // past the shard's end
  EXPECT_EQ(ParseRankManifest(EncodeRankManifest(m)).status().code(), Code::kCorruption);
  m = SampleManifest();
  m.tensors[0].shard = 3;
  EXPECT_EQ(ParseRankManifest(EncodeRankManifest(m)).status().code(), Code::kCorruption);
  m = SampleManifest();
  m.shards[0].file = "../escape";
  EXPECT_EQ(ParseRankManifest(EncodeRankManifest(m)).status().code(), Code::kCorruption);
  for (std::string_view bad :
       {"", "[]", "{", "null", R"({"format":"strata-ckpt-rank","version":1})",
        "{\"format\":\"strata-ckpt-rank\",\"version\":1,\"step\":1,\"rank\":5,\"world_size\":2}"}) {
    EXPECT_EQ(ParseRankManifest(bad).status().code(), Code::kCorruption) << bad;
  }
}

TEST(CkptFormat, GlobalManifestAndCommit) {
  GlobalManifest g;
  g.step = 7;
  g.world_size = 2;
  g.metadata = "\"plain text\"";
  g.ranks = {{0, RankManifestName(0), std::string(64, '0')}, {1, RankManifestName(1), std::string(64, '1')}};
  auto parsed = ParseGlobalManifest(EncodeGlobalManifest(g));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->ranks[1].manifest, "rank-00001.manifest.json");
  g.ranks.pop_back();  // fewer ranks than the world size
  EXPECT_FALSE(ParseGlobalManifest(EncodeGlobalManifest(g)).ok());

  std::string digest = ToHex(Sha256("x"));
  auto c = ParseCommit(EncodeCommit(digest));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, digest);
  std::string torn = EncodeCommit(digest).substr(0, 30);
  EXPECT_EQ(ParseCommit(torn).status().code(), Code::kCorruption);
}

TEST(CkptFormat, Names) {
  EXPECT_EQ(StepDirName(123), "step-000000123");
  EXPECT_EQ(ParseStepDirName("step-000000123"), 123);
  EXPECT_EQ(ParseStepDirName("step-12a"), std::nullopt);
  EXPECT_EQ(ParseStepDirName("step-"), std::nullopt);
  EXPECT_EQ(ParseStepDirName("xstep-1"), std::nullopt);
  EXPECT_EQ(ShardFileName(3, 12), "rank-00003-shard-00012.safetensors");
  EXPECT_EQ(RankCommitName(3), "rank-00003.COMMITTED");
}

TEST(CkptFormat, ValidateTensor) {
  float f[6] = {};
  EXPECT_TRUE(ValidateTensor({"w", "F32", {2, 3}, f, 24}).ok());
  EXPECT_EQ(ValidateTensor({"w", "F32", {2, 3}, f, 20}).code(), Code::kInvalidArgument);
  EXPECT_EQ(ValidateTensor({"w", "F99", {2, 3}, f, 24}).code(), Code::kInvalidArgument);
  EXPECT_EQ(ValidateTensor({"", "F32", {}, f, 4}).code(), Code::kInvalidArgument);
  EXPECT_EQ(ValidateTensor({"__metadata__", "F32", {}, f, 4}).code(), Code::kInvalidArgument);
  EXPECT_EQ(ValidateTensor({"bad\xff", "F32", {}, f, 4}).code(), Code::kInvalidArgument);
  EXPECT_EQ(ValidateTensor({"w", "F32", {-1}, f, 4}).code(), Code::kInvalidArgument);
  EXPECT_EQ(ValidateTensor({"w", "U8", {1ll << 62, 1ll << 62}, f, 0}).code(), Code::kInvalidArgument);
  EXPECT_TRUE(ValidateTensor({"e", "F32", {0}, nullptr, 0}).ok());
}

TEST(CkptFormat, SafetensorsHeader) {
  std::vector<SafetensorsTensor> ts = {{"a", "F32", {2}, 0, 8}, {"b", "I64", {1, 1}, 8, 16}};
  std::string h = EncodeSafetensorsHeader(ts, {{"format", "pt"}});
  EXPECT_EQ((h.size() - 8) % 8, 0u);
  auto parsed = ParseSafetensorsHeader(h, h.size() + 16);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->data_start, h.size());
  ASSERT_EQ(parsed->tensors.size(), 2u);
  EXPECT_EQ(parsed->tensors[1].name, "b");
  EXPECT_EQ(parsed->metadata_json, R"({"format":"pt"})");
  // Offsets beyond the file, a lying length, garbage: Corruption, never a crash.
  EXPECT_EQ(ParseSafetensorsHeader(h, h.size() + 15).status().code(), Code::kCorruption);
  EXPECT_EQ(ParseSafetensorsHeader(h.substr(0, 12), 1 << 20).status().code(), Code::kCorruption);
  std::string lie = h;
  lie[7] = '\x7f';
  EXPECT_EQ(ParseSafetensorsHeader(lie, lie.size()).status().code(), Code::kCorruption);
  EXPECT_EQ(ParseSafetensorsHeader("", 0).status().code(), Code::kCorruption);
}

TEST(CkptFormat, ShardHasherNamesTheTensor) {
  std::string data(100, 'x');
  TensorEntry a{"a", "U8", {40}, 0, 10, 40, XxHash3(data.data() + 10, 40)};
  TensorEntry b{"b", "U8", {50}, 0, 50, 50, XxHash3(data.data() + 50, 50)};
  ShardHasher ok({&a, &b});
  for (size_t i = 0; i < data.size(); i += 7) ok.Update(data.data() + i, std::min<size_t>(7, data.size() - i));
  EXPECT_TRUE(ok.BadTensors().empty());
  EXPECT_EQ(ok.Sha256Hex(), ToHex(Sha256(data)));
  data[60] = 'y';
  ShardHasher bad({&a, &b});
  bad.Update(data.data(), data.size());
  ASSERT_EQ(bad.BadTensors().size(), 1u);
  EXPECT_EQ(bad.BadTensors()[0]->name, "b");
  EXPECT_NE(bad.Xxh3(), ok.Xxh3());
  EXPECT_EQ(bad.Xxh3(), XxHash3(data.data(), data.size()));
  // The fast path hashes the whole file only, then names the tensor from memory.
  ShardHasher fast({&a, &b}, {.sha256 = false, .per_tensor = false});
  fast.Update(data.data(), data.size());
  EXPECT_EQ(fast.Xxh3(), bad.Xxh3());
  EXPECT_TRUE(fast.Sha256Hex().empty());
  auto named = BadTensorsIn(reinterpret_cast<const uint8_t*>(data.data()), data.size(), {&a, &b});
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0]->name, "b");
}

TEST(CkptLocation, MemStoreListsStepsAndRemovesMarkersFirst) {
  auto loc = StoreLocation(object::MakeMemStore());
  ASSERT_TRUE(loc->WriteFile(3, "a", Buffer::Copy("hello")).ok());
  ASSERT_TRUE(loc->WriteFile(3, "COMMITTED", Buffer::Copy("x")).ok());
  ASSERT_TRUE(loc->WriteFile(12, "b", Buffer::Copy("x")).ok());
  auto steps = loc->ListSteps();
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(*steps, (std::vector<int64_t>{3, 12}));
  char buf[3];
  ASSERT_TRUE(loc->ReadAt(3, "a", 1, 3, buf).ok());
  EXPECT_EQ(std::string(buf, 3), "ell");
  EXPECT_EQ(loc->ReadAt(3, "a", 3, 5, buf).code(), Code::kCorruption);
  EXPECT_EQ(OpenCheckpoint(*loc, 12).status().code(), Code::kNotFound);  // not committed
  ASSERT_TRUE(loc->RemoveStep(3).ok());
  EXPECT_EQ(*loc->ListSteps(), (std::vector<int64_t>{12}));
}

}  // namespace
}  // namespace strata::ckpt
