#include "object/s3_service.h"

#include "base/hash.h"
#include "net/s3_xml.h"
#include "net/xml.h"
#include "object/s3_request.h"
#include "object/s3_store.h"

namespace strata::object {
namespace {

// With an empty bucket the requester's path is "/" + key: a "key" that is the
// bucket name addresses the bucket path-style.
S3Call BucketCall(std::string op, std::string method, const std::string& bucket) {
  S3Call call;
  call.op = std::move(op);
  call.method = std::move(method);
  call.key = bucket;
  return call;
}

Status CheckBucketName(const std::string& bucket) {
  if (bucket.empty() || bucket.size() > 255 || bucket.find('/') != std::string::npos || bucket == "." ||
      bucket == "..") {
    return InvalidArgumentError("\"" + bucket + "\" is not a bucket name").WithForeignCode("InvalidBucketName");
  }
  return Status::Ok();
}

// A HEAD answer has no body: its 404 is read as NoSuchKey; for a bucket it is NoSuchBucket.
Status AsBucketStatus(Status s, const std::string& bucket) {
  if (s.code() == Code::kNotFound && s.foreign_code() != "NoSuchBucket") {
    return NotFoundError("bucket " + bucket + " does not exist").WithForeignCode("NoSuchBucket");
  }
  return s;
}

}  // namespace

S3Service::S3Service(const S3Config& config, std::unique_ptr<S3Requester> r) : config_(config), r_(std::move(r)) {}
S3Service::~S3Service() = default;

Result<std::unique_ptr<S3Service>> S3Service::Open(const S3Config& config) {
  if (!config.bucket.empty() || !config.prefix.empty()) {
    return InvalidArgumentError("an S3 endpoint config names no bucket or prefix (got s3://" + config.bucket + "/" +
                                config.prefix + ")");
  }
  STRATA_ASSIGN_OR_RETURN(auto requester, S3Requester::Create(config));
  return std::unique_ptr<S3Service>(new S3Service(config, std::move(requester)));
}

Result<std::vector<S3BucketListing>> S3Service::ListBuckets() {
  S3Call call;
  call.op = "ListBuckets";
  call.method = "GET";
  STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, r_->Execute(call));
  auto decoded = net::DecodeListAllMyBuckets(resp.body.view());
  if (!decoded.ok()) return decoded.status().WithContext("ListBuckets " + Url());
  std::vector<S3BucketListing> out;
  for (auto& b : decoded->buckets) out.push_back({std::move(b.name), b.creation_date});
  return out;
}

Status S3Service::CreateBucket(const std::string& bucket) {
  STRATA_RETURN_IF_ERROR(CheckBucketName(bucket));
  S3Call call = BucketCall("CreateBucket", "PUT", bucket);
  if (config_.region != "us-east-1") {  // S3 wants the region spelled out everywhere else
    net::XmlWriter w;
    w.Open("CreateBucketConfiguration", {{"xmlns", std::string(net::kS3XmlNamespace)}})
        .Element("LocationConstraint", config_.region);
    call.body = Buffer::FromString(w.Finish());
    call.headers.emplace_back("Content-Type", "application/xml");
  }
  return r_->Execute(call).status();
}

Status S3Service::DeleteBucket(const std::string& bucket) {
  STRATA_RETURN_IF_ERROR(CheckBucketName(bucket));
  return r_->Execute(BucketCall("DeleteBucket", "DELETE", bucket)).status();
}

Status S3Service::HeadBucket(const std::string& bucket) {
  STRATA_RETURN_IF_ERROR(CheckBucketName(bucket));
  return AsBucketStatus(r_->Execute(BucketCall("HeadBucket", "HEAD", bucket)).status(), bucket);
}

Result<std::map<std::string, std::string>> S3Service::GetBucketTags(const std::string& bucket) {
  STRATA_RETURN_IF_ERROR(CheckBucketName(bucket));
  S3Call call = BucketCall("GetBucketTagging", "GET", bucket);
  call.query.emplace_back("tagging", "");
  auto resp = r_->Execute(call);
  std::map<std::string, std::string> tags;
  if (!resp.ok()) {
    // S3 answers NoSuchTagSet (RGW NoSuchTagSetError) for a bucket without tags.
    if (resp.status().code() == Code::kNotFound && resp.status().foreign_code() != "NoSuchBucket") return tags;
    return resp.status();
  }
  auto doc = net::ParseXml(resp->body.view());
  if (!doc.ok()) return doc.status().WithContext("GetBucketTagging " + bucket);
  const net::XmlElement* set = doc->Child("TagSet");
  if (set == nullptr) return tags;
  for (const net::XmlElement* tag : set->Children("Tag")) tags[tag->ChildText("Key")] = tag->ChildText("Value");
  return tags;
}

Status S3Service::PutBucketTags(const std::string& bucket, const std::map<std::string, std::string>& tags) {
  STRATA_RETURN_IF_ERROR(CheckBucketName(bucket));
  S3Call call = BucketCall("PutBucketTagging", "PUT", bucket);
  call.query.emplace_back("tagging", "");
  net::XmlWriter w;
  w.Open("Tagging", {{"xmlns", std::string(net::kS3XmlNamespace)}}).Open("TagSet");
  for (const auto& [k, v] : tags) w.Open("Tag").Element("Key", k).Element("Value", v).Close();
  std::string body = w.Finish();
  Md5Digest md5 = Md5(body);
  call.headers.emplace_back("Content-MD5", Base64Encode(md5.data(), md5.size()));  // S3 requires it here
  call.headers.emplace_back("Content-Type", "application/xml");
  call.body = Buffer::FromString(std::move(body));
  return r_->Execute(call).status();
}

Result<ObjectStorePtr> S3Service::OpenBucket(const std::string& bucket) const {
  STRATA_RETURN_IF_ERROR(CheckBucketName(bucket));
  S3Config c = config_;
  c.bucket = bucket;
  return OpenS3Store(c);
}

std::string S3Service::Url() const { return S3ConfigUrl(config_); }

}  // namespace strata::object
