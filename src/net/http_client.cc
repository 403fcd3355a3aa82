// Design: one curl *multi* handle driven by one I/O thread, rather than a pool
// of blocking easy handles (one thread each) sharing a CURLSH. Why: on a
// 2-core machine threads are the budget; a multi handle runs 64+ transfers
// from a single thread, and inside a multi the connection cache and DNS cache
// are already shared by every easy handle, so keep-alive reuse needs no
// CURLSH and no lock callbacks. Only the I/O thread touches curl handles;
// other threads hand requests over through a mutex-protected queue and
// curl_multi_wakeup(), which is documented thread-safe. Easy handles are
// pooled and curl_easy_reset() between requests (keeps their TLS session
// cache). Send() blocks its caller on a future; the bytes move on the I/O
// thread, written straight into the caller's sink when one is given.
#include "net/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "base/executor.h"
#include "base/mutex.h"

namespace strata::net {

namespace {
bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}
}  // namespace

std::optional<std::string> HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (EqualsIgnoreCase(k, name)) return v;
  }
  return std::nullopt;
}

Status CurlCodeToStatus(int curl_code, std::string_view what, std::string_view detail) {
  auto code = static_cast<CURLcode>(curl_code);
  std::string cause = std::string("curl: ") + curl_easy_strerror(code);
  if (!detail.empty()) cause += std::string(" (") + std::string(detail) + ")";
  std::string prefix = std::string(what) + ": ";
  switch (code) {
    case CURLE_OK: return Status::Ok();
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return UnavailableError(prefix + "could not resolve host", cause);
    case CURLE_COULDNT_CONNECT: return UnavailableError(prefix + "could not connect", cause);
    case CURLE_OPERATION_TIMEDOUT:
      return DeadlineExceededError(prefix + "timed out (connect, stall or total timeout)", cause);
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return UnavailableError(prefix + "connection reset/truncated", cause);
    case CURLE_WEIRD_SERVER_REPLY: return UnavailableError(prefix + "malformed HTTP response", cause);
    case CURLE_SSL_CONNECT_ERROR: return UnavailableError(prefix + "TLS handshake failed", cause);
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
      return Status(Code::kUnavailable, prefix + "TLS certificate verification failed", cause, false);
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL: return InvalidArgumentError(prefix + "bad URL", cause);
    case CURLE_OUT_OF_MEMORY: return InternalError(prefix + "out of memory", cause);
    case CURLE_READ_ERROR: return IOError(prefix + "could not read the request body", cause);
    default: return UnavailableError(prefix + "HTTP transfer failed", cause);
  }
}

namespace {

std::once_flag g_curl_init;

constexpr uint64_t kMaxReserve = 256ull << 20;  // never trust Content-Length beyond this for reserve()

bool IsFinalStatus(long status) { return status >= 200; }

struct Transfer {
  CURL* easy = nullptr;
  HttpRequest req;
  HttpCallback done;
  curl_slist* header_list = nullptr;
  HttpResponse resp;
  std::string body;
  uint64_t upload_offset = 0;
  std::optional<uint64_t> content_length;
  long status = 0;
  bool sink_active = false;  // decided at the first body byte
  bool decided = false;
  Status error;  // set by callbacks (sink overflow)
  char errbuf[CURL_ERROR_SIZE] = {0};

  std::string What() const { return req.method + " " + req.url; }
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t next = v * 10 + static_cast<uint64_t>(c - '0');
    if (next / 10 != v) return false;
    v = next;
  }
  *out = v;
  return true;
}

size_t HeaderCbUnguarded(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {  // a new status line: 100-continue or the final response
    t->resp.headers.clear();
    t->content_length.reset();
    size_t sp = line.find(' ');
    uint64_t code = 0;
    if (sp != std::string_view::npos && sp + 4 <= line.size() && ParseU64(line.substr(sp + 1, 3), &code)) {
      t->status = static_cast<long>(code);
    }
    return size * n;
  }
  std::string_view trimmed = Trim(line);
  if (trimmed.empty()) {  // end of a header block
    if (IsFinalStatus(t->status) && t->req.on_headers) {
      Status s = t->req.on_headers(static_cast<int>(t->status), t->resp.headers);
      if (!s.ok()) {
        t->error = std::move(s);
        return 0;  // aborts the transfer
      }
    }
    return size * n;
  }
  size_t colon = trimmed.find(':');
  if (colon == std::string_view::npos || colon == 0) return size * n;  // tolerate junk lines
  std::string name(Trim(trimmed.substr(0, colon)));
  std::string value(Trim(trimmed.substr(colon + 1)));
  if (EqualsIgnoreCase(name, "Content-Length")) {
    uint64_t cl = 0;
    if (ParseU64(value, &cl)) t->content_length = cl;
  }
  t->resp.headers.emplace_back(std::move(name), std::move(value));
  return size * n;
}

size_t WriteCbUnguarded(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * n;
  if (!t->decided) {
    t->decided = true;
    long code = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code) t->status = code;
    t->sink_active = t->req.sink.has_value() && t->status >= 200 && t->status < 300;
    if (!t->sink_active && t->content_length) t->body.reserve(std::min(*t->content_length, kMaxReserve));
  }
  if (t->sink_active) {
    const BodySink& sink = *t->req.sink;
    if (t->resp.body_bytes + len > sink.capacity) {
      t->error = UnavailableError(t->What() + ": response body larger than the " + std::to_string(sink.capacity) +
                                  " bytes requested");
      return 0;  // aborts the transfer
    }
    if (sink.write) {
      Status st = sink.write(t->resp.body_bytes, reinterpret_cast<const uint8_t*>(data), len);
      if (!st.ok()) {
        t->error = std::move(st);
        return 0;  // aborts the transfer
      }
    } else {
      std::memcpy(sink.data + t->resp.body_bytes, data, len);
    }
  } else {
    t->body.append(data, len);
  }
  t->resp.body_bytes += len;
  return len;
}

size_t ReadCbUnguarded(char* dst, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t cap = size * n;
  if (t->req.upload) {
    size_t got = t->req.upload(reinterpret_cast<uint8_t*>(dst), cap);
    t->upload_offset += got;
    return got;
  }
  const Buffer& b = t->req.body;
  size_t left = b.size() - std::min<uint64_t>(t->upload_offset, b.size());
  size_t take = std::min(left, cap);
  std::memcpy(dst, b.data() + t->upload_offset, take);
  t->upload_offset += take;
  return take;
}

// curl rewinds the body when it must resend (e.g. a reused connection that
// the server had closed).
int SeekCbUnguarded(void* user, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(user);
  if (origin != SEEK_SET || offset != 0) return CURL_SEEKFUNC_CANTSEEK;
  if (t->req.upload) {
    if (!t->req.rewind) return CURL_SEEKFUNC_CANTSEEK;
    t->req.rewind();
  }
  t->upload_offset = 0;
  return CURL_SEEKFUNC_OK;
}

// curl calls these from C: an exception (a throwing sink, upload source or
// on_headers hook, bad_alloc growing the body) must not unwind through it,
// which would end the process. It fails this one transfer instead (logged).
Status Thrown(const Transfer* t, const char* callback) {
  try {
    throw;
  } catch (const std::exception& e) {
    return ExceptionToStatus("http: " + t->What() + ": " + callback, e.what());
  } catch (...) {
    return ExceptionToStatus("http: " + t->What() + ": " + callback, "an exception not derived from std::exception");
  }
}

size_t HeaderCb(char* data, size_t size, size_t n, void* user) {
  try {
    return HeaderCbUnguarded(data, size, n, user);
  } catch (...) {
    static_cast<Transfer*>(user)->error = Thrown(static_cast<Transfer*>(user), "response headers");
    return 0;  // aborts the transfer
  }
}

size_t WriteCb(char* data, size_t size, size_t n, void* user) {
  try {
    return WriteCbUnguarded(data, size, n, user);
  } catch (...) {
    static_cast<Transfer*>(user)->error = Thrown(static_cast<Transfer*>(user), "response body");
    return 0;  // aborts the transfer
  }
}

size_t ReadCb(char* dst, size_t size, size_t n, void* user) {
  try {
    return ReadCbUnguarded(dst, size, n, user);
  } catch (...) {
    static_cast<Transfer*>(user)->error = Thrown(static_cast<Transfer*>(user), "request body");
    return CURL_READFUNC_ABORT;
  }
}

int SeekCb(void* user, curl_off_t offset, int origin) {
  try {
    return SeekCbUnguarded(user, offset, origin);
  } catch (...) {
    static_cast<Transfer*>(user)->error = Thrown(static_cast<Transfer*>(user), "rewinding the request body");
    return CURL_SEEKFUNC_FAIL;
  }
}

}  // namespace

struct HttpClient::Impl {
  HttpClientOptions opts;
  CURLM* multi = nullptr;
  Mutex mu;
  std::deque<std::unique_ptr<Transfer>> pending GUARDED_BY(mu);
  bool stopping GUARDED_BY(mu) = false;
  std::thread loop;
  // Owned by the I/O thread only:
  std::vector<CURL*> idle;
  std::vector<std::unique_ptr<Transfer>> active;

  explicit Impl(HttpClientOptions o) : opts(std::move(o)) {
    std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(opts.max_connections));
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, static_cast<long>(opts.max_connections));
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_NOTHING);  // HTTP/1.1, one request per connection
    loop = std::thread([this] { Loop(); });
  }

  ~Impl() {
    {
      MutexLock lock(mu);
      stopping = true;
    }
    curl_multi_wakeup(multi);
    loop.join();
    for (CURL* e : idle) curl_easy_cleanup(e);
    curl_multi_cleanup(multi);
  }

  void Enqueue(std::unique_ptr<Transfer> t) {
    {
      MutexLock lock(mu);
      if (!stopping) {
        pending.push_back(std::move(t));
        t = nullptr;
      }
    }
    if (t) {
      t->done(CancelledError(t->What() + ": HTTP client is shutting down"));
      return;
    }
    curl_multi_wakeup(multi);
  }

  CURL* TakeEasy() {
    if (idle.empty()) return curl_easy_init();
    CURL* e = idle.back();
    idle.pop_back();
    curl_easy_reset(e);
    return e;
  }

  bool Setup(Transfer* t) {
    CURL* e = t->easy;
    const HttpRequest& r = t->req;
    curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);  // S3 keys may contain "." and ".." segments
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L * 1024);
    curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "127.0.0.1,localhost,::1");
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opts.connect_timeout.count()));
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(opts.low_speed_bytes));
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, std::max<long>(1, static_cast<long>(opts.low_speed_time.count())));
    auto total = r.timeout.count() ? r.timeout : opts.total_timeout;
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(total.count()));
    if (!opts.verify_tls) {
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (!opts.ca_bundle.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, opts.ca_bundle.c_str());
    if (!opts.client_cert.empty()) {
      curl_easy_setopt(e, CURLOPT_SSLCERT, opts.client_cert.c_str());
      curl_easy_setopt(e, CURLOPT_SSLKEY, opts.client_key.c_str());
    }
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, HeaderCb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, WriteCb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);

    bool has_body = r.upload || !r.body.empty() || r.method == "PUT" || r.method == "POST";
    if (r.method == "HEAD") {
      curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (has_body) {
      uint64_t size = r.upload ? r.upload_size.value_or(0) : r.body.size();
      if (r.upload && !r.upload_size) return false;
      curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
      curl_easy_setopt(e, CURLOPT_READFUNCTION, ReadCb);
      curl_easy_setopt(e, CURLOPT_READDATA, t);
      curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, SeekCb);
      curl_easy_setopt(e, CURLOPT_SEEKDATA, t);
      if (r.method != "PUT") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    } else if (r.method != "GET") {
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    }
    // Expect: 100-continue costs a round trip (or a 1 s wait on servers that
    // ignore it); S3 does not need it.
    t->header_list = curl_slist_append(t->header_list, "Expect:");
    for (const auto& [k, v] : r.headers) {
      // "Name;" is curl's way to send a header with an empty value.
      std::string line = v.empty() ? k + ";" : k + ": " + v;
      t->header_list = curl_slist_append(t->header_list, line.c_str());
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->header_list);
    return true;
  }

  Result<HttpResponse> Finish(Transfer* t, CURLcode rc) {
    if (!t->error.ok()) return t->error;
    if (rc != CURLE_OK) return CurlCodeToStatus(rc, t->What(), t->errbuf);
    long code = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    t->resp.status = static_cast<int>(code);
    bool bodyless = t->req.method == "HEAD" || code == 204 || code == 304 || !IsFinalStatus(code);
    // curl normally reports a short body itself (CURLE_PARTIAL_FILE); check
    // again so a truncated body can never be returned as data.
    if (!bodyless && t->content_length && *t->content_length != t->resp.body_bytes) {
      return UnavailableError(t->What() + ": short body: received " + std::to_string(t->resp.body_bytes) + " of " +
                                  std::to_string(*t->content_length) + " bytes",
                              "Content-Length mismatch");
    }
    t->resp.sunk = t->sink_active;
    t->resp.body = Buffer::FromString(std::move(t->body));
    return std::move(t->resp);
  }

  void Complete(Transfer* t, CURLcode rc) {
    curl_multi_remove_handle(multi, t->easy);
    Result<HttpResponse> result = Finish(t, rc);
    curl_slist_free_all(t->header_list);
    t->header_list = nullptr;
    idle.push_back(t->easy);
    t->easy = nullptr;
    t->done(std::move(result));
  }

  void Start(std::unique_ptr<Transfer> t) {
    t->easy = TakeEasy();
    if (!t->easy) {
      t->done(InternalError(t->What() + ": curl_easy_init failed"));
      return;
    }
    if (!Setup(t.get())) {
      idle.push_back(t->easy);
      curl_slist_free_all(t->header_list);
      t->done(InvalidArgumentError(t->What() + ": streaming upload without upload_size"));
      return;
    }
    CURLMcode mc = curl_multi_add_handle(multi, t->easy);
    if (mc != CURLM_OK) {
      idle.push_back(t->easy);
      curl_slist_free_all(t->header_list);
      t->done(InternalError(t->What() + ": curl_multi_add_handle: " + curl_multi_strerror(mc)));
      return;
    }
    active.push_back(std::move(t));
  }

  void Loop() {
    for (;;) {
      std::deque<std::unique_ptr<Transfer>> incoming;
      {
        MutexLock lock(mu);
        if (stopping) break;
        incoming.swap(pending);
      }
      // The boundary of the I/O thread: a caller's done callback that throws
      // is logged and costs nothing else (every other transfer goes on).
      for (auto& t : incoming) RunGuarded("http: starting a request", [&] { Start(std::move(t)); }).IgnoreError();
      int running = 0;
      curl_multi_perform(multi, &running);
      int left = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
        if (msg->msg != CURLMSG_DONE) continue;
        Transfer* t = nullptr;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
        CURLcode rc = msg->data.result;
        auto it = std::find_if(active.begin(), active.end(), [&](const auto& p) { return p.get() == t; });
        if (it == active.end()) continue;
        std::unique_ptr<Transfer> owned = std::move(*it);
        active.erase(it);
        RunGuarded("http: completing " + owned->What(), [&] { Complete(owned.get(), rc); }).IgnoreError();
      }
      curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
    }
    // Shutting down: fail whatever is queued or in flight.
    std::deque<std::unique_ptr<Transfer>> rest;
    {
      MutexLock lock(mu);
      rest.swap(pending);
    }
    for (auto& t : rest) t->done(CancelledError(t->What() + ": HTTP client shut down"));
    for (auto& t : active) {
      curl_multi_remove_handle(multi, t->easy);
      curl_slist_free_all(t->header_list);
      curl_easy_cleanup(t->easy);
      t->done(CancelledError(t->What() + ": HTTP client shut down"));
    }
    active.clear();
  }
};

HttpClient::HttpClient(HttpClientOptions options)
    : options_(options), impl_(std::make_unique<Impl>(std::move(options))) {}

HttpClient::~HttpClient() = default;

void HttpClient::SendAsync(HttpRequest request, HttpCallback done) {
  auto t = std::make_unique<Transfer>();
  t->req = std::move(request);
  t->done = std::move(done);
  impl_->Enqueue(std::move(t));
}

Result<HttpResponse> HttpClient::Send(HttpRequest request) {
  auto promise = std::make_shared<std::promise<Result<HttpResponse>>>();
  auto future = promise->get_future();
  SendAsync(std::move(request), [promise](Result<HttpResponse> r) { promise->set_value(std::move(r)); });
  return future.get();
}

}  // namespace strata::net
