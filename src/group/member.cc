#include "group/member.h"

#include <cstdlib>

#include "group/address.h"
#include "io/secret_file.h"
#include "net/http_client.h"

namespace strata::group {
namespace {

Status CheckSecret(const std::string& secret) {
  if (secret.size() < kMinSecretBytes) {
    return InvalidArgumentError("a cache group secret must be at least " + std::to_string(kMinSecretBytes) +
                                " bytes (e.g. head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE)");
  }
  return Status::Ok();
}

}  // namespace

Result<GroupUrl> ParseGroupUrl(std::string_view url) {
  GroupUrl g;
  const bool tls = url.starts_with("etcds://");
  if (tls || url.starts_with("etcd://")) {
    std::string_view rest = url.substr(tls ? 8 : 7);
    const auto slash = rest.find('/');
    const auto query = rest.find('?');
    if (slash == std::string_view::npos || slash + 1 == rest.size() || slash + 1 == query) {
      return InvalidArgumentError("cache group URL lacks a group: etcd://HOST:PORT/GROUP or etcds://HOST:PORT/GROUP");
    }
    g.scheme = "etcd";
    const std::string_view group = rest.substr(slash + 1, query == std::string_view::npos ? query : query - slash - 1);
    g.group = std::string(group);
    STRATA_ASSIGN_OR_RETURN(g.etcd, ParseEtcdEndpoint(tls, rest.substr(0, slash),
                                                      query == std::string_view::npos ? "" : rest.substr(query + 1)));
    return g;
  }
  if (url.starts_with("static://")) {
    g.scheme = "static";
    std::string_view rest = url.substr(9);
    while (!rest.empty()) {
      auto comma = rest.find(',');
      std::string_view one = rest.substr(0, comma);
      STRATA_RETURN_IF_ERROR(ParseHostPort(one).status());
      g.peers.emplace_back(one);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    if (g.peers.empty()) return InvalidArgumentError("static:// cache group lists no peers");
    return g;
  }
  return InvalidArgumentError(
      "cache group URL must be etcd://HOST:PORT/GROUP, etcds://HOST:PORT/GROUP[?ca=...] or static://HOST:PORT,...");
}

Result<std::vector<Member>> ListGroupMembers(const std::string& url_text, const std::string& secret,
                                             std::chrono::milliseconds deadline) {
  STRATA_ASSIGN_OR_RETURN(GroupUrl url, ParseGroupUrl(url_text));
  if (url.scheme == "static") {
    std::vector<Member> members;
    for (auto& p : url.peers) members.push_back({p, p});
    return Canonical(std::move(members));
  }
  EtcdOptions eo;
  eo.endpoint = url.etcd;
  eo.group = url.group;
  eo.secret = secret;
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
  const std::string auth = SignPeerRequest(secret, "GET", target, now);
  net::HttpRequest req;
  req.method = "GET";
  req.url = "http://" + member.address + target;
  req.headers.emplace_back(std::string(kPeerTimeHeader), std::to_string(now));
  req.headers.emplace_back(std::string(kPeerAuthHeader), auth);
  req.timeout = deadline;
  STRATA_ASSIGN_OR_RETURN(auto resp, http.Send(std::move(req)));
  if (resp.status != 200) {
    return UnavailableError("member " + member.id + " answered HTTP " + std::to_string(resp.status),
                            resp.body.ToString().substr(0, 200));
  }
  Status st = VerifyPeerAnswer(secret, auth, target, resp.Header(kPeerNonceHeader).value_or(""),
                               resp.Header(kPeerAnswerHeader).value_or(""), resp.body.view());
  if (!st.ok()) return st.WithContext("status of member " + member.id);
  return resp.body.ToString();
}

Result<std::string> ReadGroupSecret(const std::string& file) {
  if (file.empty()) {
    const char* env = std::getenv("STRATA_GROUP_SECRET");
    if (!env || !*env) return InvalidArgumentError("a cache group needs --group-secret-file or STRATA_GROUP_SECRET");
    std::string secret(env);
    STRATA_RETURN_IF_ERROR(CheckSecret(secret).WithContext("STRATA_GROUP_SECRET"));
    return secret;
  }
  STRATA_ASSIGN_OR_RETURN(std::string secret,
                          io::ReadSecretFile(file, {.what = "the group secret", .min_bytes = kMinSecretBytes}));
  return secret;
}

Result<std::unique_ptr<GroupMember>> GroupMember::Join(const JoinOptions& options) {
  STRATA_ASSIGN_OR_RETURN(GroupUrl url, ParseGroupUrl(options.url));
  STRATA_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(options.listen, /*allow_port_zero=*/true));
  STRATA_RETURN_IF_ERROR(CheckSecret(options.secret));
  if (url.scheme == "static" && hp.port == 0) {
    return InvalidArgumentError("a static cache group needs a fixed --peer-listen port (the others list it)");
  }
  std::unique_ptr<GroupMember> m(new GroupMember());
  PeerServerOptions po;
  po.host = hp.host;
  po.port = hp.port;
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
    eo.endpoint = url.etcd;
    eo.group = url.group;
    eo.secret = options.secret;
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
