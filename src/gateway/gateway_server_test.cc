// Integration tests of the HTTP server: a real gateway on 127.0.0.1:0 over
// a file:// backend in a temp dir, driven by a plain socket client.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "base/hash.h"
#include "base/metrics.h"
#include "gateway/gateway.h"
#include "net/sigv4.h"

namespace strata::gateway {
namespace {

const net::AwsCredentials kCreds{"AKIDSERVER", "server-secret-key-01", ""};
using Clock_ = std::chrono::steady_clock;

int CountFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

struct HttpReply {
  int status = 0;
  net::HttpHeaders headers;
  std::string body;
  std::string Header(std::string_view name) const {
    const std::string* v = net::FindHeader(headers, name);
    return v ? *v : "";
  }
};

class Client {
 public:
  explicit Client(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~Client() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return connected_; }
  bool Send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(n);
    }
    return true;
  }
  // Reads into the buffer until `pred` or EOF or the deadline; false on timeout.
  template <typename Pred>
  bool ReadUntil(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto deadline = Clock_::now() + timeout;
    while (!pred()) {
      if (eof_) return true;
      int left =
          static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock_::now()).count());
      if (left <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, left) <= 0) continue;
      char buf[65536];
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        eof_ = true;
        return true;
      }
      in_.append(buf, n);
    }
    return true;
  }
  // True when the server closed the connection within `timeout`.
  bool ClosedWithin(std::chrono::milliseconds timeout) {
    ReadUntil([] { return false; }, timeout);
    return eof_;
  }
  // One response (Content-Length framed). status 0 on timeout/close.
  HttpReply ReadReply(bool head = false) {
    HttpReply r;
    if (!ReadUntil([&] { return in_.find("\r\n\r\n") != std::string::npos; })) return r;
    size_t end = in_.find("\r\n\r\n");
    if (end == std::string::npos) return r;
    std::string head_text = in_.substr(0, end);
    in_.erase(0, end + 4);
    std::istringstream lines(head_text);
    std::string line;
    std::getline(lines, line);
    if (line.size() < 12) return r;
    r.status = std::stoi(line.substr(9, 3));
    while (std::getline(lines, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      size_t c = line.find(':');
      if (c == std::string::npos) continue;
      std::string v = line.substr(c + 1);
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      r.headers.emplace_back(line.substr(0, c), v);
    }
    size_t len = head || r.status == 204 || r.status == 304 || r.status == 100
                     ? 0
                     : std::stoull("0" + r.Header("Content-Length"));
    ReadUntil([&] { return in_.size() >= len; }, std::chrono::seconds(30));
    r.body = in_.substr(0, len);
    in_.erase(0, std::min(len, in_.size()));
    return r;
  }
  bool eof() const { return eof_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string in_;
};

std::string SignedRequest(const std::string& method, const std::string& target, const std::string& body,
                          net::HttpHeaders extra = {}, const net::AwsCredentials& creds = kCreds) {
  size_t q = target.find('?');
  net::HttpRequestParts p{method, target.substr(0, q), q == std::string::npos ? "" : target.substr(q + 1), extra};
  p.headers.emplace_back("Host", "127.0.0.1");
  EXPECT_TRUE(net::SignRequest(p, creds, "us-east-1", "s3", RealClock().WallNow(), ToHex(Sha256(body))).ok());
  std::string out = method + " " + target + " HTTP/1.1\r\n";
  for (auto& [k, v] : p.headers) out += k + ": " + v + "\r\n";
  if (!body.empty() || method == "PUT" || method == "POST")
    out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  return out + "\r\n" + body;
}

class GatewayServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() / ("strata-gw-" + std::to_string(::getpid()) + "-" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "data" / "bucket");
    StartGateway("");
  }
  void TearDown() override {
    gateway_.reset();
    std::filesystem::remove_all(root_);
  }
  void StartGateway(const std::string& emulate) {
    gateway_.reset();
    GatewayConfig c;
    c.listen = "127.0.0.1:0";
    c.backends = {"file://" + (root_ / "data").string()};
    c.keys[kCreds.access_key_id] = kCreds.secret_access_key;
    c.cache.ram_bytes = 256 << 20;
    c.cache.block_size = 1 << 20;
    c.emulate = emulate;
    c.limits.header_timeout = std::chrono::milliseconds(500);
    c.limits.idle_timeout = std::chrono::seconds(3);
    c.limits.max_header_bytes = 8192;
    c.limits.max_body_bytes = 64 << 20;
    auto g = Gateway::Start(c);
    ASSERT_TRUE(g.ok()) << g.status();
    gateway_ = std::move(g).value();
  }
  uint16_t port() const { return gateway_->port(); }

  HttpReply Call(const std::string& raw, bool head = false) {
    Client c(port());
    EXPECT_TRUE(c.connected());
    c.Send(raw);
    return c.ReadReply(head);
  }

  std::filesystem::path root_;
  std::unique_ptr<Gateway> gateway_;
};

TEST_F(GatewayServerTest, KeepAliveAndPipelining) {
  Client c(port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send(SignedRequest("PUT", "/bucket/a", "alpha")));
  EXPECT_EQ(c.ReadReply().status, 200);
  // Two requests in one write: answered in order on the same connection.
  ASSERT_TRUE(c.Send(SignedRequest("PUT", "/bucket/b", "bravo") + SignedRequest("GET", "/bucket/a", "")));
  EXPECT_EQ(c.ReadReply().status, 200);
  HttpReply get = c.ReadReply();
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(get.body, "alpha");
  ASSERT_TRUE(c.Send(SignedRequest("GET", "/bucket/b", "")));
  EXPECT_EQ(c.ReadReply().body, "bravo");
  EXPECT_FALSE(c.eof());
}

TEST_F(GatewayServerTest, LargeObjectStreamsExactly) {
  std::string data(20 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 2654435761u) >> 13);
  EXPECT_EQ(Call(SignedRequest("PUT", "/bucket/big", data)).status, 200);
  for (int round = 0; round < 2; ++round) {  // cold, then warm
    HttpReply r = Call(SignedRequest("GET", "/bucket/big", ""));
    ASSERT_EQ(r.status, 200);
    EXPECT_TRUE(r.body == data) << "round " << round << " size " << r.body.size();
  }
  HttpReply range = Call(SignedRequest("GET", "/bucket/big", "", {{"Range", "bytes=1048570-3145740"}}));
  EXPECT_EQ(range.status, 206);
  EXPECT_TRUE(range.body == data.substr(1048570, 3145740 - 1048570 + 1));
  HttpReply head = Call(SignedRequest("HEAD", "/bucket/big", ""), true);
  EXPECT_EQ(head.Header("Content-Length"), std::to_string(data.size()));
}

TEST_F(GatewayServerTest, SlowlorisIsCutOffAtTheHeaderDeadline) {
  Client c(port());
  ASSERT_TRUE(c.connected());
  auto start = Clock_::now();
  // Drip a header out, a byte every 50 ms: the deadline counts from the first byte.
  std::string partial = "GET /bucket/a HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
  bool closed = false;
  for (size_t i = 0; i < partial.size() && !closed; ++i) {
    if (!c.Send(partial.substr(i, 1))) break;
    closed = c.ClosedWithin(std::chrono::milliseconds(50));
  }
  if (!closed) closed = c.ClosedWithin(std::chrono::seconds(5));
  EXPECT_TRUE(closed);
  EXPECT_LT(Clock_::now() - start, std::chrono::seconds(3));
}

TEST_F(GatewayServerTest, OversizedHeadersGet431) {
  Client c(port());
  std::string req = "GET /bucket/a HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n";
  c.Send(req);
  HttpReply r = c.ReadReply();
  EXPECT_TRUE(r.status == 431 || (r.status == 0 && c.eof())) << r.status;
  EXPECT_TRUE(c.ClosedWithin(std::chrono::seconds(5)));
}

TEST_F(GatewayServerTest, BadRangeUnknownOpAndAuthErrors) {
  EXPECT_EQ(Call(SignedRequest("PUT", "/bucket/r", "0123456789")).status, 200);
  HttpReply bad_range = Call(SignedRequest("GET", "/bucket/r", "", {{"Range", "bytes=100-200"}}));
  EXPECT_EQ(bad_range.status, 416);
  EXPECT_NE(bad_range.body.find("<Code>InvalidRange</Code>"), std::string::npos);
  HttpReply unknown = Call(SignedRequest("GET", "/bucket/r?torrent", ""));
  EXPECT_EQ(unknown.status, 501);
  EXPECT_NE(unknown.body.find("NotImplemented"), std::string::npos);
  HttpReply wrong = Call(SignedRequest("GET", "/bucket/r", "", {}, {"AKIDSERVER", "nope", ""}));
  EXPECT_EQ(wrong.status, 403);
  EXPECT_NE(wrong.body.find("SignatureDoesNotMatch"), std::string::npos);
  HttpReply garbage = Call("NOT-HTTP\r\n\r\n");
  EXPECT_TRUE(garbage.status == 400 || garbage.status == 0);
}

TEST_F(GatewayServerTest, NoPathEscapesIntoTheBackend) {
  std::filesystem::path outside = root_ / "data" / "escaped";
  for (std::string target : {"/bucket/../escaped", "/bucket/a/../../escaped", "/bucket/%2e%2e/escaped",
                             "/bucket/..%2fescaped", "/bucket//escaped", "/../data/escaped"}) {
    HttpReply r = Call(SignedRequest("PUT", target, "evil"));
    EXPECT_FALSE(std::filesystem::exists(outside)) << target;
    EXPECT_FALSE(std::filesystem::exists(root_ / "escaped")) << target;
    HttpReply g = Call(SignedRequest("GET", target, ""));
    if (r.status == 200) {
      // "..", "." and empty segments are valid S3 keys: kept, escaped, inside the bucket.
      EXPECT_EQ(g.status, 200) << target;
      EXPECT_EQ(g.body, "evil") << target;
    } else {
      EXPECT_GE(r.status, 400) << target;
      EXPECT_GE(g.status, 400) << target;
    }
  }
  // Whatever was stored lies under the bucket's directory.
  for (const auto& e : std::filesystem::recursive_directory_iterator(root_)) {
    if (e.path().filename() != "escaped") continue;
    std::string rel = std::filesystem::relative(e.path(), root_ / "data" / "bucket").string();
    EXPECT_FALSE(rel.starts_with("..")) << e.path();
  }
  // Bucket names cannot climb out of the root either.
  EXPECT_GE(Call(SignedRequest("PUT", "/..", "")).status, 400);
  EXPECT_GE(Call(SignedRequest("GET", "/%2e%2e/data", "")).status, 400);
}

TEST_F(GatewayServerTest, ExpectContinue) {
  Client c(port());
  std::string req = SignedRequest("PUT", "/bucket/ec", "payload", {{"Expect", "100-continue"}});
  std::string head = req.substr(0, req.find("\r\n\r\n") + 4);
  c.Send(head);
  HttpReply cont = c.ReadReply();
  EXPECT_EQ(cont.status, 100);
  c.Send("payload");
  EXPECT_EQ(c.ReadReply().status, 200);
  // A bad signature is refused before the body is invited.
  Client d(port());
  std::string bad =
      SignedRequest("PUT", "/bucket/ec2", "payload", {{"Expect", "100-continue"}}, {"AKIDSERVER", "x", ""});
  d.Send(bad.substr(0, bad.find("\r\n\r\n") + 4));
  EXPECT_EQ(d.ReadReply().status, 403);
  EXPECT_FALSE(std::filesystem::exists(root_ / "data" / "bucket" / "ec2"));
}

TEST_F(GatewayServerTest, HealthAndMetrics) {
  EXPECT_EQ(Call(SignedRequest("PUT", "/bucket/m", "x")).status, 200);
  HttpReply h = Call("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.body, "ok\n");
  HttpReply m = Call("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("strata_gateway_requests_total{op=\"PutObject\",status=\"200\"}"), std::string::npos)
      << m.body.substr(0, 2000);
  EXPECT_NE(m.body.find("strata_gateway_request_seconds_bucket"), std::string::npos);
  EXPECT_NE(m.body.find("strata_gateway_cache_hit_ratio"), std::string::npos);
}

TEST_F(GatewayServerTest, BadConnectionsDoNotLeakDescriptors) {
  // Warm up whatever the server opens once (bucket stores, threads).
  EXPECT_EQ(Call(SignedRequest("PUT", "/bucket/fd", "x")).status, 200);
  auto& reg = MetricsRegistry::Global();
  const Counter& accepted = reg.GetCounter("strata_gateway_connections_accepted_total", "");
  const Gauge& open = reg.GetGauge("strata_gateway_connections", "");
  const int before = CountFds();
  const uint64_t accepted_before = accepted.Value();
  const int kClients = 200;
  for (int i = 0; i < kClients; ++i) {
    Client c(port());
    ASSERT_TRUE(c.connected());
    switch (i % 5) {
      case 0: c.Send("\x16\x03\x01 garbage that is not HTTP\r\n\r\n"); break;
      case 1: c.Send("GET /bucket/fd HTTP/1.1\r\nHost: x\r\n"); break;  // then vanish mid-header
      case 2: c.Send("GET /bucket/fd HTTP/1.1\r\nX: " + std::string(10000, 'b') + "\r\n\r\n"); break;
      case 3: c.Send("PUT /bucket/fd HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n"); break;
      case 4: c.Send("GET /bucket/fd HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab"); break;  // short body
    }
  }
  // Every connection must be accepted and then closed (some only at the
  // header deadline); until the server has accepted them all, a low
  // descriptor count proves nothing, so wait for all three conditions.
  auto settled = [&](int fds) {
    return accepted.Value() >= accepted_before + kClients && open.Value() == 0 && fds <= before + 2;
  };
  auto deadline = Clock_::now() + std::chrono::seconds(10);
  int fds = CountFds();
  while (!settled(fds) && Clock_::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a condition, not winning a race
    fds = CountFds();
  }
  EXPECT_GE(accepted.Value(), accepted_before + kClients);
  EXPECT_EQ(open.Value(), 0);
  EXPECT_LE(fds, before + 2);
  EXPECT_EQ(Call("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").status, 200);
}

TEST_F(GatewayServerTest, GracefulShutdownFinishesInFlightRequests) {
  StartGateway("ttfb=400ms,bw=0");
  EXPECT_EQ(Call(SignedRequest("PUT", "/bucket/s", "survives")).status, 200);
  gateway_->buckets().Get("bucket").value()->InvalidateMetadata();
  Client idle(port());
  ASSERT_TRUE(idle.connected());
  Client busy(port());
  uint64_t misses = gateway_->cache().Stats()[cache::CacheCounter::kMetaMisses];
  ASSERT_TRUE(busy.Send(SignedRequest("GET", "/bucket/s", "")));
  // Wait until the request reached the backend (a metadata miss), then stop.
  auto deadline = Clock_::now() + std::chrono::seconds(5);
  while (gateway_->cache().Stats()[cache::CacheCounter::kMetaMisses] == misses && Clock_::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::thread stopper([&] { gateway_->Shutdown(); });
  HttpReply r = busy.ReadReply();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "survives");
  EXPECT_EQ(r.Header("Connection"), "close");
  EXPECT_TRUE(idle.ClosedWithin(std::chrono::seconds(5)));
  stopper.join();
  Client after(port());
  EXPECT_FALSE(after.connected());
}

}  // namespace
}  // namespace strata::gateway
