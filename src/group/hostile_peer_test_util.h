// A peer that is not one, for the cache group's hostile tests: it listens on
// 127.0.0.1 and either answers every request itself with chosen bytes (of
// the right length, with a matching XXH3 header, which is all the protocol
// once checked, and made-up MAC headers), or passes each request on to a
// real member and alters one byte of the answer on its way back (fixing the
// XXH3 header), as anyone on the path could. It counts the requests it got
// and keeps every request MAC it saw (the tests search the logs for them).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/aead.h"
#include "base/hash.h"
#include "group/peer_protocol.h"
#include "net/http_client.h"

namespace strata::group {

class HostilePeer {
 public:
  enum class Mode { kLie, kProxy };

  // `upstream`: the real member's "host:port" (kProxy).
  HostilePeer(Mode mode, std::string upstream = "") : mode_(mode), upstream_(std::move(upstream)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 256) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    address_ = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~HostilePeer() {
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    if (acceptor_.joinable()) acceptor_.join();
    ::close(fd_);
    std::lock_guard lock(mu_);
    for (auto& t : handlers_) t.join();
  }

  const std::string& address() const { return address_; }  // empty when it could not listen
  int requests() const { return requests_.load(); }
  std::vector<std::string> seen_macs() {
    std::lock_guard lock(mu_);
    return macs_;
  }
  std::atomic<bool> alter{true};  // kProxy: alter answers (else pass them unchanged)

 private:
  void AcceptLoop() {
    while (!stopping_) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (stopping_) return;
        continue;
      }
      std::lock_guard lock(mu_);
      handlers_.emplace_back([this, c] {
        Serve(c);
        ::close(c);
      });
    }
  }

  static std::string HeaderValue(const std::string& head, const std::string& name) {
    std::string lower = head;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    size_t at = lower.find("\r\n" + name + ":");
    if (at == std::string::npos) return {};
    at += name.size() + 3;
    const size_t end = head.find("\r\n", at);
    std::string v = head.substr(at, end - at);
    while (!v.empty() && v.front() == ' ') v.erase(v.begin());
    return v;
  }

  static std::string Hex(size_t bytes) {
    std::string raw(bytes, '\0');
    if (!RandomBytes(raw.data(), raw.size()).ok()) return std::string(2 * bytes, '0');
    return ToHex(raw.data(), raw.size());
  }

  void Serve(int c) {
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos && head.size() < (64 << 10)) {
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return;
      head.append(buf, static_cast<size_t>(n));
    }
    ++requests_;
    const size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
    const std::string target = head.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string time = HeaderValue(head, std::string(kPeerTimeHeader));
    const std::string auth = HeaderValue(head, std::string(kPeerAuthHeader));
    {
      std::lock_guard lock(mu_);
      if (!auth.empty()) macs_.push_back(auth);
    }
    int status = 200;
    std::string body, nonce = Hex(16), mac = Hex(16);
    if (mode_ == Mode::kLie) {
      auto req = ParseBlockTarget(target);
      uint64_t length = 64;
      if (req.ok()) length = std::min(req->block_size, req->object_size - req->index * req->block_size);
      body.assign(length, 'E');  // "every byte of this block is the attacker's"
    } else {
      net::HttpClient http;
      net::HttpRequest r;
      r.url = "http://" + upstream_ + target;
      r.headers.emplace_back(std::string(kPeerTimeHeader), time);
      r.headers.emplace_back(std::string(kPeerAuthHeader), auth);
      auto resp = http.Send(std::move(r));
      if (!resp.ok()) {
        status = 502;
      } else {
        status = resp->status;
        body = resp->body.ToString();
        nonce = resp->Header(kPeerNonceHeader).value_or("");
        {
          std::lock_guard lock(mu_);
          macs_.push_back(resp->Header(kPeerAnswerHeader).value_or(""));
        }
        mac = resp->Header(kPeerAnswerHeader).value_or("");
        if (alter && status == 200 && !body.empty()) body[body.size() / 2] ^= 0x01;
      }
    }
    uint8_t be[8];
    const uint64_t sum = XxHash3(body.data(), body.size());
    for (int i = 0; i < 8; ++i) be[i] = static_cast<uint8_t>(sum >> (56 - 8 * i));
    std::string out = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\nConnection: close\r\nx-strata-block-xxh3: " + ToHex(be, 8) + "\r\n" +
                      std::string(kPeerNonceHeader) + ": " + nonce + "\r\n" + std::string(kPeerAnswerHeader) + ": " +
                      mac + "\r\n\r\n" + body;
    for (size_t sent = 0; sent < out.size();) {
      ssize_t n = ::send(c, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  }

  const Mode mode_;
  const std::string upstream_;
  int fd_ = -1;
  std::string address_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> requests_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> handlers_;
  std::vector<std::string> macs_;
};

}  // namespace strata::group
