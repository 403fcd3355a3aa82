// StoreWrapper: the forwarding base of every ObjectStore decorator (as
// LevelDB's EnvWrapper is for Env). Each method calls the same method of the
// base store, so a decorator overrides only what it changes and keeps
// everything else, server-side Copy and range streaming included.
//
// A decorator that changes what Get returns (or counts or delays it) must
// also override ReadRangeTo when its base streams, since a streamed range
// never goes through Get; the forwarding ReadRangeTo below falls back to this
// store's Get when the base does not stream. Thread-safe if the base is.
#pragma once

#include <utility>

#include "object/object_store.h"

namespace strata::object {

class StoreWrapper : public ObjectStore {
 public:
  // Owns `base` (shared).
  explicit StoreWrapper(ObjectStorePtr base) : base_(std::move(base)) {}

  ObjectStore& base() const { return *base_; }
  const ObjectStorePtr& base_ptr() const { return base_; }

  using ObjectStore::CompleteMultipartUpload;
  using ObjectStore::Copy;
  using ObjectStore::CreateMultipartUpload;
  using ObjectStore::Get;
  using ObjectStore::Put;
  using ObjectStore::UploadPart;

  Result<GetResult> Get(std::string_view key, const GetOptions& options) override { return base_->Get(key, options); }
  Result<ObjectInfo> Head(std::string_view key) override { return base_->Head(key); }
  Result<ListResult> List(const ListOptions& options) override { return base_->List(options); }
  Result<ObjectInfo> Put(std::string_view key, Buffer data, const PutOptions& options) override {
    return base_->Put(key, std::move(data), options);
  }
  Status Delete(std::string_view key) override { return base_->Delete(key); }
  Result<std::string> CreateMultipartUpload(std::string_view key, const PutOptions& options) override {
    return base_->CreateMultipartUpload(key, options);
  }
  Result<std::string> UploadPart(std::string_view key, std::string_view upload_id, int part_number, Buffer data,
                                 const PartOptions& options) override {
    return base_->UploadPart(key, upload_id, part_number, std::move(data), options);
  }
  Result<ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                             const std::vector<CompletedPart>& parts,
                                             const CompleteOptions& options) override {
    return base_->CompleteMultipartUpload(key, upload_id, parts, options);
  }
  Result<std::optional<ObjectInfo>> FindCompletedUpload(std::string_view key, std::string_view upload_id,
                                                        const std::vector<CompletedPart>& parts) override {
    return base_->FindCompletedUpload(key, upload_id, parts);
  }
  Status AbortMultipartUpload(std::string_view key, std::string_view upload_id) override {
    return base_->AbortMultipartUpload(key, upload_id);
  }
  Result<std::vector<PartInfo>> ListParts(std::string_view key, std::string_view upload_id) override {
    return base_->ListParts(key, upload_id);
  }
  Result<std::vector<UploadInfo>> ListMultipartUploads(std::string_view prefix) override {
    return base_->ListMultipartUploads(prefix);
  }
  Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key, const CopyOptions& options) override {
    return base_->Copy(src_key, dst_key, options);
  }
  Status ReadRangeTo(std::string_view key, std::string_view etag, uint64_t offset, uint64_t length,
                     const RangeConsumer& consume) override {
    if (base_->Capabilities().range_streaming) return base_->ReadRangeTo(key, etag, offset, length, consume);
    return ObjectStore::ReadRangeTo(key, etag, offset, length, consume);  // through this store's Get
  }
  Result<PartRange> GetPartRange(std::string_view key, std::string_view etag, int part_number) override {
    return base_->GetPartRange(key, etag, part_number);
  }
  StoreCapabilities Capabilities() const override { return base_->Capabilities(); }
  std::string Url() const override { return base_->Url(); }

 protected:
  ObjectStorePtr base_;
};

}  // namespace strata::object
