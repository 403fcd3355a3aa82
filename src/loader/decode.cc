#include "loader/decode.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "base/coding.h"
#include "base/hash.h"

namespace strata::loader {
namespace {

// A cursor over the npy header dict (a Python literal).
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& what) : s_(text), what_(what) {}

  Status Parse(NpyArray* out) {
    bool have_descr = false, have_order = false, have_shape = false;
    SkipSpace();
    if (!Eat('{')) return Bad("header is not a dict");
    while (true) {
      SkipSpace();
      if (Eat('}')) break;
      std::string key;
      STRATA_RETURN_IF_ERROR(ParseString(&key));
      SkipSpace();
      if (!Eat(':')) return Bad("expected ':' after '" + key + "'");
      SkipSpace();
      if (key == "descr") {
        if (Peek() == '[') return NotSupportedError(what_ + ": structured (record) dtypes are not supported");
        STRATA_RETURN_IF_ERROR(ParseString(&out->dtype));
        have_descr = true;
      } else if (key == "fortran_order") {
        STRATA_RETURN_IF_ERROR(ParseBool(&out->fortran_order));
        have_order = true;
      } else if (key == "shape") {
        STRATA_RETURN_IF_ERROR(ParseShape(&out->shape));
        have_shape = true;
      } else {
        return Bad("unexpected key '" + key + "' in the header");
      }
      SkipSpace();
      if (Eat(',')) continue;
      SkipSpace();
      if (Eat('}')) break;
      return Bad("expected ',' or '}' in the header");
    }
    SkipSpace();
    if (pos_ != s_.size()) return Bad("bytes after the header dict");
    if (!have_descr || !have_order || !have_shape) return Bad("header lacks descr, fortran_order or shape");
    return Status::Ok();
  }

 private:
  Status Bad(const std::string& why) const {
    return CorruptionError(what_ + ": malformed .npy header at byte " + std::to_string(pos_) + ": " + why);
  }
  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool Eat(char c) {
    if (Peek() != c || pos_ >= s_.size()) return false;
    ++pos_;
    return true;
  }
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  Status ParseString(std::string* out) {
    char q = Peek();
    if (q != '\'' && q != '"') return Bad("expected a string");
    ++pos_;
    size_t end = s_.find(q, pos_);
    if (end == std::string_view::npos) return Bad("unterminated string");
    *out = std::string(s_.substr(pos_, end - pos_));
    if (out->find('\\') != std::string::npos) return Bad("escapes are not expected in header strings");
    pos_ = end + 1;
    return Status::Ok();
  }
  Status ParseBool(bool* out) {
    if (s_.substr(pos_).starts_with("True")) {
      *out = true, pos_ += 4;
    } else if (s_.substr(pos_).starts_with("False")) {
      *out = false, pos_ += 5;
    } else {
      return Bad("fortran_order is not True or False");
    }
    return Status::Ok();
  }
  Status ParseShape(std::vector<int64_t>* out) {
    if (!Eat('(')) return Bad("shape is not a tuple");
    while (true) {
      SkipSpace();
      if (Eat(')')) return Status::Ok();
      if (!std::isdigit(static_cast<unsigned char>(Peek()))) return Bad("shape entries must be non-negative integers");
      uint64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(Peek()))) {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) return Bad("shape entry too large");
        v = v * 10 + static_cast<uint64_t>(s_[pos_++] - '0');
      }
      if (Peek() == 'L') ++pos_;  // Python 2 longs
      if (out->size() >= 64) return Bad("more than 64 dimensions");
      out->push_back(static_cast<int64_t>(v));
      SkipSpace();
      if (Eat(',')) continue;
      SkipSpace();
      if (Eat(')')) return Status::Ok();
      return Bad("expected ',' or ')' in shape");
    }
  }

  std::string_view s_;
  const std::string& what_;
  size_t pos_ = 0;
};

// Bytes per item of a numpy descr like "<f4", "|b1", "<U10", "<M8[ns]".
Result<uint64_t> ItemSize(const std::string& descr, const std::string& what) {
  std::string_view d = descr;
  if (!d.empty() && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) d.remove_prefix(1);
  if (d.empty()) return CorruptionError(what + ": empty dtype");
  char kind = d[0];
  d.remove_prefix(1);
  if (kind == 'O') return NotSupportedError(what + ": object arrays (dtype 'O') need pickle and are not supported");
  if (!std::strchr("biufcmMSUV?", kind)) return CorruptionError(what + ": unknown dtype '" + descr + "'");
  size_t unit = d.find('[');
  std::string_view digits = d.substr(0, unit);
  if (unit != std::string_view::npos && (kind != 'm' && kind != 'M')) {
    return CorruptionError(what + ": unknown dtype '" + descr + "'");
  }
  if (unit != std::string_view::npos && !d.ends_with("]")) return CorruptionError(what + ": bad dtype '" + descr + "'");
  if (kind == '?' && digits.empty()) return 1;
  if (digits.empty() || digits.size() > 9) return CorruptionError(what + ": dtype '" + descr + "' has no item size");
  uint64_t n = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return CorruptionError(what + ": bad dtype '" + descr + "'");
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  if (kind == 'U') n *= 4;
  return n;
}

nlohmann::json FeatureJson(const dataset::Feature& f) {
  using K = dataset::Feature::Kind;
  nlohmann::json values = nlohmann::json::array();
  if (f.kind == K::kBytes) {
    for (const Buffer& b : f.bytes) values.push_back(Base64Encode(b.data(), b.size()));
    return {{"bytesList", {{"value", values}}}};
  }
  if (f.kind == K::kInt64) {
    for (int64_t v : f.int64s) values.push_back(std::to_string(v));
    return {{"int64List", {{"value", values}}}};
  }
  for (float v : f.floats) {
    if (std::isnan(v)) {
      values.push_back("NaN");
    } else if (std::isinf(v)) {
      values.push_back(v > 0 ? "Infinity" : "-Infinity");
    } else {
      values.push_back(v);
    }
  }
  return {{"floatList", {{"value", values}}}};
}

}  // namespace

Result<NpyArray> ParseNpy(const Buffer& file, const std::string& what) {
  static constexpr char kMagic[] = "\x93NUMPY";
  const uint8_t* p = file.data();
  if (file.size() < 10 || std::memcmp(p, kMagic, 6) != 0)
    return CorruptionError(what + ": not a .npy file (bad magic)");
  uint8_t major = p[6];
  if (major < 1 || major > 3) {
    return CorruptionError(what + ": unsupported .npy version " + std::to_string(major) + "." + std::to_string(p[7]));
  }
  uint64_t len_bytes = major == 1 ? 2 : 4;
  if (file.size() < 8 + len_bytes) return CorruptionError(what + ": truncated .npy header");
  uint64_t header_len = major == 1 ? DecodeFixed16(p + 8) : DecodeFixed32(p + 8);
  uint64_t data_start = 8 + len_bytes + header_len;
  if (data_start > file.size()) {
    return CorruptionError(what + ": .npy header length " + std::to_string(header_len) + " runs past the " +
                           std::to_string(file.size()) + "-byte field");
  }
  NpyArray out;
  std::string_view header(reinterpret_cast<const char*>(p) + 8 + len_bytes, header_len);
  STRATA_RETURN_IF_ERROR(DictParser(header, what).Parse(&out));
  STRATA_ASSIGN_OR_RETURN(out.item_size, ItemSize(out.dtype, what));
  unsigned __int128 expect = out.item_size;
  for (int64_t d : out.shape) {
    expect *= static_cast<uint64_t>(d);
    if (expect > file.size()) break;  // cannot fit; also stops overflow
  }
  uint64_t have = file.size() - data_start;
  if (expect != have) {
    return CorruptionError(what + ": .npy data is " + std::to_string(have) + " bytes, the header's shape and dtype " +
                           "need " + (expect > file.size() ? std::string("more") : std::to_string(uint64_t(expect))));
  }
  out.data = file.Slice(data_start, have);
  return out;
}

Decode ResolveDecode(const StreamingOptions& options, const std::string& field, bool tfrecord_shard,
                     bool numeric_feature) {
  auto it = options.decode.find(field);
  if (it != options.decode.end() && it->second != Decode::kAuto) return it->second;
  std::string_view f = field;
  if (f == "npy" || f.ends_with(".npy")) return Decode::kNpy;
  if (f == "json" || f.ends_with(".json")) return Decode::kJson;
  if (tfrecord_shard && numeric_feature) return Decode::kExample;
  return Decode::kRaw;
}

std::string FeatureToJson(const dataset::Feature& feature) { return FeatureJson(feature).dump(); }

std::string ExampleToJson(const dataset::Example& example) {
  nlohmann::json features = nlohmann::json::object();
  for (const auto& [name, f] : example) features[name] = FeatureJson(f);
  // Names are UTF-8 (DecodeExample checks); `replace` keeps this from ever throwing.
  return nlohmann::json{{"features", {{"feature", features}}}}.dump(-1, ' ', false,
                                                                    nlohmann::json::error_handler_t::replace);
}

Result<Value> DecodeField(const std::string& sample_key, const std::string& field, const Buffer& data, Decode kind,
                          const dataset::Feature* feature) {
  Value v;
  v.kind = kind;
  std::string what = "sample '" + sample_key + "' field '" + field + "'";
  switch (kind) {
    case Decode::kAuto:
    case Decode::kRaw:
      v.kind = Decode::kRaw;
      v.bytes = data;
      return v;
    case Decode::kJson:
      if (!nlohmann::json::accept(data.view())) return CorruptionError(what + ": not valid JSON");
      v.json = data.ToString();
      return v;
    case Decode::kNpy: {
      STRATA_ASSIGN_OR_RETURN(NpyArray a, ParseNpy(data, what));
      v.bytes = std::move(a.data);
      v.dtype = std::move(a.dtype);
      v.shape = std::move(a.shape);
      v.fortran_order = a.fortran_order;
      return v;
    }
    case Decode::kExample:
      v.bytes = data;
      if (feature) {
        v.json = FeatureToJson(*feature);
        return v;
      }
      {
        auto ex = dataset::DecodeExample(data);
        if (!ex.ok()) return CorruptionError(what + ": not a tf.train.Example", ex.status().ToString());
        v.json = ExampleToJson(*ex);
      }
      return v;
  }
  return v;
}

uint64_t Column::size() const {
  uint64_t n = data.size();
  for (const Buffer& v : views) n += v.size();
  return n;
}

Batch Collate(std::vector<DecodedSample>& samples, uint64_t epoch, uint64_t first_position, bool views) {
  Batch b;
  b.epoch = epoch;
  b.first_position = first_position;
  std::set<std::string> names;
  for (const auto& s : samples) {
    b.indices.push_back(s.index);
    b.keys.push_back(s.key);
    for (const auto& [name, _] : s.fields) names.insert(name);
  }
  for (const std::string& name : names) {
    Column col;
    std::vector<std::string_view> parts;
    bool first = true, same_kind = true, same_array = true;
    for (const auto& s : samples) {
      auto it = s.fields.find(name);
      const Value* v = it == s.fields.end() ? nullptr : &it->second;
      if (v && first) col.kind = v->kind, col.dtype = v->dtype, col.shape = v->shape;
      if (!v || v->kind != col.kind) same_kind = false;
      if (!v || v->dtype != col.dtype || v->shape != col.shape || v->fortran_order) same_array = false;
      first = false;
      if (!v) {
        parts.emplace_back();
      } else if (v->kind == Decode::kJson || v->kind == Decode::kExample) {
        parts.emplace_back(v->json);
      } else {
        parts.push_back(v->bytes.view());
      }
    }
    if (!same_kind) col.kind = Decode::kRaw;
    if (col.kind != Decode::kNpy || !same_kind || !same_array) col.dtype.clear(), col.shape.clear();
    if (col.kind == Decode::kNpy && !same_array) {
      // Ragged arrays keep each row's layout, so every row can still be viewed as its array.
      for (const auto& s : samples) {
        const Value& v = s.fields.at(name);  // same_kind: every sample has the field
        col.rows.push_back({v.dtype, v.shape, v.fortran_order});
      }
    }
    bool fixed = true;
    uint64_t total = 0;
    for (auto p : parts) fixed = fixed && p.size() == parts[0].size(), total += p.size();
    if (col.kind == Decode::kNpy && col.dtype.empty()) fixed = false;  // ragged arrays need offsets
    const bool text = col.kind == Decode::kJson || col.kind == Decode::kExample;
    if (parts.size() == 1 && samples[0].fields.count(name) && !text) {
      col.data = samples[0].fields.at(name).bytes;  // one sample: share its buffer
    } else if (views && same_kind && !text) {
      for (const auto& s : samples) col.views.push_back(s.fields.at(name).bytes);  // same_kind: every sample has it
    } else {
      MutableBuffer buf(total);
      uint64_t off = 0;
      for (auto p : parts) {
        if (!p.empty()) std::memcpy(buf.data() + off, p.data(), p.size());
        off += p.size();
      }
      col.data = std::move(buf).Freeze();
    }
    if (!fixed) {
      uint64_t off = 0;
      col.offsets.push_back(0);
      for (auto p : parts) col.offsets.push_back(off += p.size());
    }
    b.columns.emplace(name, std::move(col));
  }
  return b;
}

}  // namespace strata::loader
