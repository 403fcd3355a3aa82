// For the gateway's hostile tests: raw HTTP/1.1 over loopback, so a test
// controls every byte and its timing (clients would fix or retry what the
// tests send on purpose). Header-only; test code only.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/hash.h"
#include "net/sigv4.h"

namespace strata::gateway::test_wire {

// A connected TCP socket to 127.0.0.1:port, or -1.
inline int Connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One HTTP exchange: the status code (0 if none came within the deadline) and the raw response.
struct Reply {
  int status = 0;
  std::string text;
};

// Sends `request` on `fd` while reading the answer (the server may answer,
// and close, before the whole body is sent), until a whole response, the
// server's close or `deadline`.
inline Reply ExchangeOn(int fd, std::string_view request, std::chrono::seconds deadline = std::chrono::seconds(60)) {
  Reply r;
  auto end = std::chrono::steady_clock::now() + deadline;
  size_t sent = 0;
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, static_cast<short>(POLLIN | (sent < request.size() ? POLLOUT : 0)), 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    if (p.revents & POLLOUT) {
      ssize_t n = ::send(fd, request.data() + sent, std::min<size_t>(request.size() - sent, 1 << 20), MSG_NOSIGNAL);
      if (n > 0) sent += n;
      if (n < 0) sent = request.size();  // the server closed its side; read what it said
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      r.text.append(buf, n);
      size_t head = r.text.find("\r\n\r\n");
      if (head != std::string::npos) {
        size_t cl = r.text.find("Content-Length: ");
        if (cl != std::string::npos && cl < head) {
          size_t len = std::stoull(r.text.substr(cl + 16));
          if (r.text.size() >= head + 4 + len) break;
        }
      }
    }
  }
  if (r.text.size() >= 12 && r.text.starts_with("HTTP/1.1 ")) r.status = std::stoi(r.text.substr(9, 3));
  return r;
}

// The same on a fresh connection, closed after.
inline Reply Exchange(uint16_t port, std::string_view request,
                      std::chrono::seconds deadline = std::chrono::seconds(60)) {
  int fd = Connect(port);
  if (fd < 0) return {};
  Reply r = ExchangeOn(fd, request, deadline);
  ::close(fd);
  return r;
}

// A SigV4-signed request as text (the body's SHA-256 as payload hash unless
// `payload_hash` is given). *signature, when given, receives its signature.
inline std::string Signed(const net::AwsCredentials& creds, const std::string& method, const std::string& target,
                          const std::string& body, net::HttpHeaders extra = {}, std::string payload_hash = "",
                          std::string* signature = nullptr) {
  size_t q = target.find('?');
  net::HttpRequestParts p{method, target.substr(0, q), q == std::string::npos ? "" : target.substr(q + 1), extra};
  p.headers.emplace_back("Host", "127.0.0.1");
  if (payload_hash.empty()) payload_hash = ToHex(Sha256(body));
  if (!net::SignRequest(p, creds, "us-east-1", "s3", RealClock().WallNow(), payload_hash).ok()) return "";
  if (const std::string* authz = net::FindHeader(p.headers, "authorization"); authz && signature) {
    size_t at = authz->find("Signature=");
    if (at != std::string::npos) *signature = authz->substr(at + 10);
  }
  std::string out = method + " " + target + " HTTP/1.1\r\n";
  for (auto& [k, v] : p.headers) out += k + ": " + v + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  return out + "\r\n" + body;
}

}  // namespace strata::gateway::test_wire
