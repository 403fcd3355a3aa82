#include "object/transfer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "object/cloud_store.h"
#include "object/fault_store.h"
#include "object/mem_store.h"
#include "object/store_wrapper.h"

namespace strata::object {
namespace {

std::string RandomBytes(size_t n) {
  std::mt19937 gen(1234);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(gen());
  return s;
}

std::shared_ptr<ObjectStore> SmallPartStore() { return MakeMemStore("", MemStoreOptions{.min_part_size = 1000}); }

TEST(ParallelGet, ReassemblesRangesExactly) {
  auto store = SmallPartStore();
  const std::string data = RandomBytes(100'003);
  ASSERT_TRUE(store->Put("k", Buffer::Copy(data)).ok());
  for (uint64_t part : {1000u, 4096u, 100'003u, 1u << 20}) {
    auto got = ParallelGet(*store, "k", part, 4);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(got->view() == data) << part;
  }
  ASSERT_TRUE(store->Put("empty", Buffer()).ok());
  auto empty = ParallelGet(*store, "empty", 1000, 4);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->size(), 0u);
  EXPECT_EQ(ParallelGet(*store, "missing", 1000, 4).status().code(), Code::kNotFound);
  EXPECT_EQ(ParallelGet(*store, "k", 0, 4).status().code(), Code::kInvalidArgument);
}

TEST(ParallelGet, PinsTheEtagSoOverwritesCannotMix) {
  auto inner = SmallPartStore();
  ASSERT_TRUE(inner->Put("k", Buffer::Copy(RandomBytes(10'000))).ok());
  // Overwrite the object after the Head, before the ranged reads.
  class OverwriteAfterHead : public StoreWrapper {
   public:
    using StoreWrapper::StoreWrapper;
    Result<ObjectInfo> Head(std::string_view key) override {
      auto info = StoreWrapper::Head(key);
      base().Put(key, Buffer::Copy(std::string(10'000, 'z'))).status().IgnoreError();
      return info;
    }
  };
  OverwriteAfterHead store(inner);
  EXPECT_EQ(ParallelGet(store, "k", 1000, 4).status().code(), Code::kPreconditionFailed);
}

TEST(ParallelGet, FirstErrorWins) {
  auto inner = SmallPartStore();
  ASSERT_TRUE(inner->Put("k", Buffer::Copy(RandomBytes(10'000))).ok());
  FaultStore store(inner, FaultConfig{});
  store.FailKey("k", UnavailableError("injected"), 1, FaultOp::kGet);
  EXPECT_EQ(ParallelGet(store, "k", 1000, 3).status().code(), Code::kUnavailable);
}

TEST(ParallelGet, ConcurrencyDividesEmulatedTime) {
  // 8 ranges of 1 MB at 1 MB/s + 10 ms each; the Head costs 10 ms.
  auto run = [](int concurrency) {
    FakeClock clock(true);
    CloudProfile profile;
    profile.first_byte = std::chrono::milliseconds(10);
    profile.bytes_per_second_per_connection = 1e6;
    auto inner = MakeMemStore();
    EXPECT_TRUE(inner->Put("k", Buffer::Copy(std::string(8'000'000, 'x'))).ok());
    auto store = EmulateCloud(inner, profile, clock);
    EXPECT_TRUE(ParallelGet(*store, "k", 1'000'000, concurrency).ok());
    return clock.TotalSlept();
  };
  // Total request-time is the same whatever the concurrency: 9 requests' latency + 8 s of body.
  EXPECT_EQ(run(1), std::chrono::milliseconds(90 + 8000));
  EXPECT_EQ(run(8), std::chrono::milliseconds(90 + 8000));
}

// Collects streamed ranges into one string (distinct offsets: safe to fill
// concurrently) and counts the calls.
struct Collector {
  explicit Collector(size_t n) : bytes(n, '\0') {}
  RangeConsumer Consumer() {
    return [this](uint64_t offset, const uint8_t* data, size_t n) -> Status {
      if (offset + n > bytes.size()) return CorruptionError("out of bounds");
      std::memcpy(bytes.data() + offset, data, n);
      calls++;
      return Status::Ok();
    };
  }
  std::string bytes;
  std::atomic<int> calls{0};
};

TEST(ParallelGetTo, StreamsEveryRangeToTheConsumer) {
  auto store = SmallPartStore();
  const std::string data = RandomBytes(100'003);
  ASSERT_TRUE(store->Put("k", Buffer::Copy(data)).ok());
  for (uint64_t part : {1000u, 4096u, 100'003u, 1u << 20}) {
    Collector out(data.size());
    auto info = ParallelGetTo(*store, "k", part, 4, out.Consumer());
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->size, data.size());
    EXPECT_FALSE(info->etag.empty());
    EXPECT_TRUE(out.bytes == data) << part;
    EXPECT_EQ(out.calls.load(), static_cast<int>((data.size() + part - 1) / part));
  }
  ASSERT_TRUE(store->Put("empty", Buffer()).ok());
  Collector none(0);
  auto empty = ParallelGetTo(*store, "empty", 1000, 4, none.Consumer());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->size, 0u);
  EXPECT_EQ(none.calls.load(), 0);
  EXPECT_EQ(ParallelGetTo(*store, "missing", 1000, 4, none.Consumer()).status().code(), Code::kNotFound);
  EXPECT_EQ(ParallelGetTo(*store, "k", 1000, 0, none.Consumer()).status().code(), Code::kInvalidArgument);
}

TEST(ParallelGetTo, ConsumerErrorStopsTheDownload) {
  auto store = SmallPartStore();
  ASSERT_TRUE(store->Put("k", Buffer::Copy(RandomBytes(100'000))).ok());
  std::atomic<int> calls{0};
  auto info = ParallelGetTo(*store, "k", 1000, 1, [&](uint64_t, const uint8_t*, size_t) {
    return ++calls == 3 ? Status(Code::kNoSpace, "disk full") : Status::Ok();
  });
  EXPECT_EQ(info.status().code(), Code::kNoSpace);
  EXPECT_EQ(calls.load(), 3);  // one at a time: nothing after the failure
}

// A store with the streaming fast path: serves ranges in small pieces, like
// a network transport, and records that Get() was not used for the parts.
class StreamingStore : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Result<GetResult> Get(std::string_view key, const GetOptions& options) override {
    if (options.range) ranged_gets++;
    return StoreWrapper::Get(key, options);
  }
  StoreCapabilities Capabilities() const override {
    StoreCapabilities caps = StoreWrapper::Capabilities();
    caps.range_streaming = true;
    return caps;
  }
  Status ReadRangeTo(std::string_view key, std::string_view etag, uint64_t offset, uint64_t length,
                     const RangeConsumer& consume) override {
    streamed++;
    GetOptions options;
    options.if_match = std::string(etag);
    options.range = ByteRange::Of(offset, length);
    STRATA_ASSIGN_OR_RETURN(GetResult got, StoreWrapper::Get(key, options));
    for (size_t at = 0; at < got.data.size(); at += 7) {
      STRATA_RETURN_IF_ERROR(consume(offset + at, got.data.data() + at, std::min<size_t>(7, got.data.size() - at)));
    }
    return Status::Ok();
  }
  std::atomic<int> ranged_gets{0}, streamed{0};
};

TEST(ParallelGet, UsesTheStoresStreamingPathWhenItHasOne) {
  auto inner = SmallPartStore();
  const std::string data = RandomBytes(50'001);
  ASSERT_TRUE(inner->Put("k", Buffer::Copy(data)).ok());
  StreamingStore store(inner);
  auto got = ParallelGet(store, "k", 4096, 3);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->view() == data);
  Collector out(data.size());
  auto info = ParallelGetTo(store, "k", 4096, 3, out.Consumer());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(out.bytes == data);
  EXPECT_EQ(store.streamed.load(), 2 * 13);  // 13 parts of 4096, twice
  EXPECT_EQ(store.ranged_gets.load(), 0);
  // The ETag pin reaches the streaming path too.
  class OverwriteAfterHead : public StreamingStore {
   public:
    using StreamingStore::StreamingStore;
    Result<ObjectInfo> Head(std::string_view key) override {
      auto info = StoreWrapper::Head(key);
      base().Put(key, Buffer::Copy(std::string(50'001, 'z'))).status().IgnoreError();
      return info;
    }
  };
  OverwriteAfterHead changing(inner);
  EXPECT_EQ(ParallelGet(changing, "k", 4096, 3).status().code(), Code::kPreconditionFailed);
}

TEST(ParallelPut, SmallDataIsOnePut) {
  auto store = SmallPartStore();
  auto info = ParallelPut(*store, "k", Buffer::Copy("small"), 1000, 4);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->etag.find('-'), std::string::npos);
  EXPECT_EQ(store->Get("k")->data.ToString(), "small");
}

TEST(ParallelPut, LargeDataIsMultipart) {
  auto store = SmallPartStore();
  const std::string data = RandomBytes(10'500);
  auto info = ParallelPut(*store, "k", Buffer::Copy(data), 1000, 4);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->size, data.size());
  EXPECT_TRUE(info->etag.size() > 3 && info->etag.substr(info->etag.size() - 3) == "-11") << info->etag;
  EXPECT_TRUE(store->Get("k")->data.view() == data);
}

TEST(ParallelPut, RejectsPartsBelowTheMinimumOrTooMany) {
  auto store = SmallPartStore();
  EXPECT_EQ(ParallelPut(*store, "k", Buffer::Copy(RandomBytes(5000)), 999, 2).status().code(), Code::kInvalidArgument);
  auto tiny = MakeMemStore("", MemStoreOptions{.min_part_size = 1});
  EXPECT_EQ(ParallelPut(*tiny, "k", Buffer::Copy(RandomBytes(10'001)), 1, 2).status().code(), Code::kInvalidArgument);
}

// Records the id of the multipart upload it creates (to check it was aborted).
class RecordsUploadId : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Result<std::string> CreateMultipartUpload(std::string_view key, const PutOptions& o) override {
    auto id = StoreWrapper::CreateMultipartUpload(key, o);
    if (id.ok()) upload_id = *id;
    return id;
  }
  std::string upload_id;
};

// ... and fails part 3 (or the create, when asked).
class FlakyUploads : public RecordsUploadId {
 public:
  using RecordsUploadId::RecordsUploadId;
  Result<std::string> UploadPart(std::string_view key, std::string_view id, int n, Buffer data,
                                 const PartOptions& o) override {
    if (n == 3) return UnavailableError("part 3 lost");
    return StoreWrapper::UploadPart(key, id, n, std::move(data), o);
  }
};

TEST(ParallelPut, AbortsOnFailure) {
  auto inner = SmallPartStore();
  FlakyUploads store(inner);
  EXPECT_EQ(ParallelPut(store, "k", Buffer::Copy(RandomBytes(5000)), 1000, 2).status().code(), Code::kUnavailable);
  ASSERT_FALSE(store.upload_id.empty());
  EXPECT_EQ(inner->ListParts("k", store.upload_id).status().code(), Code::kNotFound);  // aborted
  EXPECT_EQ(inner->Head("k").status().code(), Code::kNotFound);

  // A failing create leaves nothing behind and returns its own error.
  auto faulty = std::make_shared<FaultStore>(inner, FaultConfig{});
  FlakyUploads create_fails(faulty);
  faulty->FailKey("k", Status(Code::kThrottled, "slow down"), 1, FaultOp::kMultipart);
  EXPECT_EQ(ParallelPut(create_fails, "k", Buffer::Copy(RandomBytes(5000)), 1000, 2).status().code(), Code::kThrottled);
  EXPECT_TRUE(create_fails.upload_id.empty());
}

// Counts parts held in memory across a copy: a ranged Get on the source
// starts one, the destination's UploadPart of it ends it.
struct PartTally {
  std::atomic<int> held{0}, peak{0};
};
class CountingStore : public StoreWrapper {
 public:
  CountingStore(ObjectStorePtr inner, PartTally& tally) : StoreWrapper(std::move(inner)), tally_(tally) {}
  Result<GetResult> Get(std::string_view key, const GetOptions& o) override {
    int now = ++tally_.held;
    int seen = tally_.peak.load();
    while (now > seen && !tally_.peak.compare_exchange_weak(seen, now)) {
    }
    return StoreWrapper::Get(key, o);
  }
  Result<std::string> UploadPart(std::string_view key, std::string_view id, int n, Buffer data,
                                 const PartOptions& o) override {
    auto etag = StoreWrapper::UploadPart(key, id, n, std::move(data), o);
    --tally_.held;
    return etag;
  }

 private:
  PartTally& tally_;
};

TEST(ParallelCopy, StreamsPartsBetweenStoresHoldingAtMostConcurrencyParts) {
  auto src = SmallPartStore();
  const std::string data = RandomBytes(50'500);
  ASSERT_TRUE(src->Put("big", Buffer::Copy(data)).ok());
  ASSERT_TRUE(src->Put("small", Buffer::Copy("tiny")).ok());
  auto dst = SmallPartStore();
  PartTally tally;
  CountingStore counted_src(src, tally), counted_dst(dst, tally);
  auto info = ParallelCopy(counted_src, "big", counted_dst, "copy/big", 1000, 3);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->size, data.size());
  EXPECT_TRUE(info->etag.size() > 3 && info->etag.substr(info->etag.size() - 3) == "-51") << info->etag;
  EXPECT_TRUE(dst->Get("copy/big")->data.view() == data);
  EXPECT_GE(tally.peak.load(), 1);
  EXPECT_LE(tally.peak.load(), 3);  // memory is bounded by the parts in flight, not the object
  EXPECT_EQ(tally.held.load(), 0);

  auto one = ParallelCopy(*src, "small", *dst, "copy/small", 1000, 3);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->etag.find('-'), std::string::npos);  // one plain Put
  EXPECT_EQ(dst->Get("copy/small")->data.ToString(), "tiny");
  EXPECT_EQ(ParallelCopy(*src, "missing", *dst, "x", 1000, 3).status().code(), Code::kNotFound);
}

TEST(ParallelCopy, RaisesThePartSizeToTheDestinationsLimits) {
  auto src = MakeMemStore("", MemStoreOptions{.min_part_size = 1});
  const std::string data = RandomBytes(20'001);
  ASSERT_TRUE(src->Put("k", Buffer::Copy(data)).ok());
  auto dst = MakeMemStore("", MemStoreOptions{.min_part_size = 1});
  auto info = ParallelCopy(*src, "k", *dst, "k", 1, 8);  // 20001 parts of 1 byte would exceed 10000
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(info->etag.size() > 5 && info->etag.substr(info->etag.size() - 5) == "-6667") << info->etag;
  EXPECT_TRUE(dst->Get("k")->data.view() == data);
  auto strict = SmallPartStore();  // min part 1000: 20001 bytes in 21 parts
  info = ParallelCopy(*src, "k", *strict, "k", 10, 8);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(info->etag.substr(info->etag.size() - 3) == "-21") << info->etag;
}

TEST(ParallelCopy, SourceOrDestinationFailureAbortsAndNamesTheSide) {
  auto inner = SmallPartStore();
  ASSERT_TRUE(inner->Put("k", Buffer::Copy(RandomBytes(10'000))).ok());
  FaultStore src(inner, FaultConfig{});
  src.FailKey("k", UnavailableError("injected"), 1, FaultOp::kGet);
  auto dst_inner = SmallPartStore();
  FlakyUploads dst(dst_inner);
  Status st = ParallelCopy(src, "k", dst, "out", 1000, 2).status();
  EXPECT_EQ(st.code(), Code::kUnavailable) << st;
  EXPECT_NE(st.ToString().find("read source 'k'"), std::string::npos) << st;
  ASSERT_FALSE(dst.upload_id.empty());
  EXPECT_EQ(dst_inner->ListParts("out", dst.upload_id).status().code(), Code::kNotFound);  // aborted
  EXPECT_EQ(dst_inner->Head("out").status().code(), Code::kNotFound);

  // The destination losing part 3 is named as the destination.
  st = ParallelCopy(*inner, "k", dst, "out", 1000, 2).status();
  EXPECT_EQ(st.code(), Code::kUnavailable) << st;
  EXPECT_NE(st.ToString().find("write destination 'out'"), std::string::npos) << st;
  EXPECT_EQ(dst_inner->Head("out").status().code(), Code::kNotFound);
}

TEST(ParallelPutFrom, ReadsBoundedPartsAndHandsThemOverInOrder) {
  auto store = SmallPartStore();
  const std::string data = RandomBytes(20'500);
  std::atomic<uint64_t> largest{0};
  PartSource source = [&](uint64_t offset, uint64_t length) -> Result<Buffer> {
    uint64_t seen = largest.load();
    while (length > seen && !largest.compare_exchange_weak(seen, length)) {
    }
    if (offset % 3000 == 0) std::this_thread::yield();  // parts become ready out of order
    return Buffer::Copy(std::string_view(data).substr(offset, length));
  };
  std::string streamed;  // what in_order saw, in its order
  bool committed_after_all = false;
  StreamPutHooks hooks;
  hooks.in_order = [&](uint64_t offset, const Buffer& part) {
    EXPECT_EQ(offset, streamed.size());
    streamed += part.ToString();
    return Status::Ok();
  };
  hooks.before_commit = [&] {
    committed_after_all = streamed.size() == data.size();
    return Status::Ok();
  };
  auto info = ParallelPutFrom(*store, "k", data.size(), 1000, 4, source, hooks);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(streamed, data);
  EXPECT_TRUE(committed_after_all);
  EXPECT_LE(largest.load(), 1000u);  // never the whole object at once
  EXPECT_TRUE(store->Get("k")->data.view() == data);
  EXPECT_TRUE(info->etag.size() > 3 && info->etag.substr(info->etag.size() - 3) == "-21") << info->etag;
}

TEST(ParallelPutFrom, AFailedCheckOrSourceLeavesNoObject) {
  for (uint64_t size : {500u, 20'500u}) {  // one Put, and a multipart upload
    const std::string data = RandomBytes(size);
    PartSource source = [&](uint64_t offset, uint64_t length) -> Result<Buffer> {
      return Buffer::Copy(std::string_view(data).substr(offset, length));
    };
    auto inner = SmallPartStore();
    RecordsUploadId store(inner);
    StreamPutHooks hooks;
    hooks.before_commit = [] { return CorruptionError("hash mismatch"); };
    EXPECT_EQ(ParallelPutFrom(store, "k", size, 1000, 3, source, hooks).status().code(), Code::kCorruption);
    EXPECT_EQ(inner->Head("k").status().code(), Code::kNotFound) << size;
    if (!store.upload_id.empty()) {
      EXPECT_EQ(inner->ListParts("k", store.upload_id).status().code(), Code::kNotFound);
    }

    // A source failing in the middle (workers waiting for their turn are released).
    std::atomic<int> calls{0};
    PartSource flaky = [&](uint64_t offset, uint64_t length) -> Result<Buffer> {
      if (++calls == 2 || size < 1000) return IOError("injected read failure");
      return Buffer::Copy(std::string_view(data).substr(offset, length));
    };
    hooks.before_commit = nullptr;
    hooks.in_order = [](uint64_t, const Buffer&) { return Status::Ok(); };
    EXPECT_EQ(ParallelPutFrom(*inner, "k", size, 1000, 3, flaky, hooks).status().code(), Code::kIOError);
    EXPECT_EQ(inner->Head("k").status().code(), Code::kNotFound) << size;
  }
}

TEST(ListAll, FollowsContinuationTokens) {
  auto store = MakeMemStore();
  for (int i = 0; i < 2500; ++i) {
    ASSERT_TRUE(store->Put("p/" + std::to_string(100000 + i), Buffer()).ok());
  }
  ASSERT_TRUE(store->Put("q", Buffer()).ok());
  auto all = ListAll(*store, "p/");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2500u);
  EXPECT_EQ(all->front().key, "p/100000");
  EXPECT_EQ(all->back().key, "p/102499");
}

TEST(ListAll, DelimiterCollectsCommonPrefixesOfEveryPage) {
  auto store = MakeMemStore();
  for (int i = 0; i < 1500; ++i) {
    ASSERT_TRUE(store->Put("d/" + std::to_string(100000 + i) + "/x", Buffer()).ok());
  }
  ASSERT_TRUE(store->Put("d/top", Buffer()).ok());
  std::vector<std::string> prefixes;
  auto top = ListAll(*store, "d/", "/", &prefixes);
  ASSERT_TRUE(top.ok()) << top.status();
  ASSERT_EQ(top->size(), 1u);
  EXPECT_EQ(top->front().key, "d/top");
  ASSERT_EQ(prefixes.size(), 1500u);
  EXPECT_EQ(prefixes.front(), "d/100000/");
  EXPECT_EQ(prefixes.back(), "d/101499/");
}

TEST(ForEachListPage, StopsWhenTheCallerHasItsAnswer) {
  auto store = MakeMemStore();
  for (int i = 0; i < 2500; ++i) ASSERT_TRUE(store->Put("p/" + std::to_string(100000 + i), Buffer()).ok());
  ListOptions options;
  options.prefix = "p/";
  int pages = 0;
  ASSERT_TRUE(ForEachListPage(*store, options, [&](ListResult& page) {
                ++pages;
                EXPECT_TRUE(page.truncated);
                return false;
              }).ok());
  EXPECT_EQ(pages, 1);
  pages = 0;
  ASSERT_TRUE(ForEachListPage(*store, options, [&](ListResult&) { return ++pages, true; }).ok());
  EXPECT_EQ(pages, 3);  // 1000 keys a page
}

// A store whose listing claims more pages but hands back the token it was given.
class StuckListing : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Result<ListResult> List(const ListOptions& options) override {
    ListOptions first = options;  // the inner store would refuse the made-up token
    first.continuation_token.clear();
    auto page = StoreWrapper::List(first);
    if (page.ok()) {
      page->truncated = true;
      page->next_continuation_token = options.continuation_token.empty() ? "t" : options.continuation_token;
    }
    return page;
  }
};

TEST(ForEachListPage, ATokenThatDoesNotAdvanceIsAnErrorNotALoop) {
  auto inner = MakeMemStore();
  ASSERT_TRUE(inner->Put("p/a", Buffer()).ok());
  StuckListing store(inner);
  int pages = 0;
  ListOptions options;
  options.prefix = "p/";
  Status st = ForEachListPage(store, options, [&](ListResult&) { return ++pages, true; });
  EXPECT_EQ(st.code(), Code::kInternal);
  EXPECT_EQ(pages, 2);  // the first page, then the one answering token "t" with "t" again
  EXPECT_EQ(ListAll(store, "p/").status().code(), Code::kInternal);
}

}  // namespace
}  // namespace strata::object
