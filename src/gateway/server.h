// GatewayServer: the HTTP/1.1 front end (Boost.Beast/Asio; the only file
// that includes Beast is server.cc). A few io threads run every socket
// asynchronously; S3 operations (which block on the cache and the backend)
// run on a worker pool, and large bodies are streamed from cache Buffers to
// the socket without copying, the next piece being fetched while the
// current one is written.
//
// Protections: request-header size limit (431 and close), body size limit
// (EntityTooLarge), a memory budget shared by all request bodies in flight
// (503 SlowDown past it), header deadline from the first byte (slowloris),
// idle keep-alive timeout, per-I/O progress timeout, bounded lingering
// close. Every request runs inside a boundary: an exception (std::bad_alloc
// included) is a logged 500 for that request, never the end of the process.
// Keep-alive and pipelining: requests on a connection are served strictly in
// order. Shutdown(): stop accepting, close idle connections, let in-flight
// requests finish (up to drain_timeout), then close the rest.
// Unsigned GET /healthz and /metrics are served before S3 routing (a bucket
// with either name is still reachable with signed requests).
// Thread-safe; Shutdown is idempotent and also run by the destructor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "gateway/config.h"
#include "gateway/observer.h"
#include "gateway/s3_handler.h"

namespace strata::gateway {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port
  int io_threads = 2;
  int workers = 32;
  GatewayLimits limits;
};

class GatewayServer {
 public:
  // Binds and starts serving. `handler` and `observer` must outlive the server.
  // Unavailable (cause: the socket error) when the address cannot be bound.
  static Result<std::unique_ptr<GatewayServer>> Start(const ServerOptions& options, S3Handler& handler,
                                                      GatewayObserver& observer);
  ~GatewayServer();

  uint16_t port() const;
  std::string url() const;  // "http://127.0.0.1:PORT"
  void Shutdown();

  class Impl;

 private:
  explicit GatewayServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::gateway
