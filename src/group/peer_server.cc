#include "group/peer_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "base/executor.h"
#include "base/log.h"
#include "base/metrics.h"
#include "group/address.h"
#include "net/connection_table.h"

namespace strata::group {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

constexpr uint32_t kMaxHeaderBytes = 16 << 10;

Counter& ServedCounter() {
  static Counter& c = MetricsRegistry::Global().GetCounter("strata_group_peer_served_total",
                                                           "Blocks this member served to group peers");
  return c;
}
Counter& AvoidedCounter() {
  static Counter& c = MetricsRegistry::Global().GetCounter(
      "strata_group_bucket_fetches_avoided_total",
      "Peer requests answered without a bucket fetch (from a tier or another asker's fetch)");
  return c;
}

int StatusToHttp(const Status& st) {
  switch (st.code()) {
    case Code::kInvalidArgument: return 400;
    case Code::kNotFound: return 404;
    case Code::kPreconditionFailed: return 412;
    default: return 503;
  }
}

}  // namespace

// ---- PeerService ----

namespace {

PeerResponse Error(int status, std::string message) {
  PeerResponse r;
  r.status = status;
  r.message = std::move(message);
  return r;
}

}  // namespace

PeerService::PeerService(PeerServerOptions options)
    : options_(std::move(options)), clock_(options_.clock ? *options_.clock : RealClock()) {}

void PeerService::AddStore(cache::CachedStore* store) {
  MutexLock lock(mu_);
  stores_[store->Url()] = store;
}

void PeerService::SetReaderStats(std::function<std::pair<uint64_t, uint64_t>()> hits_and_misses) {
  MutexLock lock(mu_);
  reader_stats_ = std::move(hits_and_misses);
}

Buffer PeerService::StatusJson() {
  std::set<cache::BlockCache*> caches;  // buckets usually share one cache: count it once
  std::function<std::pair<uint64_t, uint64_t>()> reader;
  size_t stores = 0;
  {
    MutexLock lock(mu_);
    for (auto& [url, store] : stores_) caches.insert(&store->cache());
    reader = reader_stats_;
    stores = stores_.size();
  }
  uint64_t ram_blocks = 0, ram_bytes = 0, disk_blocks = 0, disk_bytes = 0, bucket_fetches = 0;
  for (auto* c : caches) {
    cache::CacheStats s = c->Stats();
    ram_blocks += s.ram_blocks, ram_bytes += s.ram_bytes, disk_blocks += s.disk_blocks, disk_bytes += s.disk_bytes;
    bucket_fetches += s[cache::CacheCounter::kMisses];
  }
  auto [hits, misses] = reader ? reader() : std::pair<uint64_t, uint64_t>{0, 0};
  nlohmann::json j{{"stores", stores},           {"ram_blocks", ram_blocks},
                   {"ram_bytes", ram_bytes},     {"disk_blocks", disk_blocks},
                   {"disk_bytes", disk_bytes},   {"bucket_fetches", bucket_fetches},
                   {"served", served_.load()},   {"bucket_fetches_avoided", avoided_.load()},
                   {"refused", refused_.load()}, {"peer_hits", hits},
                   {"peer_misses", misses}};
  return Buffer::FromString(j.dump());
}

Result<Buffer> PeerService::Block(const BlockRequest& req, int* http_status) {
  cache::CachedStore* store = nullptr;
  {
    MutexLock lock(mu_);
    auto it = stores_.find(req.store);
    if (it != stores_.end()) store = it->second;
  }
  if (!store) {
    *http_status = 404;
    return NotFoundError("this member does not cache " + req.store);
  }
  if (store->cache().options().block_size != req.block_size) {
    *http_status = 400;
    return InvalidArgumentError("block size differs from this member's (" +
                                std::to_string(store->cache().options().block_size) + ")");
  }
  bool from_backend = false;
  auto block = store->ServeBlock(req.key, req.etag, req.object_size, req.index, &from_backend);
  if (!block.ok()) {
    *http_status = StatusToHttp(block.status());
    return block.status();
  }
  ++served_;
  ServedCounter().Inc();
  if (!from_backend) {
    ++avoided_;
    AvoidedCounter().Inc();
  }
  return block;
}

PeerResponse PeerService::Handle(std::string_view method, std::string_view target, std::string_view time_header,
                                 std::string_view auth_header) {
  // Authenticate before parsing anything else: strangers learn nothing (not
  // even how far their clock is from ours).
  Status auth =
      VerifyPeerRequest(options_.secret, method, target, time_header, auth_header, clock_.WallNow(), options_.max_skew);
  if (!auth.ok()) {
    ++refused_;
    STRATA_LOG_DEBUG("group: refused a peer request: {}", auth.ToString());
    return Error(403, auth.message());
  }
  if (method != "GET") return Error(405, "only GET");
  PeerResponse r;
  if (target == kPeerStatusPath) {
    r.body = StatusJson();
  } else {
    auto req = ParseBlockTarget(target);
    if (!req.ok()) return Error(400, req.status().message());
    int status = 200;
    auto block = Block(*req, &status);
    if (!block.ok()) return Error(status, block.status().ToString());
    r.body = std::move(block).value();
  }
  auto seal = SealPeerAnswer(options_.secret, auth_header, target, r.body.view());
  if (!seal.ok()) return Error(500, seal.status().ToString());
  r.nonce = std::move(seal->nonce);
  r.mac = std::move(seal->mac);
  if (tamper_) r.body = tamper_(std::move(r.body));
  return r;
}

// ---- PeerServer ----

class PeerConn;

class PeerServer::Impl {
 public:
  explicit Impl(PeerService& service)
      : service_(service),
        table_(service.options().max_connections, service.options().max_connections_per_client),
        acceptor_(ioc_),
        retry_accept_(ioc_),
        workers_(std::make_unique<ThreadPool>(std::max(1, service.options().workers), "strata-peer")) {}
  ~Impl() { Stop(); }

  Status Listen() {
    const auto& o = service_.options();
    if (o.secret.size() < kMinSecretBytes) {
      return InvalidArgumentError("a cache group needs a group secret of at least " + std::to_string(kMinSecretBytes) +
                                  " bytes");
    }
    beast::error_code ec;
    auto address = asio::ip::make_address(o.host, ec);
    if (ec) return InvalidArgumentError("bad peer listen host \"" + o.host + "\"", ec.message());
    tcp::endpoint ep(address, o.port);
    const std::string where = FormatHostPort({o.host, o.port});
    if (acceptor_.open(ep.protocol(), ec); ec)
      return UnavailableError("cannot open a socket for " + where, ec.message());
    acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (acceptor_.bind(ep, ec); ec) return UnavailableError("cannot listen on " + where, ec.message());
    if (acceptor_.listen(asio::socket_base::max_listen_connections, ec); ec) {
      return UnavailableError("cannot listen on " + where, ec.message());
    }
    port_ = acceptor_.local_endpoint(ec).port();
    work_.emplace(ioc_.get_executor());
    Accept();
    thread_ = std::thread([this] {
      for (;;) {
        try {
          ioc_.run();
          return;
        } catch (...) {
          STRATA_LOG_ERROR("group: peer server io thread caught an exception; continuing");
        }
      }
    });
    return Status::Ok();
  }

  void Accept();
  void Admit(tcp::socket socket);
  void Stop();

  PeerService& service_;
  uint16_t port_ = 0;
  // Declared before ioc_: connections destroyed with ioc_'s queued handlers unregister here.
  net::ConnectionTable table_;
  std::atomic<uint64_t> refused_{0}, evicted_{0};
  Mutex mu_;
  bool stopped_ GUARDED_BY(mu_) = false;
  asio::io_context ioc_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_accept_;
  std::thread thread_;
  std::unique_ptr<ThreadPool> workers_;  // last: drained first, its tasks post into ioc_
};

class PeerConn : public net::ServedConnection, public std::enable_shared_from_this<PeerConn> {
 public:
  PeerConn(PeerServer::Impl& srv, tcp::socket socket) : srv_(srv), stream_(std::move(socket)) {}
  ~PeerConn() override { srv_.table_.Remove(this); }

  void Start() { Read(); }
  // From any thread: the socket is touched on its own strand only.
  void ForceClose() override {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
  }
  void StopIfIdle() override { ForceClose(); }
  void CloseNow() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

 private:
  const PeerServerOptions& options() const { return srv_.service_.options(); }

  // Waits for a request's first byte (idle_timeout), then for the rest of
  // its headers (header_timeout): a trickle of header bytes holds nothing long.
  void Read() {
    MarkIdle();
    if (buf_.size() > 0) return ReadHeaders();  // the next request arrived with the last
    stream_.expires_after(options().idle_timeout);
    stream_.async_read_some(buf_.prepare(kMaxHeaderBytes), [self = shared_from_this()](beast::error_code ec, size_t n) {
      if (ec) return self->CloseNow();
      self->buf_.commit(n);
      self->ReadHeaders();
    });
  }

  void ReadHeaders() {
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(0);
    stream_.expires_after(options().header_timeout);
    http::async_read(stream_, buf_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->CloseNow();
      self->Dispatch();
    });
  }

  void Dispatch() {
    MarkBusy();
    auto& req = parser_->get();
    keep_alive_ = req.keep_alive();
    std::string method(req.method_string()), target(req.target());
    std::string time(req[kPeerTimeHeader]), auth(req[kPeerAuthHeader]);
    srv_.workers_->Submit([self = shared_from_this(), method = std::move(method), target = std::move(target),
                           time = std::move(time), auth = std::move(auth)] {
      PeerResponse resp;
      try {
        resp = self->srv_.service_.Handle(method, target, time, auth);
      } catch (...) {
        STRATA_LOG_ERROR("group: a peer request ended in an exception; answered 500");
        resp = PeerResponse{};
        resp.status = 500;
        resp.message = "internal error";
      }
      asio::post(self->stream_.get_executor(),
                 [self, resp = std::move(resp)]() mutable { self->Write(std::move(resp)); });
    });
  }

  void Write(PeerResponse resp) {
    resp_ = std::move(resp);
    if (resp_.status != 200) resp_.body = Buffer::Copy(resp_.message);
    res_.emplace();
    res_->result(static_cast<unsigned>(resp_.status));
    res_->version(11);
    res_->keep_alive(keep_alive_);
    if (resp_.status == 200) {
      res_->set(kPeerNonceHeader, resp_.nonce);
      res_->set(kPeerAnswerHeader, resp_.mac);
    }
    res_->set(http::field::content_type, resp_.status == 200 ? "application/octet-stream" : "text/plain");
    res_->body() =
        http::span_body<const char>::value_type(reinterpret_cast<const char*>(resp_.body.data()), resp_.body.size());
    res_->prepare_payload();
    const auto& o = options();
    stream_.expires_after(
        o.write_grace + std::chrono::milliseconds(resp_.body.size() * 1000 / std::max<uint64_t>(1, o.min_write_rate)));
    http::async_write(stream_, *res_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec || !self->keep_alive_) return self->CloseNow();
      self->resp_ = PeerResponse{};  // the block's bytes go back now, not when the next request comes
      self->Read();
    });
  }

  PeerServer::Impl& srv_;
  beast::tcp_stream stream_;
  beast::flat_buffer buf_{2 * kMaxHeaderBytes};
  std::optional<http::request_parser<http::empty_body>> parser_;
  bool keep_alive_ = true;
  PeerResponse resp_;  // owns the bytes res_ points at
  std::optional<http::response<http::span_body<const char>>> res_;
};

void PeerServer::Impl::Accept() {
  acceptor_.async_accept(asio::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
    if (!ec) {
      Admit(std::move(socket));
      return Accept();
    }
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    // Out of descriptors: close the longest-idle connection, or wait a little for one to go.
    if ((ec == asio::error::no_descriptors || ec.value() == ENFILE) && table_.EvictOldestIdle()) {
      ++evicted_;
      return Accept();
    }
    retry_accept_.expires_after(std::chrono::milliseconds(50));
    retry_accept_.async_wait([this](beast::error_code wait_ec) {
      if (!wait_ec) Accept();
    });
  });
}

void PeerServer::Impl::Admit(tcp::socket socket) {
  beast::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  if (ec) return;  // already gone
  auto conn = std::make_shared<PeerConn>(*this, std::move(socket));
  switch (table_.Admit(conn.get(), conn, remote.address().to_string())) {
    case net::ConnectionTable::Admission::kRefused: ++refused_; return conn->CloseNow();
    case net::ConnectionTable::Admission::kAdmittedByEviction: ++evicted_; break;
    case net::ConnectionTable::Admission::kAdmitted: break;
  }
  conn->Start();
}

void PeerServer::Impl::Stop() {
  {
    MutexLock lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  std::vector<std::shared_ptr<net::ServedConnection>> live = table_.Live();
  work_.reset();
  ioc_.stop();
  if (thread_.joinable()) thread_.join();
  // The io thread is gone: sockets may be closed from here. Peers see the
  // member leave at once (refused connections), not after a timeout.
  beast::error_code ec;
  acceptor_.close(ec);
  for (auto& c : live) static_cast<PeerConn*>(c.get())->CloseNow();
  live.clear();
  workers_.reset();  // running requests finish; their replies are dropped with ioc_
}

Result<std::unique_ptr<PeerServer>> PeerServer::Start(PeerService& service) {
  auto impl = std::make_unique<Impl>(service);
  STRATA_RETURN_IF_ERROR(impl->Listen());
  return std::unique_ptr<PeerServer>(new PeerServer(std::move(impl)));
}

PeerServer::PeerServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PeerServer::~PeerServer() = default;
uint16_t PeerServer::port() const { return impl_->port_; }
std::string PeerServer::address() const { return FormatHostPort({impl_->service_.options().host, impl_->port_}); }
PeerServer::Stats PeerServer::stats() const {
  return {impl_->table_.size(), impl_->refused_.load(), impl_->evicted_.load()};
}

}  // namespace strata::group
