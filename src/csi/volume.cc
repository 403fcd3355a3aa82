#include "csi/volume.h"

#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "base/json_text.h"
#include "base/utf8.h"

namespace strata::csi {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxValue = 4096;  // a URL with its query, a group URL
constexpr size_t kMaxKeys = 64;

// volume_context key -> the `strata mount` flag it sets.
struct ContextKey {
  const char* key;
  const char* flag;
};
constexpr ContextKey kMountKeys[] = {
    {"cache-ram", "--cache-ram"},
    {"cache-disk", "--cache-disk"},
    {"cache-free-space", "--cache-free-space"},
    {"block-size", "--block-size"},
    {"metadata-ttl", "--metadata-ttl"},
    {"cache-group", "--cache-group"},
    {"peer-listen", "--peer-listen"},
    {"peer-deadline", "--peer-deadline"},
    {"prefetch-budget", "--prefetch-budget"},
    {"readahead-max", "--readahead-max"},
};

constexpr const char* kSecretKeys[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                                       "STRATA_GROUP_SECRET"};

// UTF-8 too: the value is kept in the volume record (JSON) and shown in messages.
bool PrintableValue(std::string_view v) {
  if (v.empty() || v.size() > kMaxValue) return false;
  for (unsigned char c : v) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return IsValidUtf8(v);
}

Result<bool> ParseBool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  return InvalidArgumentError("volume_context \"" + key + "\" must be true or false, got \"" + v + "\"");
}

bool KnownSecret(std::string_view key) {
  for (const char* k : kSecretKeys) {
    if (key == k) return true;
  }
  return false;
}

}  // namespace

Result<VolumeSpec> ParseVolumeContext(const StringMap& context) {
  if (context.size() > kMaxKeys) return InvalidArgumentError("volume_context has too many keys");
  VolumeSpec spec;
  for (const auto& [key, value] : context) {
    if (!IsValidUtf8(key)) return InvalidArgumentError("a volume_context key is not UTF-8");
    if (!PrintableValue(value)) {
      return InvalidArgumentError("volume_context \"" + key.substr(0, 64) + "\" must be 1-4096 printable characters");
    }
    if (key == "url") {
      spec.url = value;
    } else if (key == "dataset") {
      spec.dataset = value;
    } else if (key == "read-only") {
      STRATA_ASSIGN_OR_RETURN(spec.read_only, ParseBool(key, value));
    } else if (key.starts_with("csi.storage.k8s.io/")) {
      // Pod info the CO adds when the CSIDriver asks for it (podInfoOnMount): not ours.
    } else {
      const ContextKey* known = nullptr;
      for (const auto& k : kMountKeys) {
        if (key == k.key) known = &k;
      }
      if (known == nullptr) {
        return InvalidArgumentError("unknown volume_context key \"" + key.substr(0, 64) +
                                    "\" (known: url, dataset, read-only, cache-ram, cache-disk, block-size, "
                                    "metadata-ttl, cache-group, peer-listen, peer-deadline, prefetch-budget, "
                                    "readahead-max)");
      }
      if (value[0] == '-') return InvalidArgumentError("volume_context \"" + key + "\" must not start with '-'");
      spec.mount_args.push_back(known->flag);
      spec.mount_args.push_back(value);
      if (key == "cache-group") spec.has_cache_group = true;
    }
  }
  if (!spec.has_cache_group) {
    // The group member's flags mean nothing without a group (the mount refuses
    // them): a node-wide --peer-listen default is for the volumes that name one.
    std::vector<std::string> kept;
    for (size_t i = 0; i + 1 < spec.mount_args.size(); i += 2) {
      if (spec.mount_args[i] == "--peer-listen" || spec.mount_args[i] == "--peer-deadline") continue;
      kept.push_back(spec.mount_args[i]);
      kept.push_back(spec.mount_args[i + 1]);
    }
    spec.mount_args = std::move(kept);
  }
  if (spec.url.empty())
    return InvalidArgumentError("volume_context needs \"url\" (the store URL, e.g. s3://bucket/prefix?endpoint=...)");
  if (spec.url[0] == '-') return InvalidArgumentError("volume_context \"url\" must not start with '-'");
  if (spec.dataset.empty()) spec.dataset = spec.url.substr(0, spec.url.find('?'));
  return spec;
}

Status CheckSecrets(const StringMap& secrets) {
  for (const auto& [key, value] : secrets) {
    if (!KnownSecret(key)) {
      return InvalidArgumentError("unknown secret key \"" + key.substr(0, 64) +
                                  "\" (known: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, "
                                  "STRATA_GROUP_SECRET)");
    }
    if (value.empty() || value.size() > kMaxValue || value.find_first_of("\n\r", 0) != std::string::npos ||
        value.find('\0') != std::string::npos) {
      return InvalidArgumentError("secret \"" + key + "\" must be 1-4096 bytes on one line");
    }
  }
  return Status::Ok();
}

std::string FormatSecrets(const StringMap& secrets) {
  std::string out;
  for (const auto& [k, v] : secrets) out += k + "=" + v + "\n";
  return out;
}

Result<StringMap> ParseSecrets(std::string_view text) {
  StringMap out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) return InvalidArgumentError("a secrets line without '='");
    out[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  STRATA_RETURN_IF_ERROR(CheckSecrets(out));
  return out;
}

std::string SerializeVolumeRecord(const VolumeRecord& r) {
  json targets = json::array();
  for (const auto& t : r.targets) targets.push_back({{"path", t.path}, {"read_only", t.read_only}});
  json j = {{"version", 1},         {"volume_id", r.volume_id},           {"staging_path", r.staging_path},
            {"context", r.context}, {"read_only", r.read_only},           {"has_secrets", r.has_secrets},
            {"pid", r.pid},         {"pid_start_time", r.pid_start_time}, {"cache_dir", r.cache_dir},
            {"targets", targets}};
  if (!r.sealed_secrets.empty()) j["sealed_secrets"] = r.sealed_secrets;
  // Never throws: the node checks that ids, paths and context are UTF-8, but a record that is not
  // written would leave a mount nobody can unstage.
  return DumpJson(j, 2) + "\n";
}

Result<VolumeRecord> ParseVolumeRecord(std::string_view text) {
  if (text.size() > (1 << 20)) return CorruptionError("volume record over 1 MiB");
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  // value() would throw on a "version" of another type; the record comes from disk.
  const auto version = j.is_object() ? j.find("version") : j.end();
  if (version == j.end() || !version->is_number_integer() || version->get<int64_t>() != 1) {
    return CorruptionError("not a version-1 volume record");
  }
  auto str = [&](const char* k) -> Result<std::string> {
    auto it = j.find(k);
    if (it == j.end() || !it->is_string()) return CorruptionError(std::string("volume record without \"") + k + "\"");
    return it->get<std::string>();
  };
  VolumeRecord r;
  STRATA_ASSIGN_OR_RETURN(r.volume_id, str("volume_id"));
  STRATA_ASSIGN_OR_RETURN(r.staging_path, str("staging_path"));
  STRATA_ASSIGN_OR_RETURN(r.cache_dir, str("cache_dir"));
  if (r.volume_id.empty() || r.staging_path.empty() || r.staging_path[0] != '/') {
    return CorruptionError("volume record with an empty id or a relative staging path");
  }
  auto ctx = j.find("context");
  if (ctx == j.end() || !ctx->is_object()) return CorruptionError("volume record without a context");
  for (auto it = ctx->begin(); it != ctx->end(); ++it) {
    if (!it.value().is_string()) return CorruptionError("volume record context value is not a string");
    r.context[it.key()] = it.value().get<std::string>();
  }
  auto boolean = [&](const char* k) {
    auto it = j.find(k);
    return it != j.end() && it->is_boolean() && it->get<bool>();
  };
  r.read_only = boolean("read_only");
  if (auto sealed = j.find("sealed_secrets"); sealed != j.end() && sealed->is_string()) {
    r.sealed_secrets = sealed->get<std::string>();
  }
  r.has_secrets = boolean("has_secrets");
  auto pid = j.find("pid");
  if (pid != j.end() && pid->is_number_integer()) {
    const int64_t p = pid->get<int64_t>();
    if (p < 0 || p > (1 << 22)) return CorruptionError("volume record pid out of range");
    r.pid = static_cast<int>(p);
  }
  auto start = j.find("pid_start_time");
  if (start != j.end() && start->is_number_unsigned()) r.pid_start_time = start->get<uint64_t>();
  auto targets = j.find("targets");
  if (targets != j.end()) {
    if (!targets->is_array()) return CorruptionError("volume record targets is not a list");
    for (const auto& t : *targets) {
      if (!t.is_object() || !t.contains("path") || !t["path"].is_string()) {
        return CorruptionError("volume record target without a path");
      }
      PublishedTarget pt;
      pt.path = t["path"].get<std::string>();
      if (pt.path.empty() || pt.path[0] != '/') return CorruptionError("volume record target path is not absolute");
      pt.read_only = t.contains("read_only") && t["read_only"].is_boolean() && t["read_only"].get<bool>();
      r.targets.push_back(std::move(pt));
    }
  }
  return r;
}

std::string VolumeKey(const std::string& volume_id) {
  auto digest = Sha256(volume_id);
  return ToHex(digest.data(), 16);
}

}  // namespace strata::csi
