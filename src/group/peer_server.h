// PeerServer: a cache group member's peer endpoint (Boost.Beast; the only
// file of the module that includes Beast is peer_server.cc). It answers the
// peer protocol (peer_protocol.h) from this member's CachedStores: a block is
// served from RAM or disk, or fetched once from the bucket under the cache's
// single-flight, so concurrent asks from the whole group cost one GET. Every
// request is authenticated before anything is looked up. It binds only the
// address given (never a wildcard unless asked for one).
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
  std::string host = "127.0.0.1";
  uint16_t port = 0;   // 0: any free port
  std::string secret;  // the group secret; required (an empty one is refused at Start)
  std::chrono::seconds max_skew = kDefaultMaxSkew;
  // Each worker blocks on a bucket fetch, not the CPU, and N-1 members with
  // read-ahead ask at once: with 8, asks queued behind them on a busy owner
  // outlived the 2 s peer deadline (group_bench, N=4), marking a live owner
  // suspect and sending its blocks to the bucket.
  int workers = 32;
  Clock* clock = nullptr;  // default RealClock() (WallNow checks request times)
};

struct PeerResponse {
  int status = 200;
  Buffer body;
  std::string checksum;  // x-strata-block-xxh3 for 200
  std::string message;   // for errors, in the body
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
  // Rewrites a block after its checksum was computed: a lying peer, set
  // before serving by group/group_test_util.h's PeerServiceTestPeer.
  std::function<Buffer(Buffer)> tamper_;
  friend class PeerServiceTestPeer;
  PeerResponse StatusResponse();
  std::atomic<uint64_t> served_{0}, avoided_{0}, refused_{0};
};

class PeerServer {
 public:
  // Binds and starts serving `service` (which must outlive the server).
  // Unavailable when the address cannot be bound; InvalidArgument for an
  // empty secret or a bad host.
  static Result<std::unique_ptr<PeerServer>> Start(PeerService& service);
  ~PeerServer();
  uint16_t port() const;
  std::string address() const;  // "host:port"

  class Impl;

 private:
  explicit PeerServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::group
