// CachedStore::GetPartRange (?partNumber=) over a backend that, like s3://,
// keeps no part sizes in Head: the sizes a Complete through the cache
// returns are kept per version, a part the backend is asked for is asked
// once, and a single-part ETag needs no request at all.
#include <gtest/gtest.h>

#include <atomic>

#include "cache/block_cache.h"
#include "cache/cached_store.h"
#include "object/mem_store.h"
#include "object/store_wrapper.h"

namespace strata::cache {
namespace {

constexpr uint64_t kKiB = 1024;

// mem:// seen as an s3:// upstream: Head/Get name no part sizes; GetPartRange
// answers from the real ones (an upstream that knows ?partNumber=) and is counted.
class UpstreamLike : public object::StoreWrapper {
 public:
  explicit UpstreamLike(object::ObjectStorePtr inner) : object::StoreWrapper(std::move(inner)) {}
  using object::StoreWrapper::Get;
  std::atomic<int> part_calls{0};
  Result<object::ObjectInfo> Head(std::string_view key) override { return Strip(base_->Head(key)); }
  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override {
    auto r = base_->Get(key, options);
    if (r.ok()) r->info.part_sizes.clear();
    return r;
  }
  Result<object::PartRange> GetPartRange(std::string_view key, std::string_view etag, int part_number) override {
    ++part_calls;
    return base_->GetPartRange(key, etag, part_number);
  }
  object::StoreCapabilities Capabilities() const override {
    auto caps = base_->Capabilities();
    caps.part_sizes_kept = false;
    return caps;
  }

 private:
  static Result<object::ObjectInfo> Strip(Result<object::ObjectInfo> r) {
    if (r.ok()) r->part_sizes.clear();
    return r;
  }
};

struct PartsFixture {
  PartsFixture() {
    object::MemStoreOptions mo;
    mo.min_part_size = 4 * kKiB;
    mem = object::MakeMemStore("", mo);
    upstream = std::make_shared<UpstreamLike>(mem);
    CacheOptions copt;
    copt.block_size = 4 * kKiB;
    copt.ram_bytes = 1 << 20;
    cache = BlockCache::Open(copt).value();
    store = std::make_shared<CachedStore>(upstream, cache);
  }
  // Parts of 4 KiB, 4 KiB + 7 and 100 bytes, uploaded through `s`.
  object::ObjectInfo Upload(object::ObjectStore& s, const std::string& key) {
    const uint64_t sizes[] = {4 * kKiB, 4 * kKiB + 7, 100};
    auto id = s.CreateMultipartUpload(key);
    EXPECT_TRUE(id.ok()) << id.status();
    std::vector<object::CompletedPart> parts;
    for (int n = 1; n <= 3; ++n) {
      auto etag = s.UploadPart(key, *id, n, Buffer::FromString(std::string(sizes[n - 1], char('a' + n))));
      EXPECT_TRUE(etag.ok()) << etag.status();
      parts.push_back({n, *etag});
    }
    auto info = s.CompleteMultipartUpload(key, *id, parts);
    EXPECT_TRUE(info.ok()) << info.status();
    return *info;
  }
  // `pin` is the ETag passed (empty: unpinned); every answer names `etag`.
  void ExpectParts(const std::string& key, const std::string& etag, const std::string& pin) {
    const uint64_t offsets[] = {0, 4 * kKiB, 8 * kKiB + 7}, lengths[] = {4 * kKiB, 4 * kKiB + 7, 100};
    for (int n = 1; n <= 3; ++n) {
      auto r = store->GetPartRange(key, pin, n);
      ASSERT_TRUE(r.ok()) << n << ": " << r.status();
      EXPECT_EQ(r->offset, offsets[n - 1]) << n;
      EXPECT_EQ(r->length, lengths[n - 1]) << n;
      EXPECT_EQ(r->parts_count, 3) << n;
      EXPECT_EQ(r->etag, etag) << n;
    }
  }
  object::ObjectStorePtr mem;
  std::shared_ptr<UpstreamLike> upstream;
  std::shared_ptr<BlockCache> cache;
  std::shared_ptr<CachedStore> store;
};

TEST(CachedStoreParts, SizesLearnedFromACompleteThroughTheCacheNeedNoRequest) {
  PartsFixture f;
  object::ObjectInfo info = f.Upload(*f.store, "mp");
  ASSERT_EQ(info.part_sizes.size(), 3u);
  f.ExpectParts("mp", info.etag, info.etag);
  f.ExpectParts("mp", info.etag, "");  // unpinned: the current version's
  EXPECT_EQ(f.store->GetPartRange("mp", info.etag, 4).status().code(), Code::kOutOfRange);
  EXPECT_EQ(f.upstream->part_calls.load(), 0);
}

TEST(CachedStoreParts, TheBackendIsAskedOncePerVersionAndPart) {
  PartsFixture f;
  object::ObjectInfo info = f.Upload(*f.mem, "mp");  // written by another client
  f.ExpectParts("mp", info.etag, info.etag);
  EXPECT_EQ(f.upstream->part_calls.load(), 3);
  f.ExpectParts("mp", info.etag, info.etag);
  EXPECT_EQ(f.upstream->part_calls.load(), 3);  // kept
  EXPECT_EQ(f.store->GetPartRange("mp", info.etag, 4).status().code(), Code::kOutOfRange);
  EXPECT_EQ(f.store->GetPartRange("mp", "not-this-version", 1).status().code(), Code::kPreconditionFailed);

  // Replaced by a single PUT: a new ETag, nothing kept applies, and a
  // single-part ETag is answered without asking.
  ASSERT_TRUE(f.store->Put("mp", Buffer::FromString("one piece")).ok());
  const int calls = f.upstream->part_calls.load();
  auto r = f.store->GetPartRange("mp", "", 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->offset, 0u);
  EXPECT_EQ(r->length, 9u);
  EXPECT_EQ(r->parts_count, 0);
  EXPECT_EQ(f.store->GetPartRange("mp", "", 2).status().code(), Code::kOutOfRange);
  EXPECT_EQ(f.upstream->part_calls.load(), calls);
  EXPECT_EQ(f.store->GetPartRange("missing", "", 1).status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace strata::cache
