// S3 client configuration: the struct OpenS3Store takes, how it is read from
// an s3:// URL plus the standard AWS environment variables and shared
// config/credentials files, and the addressing (path vs virtual-hosted)
// decision. Pure functions; the environment is injected (ConfigEnv) so tests
// never read the real one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"
#include "net/sigv4.h"  // AwsCredentials

namespace strata::object {

enum class S3Addressing {
  kAuto,     // path-style for custom endpoints (IP address, explicit port, localhost), else virtual
  kPath,     // http://host/bucket/key
  kVirtual,  // http://bucket.host/key
};

struct S3Config {
  std::string bucket;
  // Key prefix inside the bucket, used verbatim (S3ConfigFromUrl makes it end
  // with '/'). Keys seen through the store are relative to it.
  std::string prefix;
  std::string endpoint;  // scheme://host[:port]; empty: https://s3.<region>.amazonaws.com
  std::string region = "us-east-1";
  net::AwsCredentials credentials;
  S3Addressing addressing = S3Addressing::kAuto;

  uint64_t part_size = 8ull << 20;                // multipart part and parallel GET chunk size
  int concurrency = 16;                           // parts / ranges in flight per operation
  uint64_t parallel_get_threshold = 16ull << 20;  // ranges above this are split
  int max_connections = 256;  // across all operations of one store (a loader iterator keeps up to 256 busy)

  int max_retries = 5;  // retries after the first attempt
  Duration backoff_base = std::chrono::milliseconds(50);
  Duration backoff_cap = std::chrono::seconds(5);

  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::seconds stall_timeout{30};        // no progress for this long: retry
  std::chrono::milliseconds request_timeout{0};  // whole request; 0 = none

  bool verify_tls = true;
  Clock* clock = nullptr;  // not owned; null = RealClock(). Backoff sleeps and signing time.
  uint64_t seed = 0;       // jitter seed; 0 = random
};

// Where the process's configuration comes from; tests substitute their own.
struct ConfigEnv {
  // Value of an environment variable, or nullopt when unset.
  std::function<std::optional<std::string>(std::string_view name)> getenv;
  // Contents of a file; NotFound when missing.
  std::function<Result<std::string>(const std::string& path)> read_file;

  // The real environment and file system.
  static const ConfigEnv& Process();
  // A fake: variables from the map, files from the map.
  static ConfigEnv FromMaps(std::map<std::string, std::string> vars, std::map<std::string, std::string> files);
};

// Parses s3://bucket[/prefix][?endpoint=URL&region=R&path_style=1&addressing=path|virtual|auto
//   &profile=P&part_size=BYTES&concurrency=N&max_retries=N&verify_tls=0]
// and fills the rest from the environment: credentials (AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else the profile from
// AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials, then AWS_CONFIG_FILE or
// ~/.aws/config; profile = URL's, else AWS_PROFILE, else "default"; an
// explicit URL profile wins over the variables), region (URL, AWS_REGION,
// AWS_DEFAULT_REGION, profile, "us-east-1"), endpoint (URL,
// AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, profile's endpoint_url).
// Errors: InvalidArgument (malformed URL or parameter), Unauthenticated (no
// credentials; the message lists what was tried).
Result<S3Config> S3ConfigFromUrl(std::string_view url, const ConfigEnv& env = ConfigEnv::Process());
// The same for a whole endpoint: s3://?endpoint=URL&... (no bucket, no
// prefix); the config's bucket is empty (see S3Service).
Result<S3Config> S3EndpointConfigFromUrl(std::string_view url, const ConfigEnv& env = ConfigEnv::Process());

// The store's URL, without credentials.
std::string S3ConfigUrl(const S3Config& config);

// The concrete request shape for a config.
struct S3Endpoint {
  std::string scheme;       // "http" / "https"
  std::string host_header;  // "bucket.host[:port]" (virtual) or "host[:port]" (path)
  std::string base_url;     // scheme://host_header
  std::string bucket_path;  // "/bucket" (path-style) or "" (virtual)
  bool path_style = true;
};
// InvalidArgument on a malformed endpoint, or virtual addressing with a
// bucket name that cannot be a DNS label.
Result<S3Endpoint> ResolveS3Endpoint(const S3Config& config);

// Shared config/credentials files: sections -> keys -> values. Keys are
// lowercased; nested sub-keys ("s3 =" followed by indented "k = v" lines)
// are stored as "s3.k". Section names are kept as written ("profile x").
using AwsIni = std::map<std::string, std::map<std::string, std::string>>;
// Bounded (1 MiB input, 4 KiB lines); InvalidArgument with the line number
// on malformed input.
Result<AwsIni> ParseAwsIni(std::string_view text);

}  // namespace strata::object
