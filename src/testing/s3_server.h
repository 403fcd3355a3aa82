// Real S3 servers for integration tests: S3TestServer starts s3rver or a one-node Ceph RGW
// on 127.0.0.1 (scripts/s3rver.sh, scripts/rgw.sh) in a fresh temp dir and stops it (by the
// PIDs the script recorded) when destroyed. CloudProxy puts an nginx in front of one that
// adds time-to-first-byte and a per-connection rate cap (scripts/cloud-proxy.sh).
// The scripts are found under $STRATA_SOURCE_DIR (set by ctest), else the configured source
// dir. Objects are not thread-safe; distinct instances may be used from distinct threads.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "testing/subprocess.h"

namespace strata::testing {

class S3TestServer {
 public:
  enum class Kind { kS3rver, kRgw };

  // Starts a server with one empty bucket and one user. Takes ~0.5-2 s (s3rver) or
  // ~2-5 s (RGW). Unavailable if the server did not come up (message names its log dir).
  static Result<std::unique_ptr<S3TestServer>> Start(Kind kind);

  ~S3TestServer();  // Stop(), errors ignored
  S3TestServer(const S3TestServer&) = delete;
  S3TestServer& operator=(const S3TestServer&) = delete;

  // Stops the server's daemons (TERM, then KILL) and removes its dir; idempotent.
  Status Stop();

  Kind kind() const { return kind_; }
  const std::string& endpoint() const { return endpoint_; }  // http://127.0.0.1:PORT
  const std::string& access_key() const { return access_key_; }
  const std::string& secret_key() const { return secret_key_; }
  const std::string& bucket() const { return bucket_; }
  const std::string& region() const { return region_; }
  const std::string& dir() const { return dir_; }  // state and logs (dir()/log/)
  // The daemon PIDs the script recorded (empty after Stop()).
  const std::vector<pid_t>& pids() const { return pids_; }
  // Whether the server checks SigV4 signatures (s3rver accepts any secret).
  bool verifies_signatures() const { return kind_ == Kind::kRgw; }

  // Environment for AWS clients (aws CLI, boto3, s3cmd via env): credentials, region, no
  // profile/config files, no CA bundles, no pager, no instance metadata lookups, no proxy
  // for 127.0.0.1.
  EnvOverrides ClientEnv() const;
  // An OpenStore URL for the bucket: s3://BUCKET/PREFIX?endpoint=...&region=...&path_style=1
  std::string StoreUrl(const std::string& prefix = "") const;

 private:
  S3TestServer() = default;

  Kind kind_ = Kind::kS3rver;
  std::string script_;
  std::string dir_;
  std::string endpoint_, access_key_, secret_key_, bucket_, region_;
  std::vector<pid_t> pids_;
};

const char* KindName(S3TestServer::Kind kind);  // "s3rver", "rgw"

class CloudProxy {
 public:
  struct Options {
    int ttfb_ms = 30;          // delay before each request is forwarded; 0 = none
    std::string rate = "25m";  // nginx size per second per connection (25m = 25 MiB/s); "0" = no cap
    bool access_log = false;   // one line per request in access_log_path() (counting backend requests)
  };

  // Starts nginx on a free 127.0.0.1 port forwarding to `upstream` (http://127.0.0.1:PORT).
  // Requests keep their Host header, so SigV4 requests signed for endpoint() verify upstream.
  // The port is outside the kernel's ephemeral range, so no client's connect() takes it as
  // its local port while the proxy is halted.
  static Result<std::unique_ptr<CloudProxy>> Start(const std::string& upstream, const Options& options);

  ~CloudProxy();
  CloudProxy(const CloudProxy&) = delete;
  CloudProxy& operator=(const CloudProxy&) = delete;

  Status Stop();  // idempotent; removes dir()
  // Stops nginx but keeps dir() and the port: connections to endpoint() are refused until
  // Restart(), which starts it again on the same port with the same options and returns
  // once it accepts connections. A child process may do the same with
  // `bash script() stop dir()` and `bash script() start dir()`.
  Status Halt();
  Status Restart();
  const std::string& endpoint() const { return endpoint_; }
  const std::string& script() const { return script_; }
  const std::string& dir() const { return dir_; }
  // The running nginx master (leading its workers' process group), read from dir() at each
  // call so it is current after a restart by anyone; empty while halted or stopped.
  std::vector<pid_t> pids() const;
  std::string access_log_path() const { return dir_ + "/log/access.log"; }  // nginx's "combined" format

  // The GETs of each key under `prefix` in `bucket` that went through the proxy, and the
  // response bytes nginx sent for them, from the access log (Options::access_log): what a
  // test counts to show which bytes left the bucket.
  struct Fetched {
    int gets = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string, Fetched> GetsFromAccessLog(const std::string& bucket, const std::string& prefix) const;

 private:
  CloudProxy() = default;
  std::string script_;
  std::string dir_;
  std::string endpoint_;
};

// Ceph RGW behind a CloudProxy (the hung-backend tests freeze, halt and restart the proxy).
// Members are destroyed proxy first.
struct ProxiedRgw {
  std::unique_ptr<S3TestServer> rgw;
  std::unique_ptr<CloudProxy> proxy;
  // An OpenStore URL for rgw's bucket through the proxy (rgw->StoreUrl() goes past it).
  std::string StoreUrl(const std::string& prefix = "") const;
  // Sets AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to rgw's user, for the
  // s3:// stores this process opens (children take rgw->ClientEnv()).
  Status ExportCredentials() const;
};
Result<ProxiedRgw> StartProxiedRgw(const CloudProxy::Options& options);

// Whether `pid` has exited (no such process, or a zombie not yet reaped by its new parent).
bool ProcessGone(pid_t pid);

// The repository's source dir: $STRATA_SOURCE_DIR, else the one configured at build time.
std::string SourceDir();

}  // namespace strata::testing
