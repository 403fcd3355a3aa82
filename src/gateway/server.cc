#include "gateway/server.h"

#include <sys/resource.h>

#include <array>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <thread>
#include <unordered_map>

#include "base/executor.h"
#include "base/log.h"
#include "base/mutex.h"
#include "gateway/body_file.h"
#include "net/connection_table.h"
#include "net/s3_errors.h"
#include "net/uri.h"
#include "net/xml.h"

namespace strata::gateway {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// `wanted` connections, or fewer when the descriptor limit (ulimit -n) minus
// `reserved` (cache files, backend and spill files) allows fewer: then a
// warning says so once (the caps, not EMFILE, should decide who is served).
uint64_t CapByDescriptors(uint64_t wanted, uint64_t reserved) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return wanted;
  const uint64_t fds = rl.rlim_cur > 2 * reserved ? rl.rlim_cur - reserved : rl.rlim_cur / 2;
  if (fds >= wanted) return wanted;
  STRATA_LOG_WARN(
      "gateway: limits.max_connections is {} but the descriptor limit (ulimit -n) is {}: at most {} connections "
      "are kept (raise ulimit -n for more)",
      wanted, static_cast<uint64_t>(rl.rlim_cur), fds);
  return fds;
}

constexpr size_t kBodyPiece = 1 << 20;             // request bodies are read in pieces of this size
constexpr uint64_t kLingerMaxBytes = 64ull << 20;  // discarded after a refused body before closing
// What a spilled body holds of the in-flight budget: its read piece, and the
// part the handler reads back and uploads (kStreamPartBytes) plus slack.
constexpr uint64_t kSpillReserve = 10ull << 20;
// Bodies held in memory that are not object bytes (XML: DeleteObjects,
// CompleteMultipartUpload, ACLs, versioning): no larger than the parser takes.
const uint64_t kMaxXmlBody = net::XmlLimits{}.max_input_bytes;
// Descriptors kept for everything but client connections (cache files, the backend, spill files).
constexpr uint64_t kReservedDescriptors = 256;

// PutObject and UploadPart bodies may be spilled to a temp file; not a copy
// (no body) nor a PUT of a sub-resource (?tagging, ?acl...), whose handlers
// read the body from memory. Presigned parameters (X-Amz-*) do not count.
bool Spillable(const GatewayRequest& req) {
  if (req.method != "PUT" || net::FindHeader(req.headers, "x-amz-copy-source")) return false;
  size_t q = req.target.find('?');
  if (q == std::string::npos) return true;
  std::string_view query = std::string_view(req.target).substr(q + 1);
  while (!query.empty()) {
    std::string_view param = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), param.size() + 1));
    std::string_view name = param.substr(0, param.find('='));
    if (name.empty() || name == "uploadId" || name == "partNumber" || name == "x-id") continue;
    if (name.size() > 6 && (name.substr(0, 6) == "X-Amz-" || name.substr(0, 6) == "x-amz-")) continue;
    return false;
  }
  return true;
}

// What a client sees when its body could not be spilled: out of disk is
// 503 SlowDown (retry later), anything else a 500 saying what failed.
GatewayResponse SpillError(S3Handler& handler, const Status& st, const std::string& resource) {
  STRATA_LOG_ERROR("gateway: spilling a request body: {}", st.ToString());
  if (st.code() == Code::kNoSpace) {
    return handler.Error(503, "SlowDown",
                         "The gateway's spill directory is out of space for this request body; retry later.", resource);
  }
  return handler.Error(500, "InternalError", "The gateway could not keep this request body in its spill directory.",
                       resource);
}
constexpr auto kLingerTime = std::chrono::seconds(2);

std::string Reason(int status) {
  auto r = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)));
  if (r.empty() || r == "<unknown-status>") return "Unknown";
  return std::string(r);
}

// Inside a catch block: what was thrown, for the log.
std::string CurrentExceptionText() {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return "out of memory";
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

// Header values we send come from our own code; never let one break a line.
bool SafeHeader(const std::string& s) { return s.find_first_of("\r\n") == std::string::npos; }

}  // namespace

class Conn;

class GatewayServer::Impl {
 public:
  Impl(const ServerOptions& options, S3Handler& handler, GatewayObserver& observer)
      : options_(options),
        handler_(handler),
        observer_(observer),
        table_(CapByDescriptors(options.limits.max_connections, kReservedDescriptors),
               options.limits.max_connections_per_client),
        acceptor_(ioc_),
        workers_(std::make_unique<ThreadPool>(std::max(1, options.workers), "strata-gw-worker")) {}

  Status Listen();
  void Run();
  void Shutdown();
  void Accept();

  // Admits a new connection (the caps, net/connection_table.h), or refuses it with a short 503.
  void Admit(tcp::socket socket);

  // The in-flight body budget: reserves n bytes, or refuses when that would
  // pass limits.max_inflight_bytes. Callers never ask for more than the whole
  // budget (a body that large is refused, or spilled).
  bool Reserve(uint64_t n) {
    uint64_t cur = inflight_.load();
    do {
      if (cur + n > options_.limits.max_inflight_bytes) return false;
    } while (!inflight_.compare_exchange_weak(cur, cur + n));
    return true;
  }

  void Unreserve(uint64_t n) { inflight_.fetch_sub(n); }

  ServerOptions options_;
  S3Handler& handler_;
  GatewayObserver& observer_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> inflight_{0};  // request body bytes reserved
  uint16_t port_ = 0;

  // The live connections, their caps, and Shutdown's wait until they are gone.
  net::ConnectionTable table_;
  Mutex mu_;
  bool shut_down_ GUARDED_BY(mu_) = false;

  // Destroyed in reverse: the worker pool first (its tasks post into ioc_),
  // then the io threads, the acceptor and ioc_ (whose queued handlers may
  // still hold connections that unregister above).
  asio::io_context ioc_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  tcp::acceptor acceptor_;
  std::vector<std::thread> threads_;
  std::unique_ptr<ThreadPool> workers_;
};

class Conn : public net::ServedConnection, public std::enable_shared_from_this<Conn> {
 public:
  Conn(GatewayServer::Impl& srv, tcp::socket socket)
      : srv_(srv), stream_(std::move(socket)), buf_(srv.options_.limits.max_header_bytes + kBodyPiece) {
    beast::error_code ec;
    auto ep = stream_.socket().remote_endpoint(ec);
    if (!ec) {
      client_ = ep.address().to_string();
      remote_ = client_ + ":" + std::to_string(ep.port());
    }
    srv_.observer_.ConnectionOpened();
  }
  ~Conn() override {
    ReleaseBody();
    srv_.observer_.ConnectionClosed();
    srv_.table_.Remove(this);
  }

  const std::string& client() const { return client_; }

  void Start() {
    // A new connection's first request has the header deadline from now: an idle newcomer is gone soon.
    header_deadline_ = std::chrono::steady_clock::now() + limits().header_timeout;
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->WaitRequest(); });
  }

  // Over a cap with nothing to make room: a short 503, written without
  // waiting (it fits the empty socket buffer), then closed.
  void Refuse() {
    static const std::string kBody =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Too many connections; "
        "retry later.</Message></Error>";
    static const std::string kResponse =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\n"
        "Content-Length: " +
        std::to_string(kBody.size()) + "\r\nConnection: close\r\n\r\n" + kBody;
    beast::error_code ec;
    auto& socket = stream_.socket();
    socket.non_blocking(true, ec);
    if (!ec) socket.write_some(asio::buffer(kResponse), ec);
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
  }

  // Shutdown: an idle connection is closed now; a busy one after its response.
  void StopIfIdle() override {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->idle_) self->CloseNow();
    });
  }
  void ForceClose() override {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
  }

 private:
  const GatewayLimits& limits() const { return srv_.options_.limits; }
  using SteadyTime = std::chrono::steady_clock::time_point;

  // The deadline for transferring `bytes` more, having moved `done` since
  // `since`: no I/O may stall past io_timeout, and after transfer_grace the
  // average must keep up with min_transfer_rate.
  void ExpireForTransfer(SteadyTime since, uint64_t done, uint64_t bytes) {
    auto deadline = std::chrono::steady_clock::now() + limits().io_timeout;
    if (uint64_t rate = limits().min_transfer_rate; rate > 0) {
      auto need = std::chrono::duration<double>(static_cast<double>(done + bytes) / static_cast<double>(rate));
      deadline = std::min(deadline, since + limits().transfer_grace +
                                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(need));
    }
    stream_.expires_at(deadline);
  }

  void WaitRequest() {
    if (srv_.stopping_) return CloseNow();
    MarkIdle();
    if (buf_.size() > 0) {  // a pipelined request is already here
      header_deadline_ = std::chrono::steady_clock::now() + limits().header_timeout;
      return ReadHeader();
    }
    idle_ = true;
    if (served_ == 0) {
      stream_.expires_at(header_deadline_);
    } else {
      stream_.expires_after(limits().idle_timeout);
    }
    stream_.async_read_some(buf_.prepare(4096), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->buf_.commit(n);
      self->idle_ = false;
      if (ec || n == 0) return self->CloseNow();
      if (self->served_ > 0) self->header_deadline_ = std::chrono::steady_clock::now() + self->limits().header_timeout;
      self->ReadHeader();
    });
  }

  void ReadHeader() {
    idle_ = false;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(std::min<uint64_t>(limits().max_header_bytes, UINT32_MAX)));
    parser_->body_limit(limits().max_body_bytes);
    start_ = std::chrono::steady_clock::now();
    start_wall_ = srv_.handler_.clock().WallNow();
    stream_.expires_at(header_deadline_);
    http::async_read_header(stream_, buf_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec == http::error::header_limit) {
      return RespondNow(srv_.handler_.Error(431, "RequestHeaderSectionTooLarge",
                                            "Your request header section exceeds the maximum allowed size.", ""),
                        true);
    }
    if (ec == beast::error::timeout || ec == asio::error::operation_aborted || ec == http::error::end_of_stream ||
        ec == asio::error::eof || ec == asio::error::connection_reset) {
      return CloseNow();
    }
    if (ec) {
      return RespondNow(srv_.handler_.Error(400, "BadRequest", "Malformed HTTP request: " + ec.message(), ""), true);
    }
    MarkBusy();
    auto& h = parser_->get();
    req_ = GatewayRequest{};
    req_.method = std::string(h.method_string());
    req_.target = std::string(h.target());
    for (const auto& f : h) req_.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    req_.remote = remote_;
    http10_ = h.version() < 11;
    request_keep_alive_ = h.keep_alive();

    if (ServeOps()) return;
    if (parser_->is_done()) return Dispatch();
    auto cl = parser_->content_length();
    if (cl && *cl > limits().max_body_bytes) {
      return RespondNow(srv_.handler_.Error(400, "EntityTooLarge",
                                            "Your proposed upload exceeds the maximum allowed size (" +
                                                std::to_string(limits().max_body_bytes) + " bytes).",
                                            Resource()),
                        true);
    }
    // Refuse a bad signature before reading (or inviting) the body.
    if (auto refusal = srv_.handler_.PreCheck(req_)) return RespondNow(std::move(*refusal), true);
    if (auto refusal = RefuseBody(cl ? std::optional<uint64_t>(*cl) : std::nullopt)) {
      return RespondNow(std::move(*refusal), true);
    }
    content_length_.reset();
    spill_.reset();
    if (cl && *cl > MemoryBodyLimit() && Spillable(req_)) {
      // Too large to hold: to a temp file, holding only its pieces of the budget.
      if (!ReserveBody(SpillReserve())) return RespondSlowDown();
      auto file = BodyFile::Create(limits().spill_dir);
      if (!file.ok()) return RespondNow(SpillError(srv_.handler_, file.status(), Resource()), true);
      spill_ = std::move(file).value();
    } else if (!ReserveBody(cl ? *cl : kBodyPiece)) {  // memory is reserved before it is allocated or read
      return RespondSlowDown();
    }
    if (cl) content_length_ = *cl;
    if (cl && !spill_) body_ = MutableBuffer(*cl);
    body_len_ = 0;
    body_seen_ = 0;
    body_start_ = std::chrono::steady_clock::now();
    chunked_body_.clear();
    const auto expect = h[http::field::expect];
    if (beast::iequals(expect, "100-continue")) {
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      stream_.expires_after(limits().io_timeout);
      asio::async_write(stream_, asio::buffer(kContinue), [self = shared_from_this()](beast::error_code ec, size_t) {
        if (ec) return self->CloseNow();
        self->ReadBody();
      });
      return;
    }
    ReadBody();
  }

  // Unsigned GET /healthz and /metrics.
  bool ServeOps() {
    // A browser's (Origin) goes on to the S3 handler, which refuses it unsigned.
    if (req_.method != "GET" || net::FindHeader(req_.headers, "authorization") ||
        net::FindHeader(req_.headers, "origin")) {
      return false;
    }
    GatewayResponse r;
    if (req_.target == "/healthz") {
      r.body = "ok\n";
      r.op = "Healthz";
    } else if (req_.target == "/metrics") {
      r.body = srv_.observer_.RenderMetrics();
      r.op = "Metrics";
    } else {
      return false;
    }
    r.headers.emplace_back("Content-Type", r.op == "Metrics" ? "text/plain; version=0.0.4" : "text/plain");
    r.content_length = r.body.size();
    if (!parser_->is_done()) r.close = true;
    RespondNow(std::move(r), false);
    return true;
  }

  void ReadBody() {
    auto& b = parser_->get().body();
    if (spill_) {
      if (scratch_.size() < kBodyPiece) scratch_.resize(kBodyPiece);
      piece_ = content_length_ ? std::min<uint64_t>(*content_length_ - body_len_, kBodyPiece) : kBodyPiece;
      b.data = scratch_.data();
    } else if (content_length_) {
      piece_ = std::min<uint64_t>(*content_length_ - body_len_, kBodyPiece);
      b.data = body_.data() + body_len_;
    } else {
      if (scratch_.size() < kBodyPiece) scratch_.resize(kBodyPiece);
      piece_ = scratch_.size();
      b.data = scratch_.data();
    }
    b.size = piece_;
    b.more = true;
    ExpireForTransfer(body_start_, body_seen_, piece_);
    http::async_read(stream_, buf_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); });
  }

  void OnBody(beast::error_code ec) {
    if (ec == http::error::need_buffer) ec = {};
    if (ec == http::error::body_limit) {
      return RespondNow(srv_.handler_.Error(400, "EntityTooLarge", "Your upload exceeds the maximum allowed size.", ""),
                        true);
    }
    if (ec) return CloseNow();
    auto& b = parser_->get().body();
    uint64_t got = piece_ - b.size;
    body_seen_ += got;
    if (spill_) {
      Status st = spill_->Append(scratch_.data(), got);
      if (!st.ok()) return RespondNow(SpillError(srv_.handler_, st, Resource()), true);
      body_len_ += got;
    } else if (content_length_) {
      body_len_ += got;
    } else if (chunked_body_.size() + got > MemoryBodyLimit() && Spillable(req_)) {
      // A chunked body grown past the threshold: on to a temp file from here,
      // holding only the spill reservation of the budget.
      auto file = BodyFile::Create(limits().spill_dir);
      Status st = file.ok() ? (*file)->Append(chunked_body_.data(), chunked_body_.size()) : file.status();
      if (st.ok()) st = (*file)->Append(scratch_.data(), got);
      if (!st.ok()) return RespondNow(SpillError(srv_.handler_, st, Resource()), true);
      spill_ = std::move(file).value();
      chunked_body_ = std::string();
      if (uint64_t held = reserved_.load(); held > SpillReserve()) {  // it held at least MemoryBodyLimit()
        srv_.Unreserve(held - SpillReserve());
        reserved_.store(SpillReserve());
      }
    } else {
      if (chunked_body_.size() + got > MemoryCap()) return RespondNow(TooLargeForMemory(), true);
      if (chunked_body_.size() + got > reserved_ && !ReserveBody(kBodyPiece)) return RespondSlowDown();
      chunked_body_.append(scratch_.data(), got);
    }
    if (!parser_->is_done()) return ReadBody();
    if (spill_) {
      req_.body_file = std::move(spill_);
    } else if (content_length_) {
      body_.Resize(body_len_);
      req_.body = std::move(body_).Freeze();
    } else {
      req_.body = Buffer::FromString(std::move(chunked_body_));
      chunked_body_.clear();
    }
    Dispatch();
  }

  // Runs the S3 operation (and fetches the first body piece) on a worker.
  void Dispatch() {
    stream_.expires_never();
    srv_.workers_->Submit([self = shared_from_this()] {
      try {
        self->Work();
      } catch (...) {
        // Handle never throws; this is the first body piece or a copy failing
        // (std::bad_alloc): a 500 for this request, never the process.
        self->next_ = Buffer();
        self->resp_ = self->srv_.handler_.Error(500, "InternalError", "We encountered an internal error.", "");
        self->resp_.close = true;
        STRATA_LOG_ERROR("gateway: {} {}: {} (answered 500)", self->req_.method, net::RedactTarget(self->req_.target),
                         CurrentExceptionText());
      }
      asio::post(self->stream_.get_executor(), [self] { self->Respond(); });
    });
  }

  void Work() {
    resp_ = srv_.handler_.Handle(req_);
    req_.body = Buffer();
    req_.body_file.reset();  // closing it removes the temp file
    ReleaseBody();
    GatewayResponse& r = resp_;
    if (r.stream && r.send_body && r.content_length > 0) {
      auto first = r.stream->Next();
      if (!first.ok()) {
        STRATA_LOG_WARN("gateway: {} {}: {}", req_.method, net::RedactTarget(req_.target), first.status().ToString());
        std::string op = r.op, bucket = r.bucket, key = r.key;
        net::S3ErrorInfo e = net::S3ErrorForStatus(first.status());
        r = srv_.handler_.Error(e.http_status, e.code, first.status().message(), "");
        r.op = op, r.bucket = bucket, r.key = key;
      } else {
        next_ = std::move(first).value();
      }
    }
  }

  bool ReserveBody(uint64_t n) {
    if (!srv_.Reserve(n)) return false;
    reserved_.fetch_add(n);
    return true;
  }
  void ReleaseBody() { srv_.Unreserve(reserved_.exchange(0)); }

  // A spillable body over this goes to a temp file: it could never be held
  // next to others (or at all) within the budget.
  uint64_t MemoryBodyLimit() const { return std::min(limits().spill_bytes, limits().max_inflight_bytes); }
  // What a spilled body holds (the whole budget, when that is smaller: it then runs alone).
  uint64_t SpillReserve() const { return std::min(kSpillReserve, limits().max_inflight_bytes); }
  // The most a body held in memory may be: XML within the parser's limit, and within the budget.
  uint64_t MemoryCap() const {
    uint64_t cap = limits().max_inflight_bytes;
    if (!Spillable(req_)) cap = std::min(cap, kMaxXmlBody);
    return cap;
  }
  GatewayResponse TooLargeForMemory() {
    return srv_.handler_.Error(400, "MaxMessageLengthExceeded",
                               "Your request was too big: this request's body is held in memory, up to " +
                                   std::to_string(MemoryCap()) + " bytes.",
                               Resource());
  }
  // Bodies refused from the headers alone: one on a copy (S3 takes none), one
  // that could not be held in memory and cannot be spilled.
  std::optional<GatewayResponse> RefuseBody(std::optional<uint64_t> content_length) {
    if (net::FindHeader(req_.headers, "x-amz-copy-source") && (!content_length || *content_length > 0)) {
      return srv_.handler_.Error(400, "UnexpectedContent", "This request does not support content.", Resource());
    }
    if (content_length && *content_length > MemoryCap() && !(*content_length > MemoryBodyLimit() && Spillable(req_))) {
      return TooLargeForMemory();
    }
    return std::nullopt;
  }

  std::string Resource() const { return req_.target.substr(0, req_.target.find('?')); }

  void RespondSlowDown() {
    body_ = MutableBuffer();
    chunked_body_.clear();
    RespondNow(srv_.handler_.Error(503, "SlowDown", "Please reduce your request rate.",
                                   req_.target.substr(0, req_.target.find('?'))),
               true);
  }

  void RespondNow(GatewayResponse r, bool close) {
    ReleaseBody();  // a refusal: the body (if any) is not kept
    spill_.reset();
    resp_ = std::move(r);
    if (close) resp_.close = true;
    Respond();
  }

  void Respond() {
    GatewayResponse& r = resp_;
    keep_alive_ = request_keep_alive_ && !r.close && !srv_.stopping_;
    head_ = "HTTP/1.1 " + std::to_string(r.status) + " " + Reason(r.status) + "\r\n";
    for (const auto& [name, value] : r.headers) {
      if (!SafeHeader(name) || !SafeHeader(value)) continue;
      head_ += name + ": " + value + "\r\n";
    }
    if (r.status != 204 && r.status != 304 && r.status >= 200) {
      head_ += "Content-Length: " + std::to_string(r.content_length) + "\r\n";
    }
    if (!keep_alive_)
      head_ += "Connection: close\r\n";
    else if (http10_)
      head_ += "Connection: keep-alive\r\n";
    head_ += "\r\n";
    sent_ = 0;
    total_ = r.send_body ? r.content_length : 0;
    if (r.status == 204 || r.status == 304) total_ = 0;
    std::array<asio::const_buffer, 2> bufs{asio::buffer(head_), asio::const_buffer()};
    if (total_ > 0 && r.stream) {
      cur_ = std::move(next_);
      bufs[1] = asio::buffer(cur_.data(), cur_.size());
    } else if (total_ > 0) {
      bufs[1] = asio::buffer(r.body.data(), std::min<uint64_t>(r.body.size(), total_));
    }
    size_t body_part = bufs[1].size();
    if (total_ > body_part && r.stream) FetchNext();
    pending_ += 1;
    ExpireForTransfer(std::chrono::steady_clock::now(), 0, head_.size() + body_part);
    asio::async_write(stream_, bufs, [self = shared_from_this(), body_part](beast::error_code ec, size_t) {
      if (ec) self->write_failed_ = true;
      self->sent_ += body_part;
      self->Step();
    });
  }

  // The next piece is fetched on a worker while the current one is written.
  void FetchNext() {
    pending_ += 1;
    srv_.workers_->Submit([self = shared_from_this()] {
      try {
        auto next = self->resp_.stream->Next();
        if (next.ok())
          self->next_ = std::move(next).value();
        else
          self->fetch_error_ = next.status();
      } catch (...) {
        self->fetch_error_ = InternalError("reading the response body: " + CurrentExceptionText());
      }
      asio::post(self->stream_.get_executor(), [self] { self->Step(); });
    });
  }

  void Step() {
    if (--pending_ > 0) return;
    if (write_failed_) return CloseNow();
    if (!fetch_error_.ok()) {
      STRATA_LOG_WARN("gateway: streaming {} {} failed after {} bytes: {}", req_.method, net::RedactTarget(req_.target),
                      sent_, fetch_error_.ToString());
      return CloseNow();  // the status line is out: a short body is all we can signal
    }
    if (sent_ >= total_) return Finish();
    cur_ = std::move(next_);
    if (cur_.empty()) return CloseNow();
    size_t n = std::min<uint64_t>(cur_.size(), total_ - sent_);
    if (sent_ + n < total_) FetchNext();
    pending_ += 1;
    ExpireForTransfer(std::chrono::steady_clock::now(), 0, n);
    asio::async_write(stream_, asio::buffer(cur_.data(), n),
                      [self = shared_from_this(), n](beast::error_code ec, size_t) {
                        if (ec) self->write_failed_ = true;
                        self->sent_ += n;
                        self->Step();
                      });
  }

  void Finish() {
    RequestRecord rec;
    rec.start = start_wall_;
    rec.remote = remote_;
    rec.access_key = resp_.access_key;
    rec.request_id = std::string(FindHeaderValue(resp_.headers, "x-amz-request-id"));
    rec.op = resp_.op;
    rec.bucket = resp_.bucket;
    rec.key = resp_.key;
    rec.error_code = resp_.error_code;
    rec.status = resp_.status;
    rec.bytes_out = sent_;
    rec.bytes_in = resp_.bytes_in;
    rec.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    srv_.observer_.Record(rec);
    bool keep = keep_alive_;
    ++served_;
    resp_ = GatewayResponse{};
    cur_ = next_ = Buffer();
    if (!keep) return LingerClose();
    WaitRequest();
  }

  static std::string_view FindHeaderValue(const net::HttpHeaders& hs, std::string_view name) {
    const std::string* v = net::FindHeader(hs, name);
    return v ? std::string_view(*v) : std::string_view();
  }

  // Half-close, then drain what the client still sends (bounded), so our
  // last response is not lost to a reset.
  void LingerClose() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return CloseNow();
    stream_.expires_after(kLingerTime);
    Drain();
  }
  void Drain() {
    if (scratch_.size() < 65536) scratch_.resize(65536);
    stream_.async_read_some(asio::buffer(scratch_), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->drained_ += n;
      if (ec || self->drained_ > kLingerMaxBytes) return self->CloseNow();
      self->Drain();
    });
  }

  void CloseNow() {
    ReleaseBody();
    idle_ = false;
    beast::error_code ec;
    stream_.socket().close(ec);
  }

  GatewayServer::Impl& srv_;
  beast::tcp_stream stream_;
  beast::flat_buffer buf_;
  std::optional<http::request_parser<http::buffer_body>> parser_;
  std::string client_, remote_;  // the client's address; with its port
  bool idle_ = false;
  uint64_t served_ = 0;           // responses finished on this connection
  SteadyTime header_deadline_{};  // the current request's headers must be in by then
  bool http10_ = false;
  bool request_keep_alive_ = true;
  bool keep_alive_ = true;
  std::chrono::steady_clock::time_point start_;
  WallTime start_wall_;

  GatewayRequest req_;
  std::optional<uint64_t> content_length_;
  MutableBuffer body_;
  std::shared_ptr<BodyFile> spill_;  // the body being spilled to a temp file, if it is
  uint64_t body_len_ = 0;
  uint64_t body_seen_ = 0;  // raw body bytes read so far (the rate floor's count)
  SteadyTime body_start_{};
  uint64_t piece_ = 0;
  std::string chunked_body_;
  std::atomic<uint64_t> reserved_{0};  // this request's share of the in-flight budget
  std::vector<char> scratch_;
  uint64_t drained_ = 0;

  GatewayResponse resp_;
  std::string head_;
  Buffer cur_, next_;
  Status fetch_error_;
  bool write_failed_ = false;
  int pending_ = 0;
  uint64_t sent_ = 0, total_ = 0;
};

void GatewayServer::Impl::Admit(tcp::socket socket) {
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  auto conn = std::make_shared<Conn>(*this, std::move(socket));
  switch (table_.Admit(conn.get(), conn, conn->client())) {
    case net::ConnectionTable::Admission::kRefused: observer_.ConnectionRefused(); return conn->Refuse();
    case net::ConnectionTable::Admission::kAdmittedByEviction: observer_.ConnectionEvicted(); break;
    case net::ConnectionTable::Admission::kAdmitted: break;
  }
  conn->Start();
}

Status GatewayServer::Impl::Listen() {
  beast::error_code ec;
  auto address = asio::ip::make_address(options_.host, ec);
  if (ec) return InvalidArgumentError("bad listen host \"" + options_.host + "\"", ec.message());
  tcp::endpoint ep(address, options_.port);
  std::string where = options_.host + ":" + std::to_string(options_.port);
  if (acceptor_.open(ep.protocol(), ec); ec) return UnavailableError("cannot open a socket for " + where, ec.message());
  acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (acceptor_.bind(ep, ec); ec) return UnavailableError("cannot listen on " + where, ec.message());
  if (acceptor_.listen(asio::socket_base::max_listen_connections, ec); ec) {
    return UnavailableError("cannot listen on " + where, ec.message());
  }
  port_ = acceptor_.local_endpoint(ec).port();
  return Status::Ok();
}

void GatewayServer::Impl::Accept() {
  acceptor_.async_accept(asio::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
    if (stopping_ || ec == asio::error::operation_aborted) return;
    if (ec) {
      // Out of descriptors (EMFILE) and the like: make room by closing the
      // longest-idle connection, and back off briefly instead of spinning.
      if ((ec.value() == EMFILE || ec.value() == ENFILE) && table_.EvictOldestIdle()) observer_.ConnectionEvicted();
      STRATA_LOG_WARN("gateway: accept failed: {}", ec.message());
      auto timer = std::make_shared<asio::steady_timer>(ioc_, std::chrono::milliseconds(50));
      timer->async_wait([this, timer](beast::error_code) { Accept(); });
      return;
    }
    Admit(std::move(socket));
    Accept();
  });
}

void GatewayServer::Impl::Run() {
  work_.emplace(asio::make_work_guard(ioc_));
  Accept();
  int n = std::max(1, options_.io_threads);
  for (int i = 0; i < n; ++i) {
    threads_.emplace_back([this] {
      // A handler that throws (std::bad_alloc sizing a body) loses its
      // connection, which closes when its last reference goes; the io thread
      // carries on serving the others.
      for (;;) {
        try {
          ioc_.run();
          return;
        } catch (...) {
          STRATA_LOG_ERROR("gateway: io thread: {} (connection dropped)", CurrentExceptionText());
        }
      }
    });
  }
}

void GatewayServer::Impl::Shutdown() {
  {
    MutexLock lock(mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  stopping_ = true;
  asio::post(ioc_, [this] {
    beast::error_code ec;
    acceptor_.close(ec);
  });
  for (auto& c : table_.Live()) c->StopIfIdle();
  table_.WaitEmpty(options_.limits.drain_timeout);
  for (auto& c : table_.Live()) c->ForceClose();
  table_.WaitEmpty(std::chrono::seconds(5));
  work_.reset();
  ioc_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  workers_.reset();  // waits for operations still running on the backend
}

GatewayServer::GatewayServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GatewayServer::~GatewayServer() { Shutdown(); }

Result<std::unique_ptr<GatewayServer>> GatewayServer::Start(const ServerOptions& options, S3Handler& handler,
                                                            GatewayObserver& observer) {
  auto impl = std::make_unique<Impl>(options, handler, observer);
  STRATA_RETURN_IF_ERROR(impl->Listen());
  impl->Run();
  return std::unique_ptr<GatewayServer>(new GatewayServer(std::move(impl)));
}

uint16_t GatewayServer::port() const { return impl_->port_; }

std::string GatewayServer::url() const {
  std::string host = impl_->options_.host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(impl_->port_);
}

void GatewayServer::Shutdown() { impl_->Shutdown(); }

}  // namespace strata::gateway
