// EtcdClient: requests to etcd's v3 HTTP/JSON gateway, over plain HTTP or
// TLS, as an etcd user or with a client certificate. Where etcd is and how
// to reach it is the cache group URL:
//
//   etcd://HOST:PORT/GROUP                       plain HTTP (no etcd auth)
//   etcds://HOST:PORT/GROUP?ca=FILE              TLS, etcd's certificate checked against FILE
//          &cert=FILE&key=FILE                   ... and this member's client certificate
//          &user_file=FILE                       ... and an etcd user: FILE holds "user:password"
//
// ca defaults to the system's CAs. cert and key go together (etcd
// --client-cert-auth). user_file needs etcds:// (the password would cross
// the network in clear); it and the key must be private files (mode 0600).
// etcd's gateway refuses a client certificate once etcd auth is enabled, so
// use one or the other. Values are file paths, percent-encoded if need be:
// no secret is ever in the URL (it shows in ps). Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/status.h"
#include "net/http_client.h"

namespace strata::group {

struct EtcdEndpoint {
  std::string url = "http://127.0.0.1:2379";  // http:// or https://HOST:PORT
  std::string ca_file;                        // https only
  std::string cert_file, key_file;            // https only, both or neither
  std::string user_file;                      // https only
};

// "HOST:PORT" and the query of an etcd:// or etcds:// group URL (the part
// after the group name, without '?'). InvalidArgument naming what is wrong.
Result<EtcdEndpoint> ParseEtcdEndpoint(bool tls, std::string_view host_port, std::string_view query);

class EtcdClient {
 public:
  // Reads the user file and checks the key's mode. InvalidArgument or
  // PermissionDenied for a file that is missing, loose or malformed.
  static Result<std::unique_ptr<EtcdClient>> Open(EtcdEndpoint endpoint, std::chrono::milliseconds timeout);

  // POSTs `json` to `path` and returns the 200 body. With a user, it
  // authenticates first and again when etcd says the token is no longer
  // valid. PermissionDenied (not retryable) when etcd refuses the user or
  // the request (HTTP 401, 403, or a bad password); Unavailable otherwise.
  Result<std::string> Call(const std::string& path, const std::string& json);

  // A request for a stream (the watch) with the URL and the current token
  // set; send it on a client made with ClientOptions().
  Result<net::HttpRequest> StreamRequest(const std::string& path, const std::string& json);
  // Options carrying the TLS material, for a second client (the watch's).
  net::HttpClientOptions ClientOptions() const;
  const EtcdEndpoint& endpoint() const { return endpoint_; }

 private:
  EtcdClient(EtcdEndpoint endpoint, std::chrono::milliseconds timeout);
  Result<net::HttpResponse> Post(const std::string& path, const std::string& json, const std::string& token);
  Result<std::string> Token(bool renew);

  EtcdEndpoint endpoint_;
  std::chrono::milliseconds timeout_;
  std::string user_, password_;  // empty: no etcd auth
  net::HttpClient http_;
  Mutex mu_;
  std::string token_ GUARDED_BY(mu_);
};

}  // namespace strata::group
