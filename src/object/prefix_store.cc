#include "object/prefix_store.h"

#include "net/uri.h"

namespace strata {
namespace {

class PrefixStore : public ObjectStore {
 public:
  PrefixStore(ObjectStorePtr inner, std::string prefix) : inner_(std::move(inner)), prefix_(std::move(prefix)) {}

  Result<GetResult> Get(std::string_view key, const GetOptions& options) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    auto result = inner_->Get(Full(key), options);
    if (result.ok()) result->info.key = std::string(key);
    return result;
  }
  Result<ObjectInfo> Head(std::string_view key) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    return Strip(inner_->Head(Full(key)));
  }
  Result<ListResult> List(const ListOptions& options) override {
    ListOptions inner_options = options;
    inner_options.prefix = Full(options.prefix);
    // start_after below the prefix is equivalent to no start_after at all.
    if (!options.start_after.empty()) inner_options.start_after = Full(options.start_after);
    STRATA_ASSIGN_OR_RETURN(ListResult result, inner_->List(inner_options));
    for (ObjectInfo& info : result.objects) info.key.erase(0, prefix_.size());
    for (std::string& cp : result.common_prefixes) cp.erase(0, prefix_.size());
    return result;
  }
  Result<ObjectInfo> Put(std::string_view key, Buffer data, const PutOptions& options) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    return Strip(inner_->Put(Full(key), std::move(data), options));
  }
  Status Delete(std::string_view key) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    return inner_->Delete(Full(key));
  }
  Result<std::string> CreateMultipartUpload(std::string_view key, const PutOptions& options) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(key));
    return inner_->CreateMultipartUpload(Full(key), options);
  }
  Result<std::string> UploadPart(std::string_view key, std::string_view upload_id, int part_number,
                                 Buffer data) override {
    return inner_->UploadPart(Full(key), upload_id, part_number, std::move(data));
  }
  Result<ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                             const std::vector<CompletedPart>& parts) override {
    return Strip(inner_->CompleteMultipartUpload(Full(key), upload_id, parts));
  }
  Status AbortMultipartUpload(std::string_view key, std::string_view upload_id) override {
    return inner_->AbortMultipartUpload(Full(key), upload_id);
  }
  Result<std::vector<PartInfo>> ListParts(std::string_view key, std::string_view upload_id) override {
    return inner_->ListParts(Full(key), upload_id);
  }
  Result<std::vector<UploadInfo>> ListMultipartUploads(std::string_view prefix) override {
    STRATA_ASSIGN_OR_RETURN(std::vector<UploadInfo> uploads, inner_->ListMultipartUploads(Full(prefix)));
    for (UploadInfo& u : uploads) u.key.erase(0, prefix_.size());
    return uploads;
  }
  uint64_t MinPartSize() const override { return inner_->MinPartSize(); }
  Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key) override {
    STRATA_RETURN_IF_ERROR(ValidateKey(src_key));
    STRATA_RETURN_IF_ERROR(ValidateKey(dst_key));
    return Strip(inner_->Copy(Full(src_key), Full(dst_key)));
  }
  std::string Url() const override {
    std::string url = inner_->Url();
    url += url.find('?') == std::string::npos ? '?' : '&';
    return url + "prefix=" + UriEncode(prefix_);
  }

 private:
  std::string Full(std::string_view key) const { return prefix_ + std::string(key); }
  Result<ObjectInfo> Strip(Result<ObjectInfo> info) const {
    if (info.ok()) info->key.erase(0, prefix_.size());
    return info;
  }

  ObjectStorePtr inner_;
  std::string prefix_;
};

}  // namespace

ObjectStorePtr MakePrefixStore(ObjectStorePtr inner, std::string prefix) {
  if (prefix.empty()) return inner;
  return std::make_shared<PrefixStore>(std::move(inner), std::move(prefix));
}

}  // namespace strata
