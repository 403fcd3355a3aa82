// Test fixture only (never linked into libraries): a tiny HTTP/1.1 server on
// 127.0.0.1 with an ephemeral port, driven by a handler that scripts each
// response, including faults (truncated bodies, resets, stalls). Keep-alive
// connections are served each on its own thread. Every request is recorded.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace strata::testing_http {

struct FakeRequest {
  std::string method;
  std::string target;  // path?query, as sent
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  int connection = 0;  // which accepted connection carried it (keep-alive checks)

  std::string Header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
      if (k.size() == name.size() && std::equal(k.begin(), k.end(), name.begin(),
                                                [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
        return v;
      }
    }
    return {};
  }
};

struct FakeResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Faults:
  long truncate_after = -1;  // send the full Content-Length but only this many body bytes, then close
  bool reset = false;        // close the connection (RST) without answering
  int stall_ms = 0;          // wait before answering (checked against shutdown)
  bool close = false;        // Connection: close after this response
};

class FakeHttpServer {
 public:
  using Handler = std::function<FakeResponse(const FakeRequest&)>;

  explicit FakeHttpServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listen_fd_, 128) != 0) {
      std::perror("fake server bind/listen");
      std::abort();
    }
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~FakeHttpServer() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    accept_thread_.join();
    {
      std::lock_guard lock(mu_);
      for (int fd : conn_fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : conn_threads_) t.join();
  }

  int port() const { return port_; }
  std::string Endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::vector<FakeRequest> Requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  size_t RequestCount() const {
    std::lock_guard lock(mu_);
    return requests_.size();
  }
  int Connections() const { return connections_.load(); }

 private:
  void AcceptLoop() {
    while (!stopping_) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) {
        if (stopping_) return;
        continue;
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      int id = ++connections_;
      std::lock_guard lock(mu_);
      conn_fds_.push_back(fd);
      conn_threads_.emplace_back([this, fd, id] { Serve(fd, id); });
    }
  }

  static bool SendAll(int fd, std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads one request; false on EOF/error.
  bool ReadRequest(int fd, std::string& buf, FakeRequest* req) {
    size_t end;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
      char tmp[65536];
      ssize_t n = ::recv(fd, tmp, sizeof(tmp), 0);
      if (n <= 0) return false;
      buf.append(tmp, static_cast<size_t>(n));
    }
    std::string head = buf.substr(0, end);
    buf.erase(0, end + 4);
    size_t line_end = head.find("\r\n");
    std::string first = head.substr(0, line_end);
    size_t s1 = first.find(' '), s2 = first.rfind(' ');
    if (s1 == std::string::npos || s2 == s1) return false;
    req->method = first.substr(0, s1);
    req->target = first.substr(s1 + 1, s2 - s1 - 1);
    size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    size_t content_length = 0;
    while (pos < head.size()) {
      size_t e = head.find("\r\n", pos);
      if (e == std::string::npos) e = head.size();
      std::string line = head.substr(pos, e - pos);
      pos = e + 2;
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string k = line.substr(0, colon);
      std::string v = line.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      if (strcasecmp(k.c_str(), "Content-Length") == 0) content_length = std::stoul(v);
      req->headers.emplace_back(k, v);
    }
    while (buf.size() < content_length) {
      char tmp[65536];
      ssize_t n = ::recv(fd, tmp, sizeof(tmp), 0);
      if (n <= 0) return false;
      buf.append(tmp, static_cast<size_t>(n));
    }
    req->body = buf.substr(0, content_length);
    buf.erase(0, content_length);
    return true;
  }

  void Serve(int fd, int id) {
    std::string buf;
    while (!stopping_) {
      FakeRequest req;
      req.connection = id;
      if (!ReadRequest(fd, buf, &req)) break;
      {
        std::lock_guard lock(mu_);
        requests_.push_back(req);
      }
      FakeResponse resp = handler_(req);
      for (int waited = 0; waited < resp.stall_ms && !stopping_; waited += 10) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (resp.reset) {
        linger lg{1, 0};  // close with RST
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        break;
      }
      std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " X\r\n";
      bool has_cl = false;
      for (const auto& [k, v] : resp.headers) {
        if (strcasecmp(k.c_str(), "Content-Length") == 0) has_cl = true;
        out += k + ": " + v + "\r\n";
      }
      if (!has_cl) out += "Content-Length: " + std::to_string(resp.body.size()) + "\r\n";
      if (resp.close || resp.truncate_after >= 0) out += "Connection: close\r\n";
      out += "\r\n";
      bool head = req.method == "HEAD";
      if (!head) {
        if (resp.truncate_after >= 0) {
          out += resp.body.substr(0, static_cast<size_t>(resp.truncate_after));
        } else {
          out += resp.body;
        }
      }
      if (!SendAll(fd, out)) break;
      if (resp.close || resp.truncate_after >= 0) break;
    }
    {
      std::lock_guard lock(mu_);
      std::erase(conn_fds_, fd);
    }
    ::close(fd);
  }

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::thread accept_thread_;
  mutable std::mutex mu_;
  std::vector<int> conn_fds_;
  std::vector<std::thread> conn_threads_;
  std::vector<FakeRequest> requests_;
};

}  // namespace strata::testing_http
