#include "dataset/manifest.h"

#include <nlohmann/json.hpp>

#include "base/constant_time.h"
#include "base/hash.h"

namespace strata::dataset {
namespace {

using json = nlohmann::json;
constexpr uint64_t kMaxJsonBytes = 256ull << 20;

json Common(const Manifest& m) {
  json j;
  j["version"] = 1;
  j["shard_format"] = std::string(FormatName(m.format));
  j["compression"] = m.compression;
  j["fields"] = m.fields;
  if (!m.classes.empty()) j["classes"] = m.classes;
  return j;
}

json ShardJson(const ShardEntry& s, bool with_hash) {
  json e = {{"name", s.name}, {"size", s.size}, {"samples", s.samples}};
  if (!s.sidecar.empty()) e["sidecar"] = s.sidecar;
  if (with_hash) e["sha256"] = s.sha256;
  if (with_hash && !s.crc32c.empty()) e["crc32c"] = s.crc32c;
  return e;
}

std::string Sign(const json& unsigned_manifest, std::string_view key) {
  return ToHex(HmacSha256(key, unsigned_manifest.dump()));
}

bool SafeName(const std::string& n) {
  if (n.empty() || n.size() > 1024 || n[0] == '/' || n.find('\0') != std::string::npos) return false;
  size_t start = 0;
  while (start <= n.size()) {
    size_t end = n.find('/', start);
    if (end == std::string::npos) end = n.size();
    std::string_view seg(n.data() + start, end - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    start = end + 1;
  }
  return true;
}

// Typed accessors that report instead of throwing.
struct Reader {
  const std::string& name;
  Status error;
  bool Fail(const std::string& what) {
    if (error.ok()) error = CorruptionError(name + ": " + what);
    return false;
  }
  bool Str(const json& j, const char* key, std::string* out, bool required = true) {
    auto it = j.find(key);
    if (it == j.end()) return !required || Fail(std::string("missing \"") + key + "\"");
    if (!it->is_string()) return Fail(std::string("\"") + key + "\" is not a string");
    *out = it->get<std::string>();
    return true;
  }
  bool U64(const json& j, const char* key, uint64_t* out) {
    auto it = j.find(key);
    if (it == j.end()) return Fail(std::string("missing \"") + key + "\"");
    if (!it->is_number_unsigned()) return Fail(std::string("\"") + key + "\" is not a non-negative integer");
    *out = it->get<uint64_t>();
    return true;
  }
  bool Strings(const json& j, const char* key, std::vector<std::string>* out) {
    auto it = j.find(key);
    if (it == j.end()) return true;
    if (!it->is_array()) return Fail(std::string("\"") + key + "\" is not an array");
    for (const json& v : *it) {
      if (!v.is_string()) return Fail(std::string("\"") + key + "\" has a non-string entry");
      out->push_back(v.get<std::string>());
    }
    return true;
  }
};

bool IsHex(const std::string& s, size_t digits) {
  return s.size() == digits && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}
bool IsHex64(const std::string& s) { return IsHex(s, 64); }

Status ParseInto(const json& j, const std::string& name, Manifest* m) {
  Reader r{name, {}};
  if (!j.is_object()) return CorruptionError(name + ": not a JSON object");
  uint64_t version = 0;
  std::string format;
  if (!r.U64(j, "version", &version)) return r.error;
  if (version != 1) return CorruptionError(name + ": unsupported version " + std::to_string(version));
  if (!r.Str(j, "shard_format", &format) || !r.Str(j, "compression", &m->compression) ||
      !r.Str(j, "created_by", &m->created_by, false) || !r.Strings(j, "fields", &m->fields) ||
      !r.Strings(j, "classes", &m->classes)) {
    return r.error;
  }
  auto f = ParseShardFormat(format);
  if (!f.ok()) return CorruptionError(name + ": " + f.status().message());
  m->format = *f;
  if (m->compression != "none" && m->compression != "zstd") return CorruptionError(name + ": unknown compression");
  auto shards = j.find("shards");
  if (shards == j.end() || !shards->is_array()) return CorruptionError(name + ": missing \"shards\" array");
  for (const json& e : *shards) {
    if (!e.is_object()) return CorruptionError(name + ": a shard entry is not an object");
    ShardEntry s;
    if (!r.Str(e, "name", &s.name) || !r.U64(e, "size", &s.size) || !r.U64(e, "samples", &s.samples) ||
        !r.Str(e, "sha256", &s.sha256, false) || !r.Str(e, "crc32c", &s.crc32c, false) ||
        !r.Str(e, "sidecar", &s.sidecar, false)) {
      return r.error;
    }
    if (!SafeName(s.name) || (!s.sidecar.empty() && !SafeName(s.sidecar))) {
      return CorruptionError(name + ": unsafe shard name '" + s.name + "'");
    }
    if (!s.sha256.empty() && !IsHex64(s.sha256)) return CorruptionError(name + ": bad sha256 for " + s.name);
    if (!s.crc32c.empty() && !IsHex(s.crc32c, 8)) return CorruptionError(name + ": bad crc32c for " + s.name);
    m->shards.push_back(std::move(s));
  }
  if (auto files = j.find("files"); files != j.end()) {
    if (!files->is_array()) return CorruptionError(name + ": \"files\" is not an array");
    for (const json& e : *files) {
      FileEntry fe;
      if (!e.is_object()) return CorruptionError(name + ": a file entry is not an object");
      if (!r.Str(e, "name", &fe.name) || !r.U64(e, "size", &fe.size) || !r.Str(e, "sha256", &fe.sha256)) return r.error;
      if (!SafeName(fe.name) || !IsHex64(fe.sha256))
        return CorruptionError(name + ": bad file entry '" + fe.name + "'");
      m->files.push_back(std::move(fe));
    }
  }
  if (auto totals = j.find("totals"); totals != j.end()) {
    uint64_t samples = 0, shard_count = 0, bytes = 0;
    if (!totals->is_object() || !r.U64(*totals, "samples", &samples) || !r.U64(*totals, "shards", &shard_count) ||
        !r.U64(*totals, "bytes", &bytes)) {
      return r.error.ok() ? CorruptionError(name + ": bad \"totals\"") : r.error;
    }
    if (samples != m->total_samples() || shard_count != m->shards.size() || bytes != m->total_shard_bytes()) {
      return CorruptionError(name + ": totals do not match the shard list");
    }
  }
  if (auto sig = j.find("signature"); sig != j.end()) {
    std::string alg;
    if (!sig->is_object() || !r.Str(*sig, "algorithm", &alg) || !r.Str(*sig, "value", &m->signature)) {
      return r.error.ok() ? CorruptionError(name + ": bad \"signature\"") : r.error;
    }
    if (alg != "hmac-sha256" || !IsHex64(m->signature)) return CorruptionError(name + ": unsupported signature");
  }
  return Status::Ok();
}

// nlohmann serialises recursively; bound the nesting before parsing so a
// hostile manifest cannot exhaust the stack when it is dumped for signing.
bool NestingOk(std::string_view text, int max_depth = 64) {
  int depth = 0;
  bool in_string = false, escape = false;
  for (char c : text) {
    if (in_string) {
      if (escape)
        escape = false;
      else if (c == '\\')
        escape = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

json ParseJson(std::string_view text) {
  if (!NestingOk(text)) return json(json::value_t::discarded);
  try {
    return json::parse(text, nullptr, /*allow_exceptions=*/false);
  } catch (...) {  // nlohmann may still throw on pathological input; treat as invalid
    return json(json::value_t::discarded);
  }
}

}  // namespace

uint64_t Manifest::total_samples() const {
  uint64_t n = 0;
  for (const auto& s : shards) n += s.samples;
  return n;
}

uint64_t Manifest::total_shard_bytes() const {
  uint64_t n = 0;
  for (const auto& s : shards) n += s.size;
  return n;
}

std::string EncodeIndex(const Manifest& m) {
  json j = Common(m);
  j["format"] = "strata-dataset-index";
  j["shards"] = json::array();
  for (const auto& s : m.shards) j["shards"].push_back(ShardJson(s, false));
  j["totals"] = {{"shards", m.shards.size()}, {"samples", m.total_samples()}, {"bytes", m.total_shard_bytes()}};
  return j.dump(1) + "\n";
}

std::string EncodeManifest(const Manifest& m, std::string_view sign_key) {
  json j = Common(m);
  j["format"] = "strata-manifest";
  j["created_by"] = m.created_by;
  j["shards"] = json::array();
  for (const auto& s : m.shards) j["shards"].push_back(ShardJson(s, true));
  j["files"] = json::array();
  for (const auto& f : m.files) j["files"].push_back({{"name", f.name}, {"size", f.size}, {"sha256", f.sha256}});
  j["totals"] = {{"shards", m.shards.size()}, {"samples", m.total_samples()}, {"bytes", m.total_shard_bytes()}};
  if (!sign_key.empty()) j["signature"] = {{"algorithm", "hmac-sha256"}, {"value", Sign(j, sign_key)}};
  return j.dump(1) + "\n";
}

Result<Manifest> ParseManifest(std::string_view text, const std::string& name) {
  if (text.size() > kMaxJsonBytes)
    return CorruptionError(name + ": larger than " + std::to_string(kMaxJsonBytes) + " bytes");
  json j = ParseJson(text);
  if (j.is_discarded()) return CorruptionError(name + ": not valid JSON");
  Manifest m;
  try {
    STRATA_RETURN_IF_ERROR(ParseInto(j, name, &m));
  } catch (const std::exception& e) {  // defensive: accessors above are checked
    return CorruptionError(name + ": " + e.what());
  }
  return m;
}

Status CheckManifestSignature(std::string_view text, std::string_view key, const std::string& name) {
  json j = ParseJson(text);
  if (j.is_discarded() || !j.is_object()) return CorruptionError(name + ": not valid JSON");
  auto sig = j.find("signature");
  if (sig == j.end() || !sig->is_object() || !sig->contains("value") || !(*sig)["value"].is_string()) {
    return CorruptionError(name + ": the manifest is not signed, but a signing key was given");
  }
  std::string claimed = (*sig)["value"].get<std::string>();
  j.erase("signature");
  std::string want = Sign(j, key);
  if (!ConstantTimeEquals(claimed, want))
    return CorruptionError(name + ": signature does not match (wrong key, or the manifest was altered)");
  return Status::Ok();
}

}  // namespace strata::dataset
