// PeerServer: a cache group member's peer endpoint (Boost.Beast; the only
// file of the module that includes Beast is peer_server.cc). It answers the
// peer protocol (peer_protocol.h) from this member's CachedStores: a block is
// served from RAM or disk, or fetched once from the bucket under the cache's
// single-flight, so concurrent asks from the whole group cost one GET. Every
// request is authenticated before anything is looked up, and every answer
// carries its MAC. It binds only the address given (never a wildcard unless
// asked for one). Strangers cannot tie it up: connections are capped per
// listener and per client address (at a cap the longest-idle one is closed,
// net/connection_table.h), a request's headers must arrive within
// header_timeout of its first byte, and an answer is written at a minimum
// rate.
// One io thread runs the sockets; cache reads (which block) run on a small
// worker pool. Every request runs inside a boundary: an exception is a 500
// for that request, never the end of the process. Thread-safe; the
// destructor stops serving and closes every connection.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/buffer.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "cache/cached_store.h"
#include "group/peer_protocol.h"

namespace strata::group {

struct PeerServerOptions {
  std::string host = "127.0.0.1";  // an IP address (IPv6 without brackets)
  uint16_t port = 0;               // 0: any free port
  std::string secret;              // the group secret; kMinSecretBytes at least (checked at Start)
  std::chrono::seconds max_skew = kDefaultMaxSkew;
  // Each worker blocks on a bucket fetch, not the CPU, and N-1 members with
  // read-ahead ask at once: with 8, asks queued behind them on a busy owner
  // outlived the 2 s peer deadline (group_bench, N=4), marking a live owner
  // suspect and sending its blocks to the bucket.
  int workers = 32;
  // Peers hold a few pooled connections each (a reader's HttpClient keeps
  // up to 64), every process of a node shares its address.
  uint64_t max_connections = 1024;
  uint64_t max_connections_per_client = 256;
  std::chrono::milliseconds idle_timeout{30000};   // a kept-alive connection waits this long for a request
  std::chrono::milliseconds header_timeout{5000};  // from a request's first byte to its last header
  // An answer is cut off when written slower than this, after write_grace
  // (a 4 MiB block at 1 MiB/s: 14 s): a reader that stops reading holds no
  // block for long.
  uint64_t min_write_rate = 1 << 20;
  std::chrono::milliseconds write_grace{10000};
  Clock* clock = nullptr;  // default RealClock() (WallNow checks request times)
};

struct PeerResponse {
  int status = 200;
  Buffer body;
  std::string nonce, mac;  // x-strata-peer-nonce and x-strata-peer-answer for 200
  std::string message;     // for errors, in the body
};

// The Beast-free request handler (tests call it directly).
class PeerService {
 public:
  explicit PeerService(PeerServerOptions options);
  // The store must outlive the service; blocks of other stores are 404.
  void AddStore(cache::CachedStore* store);
  // The member's own stats for kPeerStatusPath (peer hits and misses as a
  // reader); unset: they are reported as 0.
  void SetReaderStats(std::function<std::pair<uint64_t, uint64_t>()> hits_and_misses);
  PeerResponse Handle(std::string_view method, std::string_view target, std::string_view time_header,
                      std::string_view auth_header);

  struct Stats {
    uint64_t served = 0;                  // blocks answered
    uint64_t bucket_fetches_avoided = 0;  // answered without fetching from the bucket
    uint64_t refused = 0;                 // 403s
  };
  Stats stats() const { return {served_.load(), avoided_.load(), refused_.load()}; }
  const PeerServerOptions& options() const { return options_; }

 private:
  PeerServerOptions options_;
  Clock& clock_;
  Mutex mu_;
  std::map<std::string, cache::CachedStore*, std::less<>> stores_ GUARDED_BY(mu_);
  std::function<std::pair<uint64_t, uint64_t>()> reader_stats_ GUARDED_BY(mu_);
  Buffer StatusJson();
  // The block `req` names; *http_status says how to answer an error.
  Result<Buffer> Block(const BlockRequest& req, int* http_status);
  // Rewrites a block after its MAC was computed: a lying peer, set before
  // serving by group/group_test_util.h's PeerServiceTestPeer.
  std::function<Buffer(Buffer)> tamper_;
  friend class PeerServiceTestPeer;
  std::atomic<uint64_t> served_{0}, avoided_{0}, refused_{0};
};

class PeerServer {
 public:
  // Binds and starts serving `service` (which must outlive the server).
  // Unavailable when the address cannot be bound; InvalidArgument for a
  // short secret or a bad host.
  static Result<std::unique_ptr<PeerServer>> Start(PeerService& service);
  ~PeerServer();
  uint16_t port() const;
  std::string address() const;  // "host:port" ("[v6]:port")
  struct Stats {
    uint64_t connections = 0;  // open now
    uint64_t refused = 0;      // connections closed at accept: a cap was reached and none was idle
    uint64_t evicted = 0;      // idle connections closed to make room for a newcomer
  };
  Stats stats() const;

  class Impl;

 private:
  explicit PeerServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::group
