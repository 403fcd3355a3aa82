#include "group/member.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/hash.h"
#include "net/http_client.h"

namespace strata::group {
namespace {

Result<std::pair<std::string, uint16_t>> SplitHostPort(std::string_view hp) {
  auto colon = hp.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == hp.size() || hp.size() - colon > 6) {
    return InvalidArgumentError("\"" + std::string(hp) + "\" is not HOST:PORT");
  }
  uint32_t port = 0;
  for (char c : hp.substr(colon + 1)) {
    if (c < '0' || c > '9') return InvalidArgumentError("\"" + std::string(hp) + "\" has a bad port");
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port > 65535) return InvalidArgumentError("\"" + std::string(hp) + "\" has a bad port");
  return std::make_pair(std::string(hp.substr(0, colon)), static_cast<uint16_t>(port));
}

}  // namespace

Result<GroupUrl> ParseGroupUrl(std::string_view url) {
  GroupUrl g;
  if (url.starts_with("etcd://")) {
    std::string_view rest = url.substr(7);
    auto slash = rest.find('/');
    if (slash == std::string_view::npos || slash + 1 == rest.size()) {
      return InvalidArgumentError("cache group URL " + std::string(url) + " lacks a group: etcd://HOST:PORT/GROUP");
    }
    STRATA_RETURN_IF_ERROR(SplitHostPort(rest.substr(0, slash)).status());
    g.scheme = "etcd";
    g.etcd_endpoint = "http://" + std::string(rest.substr(0, slash));
    g.group = std::string(rest.substr(slash + 1));
    return g;
  }
  if (url.starts_with("static://")) {
    g.scheme = "static";
    std::string_view rest = url.substr(9);
    while (!rest.empty()) {
      auto comma = rest.find(',');
      std::string_view one = rest.substr(0, comma);
      STRATA_RETURN_IF_ERROR(SplitHostPort(one).status());
      g.peers.emplace_back(one);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    if (g.peers.empty()) return InvalidArgumentError("static:// cache group lists no peers");
    return g;
  }
  return InvalidArgumentError("cache group URL must be etcd://HOST:PORT/GROUP or static://HOST:PORT,...");
}

Result<std::vector<Member>> ListGroupMembers(const std::string& url_text, std::chrono::milliseconds deadline) {
  STRATA_ASSIGN_OR_RETURN(GroupUrl url, ParseGroupUrl(url_text));
  if (url.scheme == "static") {
    std::vector<Member> members;
    for (auto& p : url.peers) members.push_back({p, p});
    return Canonical(std::move(members));
  }
  EtcdOptions eo;
  eo.endpoint = url.etcd_endpoint;
  eo.group = url.group;
  eo.request_timeout = deadline;
  return EtcdMembership::List(eo);
}

Result<std::string> FetchMemberStatus(const Member& member, const std::string& secret,
                                      std::chrono::milliseconds deadline) {
  net::HttpClientOptions h;
  h.connect_timeout = deadline;
  h.total_timeout = deadline;
  net::HttpClient http(h);
  const std::string target(kPeerStatusPath);
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(RealClock().WallNow().time_since_epoch()).count();
  net::HttpRequest req;
  req.method = "GET";
  req.url = "http://" + member.address + target;
  req.headers.emplace_back(std::string(kPeerTimeHeader), std::to_string(now));
  req.headers.emplace_back(std::string(kPeerAuthHeader), SignPeerRequest(secret, "GET", target, now));
  req.timeout = deadline;
  STRATA_ASSIGN_OR_RETURN(auto resp, http.Send(std::move(req)));
  if (resp.status != 200) {
    return UnavailableError("member " + member.id + " answered HTTP " + std::to_string(resp.status),
                            resp.body.ToString().substr(0, 200));
  }
  uint64_t want = 0;
  auto sum = resp.Header(kBlockChecksumHeader);
  if (!sum || !ParseChecksum(*sum, &want) || XxHash3(resp.body.data(), resp.body.size()) != want) {
    return CorruptionError("member " + member.id + " sent a status that fails its checksum");
  }
  return resp.body.ToString();
}

Result<std::string> ReadGroupSecret(const std::string& file) {
  if (file.empty()) {
    const char* env = std::getenv("STRATA_GROUP_SECRET");
    if (!env || !*env) return InvalidArgumentError("a cache group needs --group-secret-file or STRATA_GROUP_SECRET");
    return std::string(env);
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return NotFoundError("cannot read the group secret file " + file);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  if (s.size() < 16) return InvalidArgumentError("the group secret in " + file + " is shorter than 16 bytes");
  return s;
}

Result<std::unique_ptr<GroupMember>> GroupMember::Join(const JoinOptions& options) {
  STRATA_ASSIGN_OR_RETURN(GroupUrl url, ParseGroupUrl(options.url));
  STRATA_ASSIGN_OR_RETURN(auto hp, SplitHostPort(options.listen));
  if (url.scheme == "static" && hp.second == 0) {
    return InvalidArgumentError("a static cache group needs a fixed --peer-listen port (the others list it)");
  }
  std::unique_ptr<GroupMember> m(new GroupMember());
  PeerServerOptions po;
  po.host = hp.first;
  po.port = hp.second;
  po.secret = options.secret;
  m->service_ = std::make_unique<PeerService>(po);
  STRATA_ASSIGN_OR_RETURN(m->server_, PeerServer::Start(*m->service_));
  GroupOptions go;
  go.self = m->server_->address();
  go.secret = options.secret;
  go.deadline = options.deadline;
  m->group_ = std::make_shared<CacheGroup>(go);
  m->service_->SetReaderStats([group = m->group_] {
    auto s = group->stats();
    return std::make_pair(s.peer_hits, s.peer_misses);
  });
  if (url.scheme == "static") {
    std::vector<Member> members;
    for (auto& p : url.peers) members.push_back({p, p});
    members.push_back({go.self, go.self});
    m->group_->SetMembers(std::move(members));
  } else {
    EtcdOptions eo;
    eo.endpoint = url.etcd_endpoint;
    eo.group = url.group;
    eo.self = {go.self, go.self};
    eo.record = options.record;
    auto group = m->group_;
    STRATA_ASSIGN_OR_RETURN(m->etcd_, EtcdMembership::Join(eo, [group](std::vector<Member> members) {
                              group->SetMembers(std::move(members));
                            }));
  }
  return m;
}

GroupMember::~GroupMember() {
  etcd_.reset();    // leave first: the others stop asking
  server_.reset();  // then stop answering
}

void GroupMember::Attach(const std::shared_ptr<cache::CachedStore>& store) {
  {
    MutexLock lock(attached_mu_);
    attached_.push_back(store);
  }
  service_->AddStore(store.get());
  store->SetBlockRouter(group_);
}

}  // namespace strata::group
