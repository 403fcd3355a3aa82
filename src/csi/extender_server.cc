#include "csi/extender_server.h"

#include <signal.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <iostream>
#include <thread>

#include "base/log.h"
#include "csi/extender.h"
#include "group/etcd_membership.h"
#include "group/member.h"

namespace strata::csi {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

Result<ClusterCache> ReadClusterCache(const std::vector<std::string>& groups) {
  ClusterCache cache;
  for (const auto& url : groups) {
    STRATA_ASSIGN_OR_RETURN(group::GroupUrl g, group::ParseGroupUrl(url));
    if (g.scheme != "etcd") return InvalidArgumentError("--cache-group must be etcd://HOST:PORT/GROUP: " + url);
    group::EtcdOptions eo;
    eo.endpoint = g.etcd;
    eo.group = g.group;
    STRATA_ASSIGN_OR_RETURN(auto records, group::EtcdMembership::ReadRecords(eo));
    for (const auto& [member, record] : records) {
      Status st = AddMemberRecord(record, &cache);
      if (!st.ok()) STRATA_LOG_WARN("extender: member {}'s record skipped: {}", member, st.ToString());
    }
  }
  return cache;
}

http::response<http::string_body> Answer(const ExtenderOptions& o, const http::request<http::string_body>& req) {
  http::response<http::string_body> res{http::status::ok, req.version()};
  res.set(http::field::content_type, "application/json");
  res.keep_alive(req.keep_alive());
  const std::string target(req.target());
  if (req.method() == http::verb::get && target == "/healthz") {
    res.body() = "{\"ok\":true}";
  } else if (req.method() == http::verb::post && (target == "/filter" || target == "/prioritize")) {
    auto args = ParseExtenderArgs(req.body());
    auto cache = args.ok() ? ReadClusterCache(o.cache_groups) : Result<ClusterCache>(args.status());
    if (!cache.ok()) {
      // The scheduler treats an extender error as a failed extender; an
      // unreadable etcd must not stop scheduling: no preference is an answer.
      STRATA_LOG_WARN("extender: {} without cache data: {}", target, cache.status().ToString());
      if (!args.ok()) {
        res.result(http::status::bad_request);
        res.body() = target == "/filter" ? FilterError(args.status().message()) : "[]";
      } else {
        res.body() = target == "/filter" ? FilterResponse(*args, {}, 0) : PrioritizeResponse(*args, {});
      }
    } else {
      res.body() =
          target == "/filter" ? FilterResponse(*args, *cache, o.min_fraction) : PrioritizeResponse(*args, *cache);
    }
  } else {
    res.result(http::status::not_found);
    res.body() = "{\"error\":\"POST /filter or /prioritize\"}";
  }
  res.prepare_payload();
  return res;
}

void Session(const ExtenderOptions& o, tcp::socket socket) {
  try {
    beast::flat_buffer buf;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(64 << 20);
      parser.header_limit(16 << 10);
      beast::error_code ec;
      http::read(socket, buf, parser, ec);
      if (ec) return;
      auto res = Answer(o, parser.get());
      http::write(socket, res, ec);
      if (ec || !res.keep_alive()) return;
    }
  } catch (const std::exception& e) {
    STRATA_LOG_WARN("extender: connection ended: {}", e.what());
  }
}

}  // namespace

Status RunExtender(const ExtenderOptions& o) {
  if (o.cache_groups.empty()) return InvalidArgumentError("--cache-group etcd://HOST:PORT/GROUP is required");
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  const size_t colon = o.listen.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError("--listen must be HOST:PORT: " + o.listen);
  std::string host = o.listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port_text = o.listen.substr(colon + 1);
  unsigned port = 0;
  for (char c : port_text) port = (c >= '0' && c <= '9' && port < 65536) ? port * 10 + (c - '0') : 70000;
  if (port_text.empty() || port > 65535) return InvalidArgumentError("--listen has a bad port: " + o.listen);
  const std::pair<std::string, uint16_t> hp{host, static_cast<uint16_t>(port)};
  asio::io_context io;
  beast::error_code ec;
  auto address = asio::ip::make_address(hp.first, ec);
  if (ec) return InvalidArgumentError("--listen needs an IP address: " + o.listen);
  tcp::acceptor acceptor(io);
  tcp::endpoint ep(address, hp.second);
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return UnavailableError("cannot listen on " + o.listen + ": " + ec.message());
  const auto bound = acceptor.local_endpoint();
  std::cout << "strata scheduler-extender: listening on http://" << bound.address().to_string() << ":" << bound.port()
            << std::endl;
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop, &sig);
    beast::error_code ignored;
    acceptor.close(ignored);
  });
  for (;;) {
    tcp::socket socket(io);
    acceptor.accept(socket, ec);
    if (ec) break;  // closed by the signal
    // One thread per connection: the scheduler keeps one or two connections open.
    // Sessions own a copy of the options: one may outlive this function at shutdown.
    std::thread([opts = std::make_shared<ExtenderOptions>(o), s = std::move(socket)]() mutable {
      Session(*opts, std::move(s));
    }).detach();
  }
  waiter.join();
  return Status::Ok();
}

}  // namespace strata::csi
