// Gateway configuration: from a JSON file, then command-line flags on top.
//
// {
//   "listen": "127.0.0.1:9000",
//   "backend": "file:///data"            (or a list: ["s3://b1?endpoint=..", "mem://scratch"])
//   "region": "us-east-1",
//   "keys": [{"access_key": "AK", "secret_key": "16 characters or more"},
//            {"access_key": "RO", "secret_key": "..", "read_only": true,
//             "grants": [{"bucket": "data", "prefix": "train/", "allow": ["read", "list"]}]}],
//   "buckets": {"data": {"owner": "AK", "public_read": false}},
//   "emulate": "ttfb=30ms,bw=25MB/s",
//   "cache": {"ram": "1GiB", "dir": "/var/cache/strata", "disk": "10GiB",
//             "block_size": "4MiB", "metadata_ttl": "10s", "backend_timeout": "60s",
//             "revalidate_timeout": "1s", "strict_revalidate": false,
//             "encryption_key_file": "/etc/strata/cache.key"},   (32 bytes, mode 0600; "": clear)
//   "access_log": "/var/log/strata-access.log"   ("-" = stderr, "" = off)
//   "io_threads": 2, "workers": 32,
//   "limits": {"max_header_bytes": 65536, "max_body_bytes": "5GiB", "max_inflight_bytes": "256MiB",
//              "header_timeout": "10s", "idle_timeout": "60s", "io_timeout": "120s",
//              "drain_timeout": "30s", "max_connections": 4096, "max_connections_per_client": 512,
//              "min_transfer_rate": "16KiB/s", "transfer_grace": "10s"}
// }
// Access (config_access.cc, gateway/access.h): a key without "grants" is
// unrestricted (creates buckets, owns them, shares the buckets nobody owns);
// with "grants" it has those only (bucket "*" is every bucket; "allow"
// defaults to all four of read, list, write, delete); "read_only" caps a key
// at read and list. "buckets" sets an owner, or public_read (anyone lists it
// and reads every object), for a bucket by name. Unsigned requests are
// anonymous: they read only what is public.
// Sizes, durations and the emulation spec are in strata's one grammar
// (base/units.h): sizes 4MiB or 4M (powers of 1024), 4MB (powers of 1000),
// or a number of bytes; durations 250ms, 1.5s, 2m, 1h, or a number of
// seconds; cache.metadata_ttl may be "forever"; rates 16KiB/s (per second implied).
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "base/units.h"
#include "cache/disk_tier.h"
#include "gateway/access.h"

namespace strata::gateway {

struct GatewayLimits {
  uint64_t max_header_bytes = 64 << 10;  // request line + headers; past it: 431 and close
  uint64_t max_body_bytes = 5ull << 30;  // S3's single-PUT limit; past it: EntityTooLarge
  // Request bodies held in memory at once, all connections together; a new
  // body past it gets 503 SlowDown (one larger than the budget is let in alone).
  uint64_t max_inflight_bytes = 256ull << 20;
  // A PutObject or UploadPart body larger than this (chunked ones once they
  // grow past it) goes to a temp file in spill_dir (empty: $TMPDIR, else
  // /tmp) instead of memory, and on to the backend in pieces; it holds only
  // kSpillReserve of the budget meanwhile.
  uint64_t spill_bytes = 16ull << 20;
  std::string spill_dir;
  Duration header_timeout = std::chrono::seconds(10);  // first byte to end of headers (slowloris)
  Duration idle_timeout = std::chrono::seconds(60);    // keep-alive wait for the next request
  Duration io_timeout = std::chrono::seconds(120);     // any one body read/write making no progress
  Duration drain_timeout = std::chrono::seconds(30);   // graceful shutdown: in-flight requests
  // Connection caps (net/connection_table.h): on the listener and per client address;
  // at a cap the longest-idle connection is closed for the newcomer, which is
  // refused (503 SlowDown) only when none is idle.
  uint64_t max_connections = 4096;
  uint64_t max_connections_per_client = 512;
  // A request body must arrive, and each response write drain, at this
  // average rate after transfer_grace (0: no floor), else the connection is
  // closed (a body: 400 RequestTimeout first). Trickling clients hold nothing for long.
  uint64_t min_transfer_rate = 16 << 10;  // bytes per second
  Duration transfer_grace = std::chrono::seconds(10);
};

struct GatewayCacheConfig {
  uint64_t ram_bytes = 1ull << 30;
  std::string dir;  // empty: RAM only
  uint64_t disk_bytes = 10ull << 30;
  SpaceFloor free_space = cache::kDefaultCacheFreeSpace;  // left free on dir's file system ("2%", "20GiB")
  uint64_t block_size = 4ull << 20;
  Duration metadata_ttl = std::chrono::seconds(10);
  // A backend that stops answering: a lookup or block fill gives up after
  // backend_timeout (503); an expired entry whose revalidation fails or
  // takes over revalidate_timeout is served as cached, unless strict_revalidate.
  Duration backend_timeout = std::chrono::seconds(60);
  Duration revalidate_timeout = std::chrono::seconds(1);
  bool strict_revalidate = false;
  // A 32-byte key file (mode 0600) encrypting `dir` at rest; empty: clear.
  std::string encryption_key_file;
};

// The shortest secret key a gateway accepts. Anyone who sees one signed request (a log, a proxy,
// plain http) can test guessed secrets against its SigV4 signature offline, as fast as HMAC
// runs: 16 random characters (96 bits in base64) are past that; "SK" or "secret" fall at once.
// Not AWS's 40 (what RGW and AWS issue): other S3 servers' keys (MinIO's floor is 8) must move
// over, and 16 already rules out typed passwords.
constexpr size_t kMinSecretKeyChars = 16;

struct GatewayConfig {
  std::string listen = "127.0.0.1:9000";
  std::vector<std::string> backends;  // store URLs; see buckets.h for the bucket model
  std::string region = "us-east-1";
  std::map<std::string, std::string> keys;  // access key -> secret
  // Access (config_access.cc): each key's scope (keys absent here are
  // unrestricted) and per-bucket settings.
  std::map<std::string, KeyAccess> key_access;
  std::map<std::string, BucketSettings> bucket_settings;
  std::string emulate;  // CloudProfile spec; empty: none
  GatewayCacheConfig cache;
  std::string access_log;  // path, "-" for stderr, empty for none
  int io_threads = 2;
  int workers = 32;  // threads running S3 operations (they block on the backend)
  GatewayLimits limits;
};

// Merges the JSON document into *config (fields absent keep their values).
// InvalidArgument naming the field on bad input.
Status ParseGatewayConfigJson(std::string_view json, GatewayConfig* config);

// Checks the whole config is usable (backends, keys or public buckets, limits).
Status ValidateGatewayConfig(const GatewayConfig& config);

// config_access.cc: the access and connection-limit parts of the JSON
// (ParseGatewayConfigJson calls it): "keys" entries' read_only and grants,
// "buckets", the limits above; the retired "allow_anonymous" is an error
// that says what replaced it.
Status ParseGatewayAccessJson(std::string_view json, GatewayConfig* config);
// Checks them: every grant names a bucket and known permissions, owners are known keys, every
// secret has kMinSecretKeyChars or more.
Status ValidateGatewayAccess(const GatewayConfig& config);

// "127.0.0.1:9000", "[::1]:9000", ":9000" (loopback). Port 0: any free port.
Status ParseListenAddress(std::string_view text, std::string* host, uint16_t* port);

}  // namespace strata::gateway
