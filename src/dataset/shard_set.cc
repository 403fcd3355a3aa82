#include "dataset/shard_set.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "base/coding.h"
#include "base/executor.h"
#include "base/hash.h"
#include "dataset/byte_source.h"
#include "dataset/tar.h"
#include "dataset/tfrecord.h"

namespace strata::dataset {
namespace {

constexpr size_t kMaxExpansions = 1'000'000;

// The '}' matching the '{' at `open`, or npos.
size_t MatchingBrace(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

// Splits the inside of a brace group at its top-level commas.
std::vector<std::string_view> TopLevelAlternatives(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '{') ++depth;
    if (s[i] == '}') --depth;
    if (s[i] == ',' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

bool ParseDecimal(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 18) return false;
  *v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    *v = *v * 10 + static_cast<uint64_t>(c - '0');
  }
  return true;
}

// "{lo..hi}" contents as numbers, or nullopt if the group is not a range.
std::optional<std::vector<std::string>> NumericRange(std::string_view body) {
  size_t dots = body.find("..");
  if (dots == std::string_view::npos) return std::nullopt;
  std::string_view a = body.substr(0, dots), b = body.substr(dots + 2);
  uint64_t lo = 0, hi = 0;
  if (!ParseDecimal(a, &lo) || !ParseDecimal(b, &hi)) return std::nullopt;
  bool padded = (a.size() > 1 && a[0] == '0') || (b.size() > 1 && b[0] == '0');
  size_t width = padded ? std::max(a.size(), b.size()) : 0;
  std::vector<std::string> out;
  uint64_t n = (lo <= hi ? hi - lo : lo - hi) + 1;
  if (n > kMaxExpansions) return std::vector<std::string>(kMaxExpansions + 1);  // caller reports the size
  for (uint64_t k = 0; k < n; ++k) {
    uint64_t v = lo <= hi ? lo + k : lo - k;
    std::string t = std::to_string(v);
    if (t.size() < width) t.insert(0, width - t.size(), '0');
    out.push_back(std::move(t));
  }
  return out;
}

Status Expand(std::string_view s, std::vector<std::string>* out, int depth) {
  if (depth > 16) return InvalidArgumentError("brace pattern nested too deeply");
  size_t open = s.find('{');
  if (open == std::string_view::npos) {
    if (s.find('}') != std::string_view::npos) return InvalidArgumentError("unbalanced '}' in " + std::string(s));
    out->push_back(std::string(s));
    return Status::Ok();
  }
  size_t close = MatchingBrace(s, open);
  if (close == std::string_view::npos) return InvalidArgumentError("unbalanced '{' in " + std::string(s));
  std::string_view head = s.substr(0, open), body = s.substr(open + 1, close - open - 1), tail = s.substr(close + 1);
  std::vector<std::string> middles;
  if (auto range = NumericRange(body)) {
    middles = std::move(*range);
  } else {
    auto alternatives = TopLevelAlternatives(body);
    if (alternatives.size() == 1) {  // "{x}" is literal, as in braceexpand
      middles.push_back("{" + std::string(body) + "}");
    } else {
      for (std::string_view alt : alternatives) STRATA_RETURN_IF_ERROR(Expand(alt, &middles, depth + 1));
    }
  }
  std::vector<std::string> tails;
  STRATA_RETURN_IF_ERROR(Expand(tail, &tails, depth + 1));
  if (middles.size() * tails.size() + out->size() > kMaxExpansions) {
    return InvalidArgumentError("brace pattern names more than " + std::to_string(kMaxExpansions) + " shards");
  }
  for (const auto& m : middles) {
    for (const auto& t : tails) out->push_back(std::string(head) + m + t);
  }
  return Status::Ok();
}

// Reads an object at arbitrary offsets with ranged GETs of at least `chunk`
// bytes; Skip only moves the position, so hopping over a member body costs
// nothing unless the next header lies outside the bytes already read.
class RangedSource : public ByteSource {
 public:
  RangedSource(object::ObjectStore& store, std::string key, const object::ObjectInfo& info, uint64_t chunk)
      : store_(store), key_(std::move(key)), etag_(info.etag), size_(info.size), chunk_(chunk) {}
  Result<Buffer> Read(uint64_t n) override {
    n = std::min(n, remaining());
    if (pos_ < buf_off_ || pos_ + n > buf_off_ + buf_.size()) {
      object::GetOptions get;
      uint64_t len = std::min(std::max(n, chunk_), size_ - pos_);
      get.range = object::ByteRange::Of(pos_, len);
      get.if_match = etag_;
      auto got = store_.Get(key_, get);
      if (!got.ok()) return got.status().WithContext("scanning " + key_);
      if (got->data.size() < n) {
        return CorruptionError(key_ + ": offset " + std::to_string(pos_) + ": shard shorter than its listed size " +
                               std::to_string(size_) + " (truncated while being read?)");
      }
      buf_ = std::move(got->data);
      buf_off_ = pos_;
    }
    Buffer out = buf_.Slice(pos_ - buf_off_, n);
    pos_ += n;
    return out;
  }
  Status Skip(uint64_t n) override {
    pos_ += std::min(n, remaining());
    return Status::Ok();
  }
  uint64_t position() const override { return pos_; }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return key_; }
  // Bytes [pos, pos + n) if they were already read, else nullopt.
  std::optional<Buffer> Buffered(uint64_t pos, uint64_t n) const {
    if (pos < buf_off_ || pos + n > buf_off_ + buf_.size()) return std::nullopt;
    return buf_.Slice(pos - buf_off_, n);
  }

 private:
  object::ObjectStore& store_;
  std::string key_, etag_;
  uint64_t size_, chunk_;
  uint64_t pos_ = 0, buf_off_ = 0;
  Buffer buf_;
};

constexpr uint64_t kScanChunk = 1 << 20;  // small members: ~1 GET per MiB; large ones: 1 per member

Result<ShardScan> ScanTar(RangedSource& src, ReadLimits limits) {
  ShardScan scan;
  std::set<std::string> fields;
  TarSampleReader reader(src, limits, /*headers_only=*/true);
  uint64_t end = 0;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(std::optional<Sample> s, reader.Next());
    if (!s) break;
    scan.offsets.push_back(reader.sample_begin());
    end = reader.sample_end();
    for (const Field& f : s->fields) fields.insert(f.name);
  }
  if (!scan.offsets.empty()) scan.offsets.push_back(end);
  scan.fields.assign(fields.begin(), fields.end());
  return scan;
}

Result<ShardScan> ScanTfRecord(RangedSource& src, ReadLimits limits) {
  ShardScan scan;
  auto bad = [&](uint64_t at, const std::string& what) {
    return CorruptionError(src.name() + ": TFRecord offset " + std::to_string(at) + ": " + what);
  };
  while (src.remaining() > 0) {
    uint64_t at = src.position();
    if (src.remaining() < kTfRecordHeaderBytes) return bad(at, "truncated record header (truncated shard?)");
    STRATA_ASSIGN_OR_RETURN(Buffer head, src.Read(kTfRecordHeaderBytes));
    const std::optional<uint64_t> header_len = DecodeTfRecordHeader(head.data());
    if (!header_len) return bad(at, "length CRC mismatch");
    const uint64_t len = *header_len;
    if (len > limits.max_field_bytes) return bad(at, "record of " + std::to_string(len) + " bytes exceeds the limit");
    if (len + 4 > src.remaining()) {
      return bad(at, "record of " + std::to_string(len) + " bytes but only " + std::to_string(src.remaining()) +
                         " remain (truncated shard?)");
    }
    // The first record's features name the fields, when its bytes are at hand.
    if (scan.offsets.empty()) {
      if (auto payload = src.Buffered(src.position(), len)) {
        if (auto ex = DecodeExample(*payload); ex.ok()) {
          for (const Field& f : ExampleToSample(*ex, "0").fields) scan.fields.push_back(f.name);
          std::sort(scan.fields.begin(), scan.fields.end());
        }
      }
    }
    scan.offsets.push_back(at);
    STRATA_RETURN_IF_ERROR(src.Skip(len + 4));
  }
  if (!scan.offsets.empty()) scan.offsets.push_back(src.position());
  return scan;
}

void PutBytes(std::string* out, std::string_view s) {
  PutFixed32(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

constexpr char kScanMagic[8] = {'S', 'T', 'R', 'S', 'C', 'N', '0', '1'};

// The process-wide memory of scans, so DataLoader workers forked after the
// first open, and later opens in this process, reuse them. Bounded by offsets kept.
struct Memo {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const ShardScan>> scans;
  uint64_t entries = 0;
};
Memo& ScanMemo() {
  static Memo* memo = new Memo;  // leaked: used from threads that may outlive static destruction
  return *memo;
}
constexpr uint64_t kMemoMaxOffsets = 8u << 20;  // 64 MiB of offsets

}  // namespace

Result<std::vector<std::string>> ExpandBraces(std::string_view pattern) {
  std::vector<std::string> out;
  STRATA_RETURN_IF_ERROR(Expand(pattern, &out, 0));
  return out;
}

std::optional<ShardFormat> FormatFromName(std::string_view name) {
  std::string_view base = name.substr(name.rfind('/') == std::string_view::npos ? 0 : name.rfind('/') + 1);
  if (base.ends_with(".tar")) return ShardFormat::kTar;
  for (std::string_view ext : {".tfrecord", ".tfrecords", ".tfrec"}) {
    if (base.ends_with(ext)) return ShardFormat::kTfRecord;
  }
  if (base.find(".tfrecord-") != std::string_view::npos) return ShardFormat::kTfRecord;
  return std::nullopt;
}

void ClearScanMemo() {
  Memo& memo = ScanMemo();
  std::lock_guard lock(memo.mu);
  memo.scans.clear();
  memo.entries = 0;
}

std::string ScanId(const object::ObjectStore& store, const std::string& key, const object::ObjectInfo& info) {
  std::string canon = store.Url() + "\n" + key + "\n" + std::to_string(info.size) + "\n" + info.etag;
  return ToHex(Sha256(canon)).substr(0, 40);
}

Result<ShardScan> ScanShard(object::ObjectStore& store, const std::string& key, ShardFormat format,
                            const object::ObjectInfo& info, ReadLimits limits) {
  RangedSource src(store, key, info, kScanChunk);
  Result<ShardScan> scan = format == ShardFormat::kTar ? ScanTar(src, limits) : ScanTfRecord(src, limits);
  if (!scan.ok()) return scan.status();
  scan->format = format;
  scan->size = info.size;
  scan->etag = info.etag;
  return scan;
}

Buffer EncodeShardScan(const ShardScan& scan) {
  std::string out(kScanMagic, 8);
  PutFixed32(&out, static_cast<uint32_t>(scan.format) + 1);
  PutFixed64(&out, scan.size);
  PutBytes(&out, scan.etag);
  PutFixed64(&out, scan.offsets.size());
  for (uint64_t o : scan.offsets) PutFixed64(&out, o);
  PutFixed32(&out, static_cast<uint32_t>(scan.fields.size()));
  for (const auto& f : scan.fields) PutBytes(&out, f);
  PutFixed32(&out, MaskCrc32c(Crc32c(out.data(), out.size())));
  return Buffer::FromString(std::move(out));
}

Result<ShardScan> DecodeShardScan(const Buffer& data, const std::string& name) {
  auto bad = [&](const std::string& what) { return CorruptionError(name + ": bad shard scan: " + what); };
  const uint8_t* p = data.data();
  const size_t n = data.size();
  if (n < 8 + 4 + 8 + 4 + 8 + 4 + 4 || std::memcmp(p, kScanMagic, 8) != 0) return bad("wrong magic or too short");
  if (MaskCrc32c(Crc32c(p, n - 4)) != DecodeFixed32(p + n - 4)) return bad("checksum mismatch");
  std::string_view in(reinterpret_cast<const char*>(p) + 8, n - 8 - 4);  // after the magic, before the CRC
  auto take32 = [&](uint64_t* v) {
    uint32_t v32 = 0;
    if (!GetFixed32(&in, &v32)) return false;
    *v = v32;
    return true;
  };
  auto take_string = [&](std::string* s) {
    uint64_t len = 0;
    if (!take32(&len) || in.size() < len) return false;
    s->assign(in.substr(0, len));
    in.remove_prefix(len);
    return true;
  };
  ShardScan scan;
  uint64_t format = 0, count = 0, nfields = 0;
  if (!take32(&format) || format < 1 || format > 3) return bad("unknown format");
  scan.format = static_cast<ShardFormat>(format - 1);
  if (!GetFixed64(&in, &scan.size) || !take_string(&scan.etag) || !GetFixed64(&in, &count)) return bad("truncated");
  if (count > in.size() / 8) return bad("offset count " + std::to_string(count) + " exceeds the data");
  scan.offsets.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    GetFixed64(&in, &scan.offsets[i]);
    if ((i > 0 && scan.offsets[i] < scan.offsets[i - 1]) || scan.offsets[i] > scan.size) return bad("bad offsets");
  }
  if (count == 1) return bad("one offset (needs none or at least two)");
  if (!take32(&nfields) || nfields > in.size() / 4) return bad("bad field count");
  scan.fields.resize(nfields);
  for (auto& f : scan.fields) {
    if (!take_string(&f)) return bad("truncated field name");
  }
  if (!in.empty()) return bad("trailing bytes");
  return scan;
}

Result<ScannedSet> ScanShardSet(object::ObjectStore& store, const std::string& prefix, std::vector<std::string> names,
                                const ScanOptions& options) {
  std::vector<object::ObjectInfo> infos;
  std::string where = store.Url() + (prefix.empty() ? "" : "/" + prefix);
  if (names.empty()) {
    object::ListOptions list;
    list.prefix = prefix;
    list.delimiter = "/";
    do {
      STRATA_ASSIGN_OR_RETURN(object::ListResult page, store.List(list));
      for (auto& o : page.objects) {
        std::string name = o.key.substr(prefix.size());
        if (FormatFromName(name)) {
          names.push_back(name);
          infos.push_back(std::move(o));
        }
      }
      list.continuation_token = page.next_continuation_token;
      if (!page.truncated) break;
    } while (true);
    if (names.empty()) {
      return NotFoundError("no index.json, manifest.json or shards (.tar, .tfrecord) at " + where);
    }
  }
  std::optional<ShardFormat> format;
  for (const auto& name : names) {
    auto f = FormatFromName(name);
    if (!f) {
      return InvalidArgumentError(prefix + name + ": not a shard strata can open without an index (expected .tar, " +
                                  ".tfrecord, .tfrecords or .tfrec)");
    }
    if (format && *f != *format) {
      return InvalidArgumentError("the shards at " + where + " mix tar and TFRecord files: open them separately");
    }
    format = f;
  }
  const size_t n = names.size();
  std::vector<Status> errors(n);
  std::vector<std::shared_ptr<const ShardScan>> scans(n);
  std::atomic<uint64_t> scanned{0};
  if (infos.empty()) infos.resize(n);
  const bool listed = !infos[0].key.empty();
  ParallelFor(n, std::max<size_t>(options.parallel, 1), [&](size_t i) {
    const std::string key = prefix + names[i];
    if (!listed) {
      auto head = store.Head(key);
      if (!head.ok()) {
        errors[i] = head.status().WithContext("shard " + key);
        return;
      }
      infos[i] = std::move(*head);
    }
    const std::string id = ScanId(store, key, infos[i]);
    Memo& memo = ScanMemo();
    {
      std::lock_guard lock(memo.mu);
      auto it = memo.scans.find(id);
      if (it != memo.scans.end()) {
        scans[i] = it->second;
        return;
      }
    }
    std::shared_ptr<const ShardScan> scan;
    if (options.cache) {
      if (auto cached = options.cache->Lookup(id)) {
        if (cached->size == infos[i].size && cached->etag == infos[i].etag && cached->format == *format) {
          scan = std::make_shared<const ShardScan>(std::move(*cached));
        }
      }
    }
    if (!scan) {
      auto fresh = ScanShard(store, key, *format, infos[i], options.limits);
      if (!fresh.ok()) {
        errors[i] = fresh.status();
        return;
      }
      ++scanned;
      if (options.cache) options.cache->Store(id, *fresh);
      scan = std::make_shared<const ShardScan>(std::move(*fresh));
    }
    std::lock_guard lock(memo.mu);
    if (memo.entries + scan->offsets.size() > kMemoMaxOffsets) {
      memo.scans.clear();
      memo.entries = 0;
    }
    memo.entries += scan->offsets.size();
    memo.scans[id] = scan;
    scans[i] = std::move(scan);
  });
  ScannedSet out;
  out.scanned = scanned.load();
  out.manifest.format = *format;
  out.manifest.created_by = "scanned by strata (no index)";
  std::set<std::string> fields;
  for (size_t i = 0; i < n; ++i) {
    if (!errors[i].ok()) {
      if (options.skip_corrupt && errors[i].code() == Code::kCorruption) {
        out.skipped.push_back(errors[i].ToString());
        continue;
      }
      return errors[i];
    }
    ShardEntry e;
    e.name = names[i];
    e.size = scans[i]->size;
    e.samples = scans[i]->count();
    out.manifest.shards.push_back(std::move(e));
    out.manifest.etags.push_back(scans[i]->etag);
    out.offsets.push_back(scans[i]->offsets);
    fields.insert(scans[i]->fields.begin(), scans[i]->fields.end());
  }
  out.manifest.fields.assign(fields.begin(), fields.end());
  return out;
}

}  // namespace strata::dataset
