// Unit tests over mem:// stores: the streaming sink, ranged readers, pack,
// verify (missing / truncated / altered / signature), random access, inspect.
#include "dataset/pack.h"

#include <gtest/gtest.h>

#include <atomic>

#include "base/hash.h"
#include "dataset/byte_source.h"
#include "dataset/dataset.h"
#include "dataset/object_sink.h"
#include "dataset/verify.h"
#include "object/mem_store.h"
#include "object/transfer.h"

namespace strata::dataset {
namespace {

VerifyOptions SignedBy(std::string key) {
  VerifyOptions options;
  options.sign_key = std::move(key);
  return options;
}

InspectOptions SampleNumber(uint64_t sample) {
  InspectOptions options;
  options.sample = sample;
  return options;
}

std::shared_ptr<object::ObjectStore> SmallPartStore() {
  object::MemStoreOptions o;
  o.min_part_size = 1024;
  return object::MakeMemStore("", o);
}

std::string Content(const std::string& key, size_t size) {
  std::string s;
  uint64_t h = XxHash3(key);
  while (s.size() < size) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    s.push_back(static_cast<char>(h >> 56));
  }
  return s;
}

// ImageFolder tree: 3 classes x n images (+ a hidden file and a README that
// is not a sample member).
void FillImageFolder(object::ObjectStore& store, int per_class) {
  for (std::string cls : {"zebra", "ant", "cat"}) {
    for (int i = 0; i < per_class; ++i) {
      std::string key = "in/" + cls + "/img" + std::to_string(i) + ".jpg";
      ASSERT_TRUE(store.Put(key, Buffer::Copy(Content(key, 500 + 97 * i))).ok());
    }
  }
  ASSERT_TRUE(store.Put("in/cat/.DS_Store", Buffer::Copy("x")).ok());
}

TEST(ObjectSink, SmallShardIsOnePutAndBigOneIsMultipart) {
  auto store = SmallPartStore();
  {
    ObjectSink sink(*store, "small", {4096, 2});
    ASSERT_TRUE(sink.Append(Buffer::Copy("hello")).ok());
    auto w = sink.Close();
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->requests, 1u);
    EXPECT_EQ(w->sha256, ToHex(Sha256("hello")));
  }
  std::string big = Content("big", 10000);
  ObjectSink sink(*store, "big", {4096, 2});
  for (size_t i = 0; i < big.size(); i += 999) ASSERT_TRUE(sink.Append(Buffer::Copy(big.substr(i, 999))).ok());
  EXPECT_FALSE(store->Head("big").ok());  // invisible until Close
  auto w = sink.Close();
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->size, big.size());
  EXPECT_EQ(w->requests, 1u + 3 + 1);  // create, 3 parts (4096, 4096, 1808), complete
  EXPECT_EQ(w->sha256, ToHex(Sha256(big)));
  EXPECT_EQ(w->crc32c, Crc32cHex(Crc32c(big)));  // running over parts as they stream
  EXPECT_EQ(store->Get("big")->data.view(), big);
}

TEST(ObjectSink, AbortsWhenNotClosed) {
  auto store = SmallPartStore();
  {
    ObjectSink sink(*store, "gone", {1024, 1});
    ASSERT_TRUE(sink.Append(Buffer::Copy(std::string(5000, 'x'))).ok());
  }
  EXPECT_EQ(store->Head("gone").status().code(), Code::kNotFound);
}

TEST(ObjectSource, ReadsAcrossChunksAndHashes) {
  auto store = object::MakeMemStore();
  std::string data = Content("obj", 100000);
  ASSERT_TRUE(store->Put("obj", Buffer::Copy(data)).ok());
  Sha256Hasher hasher;
  auto src = ObjectSource::Open(*store, "obj", {4096, 3, &hasher});
  ASSERT_TRUE(src.ok());
  std::string got;
  while ((*src)->remaining() > 0) {
    auto b = (*src)->Read(3000);
    ASSERT_TRUE(b.ok());
    got += b->view();
  }
  EXPECT_EQ(got, data);
  EXPECT_EQ((*src)->requests(), (100000 + 4095) / 4096);
  EXPECT_EQ(ToHex(hasher.Finish()), ToHex(Sha256(data)));
}

class PackTest : public ::testing::TestWithParam<ShardFormat> {};

TEST_P(PackTest, ImageFolderRoundTripDeterministicAndRandomAccess) {
  auto src = object::MakeMemStore();
  FillImageFolder(*src, 20);
  auto dst1 = SmallPartStore(), dst2 = SmallPartStore();
  PackOptions o;
  o.format = GetParam();
  o.shard_size = 8 << 10;
  o.part_size = 1024;
  o.parallel = 3;
  std::atomic<uint64_t> progressed{0};
  o.on_progress = [&](uint64_t s, uint64_t) { progressed += s; };
  auto r1 = Pack(*src, "in/", *dst1, "out/", o);
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ(progressed.load(), 60u);
  EXPECT_EQ(r1->manifest.total_samples(), 60u);
  EXPECT_EQ(r1->manifest.classes, (std::vector<std::string>{"ant", "cat", "zebra"}));
  EXPECT_EQ(r1->manifest.fields, (std::vector<std::string>{"cls", "jpg"}));
  EXPECT_EQ(r1->skipped, std::vector<std::string>{"in/cat/.DS_Store"});
  EXPECT_GT(r1->manifest.shards.size(), 3u);
  for (const auto& s : r1->manifest.shards) {
    EXPECT_LE(s.size, 8u << 10) << s.name;
    // manifest.json records both hashes of each shard's bytes, and they survive a parse.
    auto bytes = dst1->Get("out/" + s.name);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_EQ(s.crc32c, Crc32cHex(Crc32c(bytes->data.view()))) << s.name;
    EXPECT_EQ(s.sha256, ToHex(Sha256(bytes->data.view()))) << s.name;
  }
  auto parsed = ParseManifest(dst1->Get("out/manifest.json")->data.view(), "manifest.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->shards[0].crc32c, r1->manifest.shards[0].crc32c);
  // Same input, different parallelism: byte-identical output.
  o.parallel = 1;
  o.on_progress = nullptr;
  auto r2 = Pack(*src, "in/", *dst2, "out/", o);
  ASSERT_TRUE(r2.ok());
  auto l1 = object::ListAll(*dst1, ""), l2 = object::ListAll(*dst2, "");
  ASSERT_EQ(l1->size(), l2->size());
  for (size_t i = 0; i < l1->size(); ++i) {
    EXPECT_EQ((*l1)[i].key, (*l2)[i].key);
    EXPECT_EQ(dst1->Get((*l1)[i].key)->data, dst2->Get((*l2)[i].key)->data) << (*l1)[i].key;
  }
  // Sequential and random access agree with the input.
  auto ds = Dataset::Open(dst1, "out/");
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_EQ((*ds)->size(), 60u);
  for (uint64_t i : {uint64_t{0}, uint64_t{59}, uint64_t{21}, uint64_t{40}}) {
    auto s = (*ds)->Get(i);
    ASSERT_TRUE(s.ok()) << s.status();
    // Sorted keys: ant/img0, ant/img1, ant/img10, ...; check content by key.
    std::string key = "in/" + s->key + ".jpg";
    ASSERT_NE(s->Find("jpg"), nullptr);
    EXPECT_EQ(s->Find("jpg")->view(), src->Get(key)->data.view()) << s->key;
    std::string cls = s->key.substr(0, s->key.find('/'));
    EXPECT_EQ(s->Find("cls")->view(), cls == "ant" ? "0" : cls == "cat" ? "1" : "2");
  }
  uint64_t seen = 0;
  for (size_t k = 0; k < (*ds)->index().shards.size(); ++k) {
    auto stream = (*ds)->OpenShard(k, {1024, 2, nullptr});
    ASSERT_TRUE(stream.ok());
    while (true) {
      auto s = stream->samples->Next();
      ASSERT_TRUE(s.ok()) << s.status();
      if (!*s) break;
      ++seen;
    }
  }
  EXPECT_EQ(seen, 60u);
  auto report = Verify(*dst1, "out/");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << report->Describe();
  EXPECT_EQ(report->samples, 60u);
  EXPECT_TRUE(report->unlisted.empty());
}

INSTANTIATE_TEST_SUITE_P(Formats, PackTest,
                         ::testing::Values(ShardFormat::kTar, ShardFormat::kTfRecord, ShardFormat::kIndexed),
                         [](const auto& info) { return std::string(FormatName(info.param)); });

Result<PackResult> PackSmall(object::ObjectStorePtr src, object::ObjectStorePtr dst, ShardFormat f,
                             std::string key = "") {
  PackOptions o;
  o.format = f;
  o.shard_size = 4 << 10;
  o.sign_key = key;
  return Pack(*src, "in/", *dst, "", o);
}

TEST(Verify, NamesMissingTruncatedAndAlteredShards) {
  auto src = object::MakeMemStore(), dst = object::MakeMemStore();
  FillImageFolder(*src, 10);
  auto packed = PackSmall(src, dst, ShardFormat::kTar);
  ASSERT_TRUE(packed.ok()) << packed.status();
  const auto& shards = packed->manifest.shards;
  ASSERT_GE(shards.size(), 4u);
  // Missing.
  ASSERT_TRUE(dst->Delete(shards[0].name).ok());
  // Truncated.
  Buffer b1 = dst->Get(shards[1].name)->data;
  ASSERT_TRUE(dst->Put(shards[1].name, b1.Slice(0, b1.size() - 700)).ok());
  // Altered (same size: a poisoned image byte).
  std::string b2(dst->Get(shards[2].name)->data.view());
  b2[1500] ^= 0x55;
  ASSERT_TRUE(dst->Put(shards[2].name, Buffer::Copy(b2)).ok());
  // An injected object.
  ASSERT_TRUE(dst->Put("shard-999999.tar", Buffer::Copy("evil")).ok());
  auto report = Verify(*dst, "");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok());
  std::string text = report->Describe();
  EXPECT_NE(text.find("missing: " + shards[0].name), std::string::npos) << text;
  EXPECT_NE(text.find("truncated: " + shards[1].name), std::string::npos) << text;
  EXPECT_NE(text.find("altered (sha256 mismatch): " + shards[2].name), std::string::npos) << text;
  EXPECT_EQ(text.find(shards[3].name), std::string::npos) << text;
  EXPECT_EQ(report->unlisted, std::vector<std::string>{"shard-999999.tar"});
}

// A shard's crc32c is 8 lowercase hex digits or absent (manifests written
// before it was recorded); anything else is refused, naming the shard.
TEST(ManifestCrc32c, MalformedIsCorruptionAndAbsentIsUnknown) {
  const std::string head = R"({"version":1,"shard_format":"tar","compression":"none","fields":["x"],"shards":[)";
  auto parse = [&](const std::string& extra) {
    return ParseManifest(head + R"({"name":"a.tar","size":10,"samples":1)" + extra + "}]}", "m.json");
  };
  auto absent = parse("");
  ASSERT_TRUE(absent.ok()) << absent.status();
  EXPECT_EQ(absent->shards[0].crc32c, "");
  auto good = parse(R"(,"crc32c":"e3069283")");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->shards[0].crc32c, "e3069283");
  EXPECT_NE(EncodeManifest(*good).find("e3069283"), std::string::npos);
  EXPECT_EQ(EncodeIndex(*good).find("crc32c"), std::string::npos);  // readers' index: no hashes
  for (const char* bad : {R"(,"crc32c":"E3069283")", R"(,"crc32c":"e306928")", R"(,"crc32c":7)"}) {
    auto r = parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kCorruption) << bad;
  }
}

TEST(Verify, SignatureDetectsARewrittenManifest) {
  auto src = object::MakeMemStore(), dst = object::MakeMemStore();
  FillImageFolder(*src, 5);
  // Tar: no per-record checksums, so only the manifest protects the bytes.
  ASSERT_TRUE(PackSmall(src, dst, ShardFormat::kTar, "s3cret").ok());
  auto ok = Verify(*dst, "", SignedBy("s3cret"));
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok->ok()) << ok->Describe();
  EXPECT_TRUE(ok->signature_checked);
  auto wrong = Verify(*dst, "", SignedBy("other"));
  ASSERT_TRUE(wrong.ok());
  ASSERT_FALSE(wrong->ok());
  EXPECT_EQ(wrong->problems[0].kind, Problem::Kind::kSignature);
  // The attacker alters a shard and rewrites the manifest's hash to match.
  auto m = ParseManifest(dst->Get("manifest.json")->data.view(), "manifest.json");
  ASSERT_TRUE(m.ok());
  std::string shard(dst->Get(m->shards[0].name)->data.view());
  shard[shard.size() - 3] ^= 1;
  ASSERT_TRUE(dst->Put(m->shards[0].name, Buffer::Copy(shard)).ok());
  std::string text(dst->Get("manifest.json")->data.view());
  size_t at = text.find(m->shards[0].sha256);
  text.replace(at, 64, ToHex(Sha256(shard)));
  ASSERT_TRUE(dst->Put("manifest.json", Buffer::Copy(text)).ok());
  auto unkeyed = Verify(*dst, "");
  ASSERT_TRUE(unkeyed.ok());
  EXPECT_TRUE(unkeyed->ok());  // hashes agree: only the signature can tell
  auto keyed = Verify(*dst, "", SignedBy("s3cret"));
  ASSERT_TRUE(keyed.ok());
  ASSERT_FALSE(keyed->ok());
  EXPECT_EQ(keyed->problems[0].kind, Problem::Kind::kSignature);
  // An unsigned manifest fails when a key is required.
  auto src2 = object::MakeMemStore(), dst2 = object::MakeMemStore();
  FillImageFolder(*src2, 2);
  ASSERT_TRUE(PackSmall(src2, dst2, ShardFormat::kTar).ok());
  auto unsigned_report = Verify(*dst2, "", SignedBy("s3cret"));
  ASSERT_TRUE(unsigned_report.ok());
  EXPECT_FALSE(unsigned_report->ok());
}

TEST(Verify, MissingManifestIsNotFoundAndGarbageIsCorruption) {
  auto dst = object::MakeMemStore();
  EXPECT_EQ(Verify(*dst, "").status().code(), Code::kNotFound);
  ASSERT_TRUE(dst->Put("manifest.json", Buffer::Copy("{\"version\": 1, \"shards\": 3}")).ok());
  EXPECT_EQ(Verify(*dst, "").status().code(), Code::kCorruption);
}

TEST(Pack, RejectsBadOptionsAndEmptyInput) {
  auto src = object::MakeMemStore(), dst = object::MakeMemStore();
  PackOptions o;
  EXPECT_EQ(Pack(*src, "", *dst, "", o).status().code(), Code::kInvalidArgument);  // no samples
  o.zstd = true;
  ASSERT_TRUE(src->Put("a.txt", Buffer::Copy("x")).ok());
  EXPECT_EQ(Pack(*src, "", *dst, "", o).status().code(), Code::kInvalidArgument);  // zstd on tar
  o.zstd = false;
  o.parallel = 0;
  EXPECT_EQ(Pack(*src, "", *dst, "", o).status().code(), Code::kInvalidArgument);
}

TEST(Pack, WebDatasetLayoutGroupsFieldsByKey) {
  auto src = object::MakeMemStore(), dst = object::MakeMemStore();
  ASSERT_TRUE(src->Put("000001.jpg", Buffer::Copy("J1")).ok());
  ASSERT_TRUE(src->Put("000001.json", Buffer::Copy("{}")).ok());
  ASSERT_TRUE(src->Put("000002.jpg", Buffer::Copy("J2")).ok());
  ASSERT_TRUE(src->Put("000002.seg.png", Buffer::Copy("P2")).ok());
  ASSERT_TRUE(src->Put("LICENSE", Buffer::Copy("mit")).ok());
  PackOptions o;
  o.format = ShardFormat::kIndexed;
  o.zstd = true;
  auto r = Pack(*src, "", *dst, "ds/", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->manifest.classes.size(), 0u);
  EXPECT_EQ(r->skipped, std::vector<std::string>{"LICENSE"});
  EXPECT_EQ(r->manifest.fields, (std::vector<std::string>{"jpg", "json", "seg.png"}));
  auto ds = Dataset::Open(dst, "ds/");
  ASSERT_TRUE(ds.ok());
  auto s = (*ds)->Get(1);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->key, "000002");
  EXPECT_EQ(s->Find("seg.png")->view(), "P2");
  auto text = Inspect(dst, "ds/", SampleNumber(1));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_NE(text->find("samples:     2"), std::string::npos) << *text;
  EXPECT_NE(text->find("indexed (zstd)"), std::string::npos) << *text;
  EXPECT_NE(text->find("key: 000002"), std::string::npos) << *text;
  EXPECT_NE(text->find("\"P2\""), std::string::npos) << *text;
}

TEST(Pack, RefusesNamesThatAreNotUtf8) {
  auto src = object::MakeMemStore(), dst = object::MakeMemStore();
  ASSERT_TRUE(src->Put("in/000001.\xffjpg", Buffer::FromString("x")).ok());
  auto r = PackSmall(src, dst, ShardFormat::kTfRecord);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().ToString().find("not valid UTF-8"), std::string::npos) << r.status();
  // Any format: the manifest lists field names, and JSON holds only UTF-8.
  auto tar = PackSmall(src, object::MakeMemStore(), ShardFormat::kTar);
  EXPECT_EQ(tar.status().code(), Code::kInvalidArgument);
  EXPECT_NE(tar.status().ToString().find("in/000001.\\xffjpg"), std::string::npos) << tar.status();
}

TEST(ShardRandomReader, TruncatedShardIsCorruptionNamingOffset) {
  auto src = object::MakeMemStore(), dst = object::MakeMemStore();
  FillImageFolder(*src, 3);
  auto r = PackSmall(src, dst, ShardFormat::kTfRecord);
  ASSERT_TRUE(r.ok());
  const auto& s0 = r->manifest.shards[0];
  Buffer b = dst->Get(s0.name)->data;
  ASSERT_TRUE(dst->Put(s0.name, b.Slice(0, b.size() - 10)).ok());
  auto reader = ShardRandomReader::Open(*dst, s0.name, ShardFormat::kTfRecord);
  ASSERT_TRUE(reader.ok());
  auto last = (*reader)->Get((*reader)->size() - 1);
  ASSERT_FALSE(last.ok());
  EXPECT_EQ(last.status().code(), Code::kCorruption);
  EXPECT_NE(last.status().message().find(s0.name + ": offset"), std::string::npos) << last.status();
  EXPECT_EQ((*reader)->Get(1000).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace strata::dataset
