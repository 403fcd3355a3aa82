#include "group/etcd_json.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "base/hash.h"

namespace strata::group {
namespace {

using json = nlohmann::json;

// A string field of a JSON object (etcd's gateway sends int64 as strings), or "".
std::string Field(const json& j, const char* name) {
  if (!j.is_object()) return {};
  auto it = j.find(name);
  if (it == j.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return {};
}

// A non-negative decimal int64 (revisions, lease IDs, TTLs); 0 for anything else.
int64_t ToInt64(const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && v > 0 ? v : 0;
}

const json* Member(const json& j, const char* name) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(name);
  return it == j.end() ? nullptr : &*it;
}

int64_t HeaderRevision(const json& j) {
  const json* h = Member(j, "header");
  return h ? ToInt64(Field(*h, "revision")) : 0;
}

bool DecodeKv(const json& kv, bool want_value, EtcdKv* out) {
  if (!Base64Decode(Field(kv, "key"), &out->key) || out->key.empty()) return false;
  if (want_value && !Base64Decode(Field(kv, "value"), &out->value)) return false;
  out->mod_revision = ToInt64(Field(kv, "mod_revision"));
  return true;
}

std::string Excerpt(std::string_view text) {
  std::string s(text.substr(0, 200));
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return s;
}

}  // namespace

std::string EtcdPrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) < 0xff) {
      prefix.back() = static_cast<char>(prefix.back() + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

Result<EtcdRange> ParseEtcdRange(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return UnavailableError("etcd sent a range answer that is not a JSON object", Excerpt(body));
  EtcdRange r;
  r.revision = HeaderRevision(j);
  if (const json* more = Member(j, "more"); more && more->is_boolean()) r.more = more->get<bool>();
  const json* kvs = Member(j, "kvs");
  if (!kvs) return r;  // no keys: the field is omitted
  if (!kvs->is_array()) return UnavailableError("etcd range answer without a kvs list", Excerpt(body));
  r.kvs.reserve(kvs->size());
  for (const json& kv : *kvs) {
    EtcdKv e;
    if (DecodeKv(kv, true, &e)) r.kvs.push_back(std::move(e));
  }
  return r;
}

Result<EtcdWatchMessage> ParseEtcdWatchMessage(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return UnavailableError("etcd sent a watch message that is not JSON");
  if (Member(j, "error")) return UnavailableError("etcd watch failed", Excerpt(text));
  EtcdWatchMessage m;
  const json* r = Member(j, "result");
  if (!r || !r->is_object()) return m;
  if (const json* c = Member(*r, "canceled"); c && c->is_boolean() && c->get<bool>()) {
    // Compacted past our revision, or refused: re-read and watch again.
    return UnavailableError("etcd cancelled the watch (compact revision " + Field(*r, "compact_revision") + ")",
                            Excerpt(Field(*r, "cancel_reason")));
  }
  if (const json* c = Member(*r, "created"); c && c->is_boolean()) m.created = c->get<bool>();
  m.revision = HeaderRevision(*r);
  const json* evs = Member(*r, "events");
  if (!evs || !evs->is_array()) return m;
  for (const json& ev : *evs) {
    const json* kv = Member(ev, "kv");
    if (!kv) continue;
    EtcdEvent e;
    const std::string type = Field(ev, "type");  // PUT is the default and omitted
    e.put = type.empty() || type == "PUT";
    if (!e.put && type != "DELETE") continue;
    if (!DecodeKv(*kv, e.put, &e.kv)) continue;
    if (e.kv.mod_revision == 0) e.kv.mod_revision = m.revision;
    m.events.push_back(std::move(e));
  }
  return m;
}

Result<std::string> ParseEtcdLeaseGrant(std::string_view body) {
  const std::string id = Field(json::parse(body, nullptr, false), "ID");
  if (id.empty() || ToInt64(id) == 0) return UnavailableError("etcd granted no lease", Excerpt(body));
  return id;
}

int64_t ParseEtcdKeepAliveTtl(std::string_view body) {
  // One message of the gateway's stream: {"result":{"ID":...,"TTL":"5"}}.
  json j = json::parse(body.substr(0, body.find('\n')), nullptr, false);
  const json* r = Member(j, "result");
  return r ? ToInt64(Field(*r, "TTL")) : 0;
}

Result<std::string> ParseEtcdAuthToken(std::string_view body) {
  std::string token = Field(json::parse(body, nullptr, false), "token");
  // The token goes into a header: nothing but printable ASCII may pass.
  if (token.empty() || token.size() > 4096) return UnavailableError("etcd gave no auth token");
  for (char c : token) {
    if (c <= 0x20 || c >= 0x7f) return UnavailableError("etcd gave an auth token that is not printable");
  }
  return token;
}

}  // namespace strata::group
