#include "gateway/config.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "base/units.h"

namespace strata::gateway {
namespace {

using Json = nlohmann::json;

Status Bad(std::string_view field, std::string_view why) {
  return InvalidArgumentError("gateway config: \"" + std::string(field) + "\": " + std::string(why));
}

bool ParseUint(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Values in strata's one grammar (base/units.h); a JSON number is bytes or seconds.
Result<uint64_t> ParseSizeText(std::string_view text) { return ParseSize(text); }
Result<SpaceFloor> ParseSpaceFloorText(std::string_view text) { return ParseSpaceFloor(text); }
Result<Duration> ParseDurationText(std::string_view text) { return ParseDuration(text); }
Result<Duration> ParseTtlText(std::string_view text) { return ParseDuration(text, {.allow_forever = true}); }

// A JSON value that may be a number or a string with units.
template <typename T, typename ParseFn>
Status ReadUnit(const Json& obj, const char* name, T* out, ParseFn parse, std::string_view path) {
  auto it = obj.find(name);
  if (it == obj.end()) return Status::Ok();
  std::string field = std::string(path) + name;
  if (it->is_number_unsigned()) {
    auto r = parse(std::to_string(it->template get<uint64_t>()));
    if (!r.ok()) return Bad(field, r.status().message());
    *out = *r;
    return Status::Ok();
  }
  if (!it->is_string()) return Bad(field, "expected a number or a string");
  auto r = parse(it->template get<std::string>());
  if (!r.ok()) return Bad(field, r.status().message());
  *out = *r;
  return Status::Ok();
}

Status ReadString(const Json& obj, const char* name, std::string* out) {
  auto it = obj.find(name);
  if (it == obj.end()) return Status::Ok();
  if (!it->is_string()) return Bad(name, "expected a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

Status ReadInt(const Json& obj, const char* name, int* out, int lo, int hi) {
  auto it = obj.find(name);
  if (it == obj.end()) return Status::Ok();
  if (!it->is_number_integer()) return Bad(name, "expected an integer");
  int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) return Bad(name, "must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  *out = static_cast<int>(v);
  return Status::Ok();
}

Status ReadKeys(const Json& doc, GatewayConfig* config) {
  auto it = doc.find("keys");
  if (it == doc.end()) return Status::Ok();
  if (!it->is_array()) return Bad("keys", "expected a list of {\"access_key\", \"secret_key\"}");
  for (const auto& k : *it) {
    if (!k.is_object()) return Bad("keys", "expected objects");
    auto a = k.find("access_key"), s = k.find("secret_key");
    if (a == k.end() || s == k.end() || !a->is_string() || !s->is_string()) {
      return Bad("keys", "each entry needs string \"access_key\" and \"secret_key\"");
    }
    config->keys[a->get<std::string>()] = s->get<std::string>();
  }
  return Status::Ok();
}

Status ReadBackends(const Json& doc, GatewayConfig* config) {
  auto it = doc.find("backend");
  if (it == doc.end()) it = doc.find("backends");
  if (it == doc.end()) return Status::Ok();
  config->backends.clear();
  if (it->is_string()) {
    config->backends.push_back(it->get<std::string>());
    return Status::Ok();
  }
  if (!it->is_array()) return Bad("backend", "expected a URL or a list of URLs");
  for (const auto& b : *it) {
    if (!b.is_string()) return Bad("backend", "expected URLs (strings)");
    config->backends.push_back(b.get<std::string>());
  }
  return Status::Ok();
}

Status ReadCache(const Json& doc, GatewayCacheConfig* c) {
  auto it = doc.find("cache");
  if (it == doc.end()) return Status::Ok();
  if (!it->is_object()) return Bad("cache", "expected an object");
  const Json& o = *it;
  STRATA_RETURN_IF_ERROR(ReadUnit(o, "ram", &c->ram_bytes, ParseSizeText, "cache."));
  STRATA_RETURN_IF_ERROR(ReadUnit(o, "disk", &c->disk_bytes, ParseSizeText, "cache."));
  STRATA_RETURN_IF_ERROR(ReadUnit(o, "free_space", &c->free_space, ParseSpaceFloorText, "cache."));
  STRATA_RETURN_IF_ERROR(ReadUnit(o, "block_size", &c->block_size, ParseSizeText, "cache."));
  STRATA_RETURN_IF_ERROR(ReadUnit(o, "metadata_ttl", &c->metadata_ttl, ParseTtlText, "cache."));
  STRATA_RETURN_IF_ERROR(ReadUnit(o, "backend_timeout", &c->backend_timeout, ParseDurationText, "cache."));
  STRATA_RETURN_IF_ERROR(ReadUnit(o, "revalidate_timeout", &c->revalidate_timeout, ParseDurationText, "cache."));
  if (auto it = o.find("strict_revalidate"); it != o.end()) {
    if (!it->is_boolean()) return Bad("cache.strict_revalidate", "expected true or false");
    c->strict_revalidate = it->get<bool>();
  }
  STRATA_RETURN_IF_ERROR(ReadString(o, "encryption_key_file", &c->encryption_key_file));
  return ReadString(o, "dir", &c->dir);
}

Status ReadLimits(const Json& doc, GatewayLimits* l) {
  auto it = doc.find("limits");
  if (it == doc.end()) return Status::Ok();
  if (!it->is_object()) return Bad("limits", "expected an object");
  const Json& o = *it;
  const char* p = "limits.";
  STRATA_RETURN_IF_ERROR(ReadUnit(o, "max_header_bytes", &l->max_header_bytes, ParseSizeText, p));
  STRATA_RETURN_IF_ERROR(ReadUnit(o, "max_body_bytes", &l->max_body_bytes, ParseSizeText, p));
  STRATA_RETURN_IF_ERROR(ReadUnit(o, "max_inflight_bytes", &l->max_inflight_bytes, ParseSizeText, p));
  STRATA_RETURN_IF_ERROR(ReadUnit(o, "header_timeout", &l->header_timeout, ParseDurationText, p));
  STRATA_RETURN_IF_ERROR(ReadUnit(o, "idle_timeout", &l->idle_timeout, ParseDurationText, p));
  STRATA_RETURN_IF_ERROR(ReadUnit(o, "io_timeout", &l->io_timeout, ParseDurationText, p));
  STRATA_RETURN_IF_ERROR(ReadString(o, "spill_dir", &l->spill_dir));
  return ReadUnit(o, "drain_timeout", &l->drain_timeout, ParseDurationText, p);
}

}  // namespace

Status ParseGatewayConfigJson(std::string_view text, GatewayConfig* config) {
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgumentError("gateway config is not valid JSON");
  if (!doc.is_object()) return InvalidArgumentError("gateway config must be a JSON object");
  STRATA_RETURN_IF_ERROR(ReadString(doc, "listen", &config->listen));
  STRATA_RETURN_IF_ERROR(ReadString(doc, "region", &config->region));
  STRATA_RETURN_IF_ERROR(ReadString(doc, "emulate", &config->emulate));
  STRATA_RETURN_IF_ERROR(ReadString(doc, "access_log", &config->access_log));
  STRATA_RETURN_IF_ERROR(ReadBackends(doc, config));
  STRATA_RETURN_IF_ERROR(ReadKeys(doc, config));
  STRATA_RETURN_IF_ERROR(ParseGatewayAccessJson(text, config));
  STRATA_RETURN_IF_ERROR(ReadInt(doc, "io_threads", &config->io_threads, 1, 64));
  STRATA_RETURN_IF_ERROR(ReadInt(doc, "workers", &config->workers, 1, 1024));
  STRATA_RETURN_IF_ERROR(ReadCache(doc, &config->cache));
  return ReadLimits(doc, &config->limits);
}

Status ParseListenAddress(std::string_view text, std::string* host, uint16_t* port) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return InvalidArgumentError("listen address \"" + std::string(text) + "\" needs a port (HOST:PORT)");
  }
  std::string_view h = text.substr(0, colon), p = text.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  uint64_t v = 0;
  if (!ParseUint(p, &v) || v > 65535)
    return InvalidArgumentError("bad port in listen address \"" + std::string(text) + "\"");
  *host = h.empty() ? "127.0.0.1" : std::string(h);
  *port = static_cast<uint16_t>(v);
  return Status::Ok();
}

Status ValidateGatewayConfig(const GatewayConfig& c) {
  if (c.backends.empty()) return InvalidArgumentError("no backend: give --backend URL (e.g. file:///data)");
  STRATA_RETURN_IF_ERROR(ValidateGatewayAccess(c));
  std::string host;
  uint16_t port = 0;
  STRATA_RETURN_IF_ERROR(ParseListenAddress(c.listen, &host, &port));
  if (c.limits.max_header_bytes < 1024) return InvalidArgumentError("limits.max_header_bytes must be >= 1024");
  if (c.cache.block_size < 4096) return InvalidArgumentError("cache.block_size must be >= 4 KiB");
  if (!c.cache.encryption_key_file.empty() && c.cache.dir.empty()) {
    return InvalidArgumentError("cache.encryption_key_file needs cache.dir (only a disk tier is encrypted)");
  }
  return Status::Ok();
}

}  // namespace strata::gateway
