// The s3:// ObjectStore: S3 REST over libcurl with SigV4, pooled keep-alive
// connections, retries with backoff and jitter, parallel ranged GETs (ETag
// pinned with If-Match) and parallel multipart uploads (aborted on failure).
// Works with AWS S3, Ceph RGW and s3rver (see their quirks in
// shared/notes/s3-servers.md). The returned store is thread-safe.
#pragma once

#include <string_view>

#include "object/object_store.h"
#include "object/s3_config.h"

namespace strata::object {

// InvalidArgument on an unusable config (no bucket, bad endpoint, ...).
// Does not contact the server.
Result<ObjectStorePtr> OpenS3Store(const S3Config& config);

// S3ConfigFromUrl(url, ConfigEnv::Process()) then OpenS3Store.
Result<ObjectStorePtr> OpenS3StoreFromUrl(std::string_view url);

}  // namespace strata::object
