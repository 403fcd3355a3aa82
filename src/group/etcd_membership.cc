#include "group/etcd_membership.h"

#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "base/log.h"

namespace strata::group {
namespace {

using json = nlohmann::json;

std::string B64(std::string_view s) { return Base64Encode(s.data(), s.size()); }

// The first key after every key starting with `prefix` (etcd's range_end for a prefix).
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) < 0xff) {
      prefix.back() = static_cast<char>(prefix.back() + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

// A string field of a JSON object (etcd's gateway sends int64 as strings), or "".
std::string Field(const json& j, const char* name) {
  if (!j.is_object()) return {};
  auto it = j.find(name);
  if (it == j.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return {};
}

bool ValidGroupName(const std::string& g) {
  if (g.empty() || g.size() > 128) return false;
  for (char c : g) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace

EtcdMembership::EtcdMembership(EtcdOptions options, OnChange on_change)
    : options_(std::move(options)), on_change_(std::move(on_change)), http_([&] {
        net::HttpClientOptions h;
        h.connect_timeout = options_.request_timeout;
        h.total_timeout = options_.request_timeout;
        h.max_connections = 4;
        return h;
      }()) {}

Result<std::unique_ptr<EtcdMembership>> EtcdMembership::Join(EtcdOptions options, OnChange on_change) {
  if (!ValidGroupName(options.group)) {
    return InvalidArgumentError("cache group name \"" + options.group + "\" must be 1-128 of [A-Za-z0-9._-]");
  }
  if (options.self.id.empty() || options.self.id.find('/') != std::string::npos || options.self.address.empty()) {
    return InvalidArgumentError("a cache group member needs an id without '/' and a peer address");
  }
  if (options.ttl_seconds < 1) return InvalidArgumentError("the membership lease TTL must be at least 1 s");
  std::unique_ptr<EtcdMembership> m(new EtcdMembership(std::move(options), std::move(on_change)));
  STRATA_RETURN_IF_ERROR(m->Grant());
  STRATA_RETURN_IF_ERROR(m->Register());
  STRATA_ASSIGN_OR_RETURN(auto members, m->Read());
  {
    std::lock_guard lock(m->mu_);
    m->members_ = members;
  }
  if (m->on_change_) m->on_change_(members);
  m->thread_ = std::thread([p = m.get()] { p->Loop(); });
  return m;
}

Result<std::vector<Member>> EtcdMembership::List(EtcdOptions options) {
  if (!ValidGroupName(options.group)) {
    return InvalidArgumentError("cache group name \"" + options.group + "\" must be 1-128 of [A-Za-z0-9._-]");
  }
  std::unique_ptr<EtcdMembership> m(new EtcdMembership(std::move(options), nullptr));
  return m->Read();  // no lease, no thread: the destructor revokes nothing
}

EtcdMembership::~EtcdMembership() { Stop(true); }

void EtcdMembership::StopWithoutLeaving() { Stop(false); }

void EtcdMembership::Stop(bool revoke) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (revoke && !lease_.empty()) {
    auto r = Call("/v3/lease/revoke", json{{"ID", lease_}}.dump());
    if (!r.ok())
      STRATA_LOG_WARN("group: could not leave cleanly (the lease expires on its own): {}", r.status().ToString());
  }
}

std::vector<Member> EtcdMembership::members() const {
  std::lock_guard lock(mu_);
  return members_;
}

Result<std::string> EtcdMembership::Call(const std::string& path, const std::string& body) {
  net::HttpRequest req;
  req.method = "POST";
  req.url = options_.endpoint + path;
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = Buffer::Copy(body);
  req.timeout = options_.request_timeout;
  STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, http_.Send(std::move(req)));
  if (resp.status != 200) {
    return UnavailableError("etcd " + path + " answered HTTP " + std::to_string(resp.status),
                            resp.body.ToString().substr(0, 300));
  }
  return resp.body.ToString();
}

Status EtcdMembership::Grant() {
  STRATA_ASSIGN_OR_RETURN(std::string body, Call("/v3/lease/grant", json{{"TTL", options_.ttl_seconds}}.dump()));
  json j = json::parse(body, nullptr, false);
  std::string id = Field(j, "ID");
  if (id.empty()) return UnavailableError("etcd granted no lease", body.substr(0, 300));
  lease_ = id;
  return Status::Ok();
}

Status EtcdMembership::Register() {
  json put = {{"key", B64(Prefix(options_.group) + options_.self.id)},
              {"value", B64(options_.self.address)},
              {"lease", lease_}};
  return Call("/v3/kv/put", put.dump()).status();
}

Status EtcdMembership::KeepAlive() {
  STRATA_ASSIGN_OR_RETURN(std::string body, Call("/v3/lease/keepalive", json{{"ID", lease_}}.dump()));
  // One message of the gateway's stream: {"result":{"ID":...,"TTL":"5"}}.
  json j = json::parse(body.substr(0, body.find('\n')), nullptr, false);
  std::string ttl = j.is_object() && j.contains("result") ? Field(j["result"], "TTL") : "";
  if (ttl.empty() || ttl == "0") {
    // The lease is gone (expired during a pause, or etcd lost it): join again.
    STRATA_LOG_WARN("group: membership lease {} expired; registering again", lease_);
    STRATA_RETURN_IF_ERROR(Grant());
    return Register();
  }
  return Status::Ok();
}

Result<std::vector<Member>> EtcdMembership::Read() {
  const std::string prefix = Prefix(options_.group);
  STRATA_ASSIGN_OR_RETURN(
      std::string body, Call("/v3/kv/range", json{{"key", B64(prefix)}, {"range_end", B64(PrefixEnd(prefix))}}.dump()));
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return UnavailableError("etcd sent a range answer that is not JSON", body.substr(0, 300));
  std::vector<Member> members;
  auto kvs = j.find("kvs");
  if (kvs == j.end()) return members;  // no members: the field is omitted
  if (!kvs->is_array()) return UnavailableError("etcd range answer without a kvs list");
  for (const auto& kv : *kvs) {
    std::string key, value;
    if (!Base64Decode(Field(kv, "key"), &key) || !Base64Decode(Field(kv, "value"), &value)) continue;
    if (!key.starts_with(prefix) || key.size() == prefix.size() || value.empty() || value.size() > 300) continue;
    members.push_back({key.substr(prefix.size()), value});
  }
  return Canonical(std::move(members));
}

void EtcdMembership::Loop() {
  using Clock = std::chrono::steady_clock;
  const auto renew_every = std::chrono::milliseconds(options_.ttl_seconds * 1000 / 3);
  auto next_renew = Clock::now() + renew_every;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      auto wake = std::min(next_renew, Clock::now() + options_.poll);
      if (cv_.wait_until(lock, wake, [&] { return stopping_; })) return;
    }
    try {
      if (Clock::now() >= next_renew) {
        Status st = KeepAlive();
        if (!st.ok()) STRATA_LOG_WARN("group: could not renew membership: {}", st.ToString());
        next_renew = Clock::now() + renew_every;
      }
      auto members = Read();
      if (!members.ok()) {
        STRATA_LOG_WARN("group: could not read the members (keeping the last list): {}", members.status().ToString());
        continue;
      }
      bool changed;
      {
        std::lock_guard lock(mu_);
        changed = *members != members_;
        if (changed) members_ = *members;
      }
      if (changed && on_change_) on_change_(std::move(*members));
    } catch (...) {
      STRATA_LOG_ERROR("group: membership thread caught an exception; continuing");
    }
  }
}

}  // namespace strata::group
