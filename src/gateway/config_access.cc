// The gateway config's access and connection-limit parts (config.h): the
// keys' scopes, the buckets' settings and the limits that bound what one
// client can hold. Kept apart from config.cc's general settings.
#include <nlohmann/json.hpp>

#include "base/units.h"
#include "gateway/buckets.h"
#include "gateway/config.h"

namespace strata::gateway {
namespace {

using Json = nlohmann::json;

Status Bad(std::string_view field, std::string_view why) {
  return InvalidArgumentError("gateway config: \"" + std::string(field) + "\": " + std::string(why));
}

Status ReadBool(const Json& obj, const char* name, bool* out, const std::string& field) {
  auto it = obj.find(name);
  if (it == obj.end()) return Status::Ok();
  if (!it->is_boolean()) return Bad(field, "expected true or false");
  *out = it->get<bool>();
  return Status::Ok();
}

Status ReadText(const Json& obj, const char* name, std::string* out, const std::string& field) {
  auto it = obj.find(name);
  if (it == obj.end()) return Status::Ok();
  if (!it->is_string()) return Bad(field, "expected a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

Result<AccessGrant> ReadGrant(const Json& g, const std::string& field) {
  if (!g.is_object()) return Bad(field, "expected {\"bucket\", \"prefix\", \"allow\"}");
  AccessGrant grant;
  STRATA_RETURN_IF_ERROR(ReadText(g, "bucket", &grant.bucket, field + ".bucket"));
  STRATA_RETURN_IF_ERROR(ReadText(g, "prefix", &grant.prefix, field + ".prefix"));
  if (grant.bucket.empty()) return Bad(field, "a grant needs a \"bucket\" (\"*\" for every bucket)");
  auto allow = g.find("allow");
  if (allow == g.end()) return grant;  // all four
  if (!allow->is_array()) return Bad(field + ".allow", "expected a list of read, list, write, delete");
  grant.permissions = 0;
  for (const auto& p : *allow) {
    if (!p.is_string()) return Bad(field + ".allow", "expected strings");
    auto bit = ParsePermission(p.get<std::string>());
    if (!bit.ok()) return Bad(field + ".allow", bit.status().message());
    grant.permissions |= *bit;
  }
  return grant;
}

// "read_only" and "grants" of each "keys" entry (ReadKeys in config.cc took the secrets).
Status ReadKeyAccess(const Json& doc, GatewayConfig* config) {
  auto it = doc.find("keys");
  if (it == doc.end() || !it->is_array()) return Status::Ok();  // ReadKeys reports a malformed list
  for (const auto& k : *it) {
    if (!k.is_object() || !k.contains("access_key") || !k["access_key"].is_string()) continue;
    const std::string ak = k["access_key"].get<std::string>();
    const std::string field = "keys[" + ak + "]";
    KeyAccess access;
    STRATA_RETURN_IF_ERROR(ReadBool(k, "read_only", &access.read_only, field + ".read_only"));
    if (auto g = k.find("grants"); g != k.end()) {
      if (!g->is_array()) return Bad(field + ".grants", "expected a list of grants");
      access.restricted = true;
      for (size_t i = 0; i < g->size(); ++i) {
        STRATA_ASSIGN_OR_RETURN(AccessGrant grant, ReadGrant((*g)[i], field + ".grants[" + std::to_string(i) + "]"));
        access.grants.push_back(std::move(grant));
      }
    }
    config->key_access[ak] = std::move(access);
  }
  return Status::Ok();
}

Status ReadBucketSettings(const Json& doc, GatewayConfig* config) {
  auto it = doc.find("buckets");
  if (it == doc.end()) return Status::Ok();
  if (!it->is_object()) return Bad("buckets", "expected {\"name\": {\"owner\": .., \"public_read\": ..}}");
  for (const auto& [name, settings] : it->items()) {
    const std::string field = "buckets." + name;
    if (!settings.is_object()) return Bad(field, "expected {\"owner\", \"public_read\"}");
    BucketSettings s;
    STRATA_RETURN_IF_ERROR(ReadText(settings, "owner", &s.owner, field + ".owner"));
    STRATA_RETURN_IF_ERROR(ReadBool(settings, "public_read", &s.public_read, field + ".public_read"));
    config->bucket_settings[name] = std::move(s);
  }
  return Status::Ok();
}

Status ReadCount(const Json& obj, const char* name, uint64_t* out, const std::string& field) {
  auto it = obj.find(name);
  if (it == obj.end()) return Status::Ok();
  if (!it->is_number_unsigned() || it->get<uint64_t>() == 0) return Bad(field, "expected a positive integer");
  *out = it->get<uint64_t>();
  return Status::Ok();
}

Status ReadConnectionLimits(const Json& doc, GatewayLimits* l) {
  auto it = doc.find("limits");
  if (it == doc.end() || !it->is_object()) return Status::Ok();  // ReadLimits reports a malformed one
  const Json& o = *it;
  STRATA_RETURN_IF_ERROR(ReadCount(o, "max_connections", &l->max_connections, "limits.max_connections"));
  STRATA_RETURN_IF_ERROR(
      ReadCount(o, "max_connections_per_client", &l->max_connections_per_client, "limits.max_connections_per_client"));
  if (auto r = o.find("min_transfer_rate"); r != o.end()) {
    RateRules rules;
    rules.per_second_implied = true;
    auto v = r->is_string()            ? ParseRate(r->get<std::string>(), rules)
             : r->is_number_unsigned() ? Result<double>(static_cast<double>(r->get<uint64_t>()))
                                       : Result<double>(InvalidArgumentError("expected " + RateForms(rules)));
    if (!v.ok()) return Bad("limits.min_transfer_rate", v.status().message());
    l->min_transfer_rate = static_cast<uint64_t>(*v);
  }
  if (auto g = o.find("transfer_grace"); g != o.end()) {
    auto v = g->is_string() ? ParseDuration(g->get<std::string>())
                            : Result<Duration>(InvalidArgumentError("expected " + DurationForms()));
    if (!v.ok()) return Bad("limits.transfer_grace", v.status().message());
    l->transfer_grace = *v;
  }
  return Status::Ok();
}

}  // namespace

Status ParseGatewayAccessJson(std::string_view text, GatewayConfig* config) {
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return InvalidArgumentError("gateway config must be a JSON object");
  if (doc.contains("allow_anonymous")) {
    return Bad("allow_anonymous",
               "is gone: unsigned requests now read only what is public (\"buckets\": {\"NAME\": "
               "{\"public_read\": true}}, or the canned ACL public-read) and never write or delete");
  }
  STRATA_RETURN_IF_ERROR(ReadKeyAccess(doc, config));
  STRATA_RETURN_IF_ERROR(ReadBucketSettings(doc, config));
  return ReadConnectionLimits(doc, &config->limits);
}

Status ValidateGatewayAccess(const GatewayConfig& c) {
  bool any_public = false;
  for (const auto& [name, s] : c.bucket_settings) {
    if (!IsValidBucketName(name)) return Bad("buckets." + name, "not a valid bucket name");
    if (!s.owner.empty() && !c.keys.count(s.owner)) return Bad("buckets." + name + ".owner", "not a configured key");
    any_public = any_public || s.public_read;
  }
  if (c.keys.empty() && !any_public) {
    return InvalidArgumentError(
        "no access keys: give --access-key/--secret-key (or keys in --config); anonymous clients alone can only "
        "read public buckets (--public-read BUCKET)");
  }
  for (const auto& [ak, sk] : c.keys) {
    if (ak.empty() || sk.empty()) return InvalidArgumentError("access and secret keys must not be empty");
    if (sk.size() < kMinSecretKeyChars) {
      return InvalidArgumentError("the secret key of access key " + ak + " has " + std::to_string(sk.size()) +
                                  " characters; at least " + std::to_string(kMinSecretKeyChars) +
                                  " are needed (a short secret is guessed offline from one signed request): make "
                                  "one with `head -c 30 /dev/urandom | base64`");
    }
  }
  for (const auto& [ak, access] : c.key_access) {
    if (!c.keys.count(ak)) return Bad("keys[" + ak + "]", "has grants but no secret");
  }
  if (c.limits.max_connections == 0 || c.limits.max_connections_per_client == 0) {
    return InvalidArgumentError("limits.max_connections and max_connections_per_client must be at least 1");
  }
  return Status::Ok();
}

}  // namespace strata::gateway
