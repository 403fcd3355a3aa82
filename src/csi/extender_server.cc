#include "csi/extender_server.h"

#include <signal.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <iostream>
#include <thread>

#include "base/log.h"
#include "base/metrics.h"
#include "base/stop_signals.h"
#include "csi/extender.h"
#include "group/etcd_membership.h"
#include "group/member.h"

namespace strata::csi {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// What every session shares: the options (a copy: a session may outlive RunExtender
// at shutdown) and the counters /metrics shows.
struct ExtenderState {
  explicit ExtenderState(ExtenderOptions o) : options(std::move(o)) {}
  const ExtenderOptions options;
  MetricsRegistry metrics;
  Counter& records_used = metrics.GetCounter("strata_extender_records_used_total",
                                             "Members' signed cache records the answers were computed from");
  Counter& records_refused =
      metrics.GetCounter("strata_extender_records_refused_total",
                         "Cache records ignored: unsigned, signed with another secret, expired or malformed");
  Counter& idle_closed = metrics.GetCounter("strata_extender_connections_idle_closed_total",
                                            "Connections closed after sending nothing for the idle timeout");
  Counter& over_limit = metrics.GetCounter("strata_extender_connections_refused_total",
                                           "Connections closed on arrival: max_connections were open");
  std::atomic<int> open_connections{0};
};

Result<ClusterCache> ReadClusterCache(ExtenderState& state) {
  const ExtenderOptions& o = state.options;
  ClusterCache cache;
  for (size_t i = 0; i < o.cache_groups.size(); ++i) {
    const std::string& url = o.cache_groups[i];
    STRATA_ASSIGN_OR_RETURN(group::GroupUrl g, group::ParseGroupUrl(url));
    if (g.scheme != "etcd") return InvalidArgumentError("--cache-group must be etcd://HOST:PORT/GROUP: " + url);
    group::EtcdOptions eo;
    eo.endpoint = g.etcd;
    eo.group = g.group;
    eo.secret = o.group_secrets.size() == 1 ? o.group_secrets[0] : o.group_secrets.at(i);
    STRATA_ASSIGN_OR_RETURN(auto records, group::EtcdMembership::ReadRecords(eo));
    for (const auto& [member, why] : records.refused) {
      state.records_refused.Inc();
      STRATA_LOG_WARN("extender: group {}: member {}'s record ignored: {}", g.group, member, why.ToString());
    }
    for (const auto& [member, record] : records.payloads) {
      Status st = AddMemberRecord(record, &cache);
      if (st.ok()) {
        state.records_used.Inc();
      } else {
        state.records_refused.Inc();
        STRATA_LOG_WARN("extender: group {}: member {}'s record skipped: {}", g.group, member, st.ToString());
      }
    }
  }
  return cache;
}

http::response<http::string_body> Answer(ExtenderState& state, const http::request<http::string_body>& req) {
  const ExtenderOptions& o = state.options;
  http::response<http::string_body> res{http::status::ok, req.version()};
  res.set(http::field::content_type, "application/json");
  res.keep_alive(req.keep_alive());
  const std::string target(req.target());
  if (req.method() == http::verb::get && target == "/healthz") {
    res.body() = "{\"ok\":true}";
  } else if (req.method() == http::verb::get && target == "/metrics") {
    res.set(http::field::content_type, "text/plain; version=0.0.4");
    res.body() = state.metrics.RenderPrometheus();
  } else if (req.method() == http::verb::post && (target == "/filter" || target == "/prioritize")) {
    auto args = ParseExtenderArgs(req.body());
    auto cache = args.ok() ? ReadClusterCache(state) : Result<ClusterCache>(args.status());
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

// Runs one asynchronous operation on the session's own io_context to its end.
template <typename Start>
beast::error_code RunOne(asio::io_context& io, Start start) {
  beast::error_code ec;
  start([&ec](beast::error_code e, size_t) { ec = e; });
  io.restart();
  io.run();
  return ec;
}

// One connection, on its own thread and io_context. Each request must arrive
// whole, and each answer be taken, within the idle timeout: a client that opens
// and never sends (or stalls mid-request) holds a thread and a socket only that long.
void Session(const std::shared_ptr<ExtenderState>& state, const std::shared_ptr<asio::io_context>& io,
             tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buf;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    parser.header_limit(16 << 10);
    stream.expires_after(state->options.idle_timeout);
    beast::error_code ec = RunOne(*io, [&](auto done) { http::async_read(stream, buf, parser, std::move(done)); });
    if (ec == beast::error::timeout) state->idle_closed.Inc();
    if (ec) return;
    auto res = Answer(*state, parser.get());
    stream.expires_after(state->options.idle_timeout);
    ec = RunOne(*io, [&](auto done) { http::async_write(stream, res, std::move(done)); });
    if (ec || !res.keep_alive()) return;
  }
}

}  // namespace

Status RunExtender(const ExtenderOptions& o) {
  if (o.cache_groups.empty()) return InvalidArgumentError("--cache-group etcd://HOST:PORT/GROUP is required");
  if (o.group_secrets.size() != 1 && o.group_secrets.size() != o.cache_groups.size()) {
    return InvalidArgumentError("give one group secret for every --cache-group, or one per --cache-group");
  }
  if (o.idle_timeout.count() <= 0) return InvalidArgumentError("--idle-timeout must be positive");
  if (o.max_connections <= 0) return InvalidArgumentError("--max-connections must be positive");
  const sigset_t stop = BlockStopSignals();
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
  auto state = std::make_shared<ExtenderState>(o);
  for (;;) {
    // One thread and io_context per connection: the scheduler keeps one or two open.
    auto session_io = std::make_shared<asio::io_context>();
    tcp::socket socket(*session_io);
    acceptor.accept(socket, ec);
    if (ec) break;  // closed by the signal
    if (state->open_connections.fetch_add(1) >= o.max_connections) {
      state->open_connections.fetch_sub(1);
      state->over_limit.Inc();
      continue;  // the socket closes here: no thread for a client past the cap
    }
    try {
      std::thread([state, session_io, s = std::move(socket)]() mutable {
        try {
          Session(state, session_io, std::move(s));
        } catch (const std::exception& e) {  // a thread must not end the process
          STRATA_LOG_WARN("extender: connection ended: {}", e.what());
        }
        state->open_connections.fetch_sub(1);
      }).detach();
    } catch (const std::system_error& e) {
      state->open_connections.fetch_sub(1);
      STRATA_LOG_WARN("extender: connection refused (no thread for it): {}", e.what());
    }
  }
  waiter.join();
  return Status::Ok();
}

}  // namespace strata::csi
