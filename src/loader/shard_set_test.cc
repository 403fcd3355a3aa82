// Shard sets without an index (WebDataset tar, TFRecord) streamed by the
// loader: byte-exact with and without shuffle, exact resume with another
// worker count, one scan per shard version (ETag), corrupt shards named or
// skipped. The TFRecord files come from a reference writer here (its own
// CRC32C), not strata's.
#include "dataset/shard_set.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "cache/cache_test_util.h"
#include "dataset/tar.h"
#include "dataset/tfrecord.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "loader/loader_test_util.h"
#include "loader/shard_set_test_util.h"
#include "loader/streaming_dataset.h"
#include "object/mem_store.h"

namespace strata::loader {
namespace {

using testing::UniqueName;
using testing_cache::CountingStore;
using namespace testing::shard_sets;  // NOLINT

// Every sample of (rank 0's) workers: index -> (key, bin bytes), in order.
std::vector<DecodedSample> ReadAll(StreamingDataset& ds, const State& st) {
  std::vector<DecodedSample> out;
  for (size_t w = 0; w < ds.options().num_workers; ++w) {
    auto it = ds.Iterate(w, st);
    EXPECT_TRUE(it.ok()) << it.status();
    if (!it.ok()) return out;
    while (true) {
      auto s = (*it)->NextSample();
      EXPECT_TRUE(s.ok()) << s.status();
      if (!s.ok() || !*s) break;
      out.push_back(std::move(**s));
    }
  }
  return out;
}

StreamingOptions Opts(Shuffle shuffle, size_t workers = 1) {
  StreamingOptions o;
  o.shuffle = shuffle;
  o.shuffle_window = 2;
  o.seed = 9;
  o.num_workers = workers;
  o.batch_size = 4;
  o.share_cache = false;
  return o;
}

TEST(ShardSetTest, TarShardsStreamByteExactWithAndWithoutShuffle) {
  auto store = object::MakeMemStore(UniqueName("wds-tar"));
  WriteTarShards(*store, "wds/", {7, 5, 9, 1, 6});
  for (Shuffle sh : {Shuffle::kNone, Shuffle::kWindow}) {
    auto ds = StreamingDataset::Open(store, "wds", Opts(sh, 2));
    ASSERT_TRUE(ds.ok()) << ds.status();
    EXPECT_EQ((*ds)->size(), 28u);
    EXPECT_EQ((*ds)->index().fields, (std::vector<std::string>{"bin", "meta.json"}));
    auto got = ReadAll(**ds, (*ds)->MakeState(0, 0));
    ASSERT_EQ(got.size(), 28u);
    std::set<uint64_t> seen;
    for (const auto& s : got) {
      uint64_t i = std::stoull(s.key.substr(s.key.rfind('/') + 1));
      EXPECT_EQ(s.key, Key(i));  // the directory stays part of the key (WebDataset's rule)
      EXPECT_EQ(s.fields.at("bin").bytes.ToString(), Payload(i));
      EXPECT_EQ(s.fields.at("meta.json").json, "{\"i\":" + std::to_string(i) + "}");
      seen.insert(i);
    }
    EXPECT_EQ(seen.size(), 28u);
    auto order = (*ds)->EpochOrder(0);
    if (sh == Shuffle::kNone) {
      for (uint64_t k = 0; k < order.size(); ++k) EXPECT_EQ(order[k], k);
    }
    auto one = (*ds)->Get(13);  // random access through the scanned offsets
    ASSERT_TRUE(one.ok()) << one.status();
    EXPECT_EQ(one->fields.at("bin").bytes.ToString(), Payload(13));
  }
}

TEST(ShardSetTest, BracePatternAndListNameShardsOfOneDirectory) {
  const std::string name = UniqueName("wds-brace");
  auto store = object::MakeMemStore(name);
  WriteTarShards(*store, "d/", {3, 4, 5});
  auto ds = StreamingDataset::Open("mem://" + name + "/d/train-{000000..000001}.tar", Opts(Shuffle::kNone));
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->size(), 7u);
  auto list = StreamingDataset::Open(
      std::vector<std::string>{"mem://" + name + "/d/train-000002.tar", "mem://" + name + "/d/train-000000.tar"},
      Opts(Shuffle::kNone));
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ((*list)->size(), 8u);
  auto got = ReadAll(**list, (*list)->MakeState(0, 0));
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(got[0].key, Key(7));  // list order, not name order
  auto missing = StreamingDataset::Open("mem://" + name + "/d/train-{000000..000003}.tar", Opts(Shuffle::kNone));
  EXPECT_EQ(missing.status().code(), Code::kNotFound) << missing.status();
  auto empty = StreamingDataset::Open(object::MakeMemStore(UniqueName("wds-empty")), "", Opts(Shuffle::kNone));
  ASSERT_EQ(empty.status().code(), Code::kNotFound);
  EXPECT_NE(empty.status().message().find("mem://"), std::string::npos) << empty.status();  // names the location
}

TEST(ShardSetTest, TfRecordShardsFromAReferenceWriterStreamByteExact) {
  auto store = object::MakeMemStore(UniqueName("wds-tfr"));
  WriteTfRecordShards(*store, "", {4, 8, 3});
  for (Shuffle sh : {Shuffle::kNone, Shuffle::kWindow}) {
    auto ds = StreamingDataset::Open(store, "", Opts(sh));
    ASSERT_TRUE(ds.ok()) << ds.status();
    EXPECT_EQ((*ds)->index().format, dataset::ShardFormat::kTfRecord);
    EXPECT_EQ((*ds)->index().fields, (std::vector<std::string>{"bin"}));
    auto got = ReadAll(**ds, (*ds)->MakeState(0, 0));
    ASSERT_EQ(got.size(), 15u);
    std::set<uint64_t> seen;
    for (const auto& s : got) {
      uint64_t i = std::stoull(s.key);
      EXPECT_EQ(s.fields.at("bin").bytes.ToString(), Payload(i));
      seen.insert(i);
    }
    EXPECT_EQ(seen.size(), 15u);
  }
}

TEST(ShardSetTest, ResumeMidEpochWithAnotherWorkerCountGivesExactlyTheRest) {
  auto store = object::MakeMemStore(UniqueName("wds-resume"));
  WriteTarShards(*store, "", {6, 9, 4, 7});
  auto a = *StreamingDataset::Open(store, "", Opts(Shuffle::kWindow, 2));
  auto order = a->EpochOrder(1);
  // Workers take batches of 4 in turn: after 3 batches, 12 samples of the order are consumed.
  auto b = *StreamingDataset::Open(store, "", Opts(Shuffle::kWindow, 3));
  ASSERT_EQ(a->fingerprint(), b->fingerprint());
  auto rest = ReadAll(*b, b->MakeState(1, 12));
  std::multiset<uint64_t> got, want(order.begin() + 12, order.end());
  for (const auto& s : rest) got.insert(s.index);
  EXPECT_EQ(got, want);
}

TEST(ShardSetTest, EachShardVersionIsScannedOnce) {
  auto mem = object::MakeMemStore(UniqueName("wds-once"));
  WriteTarShards(*mem, "", {5, 5, 5});
  auto counting = std::make_shared<CountingStore>(mem);
  const std::string dir = *io::MakeTempDir("strata-scan-cache-");
  StreamingOptions o = Opts(Shuffle::kNone);
  o.index_cache_dir = dir;
  dataset::ClearScanMemo();
  auto first = StreamingDataset::Open(counting, "", o);
  ASSERT_TRUE(first.ok()) << first.status();
  int scan_gets = counting->gets.load();
  EXPECT_GE(scan_gets, 3 + 2);  // the index.json / manifest.json probes, then each shard's headers
  // A second open in this process, and one in a "new process" (memory
  // forgotten, the disk cache kept): no shard is read again.
  counting->gets = 0;
  ASSERT_TRUE(StreamingDataset::Open(counting, "", o).ok());
  EXPECT_EQ(counting->gets.load(), 2);  // index.json and manifest.json probes only
  dataset::ClearScanMemo();
  counting->gets = 0;
  auto again = StreamingDataset::Open(counting, "", o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(counting->gets.load(), 2);
  EXPECT_EQ((*again)->fingerprint(), (*first)->fingerprint());
  // A rewritten shard is another version (ETag): only it is scanned, and the dataset is another.
  WriteTarShards(*mem, "", {5, 6});
  counting->gets = 0;
  auto changed = StreamingDataset::Open(counting, "", o);
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ((*changed)->size(), 16u);
  EXPECT_GT(counting->gets.load(), 2);
  EXPECT_NE((*changed)->fingerprint(), (*first)->fingerprint());
  (void)io::RemoveAll(io::DefaultFileSystem(), dir);
}

TEST(ShardSetTest, CorruptOrTruncatedShardIsNamedOrSkipped) {
  for (bool tar : {true, false}) {
    auto store = object::MakeMemStore(UniqueName("wds-bad"));
    std::string bad_name;
    if (tar) {
      WriteTarShards(*store, "", {4, 4, 4});
      bad_name = "train-000001.tar";
    } else {
      WriteTfRecordShards(*store, "", {4, 4, 4});
      bad_name = "part-000001.tfrecord";
    }
    Buffer whole = store->Get(bad_name)->data;
    for (int damage = 0; damage < 2; ++damage) {
      std::string bytes = whole.ToString();
      if (damage == 0) {
        bytes.resize(bytes.size() * 2 / 3 + 100);  // truncated mid-member / mid-record
      } else {
        bytes[tar ? 0 : 3] ^= 0x5a;  // a header byte: tar header checksum / TFRecord length CRC
      }
      ASSERT_TRUE(store->Put(bad_name, Buffer::FromString(bytes)).ok());
      dataset::ClearScanMemo();
      auto ds = StreamingDataset::Open(store, "", Opts(Shuffle::kNone));
      ASSERT_EQ(ds.status().code(), Code::kCorruption) << ds.status();
      EXPECT_NE(ds.status().ToString().find(bad_name), std::string::npos) << ds.status();
      StreamingOptions skip = Opts(Shuffle::kNone);
      skip.skip_corrupt = true;
      auto skipped = StreamingDataset::Open(store, "", skip);
      ASSERT_TRUE(skipped.ok()) << skipped.status();
      EXPECT_EQ((*skipped)->size(), 8u);
      EXPECT_EQ(ReadAll(**skipped, (*skipped)->MakeState(0, 0)).size(), 8u);
    }
  }
}

TEST(ShardSetTest, ExpandBracesAsWebDataset) {
  auto names = dataset::ExpandBraces("train-{000008..000011}.tar");
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names,
            (std::vector<std::string>{"train-000008.tar", "train-000009.tar", "train-000010.tar", "train-000011.tar"}));
  EXPECT_EQ(*dataset::ExpandBraces("{a,b{1..2}}-{x}.tar"),
            (std::vector<std::string>{"a-{x}.tar", "b1-{x}.tar", "b2-{x}.tar"}));
  EXPECT_EQ(*dataset::ExpandBraces("p{9..11}"), (std::vector<std::string>{"p9", "p10", "p11"}));
  EXPECT_FALSE(dataset::ExpandBraces("a{1..2").ok());
  EXPECT_FALSE(dataset::ExpandBraces("{0..9999999}").ok());
  EXPECT_EQ(dataset::FormatFromName("d/x.tfrecord-00000-of-00004"), dataset::ShardFormat::kTfRecord);
  EXPECT_EQ(dataset::FormatFromName("x.tar"), dataset::ShardFormat::kTar);
  EXPECT_FALSE(dataset::FormatFromName("x.tar.gz").has_value());
}

TEST(ShardSetTest, ScanRecordsRoundTripAndRejectDamage) {
  dataset::ShardScan s;
  s.format = dataset::ShardFormat::kTfRecord;
  s.size = 1000;
  s.etag = "abc";
  s.offsets = {0, 10, 400, 1000};
  s.fields = {"bin", "cls"};
  Buffer enc = dataset::EncodeShardScan(s);
  auto back = dataset::DecodeShardScan(enc, "x");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->offsets, s.offsets);
  EXPECT_EQ(back->fields, s.fields);
  EXPECT_EQ(back->etag, "abc");
  for (size_t cut = 0; cut < enc.size(); ++cut) {
    EXPECT_FALSE(dataset::DecodeShardScan(enc.Slice(0, cut), "x").ok()) << cut;
  }
  std::string flipped = enc.ToString();
  flipped[30] ^= 1;
  EXPECT_EQ(dataset::DecodeShardScan(Buffer::FromString(flipped), "x").status().code(), Code::kCorruption);
}

}  // namespace
}  // namespace strata::loader
