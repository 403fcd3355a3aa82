#include "object/prefix_store.h"

#include "net/uri.h"
#include "object/store_wrapper.h"

namespace strata::object {
namespace {

class PrefixStore : public StoreWrapper {
 public:
  PrefixStore(ObjectStorePtr inner, std::string prefix) : StoreWrapper(std::move(inner)), prefix_(std::move(prefix)) {}

  Result<GetResult> Get(std::string_view key, const GetOptions& options) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    auto result = base_->Get(Full(key), options);
    if (result.ok()) result->info.key = std::string(key);
    return result;
  }
  Result<ObjectInfo> Head(std::string_view key) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    return Strip(base_->Head(Full(key)));
  }
  Result<ListResult> List(const ListOptions& options) override {
    ListOptions inner_options = options;
    inner_options.prefix = Full(options.prefix);
    // start_after below the prefix is equivalent to no start_after at all.
    if (!options.start_after.empty()) inner_options.start_after = Full(options.start_after);
    STRATA_ASSIGN_OR_RETURN(ListResult result, base_->List(inner_options));
    for (ObjectInfo& info : result.objects) info.key.erase(0, prefix_.size());
    for (std::string& cp : result.common_prefixes) cp.erase(0, prefix_.size());
    return result;
  }
  Result<ObjectInfo> Put(std::string_view key, Buffer data, const PutOptions& options) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    return Strip(base_->Put(Full(key), std::move(data), options));
  }
  Status Delete(std::string_view key) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    return base_->Delete(Full(key));
  }
  Result<std::string> CreateMultipartUpload(std::string_view key, const PutOptions& options) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    return base_->CreateMultipartUpload(Full(key), options);
  }
  Result<std::string> UploadPart(std::string_view key, std::string_view upload_id, int part_number, Buffer data,
                                 const PartOptions& options) override {
    return base_->UploadPart(Full(key), upload_id, part_number, std::move(data), options);
  }
  Result<ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                             const std::vector<CompletedPart>& parts,
                                             const CompleteOptions& options) override {
    return Strip(base_->CompleteMultipartUpload(Full(key), upload_id, parts, options));
  }
  Result<std::optional<ObjectInfo>> FindCompletedUpload(std::string_view key, std::string_view upload_id,
                                                        const std::vector<CompletedPart>& parts) override {
    STRATA_ASSIGN_OR_RETURN(std::optional<ObjectInfo> done, base_->FindCompletedUpload(Full(key), upload_id, parts));
    if (done) done->key.erase(0, prefix_.size());
    return done;
  }
  Status AbortMultipartUpload(std::string_view key, std::string_view upload_id) override {
    return base_->AbortMultipartUpload(Full(key), upload_id);
  }
  Result<std::vector<PartInfo>> ListParts(std::string_view key, std::string_view upload_id) override {
    return base_->ListParts(Full(key), upload_id);
  }
  Result<std::vector<UploadInfo>> ListMultipartUploads(std::string_view prefix) override {
    STRATA_ASSIGN_OR_RETURN(std::vector<UploadInfo> uploads, base_->ListMultipartUploads(Full(prefix)));
    for (UploadInfo& u : uploads) u.key.erase(0, prefix_.size());
    return uploads;
  }
  Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key, const CopyOptions& options) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(src_key));
    STRATA_RETURN_IF_ERROR(ValidateKey(dst_key));
    return Strip(base_->Copy(Full(src_key), Full(dst_key), options));
  }
  Status ReadRangeTo(std::string_view key, std::string_view etag, uint64_t offset, uint64_t length,
                     const RangeConsumer& consume) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    return base_->ReadRangeTo(Full(key), etag, offset, length, consume);
  }
  Result<PartRange> GetPartRange(std::string_view key, std::string_view etag, int part_number) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    return base_->GetPartRange(Full(key), etag, part_number);
  }
  std::string Url() const override {
    std::string url = base_->Url();
    url += url.find('?') == std::string::npos ? '?' : '&';
    return url + "prefix=" + net::UriEncode(prefix_);
  }

 private:
  std::string Full(std::string_view key) const { return prefix_ + std::string(key); }
  Result<ObjectInfo> Strip(Result<ObjectInfo> info) const {
    if (info.ok()) info->key.erase(0, prefix_.size());
    return info;
  }

  std::string prefix_;
};

}  // namespace

ObjectStorePtr MakePrefixStore(ObjectStorePtr inner, std::string prefix) {
  if (prefix.empty()) return inner;
  return std::make_shared<PrefixStore>(std::move(inner), std::move(prefix));
}

}  // namespace strata::object
