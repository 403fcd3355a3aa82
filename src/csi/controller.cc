#include "csi/controller.h"

#include <cstdlib>

#include "base/log.h"
#include "object/s3_config.h"
#include "object/s3_store.h"
#include "object/store_url.h"

namespace strata::csi {
namespace {

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return name != "." && name != "..";
}

// s3://bucket/base?q + name -> s3://bucket/base/name?q
std::string ClaimUrl(const std::string& base, const std::string& name) {
  const size_t q = base.find('?');
  std::string path = base.substr(0, q);
  while (path.ends_with("/")) path.pop_back();
  return path + "/" + name + (q == std::string::npos ? "" : base.substr(q));
}

}  // namespace

Result<object::ObjectStorePtr> OpenStoreWithSecrets(const std::string& url, const StringMap& secrets) {
  STRATA_RETURN_IF_ERROR(CheckSecrets(secrets));
  STRATA_ASSIGN_OR_RETURN(object::StoreUrl parsed, object::ParseStoreUrl(url));
  if (parsed.scheme != "s3") return object::OpenStore(url);
  object::ConfigEnv env = object::ConfigEnv::Process();
  auto process_getenv = env.getenv;
  env.getenv = [secrets, process_getenv](std::string_view name) -> std::optional<std::string> {
    auto it = secrets.find(std::string(name));
    if (it != secrets.end()) return it->second;
    return process_getenv(name);
  };
  STRATA_ASSIGN_OR_RETURN(object::S3Config config, object::S3ConfigFromUrl(url, env));
  return object::OpenS3Store(config);
}

Status CheckVolumeId(const std::string& volume_id) {
  if (volume_id.empty()) return InvalidArgumentError("volume_id is required");
  auto parsed = object::ParseStoreUrl(volume_id);
  if (!parsed.ok()) return NotFoundError("volume_id is not a volume of this driver (not a store URL)");
  std::string path = parsed->path;
  while (path.ends_with("/")) path.pop_back();
  if (parsed->scheme != "file" && path.empty()) {
    return InvalidArgumentError("volume_id names a whole bucket, not a claim's prefix");
  }
  return Status::Ok();
}

Result<CreatedVolume> CreateVolume(const std::string& name, const StringMap& parameters, const StringMap& secrets) {
  if (!ValidName(name)) return InvalidArgumentError("name must be 1-128 of [A-Za-z0-9._-]");
  StringMap context;
  for (const auto& [k, v] : parameters) {
    if (!k.starts_with("csi.storage.k8s.io/")) context[k] = v;
  }
  auto base = context.find("url");
  if (base == context.end()) return InvalidArgumentError("StorageClass parameters need \"url\" (the base URL)");
  base->second = ClaimUrl(base->second, name);
  STRATA_ASSIGN_OR_RETURN(VolumeSpec spec, ParseVolumeContext(context));
  if (context.count("dataset") == 0) context["dataset"] = spec.dataset;
  STRATA_ASSIGN_OR_RETURN(auto store, OpenStoreWithSecrets(spec.url, secrets));
  // Fail now (wrong secret, no bucket) rather than at the first mount.
  object::ListOptions probe;
  probe.max_keys = 1;
  STRATA_RETURN_IF_ERROR(store->List(probe).status());
  return CreatedVolume{spec.url, context};
}

Status DeleteVolume(const std::string& volume_id, const StringMap& secrets) {
  STRATA_RETURN_IF_ERROR(CheckVolumeId(volume_id));
  STRATA_ASSIGN_OR_RETURN(auto store, OpenStoreWithSecrets(volume_id, secrets));
  // The store is rooted at the claim's prefix: every key it lists is the claim's.
  uint64_t deleted = 0;
  for (int round = 0; round < 1000000; ++round) {
    object::ListOptions lo;
    lo.max_keys = 1000;
    STRATA_ASSIGN_OR_RETURN(object::ListResult page, store->List(lo));
    if (page.objects.empty()) break;
    for (const auto& o : page.objects) {
      Status st = store->Delete(o.key);
      if (!st.ok() && st.code() != Code::kNotFound) return st.WithContext("delete " + o.key);
      ++deleted;
    }
  }
  STRATA_LOG_INFO("csi: deleted volume {} ({} objects)", volume_id, deleted);
  return Status::Ok();
}

}  // namespace strata::csi
