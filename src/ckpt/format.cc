#include "ckpt/format.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/coding.h"
#include "base/utf8.h"

namespace strata::ckpt {
namespace {

using nlohmann::json;

std::string Dump(const json& j) { return j.dump(1, ' ', false, json::error_handler_t::replace) + "\n"; }

Status Bad(std::string_view what, std::string_view detail) {
  return CorruptionError(std::string(what) + ": " + std::string(detail));
}

// Typed field access without exceptions.
bool GetInt(const json& j, const char* key, int64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return false;
  *out = it->get<int64_t>();
  return true;
}
bool GetU64(const json& j, const char* key, uint64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) {
    if (it != j.end() && it->is_number_integer() && it->get<int64_t>() >= 0) {
      *out = static_cast<uint64_t>(it->get<int64_t>());
      return true;
    }
    return false;
  }
  *out = it->get<uint64_t>();
  return true;
}
bool GetStr(const json& j, const char* key, std::string* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return false;
  *out = it->get<std::string>();
  return true;
}
bool GetShape(const json& j, const char* key, std::vector<int64_t>* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() > 64) return false;
  out->clear();
  for (const auto& d : *it) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) return false;
    out->push_back(d.get<int64_t>());
  }
  return true;
}

Result<json> ParseObject(std::string_view text, std::string_view what) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Bad(what, "not a JSON object");
  return j;
}

// Product of dims, or nullopt on overflow.
std::optional<uint64_t> Numel(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) return std::nullopt;
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

}  // namespace

size_t DTypeSize(std::string_view d) {
  if (d == "F64" || d == "I64" || d == "U64" || d == "C64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  return 0;
}

Status ValidateTensor(const TensorView& t) {
  if (t.name.empty() || t.name.size() > 4096 || !IsValidUtf8(t.name) || t.name == "__metadata__") {
    return InvalidArgumentError("tensor name '" + t.name + "' must be 1..4096 bytes of UTF-8 and not __metadata__");
  }
  size_t es = DTypeSize(t.dtype);
  if (es == 0) return InvalidArgumentError("tensor '" + t.name + "': unknown dtype '" + t.dtype + "'");
  auto numel = Numel(t.shape);
  if (!numel || t.shape.size() > 64) return InvalidArgumentError("tensor '" + t.name + "': invalid shape");
  if (*numel > std::numeric_limits<uint64_t>::max() / es || *numel * es != t.size) {
    return InvalidArgumentError("tensor '" + t.name + "': size " + std::to_string(t.size) +
                                " bytes does not match shape x dtype size (" + std::to_string(*numel) + " x " +
                                std::to_string(es) + ")");
  }
  if (t.size > 0 && t.data == nullptr) return InvalidArgumentError("tensor '" + t.name + "': null data");
  return Status::Ok();
}

std::string StepDirName(int64_t step) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "step-%09lld", static_cast<long long>(step));
  return buf;
}

std::optional<int64_t> ParseStepDirName(std::string_view name) {
  constexpr std::string_view kPrefix = "step-";
  if (name.size() <= kPrefix.size() || name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view digits = name.substr(kPrefix.size());
  if (digits.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string ShardFileName(int rank, int shard) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "rank-%05d-shard-%05d.safetensors", rank, shard);
  return buf;
}
std::string RankManifestName(int rank) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "rank-%05d.manifest.json", rank);
  return buf;
}
std::string RankCommitName(int rank) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "rank-%05d.COMMITTED", rank);
  return buf;
}

namespace {
// The members every manifest starts with. User metadata that is not JSON is
// stored as a string.
json ManifestHeader(std::string_view format, int64_t step, int world_size, const std::string& attempt,
                    int64_t wall_time_ms, const std::string& metadata) {
  json j;
  j["format"] = format;
  j["version"] = kFormatVersion;
  j["step"] = step;
  j["world_size"] = world_size;
  if (!attempt.empty()) j["attempt"] = attempt;
  j["wall_time_ms"] = wall_time_ms;
  json meta = json::parse(metadata, nullptr, false);
  j["metadata"] = meta.is_discarded() ? json(metadata) : meta;
  return j;
}

// The optional "attempt" member (absent in manifests written before it existed).
bool GetAttempt(const json& j, std::string* out) {
  if (!j.contains("attempt")) return true;
  return GetStr(j, "attempt", out) && !out->empty() && out->size() <= kMaxAttemptBytes;
}
}  // namespace

std::string EncodeRankManifest(const RankManifest& m) {
  json j = ManifestHeader("strata-ckpt-rank", m.step, m.world_size, m.attempt, m.wall_time_ms, m.metadata);
  j["rank"] = m.rank;
  json shards = json::array();
  for (const auto& s : m.shards) {
    json e = {{"file", s.file}, {"size", s.size}, {"sha256", s.sha256}};
    if (s.xxh3) e["xxh3"] = *s.xxh3;
    shards.push_back(std::move(e));
  }
  j["shards"] = std::move(shards);
  json tensors = json::array();
  for (const auto& t : m.tensors) {
    tensors.push_back({{"name", t.name},
                       {"dtype", t.dtype},
                       {"shape", t.shape},
                       {"shard", t.shard},
                       {"offset", t.offset},
                       {"size", t.size},
                       {"xxh3", t.xxh3}});
  }
  j["tensors"] = std::move(tensors);
  return Dump(j);
}

Result<RankManifest> ParseRankManifest(std::string_view text) {
  constexpr std::string_view kWhat = "rank manifest";
  STRATA_ASSIGN_OR_RETURN(json j, ParseObject(text, kWhat));
  RankManifest m;
  int64_t version = 0, rank = 0, world = 0;
  std::string format;
  if (!GetStr(j, "format", &format) || format != "strata-ckpt-rank") return Bad(kWhat, "missing format tag");
  if (!GetInt(j, "version", &version) || version != kFormatVersion) return Bad(kWhat, "unsupported version");
  if (!GetInt(j, "step", &m.step) || m.step < 0 || !GetInt(j, "rank", &rank) || !GetInt(j, "world_size", &world) ||
      world < 1 || world > 1 << 20 || rank < 0 || rank >= world || !GetInt(j, "wall_time_ms", &m.wall_time_ms)) {
    return Bad(kWhat, "bad step, rank, world_size or wall_time_ms");
  }
  m.rank = static_cast<int>(rank);
  m.world_size = static_cast<int>(world);
  if (!GetAttempt(j, &m.attempt)) return Bad(kWhat, "bad attempt");
  if (auto it = j.find("metadata"); it != j.end())
    m.metadata = it->dump(-1, ' ', false, json::error_handler_t::replace);
  auto shards = j.find("shards");
  auto tensors = j.find("tensors");
  if (shards == j.end() || !shards->is_array() || tensors == j.end() || !tensors->is_array()) {
    return Bad(kWhat, "missing shards or tensors");
  }
  for (const auto& s : *shards) {
    ShardEntry e;
    if (!s.is_object() || !GetStr(s, "file", &e.file) || !GetU64(s, "size", &e.size) ||
        !GetStr(s, "sha256", &e.sha256) || e.file.empty() || e.file.find('/') != std::string::npos ||
        e.file[0] == '.' || e.sha256.size() != 64) {
      return Bad(kWhat, "bad shard entry");
    }
    if (s.contains("xxh3")) {
      uint64_t x = 0;
      if (!GetU64(s, "xxh3", &x)) return Bad(kWhat, "bad shard xxh3");
      e.xxh3 = x;
    }
    m.shards.push_back(std::move(e));
  }
  for (const auto& t : *tensors) {
    TensorEntry e;
    uint64_t shard = 0;
    if (!t.is_object() || !GetStr(t, "name", &e.name) || !GetStr(t, "dtype", &e.dtype) ||
        !GetShape(t, "shape", &e.shape) || !GetU64(t, "shard", &shard) || !GetU64(t, "offset", &e.offset) ||
        !GetU64(t, "size", &e.size) || !GetU64(t, "xxh3", &e.xxh3)) {
      return Bad(kWhat, "bad tensor entry");
    }
    if (shard >= m.shards.size()) return Bad(kWhat, "tensor '" + e.name + "' names a missing shard");
    e.shard = static_cast<uint32_t>(shard);
    const uint64_t shard_size = m.shards[e.shard].size;
    if (e.offset > shard_size || e.size > shard_size - e.offset) {
      return Bad(kWhat, "tensor '" + e.name + "' lies outside its shard");
    }
    m.tensors.push_back(std::move(e));
  }
  return m;
}

std::string EncodeGlobalManifest(const GlobalManifest& m) {
  json j = ManifestHeader("strata-ckpt", m.step, m.world_size, m.attempt, m.wall_time_ms, m.metadata);
  json ranks = json::array();
  for (const auto& r : m.ranks) ranks.push_back({{"rank", r.rank}, {"manifest", r.manifest}, {"sha256", r.sha256}});
  j["ranks"] = std::move(ranks);
  return Dump(j);
}

Result<GlobalManifest> ParseGlobalManifest(std::string_view text) {
  constexpr std::string_view kWhat = "manifest";
  STRATA_ASSIGN_OR_RETURN(json j, ParseObject(text, kWhat));
  GlobalManifest m;
  std::string format;
  int64_t version = 0, world = 0;
  if (!GetStr(j, "format", &format) || format != "strata-ckpt") return Bad(kWhat, "missing format tag");
  if (!GetInt(j, "version", &version) || version != kFormatVersion) return Bad(kWhat, "unsupported version");
  if (!GetInt(j, "step", &m.step) || m.step < 0 || !GetInt(j, "world_size", &world) || world < 1 || world > 1 << 20 ||
      !GetInt(j, "wall_time_ms", &m.wall_time_ms)) {
    return Bad(kWhat, "bad step, world_size or wall_time_ms");
  }
  m.world_size = static_cast<int>(world);
  if (!GetAttempt(j, &m.attempt)) return Bad(kWhat, "bad attempt");
  if (auto it = j.find("metadata"); it != j.end())
    m.metadata = it->dump(-1, ' ', false, json::error_handler_t::replace);
  auto ranks = j.find("ranks");
  if (ranks == j.end() || !ranks->is_array() || ranks->size() != static_cast<size_t>(world)) {
    return Bad(kWhat, "ranks must list world_size entries");
  }
  for (const auto& r : *ranks) {
    RankRef ref;
    int64_t rank = 0;
    if (!r.is_object() || !GetInt(r, "rank", &rank) || rank != static_cast<int64_t>(m.ranks.size()) ||
        !GetStr(r, "manifest", &ref.manifest) || !GetStr(r, "sha256", &ref.sha256) ||
        ref.manifest != RankManifestName(static_cast<int>(rank)) || ref.sha256.size() != 64) {
      return Bad(kWhat, "bad rank entry");
    }
    ref.rank = static_cast<int>(rank);
    m.ranks.push_back(std::move(ref));
  }
  return m;
}

std::string EncodeCommit(std::string_view sha) { return "strata-ckpt v1 sha256=" + std::string(sha) + "\n"; }

Result<std::string> ParseCommit(std::string_view text) {
  constexpr std::string_view kPrefix = "strata-ckpt v1 sha256=";
  if (text.size() != kPrefix.size() + 64 + 1 || text.substr(0, kPrefix.size()) != kPrefix || text.back() != '\n') {
    return CorruptionError("commit marker is malformed (torn or foreign file)");
  }
  std::string hex(text.substr(kPrefix.size(), 64));
  for (char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return CorruptionError("commit marker: bad digest");
  }
  return hex;
}

std::string EncodeSafetensorsHeader(const std::vector<SafetensorsTensor>& tensors,
                                    const std::vector<std::pair<std::string, std::string>>& metadata) {
  // nlohmann's ordered_json keeps insertion order, so readers see data order.
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    j["__metadata__"] = std::move(meta);
  }
  for (const auto& t : tensors) {
    j[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
  }
  std::string body = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  body.append((8 - body.size() % 8) % 8, ' ');
  std::string out;
  PutFixed64(&out, body.size());
  return out + body;
}

Result<SafetensorsHeader> ParseSafetensorsHeader(std::string_view bytes, uint64_t file_size) {
  constexpr std::string_view kWhat = "safetensors header";
  std::string_view rest = bytes;
  uint64_t n = 0;
  if (file_size < 8 || !GetFixed64(&rest, &n)) return Bad(kWhat, "file shorter than 8 bytes");
  if (n > kMaxHeaderBytes || n > file_size - 8) return Bad(kWhat, "header length out of range");
  if (bytes.size() < 8 + n) return Bad(kWhat, "header truncated");
  STRATA_ASSIGN_OR_RETURN(json j, ParseObject(bytes.substr(8, n), kWhat));
  SafetensorsHeader h;
  h.data_start = 8 + n;
  const uint64_t data_size = file_size - h.data_start;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return Bad(kWhat, "__metadata__ is not an object");
      h.metadata_json = it->dump(-1, ' ', false, json::error_handler_t::replace);
      continue;
    }
    const json& t = *it;
    SafetensorsTensor st;
    st.name = it.key();
    auto offs = t.is_object() ? t.find("data_offsets") : t.end();
    if (!t.is_object() || !GetStr(t, "dtype", &st.dtype) || !GetShape(t, "shape", &st.shape) || offs == t.end() ||
        !offs->is_array() || offs->size() != 2 || !(*offs)[0].is_number_unsigned() ||
        !(*offs)[1].is_number_unsigned()) {
      return Bad(kWhat, "bad entry for tensor '" + st.name + "'");
    }
    st.begin = (*offs)[0].get<uint64_t>();
    st.end = (*offs)[1].get<uint64_t>();
    auto numel = Numel(st.shape);
    size_t es = DTypeSize(st.dtype);
    if (st.begin > st.end || st.end > data_size || es == 0 || !numel ||
        *numel > std::numeric_limits<uint64_t>::max() / es || *numel * es != st.end - st.begin) {
      return Bad(kWhat, "tensor '" + st.name + "' has inconsistent dtype/shape/offsets");
    }
    h.tensors.push_back(std::move(st));
  }
  std::sort(h.tensors.begin(), h.tensors.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
  return h;
}

}  // namespace strata::ckpt
