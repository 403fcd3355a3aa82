#include "object/store_wrapper.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "object/cloud_store.h"
#include "object/fault_store.h"
#include "object/mem_store.h"
#include "object/prefix_store.h"

namespace strata::object {
namespace {

// A base store that records which method each call reached, and answers
// with a recognisable value. Its capabilities are set by the test.
class RecordingBase : public ObjectStore {
 public:
  std::vector<std::string> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  void Clear() {
    std::lock_guard lock(mu_);
    calls_.clear();
  }
  StoreCapabilities caps;

  Result<GetResult> Get(std::string_view key, const GetOptions& o) override {
    Record("Get", key);
    GetResult r;
    r.info.key = std::string(key);
    r.info.etag = "e";
    r.info.size = 10;
    r.offset = o.range ? o.range->offset : 0;
    r.data = Buffer::Copy(std::string(o.range && o.range->length ? *o.range->length : 10, 'g'));
    return r;
  }
  Result<ObjectInfo> Head(std::string_view key) override { return Info("Head", key); }
  Result<ListResult> List(const ListOptions& o) override {
    Record("List", o.prefix);
    return ListResult{};
  }
  Result<ObjectInfo> Put(std::string_view key, Buffer, const PutOptions&) override { return Info("Put", key); }
  Status Delete(std::string_view key) override {
    Record("Delete", key);
    return Status::Ok();
  }
  Result<std::string> CreateMultipartUpload(std::string_view key, const PutOptions&) override {
    Record("CreateMultipartUpload", key);
    return std::string("id");
  }
  Result<std::string> UploadPart(std::string_view key, std::string_view, int, Buffer, const PartOptions&) override {
    Record("UploadPart", key);
    return std::string("pe");
  }
  Result<ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view, const std::vector<CompletedPart>&,
                                             const CompleteOptions&) override {
    return Info("CompleteMultipartUpload", key);
  }
  Status AbortMultipartUpload(std::string_view key, std::string_view) override {
    Record("AbortMultipartUpload", key);
    return Status::Ok();
  }
  Result<std::vector<PartInfo>> ListParts(std::string_view key, std::string_view) override {
    Record("ListParts", key);
    return std::vector<PartInfo>{};
  }
  Result<std::vector<UploadInfo>> ListMultipartUploads(std::string_view prefix) override {
    Record("ListMultipartUploads", prefix);
    return std::vector<UploadInfo>{};
  }
  Result<ObjectInfo> Copy(std::string_view, std::string_view dst_key, const CopyOptions&) override {
    return Info("Copy", dst_key);
  }
  Status ReadRangeTo(std::string_view key, std::string_view, uint64_t offset, uint64_t length,
                     const RangeConsumer& consume) override {
    Record("ReadRangeTo", key);
    std::string bytes(length, 's');
    return consume(offset, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  StoreCapabilities Capabilities() const override { return caps; }
  std::string Url() const override { return "recording://"; }

 private:
  void Record(const char* method, std::string_view key) {
    std::lock_guard lock(mu_);
    calls_.push_back(std::string(method) + " " + std::string(key));
  }
  Result<ObjectInfo> Info(const char* method, std::string_view key) {
    Record(method, key);
    ObjectInfo info;
    info.key = std::string(key);
    info.etag = method;
    return info;
  }
  std::mutex mu_;
  std::vector<std::string> calls_;
};

// A decorator that changes nothing: everything must reach the base as is.
class Transparent : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
};

// Collects what ReadRangeTo delivers.
std::string ReadRange(ObjectStore& store, std::string_view key, uint64_t offset, uint64_t length) {
  std::string out;
  Status st = store.ReadRangeTo(key, "e", offset, length, [&](uint64_t, const uint8_t* p, size_t n) {
    out.append(reinterpret_cast<const char*>(p), n);
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st;
  return out;
}

TEST(StoreWrapper, ForwardsEveryMethodToTheBase) {
  auto base = std::make_shared<RecordingBase>();
  base->caps.min_part_size = 123;
  base->caps.range_streaming = true;
  base->caps.directory_markers = false;
  Transparent store(base);

  EXPECT_EQ(store.Get("g")->info.etag, "e");
  EXPECT_EQ(store.Head("h")->etag, "Head");
  ListOptions lo;
  lo.prefix = "l";
  EXPECT_TRUE(store.List(lo).ok());
  EXPECT_EQ(store.Put("p", Buffer::Copy("x"))->etag, "Put");
  EXPECT_TRUE(store.Delete("d").ok());
  EXPECT_EQ(*store.CreateMultipartUpload("c"), "id");
  EXPECT_EQ(*store.UploadPart("u", "id", 1, Buffer::Copy("x")), "pe");
  EXPECT_EQ(store.CompleteMultipartUpload("m", "id", {})->etag, "CompleteMultipartUpload");
  EXPECT_TRUE(store.AbortMultipartUpload("a", "id").ok());
  EXPECT_TRUE(store.ListParts("lp", "id").ok());
  EXPECT_TRUE(store.ListMultipartUploads("lu").ok());
  EXPECT_EQ(store.Copy("src", "dst")->etag, "Copy");
  EXPECT_EQ(ReadRange(store, "r", 0, 3), "sss");
  EXPECT_EQ(store.Url(), "recording://");
  EXPECT_EQ(store.MinPartSize(), 123u);
  EXPECT_TRUE(store.Capabilities().range_streaming);
  EXPECT_FALSE(store.Capabilities().directory_markers);
  EXPECT_EQ(base->calls(),
            (std::vector<std::string>{"Get g", "Head h", "List l", "Put p", "Delete d", "CreateMultipartUpload c",
                                      "UploadPart u", "CompleteMultipartUpload m", "AbortMultipartUpload a",
                                      "ListParts lp", "ListMultipartUploads lu", "Copy dst", "ReadRangeTo r"}));
}

TEST(StoreWrapper, KeepsServerSideCopyInsteadOfReadingAndWriting) {
  auto base = std::make_shared<RecordingBase>();
  base->caps.server_side_copy = true;
  Transparent store(base);
  ASSERT_TRUE(store.Copy("a", "b").ok());
  EXPECT_EQ(base->calls(), (std::vector<std::string>{"Copy b"})) << "no Get + Put fallback";
  EXPECT_TRUE(store.Capabilities().server_side_copy);
}

// A base that cannot stream is read through the decorator's own Get, so a
// decorator that changes Get is not bypassed.
TEST(StoreWrapper, RangesOfANonStreamingBaseGoThroughTheWrappersGet) {
  auto base = std::make_shared<RecordingBase>();
  base->caps.range_streaming = false;
  class CountsGets : public StoreWrapper {
   public:
    using StoreWrapper::StoreWrapper;
    Result<GetResult> Get(std::string_view key, const GetOptions& o) override {
      ++gets;
      return StoreWrapper::Get(key, o);
    }
    int gets = 0;
  };
  CountsGets store(base);
  EXPECT_EQ(ReadRange(store, "k", 2, 4), "gggg");
  EXPECT_EQ(store.gets, 1);
  EXPECT_EQ(base->calls(), (std::vector<std::string>{"Get k"}));
}

// The object decorators keep the base's server-side Copy, streaming and capabilities.
TEST(StoreWrapper, ObjectDecoratorsKeepCopyAndStreaming) {
  auto base = std::make_shared<RecordingBase>();
  base->caps.server_side_copy = true;
  base->caps.range_streaming = true;
  base->caps.min_part_size = 77;
  FakeClock clock(/*auto_advance=*/true);
  CloudProfile profile;
  FaultConfig no_faults;
  no_faults.clock = &clock;
  const std::vector<std::pair<std::string, ObjectStorePtr>> decorators = {
      {"fault", std::make_shared<FaultStore>(base, no_faults)},
      {"cloud", EmulateCloud(base, profile, clock)},
      {"prefix", MakePrefixStore(base, "p/")},
  };
  for (const auto& [name, store] : decorators) {
    base->Clear();
    ASSERT_TRUE(store->Copy("a", "b").ok()) << name;
    EXPECT_EQ(ReadRange(*store, "k", 0, 2), "ss") << name;
    const std::string prefix = name == "prefix" ? "p/" : "";
    EXPECT_EQ(base->calls(), (std::vector<std::string>{"Copy " + prefix + "b", "ReadRangeTo " + prefix + "k"})) << name;
    EXPECT_EQ(store->MinPartSize(), 77u) << name;
    EXPECT_TRUE(store->Capabilities().range_streaming) << name;
  }
}

TEST(StoreWrapper, FaultStoreInjectsIntoStreamedRanges) {
  auto base = std::make_shared<RecordingBase>();
  base->caps.range_streaming = true;
  FaultStore store(base, FaultConfig{});
  store.FailKey("k", UnavailableError("injected"), 1, FaultOp::kGet);
  Status st = store.ReadRangeTo("k", "e", 0, 2, [](uint64_t, const uint8_t*, size_t) { return Status::Ok(); });
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_TRUE(base->calls().empty());
  EXPECT_EQ(ReadRange(store, "k", 0, 2), "ss");
}

TEST(StoreWrapper, MemoryAndDecoratedStoresDeclareServerSideCopy) {
  auto mem = MakeMemStore();
  EXPECT_TRUE(mem->Capabilities().server_side_copy);
  EXPECT_FALSE(mem->Capabilities().range_streaming);
  EXPECT_TRUE(MakePrefixStore(mem, "x/")->Capabilities().server_side_copy);
}

}  // namespace
}  // namespace strata::object
