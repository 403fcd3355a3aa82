// gateway_bench: a C++ S3 GET load client for bench/gateway_bench.sh.
// Raw HTTP/1.1 over blocking loopback sockets, one keep-alive connection per
// client thread, SigV4-signed with net/sigv4.h (UNSIGNED-PAYLOAD), bodies
// read into a reused 1 MiB buffer and discarded (counted, first bytes
// checked against the Content-Length). Prints one JSON object.
//
//   gateway_bench --endpoint http://127.0.0.1:PORT --bucket B --keys k1,k2,...
//                 --access-key AK --secret-key SK [--region us-east-1]
//                 --clients N (--requests-per-client R | --seconds S)
// Clients pick keys round-robin from a per-client offset.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/http.h"
#include "net/sigv4.h"
#include "net/uri.h"

namespace {

using strata::net::HttpRequestParts;
using SteadyClock = std::chrono::steady_clock;

struct Args {
  std::string endpoint, bucket, access_key, secret_key, region = "us-east-1";
  std::vector<std::string> keys;
  int clients = 1;
  long requests_per_client = 0;
  double seconds = 0;
};

struct Totals {
  std::atomic<uint64_t> bytes{0}, requests{0}, errors{0};
};

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

class Conn {
 public:
  Conn(const std::string& host, uint16_t port) : host_(host), port_(port) {}
  ~Conn() { Close(); }
  bool Ensure() {
    if (fd_ >= 0) return true;
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port_);
    ::inet_pton(AF_INET, host_.c_str(), &a.sin_addr);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      Close();
      return false;
    }
    in_.clear();
    return true;
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool SendAll(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += n;
    }
    return true;
  }
  // Reads one response; returns body bytes or -1. *close when the server closes after it.
  int64_t ReadResponse(std::vector<char>& buf, int* status, bool* close) {
    while (in_.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
      if (n <= 0) return -1;
      in_.append(buf.data(), n);
    }
    size_t end = in_.find("\r\n\r\n");
    std::string head = in_.substr(0, end);
    std::string rest = in_.substr(end + 4);
    in_.clear();
    // "HTTP/1.1 200 ...": a status or a Content-Length that is not a number is an error, not 0.
    *status = 0;
    if (head.size() < 12 || !ParseNumber(std::string_view(head).substr(9, 3), status)) return -1;
    uint64_t len = 0;
    *close = false;
    for (size_t p = 0; p < head.size();) {
      size_t e = head.find("\r\n", p);
      if (e == std::string::npos) e = head.size();
      std::string line = head.substr(p, e - p);
      for (size_t i = 0; i < line.size() && line[i] != ':'; ++i) line[i] = static_cast<char>(std::tolower(line[i]));
      if (line.rfind("content-length:", 0) == 0 && !ParseNumber(Trim(std::string_view(line).substr(15)), &len))
        return -1;
      if (line.rfind("connection:", 0) == 0 && line.find("close") != std::string::npos) *close = true;
      p = e + 2;
    }
    uint64_t got = std::min<uint64_t>(rest.size(), len);
    if (rest.size() > len) in_ = rest.substr(len);  // pipelined leftovers (not used)
    while (got < len) {
      ssize_t n = ::recv(fd_, buf.data(), std::min<uint64_t>(buf.size(), len - got), 0);
      if (n <= 0) return -1;
      got += n;
    }
    return static_cast<int64_t>(len);
  }

 private:
  std::string host_;
  uint16_t port_;
  int fd_ = -1;
  std::string in_;
};

std::string BuildGet(const Args& a, const std::string& host_header, const std::string& key) {
  strata::net::HttpRequestParts p{
      "GET", "/" + a.bucket + "/" + strata::net::UriEncode(key, false), "", {{"Host", host_header}}};
  if (!a.access_key.empty()) {
    strata::net::AwsCredentials creds{a.access_key, a.secret_key, ""};
    (void)strata::net::SignRequest(p, creds, a.region, "s3", std::chrono::system_clock::now(),
                                   strata::net::kUnsignedPayload);
  }
  std::string out = "GET " + p.path + " HTTP/1.1\r\n";
  for (const auto& [k, v] : p.headers) out += k + ": " + v + "\r\n";
  return out + "\r\n";
}

void Client(const Args& a, const strata::net::ParsedUrl& url, int index, Totals& totals,
            SteadyClock::time_point deadline) {
  Conn conn(url.host, url.port);
  std::vector<char> buf(1 << 20);
  std::string host_header = url.HostHeader();
  for (long i = 0;; ++i) {
    if (a.requests_per_client > 0 && i >= a.requests_per_client) break;
    if (a.seconds > 0 && SteadyClock::now() >= deadline) break;
    const std::string& key = a.keys[(index + i) % a.keys.size()];
    if (!conn.Ensure() || !conn.SendAll(BuildGet(a, host_header, key))) {
      totals.errors++;
      conn.Close();
      continue;
    }
    int status = 0;
    bool close = false;
    int64_t n = conn.ReadResponse(buf, &status, &close);
    if (n < 0 || status != 200) {
      totals.errors++;
      conn.Close();
      if (totals.errors > 1000) return;
      continue;
    }
    totals.bytes += n;
    totals.requests++;
    if (close) conn.Close();
  }
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= s.size()) {
    size_t c = s.find(',', p);
    if (c == std::string::npos) c = s.size();
    if (c > p) out.push_back(s.substr(p, c - p));
    p = c + 1;
  }
  return out;
}

// The command line into `a`: nullopt to run, or the exit code once CLI11 has printed help or a
// clear error (a malformed number is a message and exit code 2, not a silent 0 from atoi).
std::optional<int> Parse(int argc, char** argv, Args* a) {
  CLI::App app("gateway_bench: S3 GET load over keep-alive connections; prints one JSON object");
  std::string keys;
  app.add_option("--endpoint", a->endpoint, "http://127.0.0.1:PORT of the S3 server")->required();
  app.add_option("--bucket", a->bucket, "Bucket")->required();
  app.add_option("--keys", keys, "Keys, comma-separated (each client starts at its own offset)")->required();
  app.add_option("--access-key", a->access_key, "Access key (unsigned requests without one)");
  app.add_option("--secret-key", a->secret_key, "Secret key");
  app.add_option("--region", a->region, "SigV4 region")->capture_default_str();
  app.add_option("--clients", a->clients, "Client threads, one connection each")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  auto* requests = app.add_option("--requests-per-client", a->requests_per_client, "Requests per client")
                       ->check(CLI::Range(1L, 1L << 40));
  auto* seconds = app.add_option("--seconds", a->seconds, "Run this long")->check(CLI::Range(0.001, 86400.0));
  requests->excludes(seconds);
  try {
    app.parse(argc, argv);
    if (requests->count() + seconds->count() != 1)
      throw CLI::ValidationError("--requests-per-client/--seconds", "give one of them");
    a->keys = Split(keys);
    if (a->keys.empty()) throw CLI::ValidationError("--keys", "no key given");
    auto url = strata::net::ParseUrl(a->endpoint);
    if (!url.ok()) throw CLI::ValidationError("--endpoint", url.status().ToString());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (const std::optional<int> exit_code = Parse(argc, argv, &a)) return *exit_code;
  auto url = strata::net::ParseUrl(a.endpoint);
  Totals totals;
  auto start = SteadyClock::now();
  auto deadline = start + std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(a.seconds));
  std::vector<std::thread> threads;
  for (int i = 0; i < a.clients; ++i)
    threads.emplace_back(Client, std::cref(a), std::cref(*url), i, std::ref(totals), deadline);
  for (auto& t : threads) t.join();
  double secs = std::chrono::duration<double>(SteadyClock::now() - start).count();
  std::printf(
      "{\"clients\": %d, \"requests\": %llu, \"errors\": %llu, \"bytes\": %llu, \"seconds\": %.4f, "
      "\"bytes_per_second\": %.1f, \"requests_per_second\": %.2f}\n",
      a.clients, static_cast<unsigned long long>(totals.requests.load()),
      static_cast<unsigned long long>(totals.errors.load()), static_cast<unsigned long long>(totals.bytes.load()), secs,
      totals.bytes / secs, totals.requests / secs);
  return totals.errors > 0 && totals.requests == 0 ? 1 : 0;
}
