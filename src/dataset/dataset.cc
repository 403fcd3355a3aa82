#include "dataset/dataset.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace strata::dataset {
namespace {

std::string Human(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[32];
  snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

std::string Kind(const Buffer& b) {
  std::string_view v = b.view();
  if (v.starts_with("\xff\xd8\xff")) return "JPEG image";
  if (v.starts_with("\x89PNG\r\n\x1a\n")) return "PNG image";
  if (v.starts_with("RIFF") && v.size() >= 12 && v.substr(8, 4) == "WEBP") return "WebP image";
  if (v.starts_with("GIF8")) return "GIF image";
  if (v.starts_with("\x93NUMPY")) return "NumPy array";
  if (v.starts_with("\x28\xb5\x2f\xfd")) return "zstd data";
  if (v.starts_with("\x1f\x8b")) return "gzip data";
  if (v.starts_with("PK\x03\x04")) return "zip data";
  bool text = std::all_of(v.begin(), v.end(), [](char c) {
    unsigned char u = static_cast<unsigned char>(c);
    return u >= 0x20 || c == '\n' || c == '\r' || c == '\t';
  });
  if (text && !v.empty()) return (v.front() == '{' || v.front() == '[') ? "JSON/text" : "text";
  return v.empty() ? "empty" : "binary";
}

std::string Preview(const Buffer& b) {
  std::string kind = Kind(b);
  std::string_view v = b.view();
  if (kind == "text" || kind == "JSON/text") {
    std::string t(v.substr(0, 60));
    for (char& c : t) {
      if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    }
    return "\"" + t + (v.size() > 60 ? "...\"" : "\"");
  }
  std::string hex;
  for (size_t i = 0; i < std::min<size_t>(v.size(), 16); ++i) {
    char buf[4];
    snprintf(buf, sizeof buf, "%02x ", static_cast<unsigned char>(v[i]));
    hex += buf;
  }
  return hex + (v.size() > 16 ? "..." : "");
}

}  // namespace

namespace {

// Names the location in messages even when the prefix is empty (the store's root).
std::string Where(const object::ObjectStore& store, const std::string& prefix) {
  std::string url = store.Url();
  if (prefix.empty()) return url;
  return url + (url.ends_with('/') ? "" : "/") + prefix;
}

// The index.json or manifest.json under `prefix`: nullopt if there is neither.
Result<std::optional<Manifest>> ReadIndex(object::ObjectStore& store, const std::string& prefix) {
  std::string key = prefix + std::string(kIndexName);
  auto got = store.Get(key);
  if (!got.ok() && got.status().code() == Code::kNotFound) {
    key = prefix + std::string(kManifestName);
    got = store.Get(key);
  }
  if (!got.ok()) {
    if (got.status().code() == Code::kNotFound) return std::optional<Manifest>();
    return got.status().WithContext("opening the dataset at " + Where(store, prefix));
  }
  STRATA_ASSIGN_OR_RETURN(Manifest m, ParseManifest(got->data.view(), key));
  return std::optional<Manifest>(std::move(m));
}

// The index restricted to `names`, in that order; nullopt if one is not in it.
std::optional<Manifest> Restrict(const Manifest& index, const std::vector<std::string>& names) {
  std::map<std::string, const ShardEntry*> by_name;
  for (const auto& s : index.shards) by_name[s.name] = &s;
  Manifest out = index;
  out.shards.clear();
  out.files.clear();
  for (const auto& n : names) {
    auto it = by_name.find(n);
    if (it == by_name.end()) return std::nullopt;
    out.shards.push_back(*it->second);
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<Dataset>> Dataset::Open(object::ObjectStorePtr store, std::string prefix,
                                               const OpenOptions& options) {
  std::unique_ptr<Dataset> d(new Dataset(std::move(store), std::move(prefix)));
  STRATA_ASSIGN_OR_RETURN(std::optional<Manifest> index, ReadIndex(*d->store_, d->prefix_));
  if (index && !options.shards.empty()) index = Restrict(*index, options.shards);
  if (index) {
    d->index_ = std::move(*index);
  } else {
    auto set = ScanShardSet(*d->store_, d->prefix_, options.shards, options.scan);
    if (!set.ok()) return set.status().WithContext("opening the dataset at " + Where(*d->store_, d->prefix_));
    if (set->manifest.shards.empty()) {
      return CorruptionError("opening the dataset at " + Where(*d->store_, d->prefix_) +
                             ": every shard was skipped as corrupt (first: " + set->skipped.front() + ")");
    }
    d->index_ = std::move(set->manifest);
    d->offsets_ = std::move(set->offsets);
    d->scanned_ = true;
    d->shards_scanned_ = set->scanned;
    d->skipped_ = std::move(set->skipped);
  }
  d->cumulative_.push_back(0);
  for (const auto& s : d->index_.shards) d->cumulative_.push_back(d->cumulative_.back() + s.samples);
  d->readers_.resize(d->index_.shards.size());
  d->locks_ = std::make_unique<std::mutex[]>(d->index_.shards.size());
  return d;
}

std::unique_ptr<Dataset> Dataset::Reopen(object::ObjectStorePtr store) const {
  std::unique_ptr<Dataset> d(new Dataset(std::move(store), prefix_));
  d->index_ = index_;
  d->cumulative_ = cumulative_;
  d->offsets_ = offsets_;
  d->scanned_ = scanned_;
  d->skipped_ = skipped_;
  d->readers_.resize(index_.shards.size());
  d->locks_ = std::make_unique<std::mutex[]>(index_.shards.size());
  return d;
}

std::pair<size_t, uint64_t> Dataset::Locate(uint64_t i) const {
  auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), i);
  size_t shard = static_cast<size_t>(it - cumulative_.begin()) - 1;
  return {shard, i - cumulative_[shard]};
}

Result<const ShardRandomReader*> Dataset::Reader(size_t shard) {
  std::lock_guard lock(locks_[shard]);
  if (!readers_[shard]) {
    if (!offsets_.empty()) {
      readers_[shard] = ShardRandomReader::FromOffsets(*store_, ShardKey(shard), index_.format, offsets_[shard]);
    } else {
      STRATA_ASSIGN_OR_RETURN(readers_[shard], ShardRandomReader::Open(*store_, ShardKey(shard), index_.format));
    }
    if (readers_[shard]->size() != index_.shards[shard].samples) {
      auto n = readers_[shard]->size();
      readers_[shard].reset();
      return CorruptionError(ShardKey(shard) + ": holds " + std::to_string(n) + " samples, the index says " +
                             std::to_string(index_.shards[shard].samples));
    }
  }
  return readers_[shard].get();
}

Result<std::pair<const ShardRandomReader*, uint64_t>> Dataset::ReaderOf(uint64_t i) {
  if (i >= size()) {
    return InvalidArgumentError("sample " + std::to_string(i) + " out of range (dataset has " + std::to_string(size()) +
                                ")");
  }
  auto [shard, local] = Locate(i);
  STRATA_ASSIGN_OR_RETURN(const ShardRandomReader* r, Reader(shard));
  return std::pair{r, local};
}

Result<Sample> Dataset::Get(uint64_t i) {
  STRATA_ASSIGN_OR_RETURN(auto at, ReaderOf(i));
  return at.first->Get(at.second);
}

Result<Buffer> Dataset::GetRecord(uint64_t i) {
  STRATA_ASSIGN_OR_RETURN(auto at, ReaderOf(i));
  return at.first->GetRecord(at.second);
}

Result<Dataset::ShardStream> Dataset::OpenShard(size_t shard, StreamOptions options) const {
  if (shard >= index_.shards.size()) return InvalidArgumentError("no shard " + std::to_string(shard));
  ShardStream s;
  STRATA_ASSIGN_OR_RETURN(s.source, ObjectSource::Open(*store_, ShardKey(shard), options));
  s.samples = MakeSampleStream(index_.format, *s.source);
  return s;
}

std::string DescribeSample(const Sample& sample) {
  std::string out = "key: " + sample.key + "\n";
  for (const Field& f : sample.fields) {
    char line[96];
    snprintf(line, sizeof line, "  %-12s %10zu bytes  %-11s ", f.name.c_str(), f.data.size(), Kind(f.data).c_str());
    out += line + Preview(f.data) + "\n";
  }
  return out;
}

Result<std::string> Inspect(object::ObjectStorePtr store, const std::string& prefix, const InspectOptions& options) {
  STRATA_ASSIGN_OR_RETURN(auto ds, Dataset::Open(store, prefix, options.open));
  const Manifest& m = ds->index();
  std::string out;
  if (ds->scanned()) {
    out += "index:       none (each shard's headers scanned once, cached by ETag; " +
           std::to_string(ds->shards_scanned()) + " scanned now)\n";
    for (const auto& s : ds->skipped_shards()) out += "skipped:     " + s + "\n";
  }
  out += "format:      " + std::string(FormatName(m.format)) + (m.compression == "zstd" ? " (zstd)" : "") + "\n";
  out += "shards:      " + std::to_string(m.shards.size()) + "\n";
  out += "samples:     " + std::to_string(m.total_samples()) + "\n";
  out += "bytes:       " + Human(static_cast<double>(m.total_shard_bytes())) + "\n";
  std::string fields;
  for (const auto& f : m.fields) fields += (fields.empty() ? "" : ", ") + f;
  out += "fields:      " + fields + "\n";
  if (!m.classes.empty()) {
    std::string classes;
    for (size_t i = 0; i < m.classes.size() && i < 10; ++i) classes += (i ? ", " : "") + m.classes[i];
    out += "classes:     " + std::to_string(m.classes.size()) + " (" + classes +
           (m.classes.size() > 10 ? ", ..." : "") + ")\n";
  }
  if (!m.created_by.empty()) out += "created by:  " + m.created_by + "\n";
  out += "\n  shard                          samples        size\n";
  for (size_t i = 0; i < m.shards.size() && i < options.max_shards_listed; ++i) {
    char line[160];
    snprintf(line, sizeof line, "  %-28s %9llu  %10s\n", m.shards[i].name.c_str(),
             static_cast<unsigned long long>(m.shards[i].samples),
             Human(static_cast<double>(m.shards[i].size)).c_str());
    out += line;
  }
  if (m.shards.size() > options.max_shards_listed) {
    out += "  ... " + std::to_string(m.shards.size() - options.max_shards_listed) + " more\n";
  }
  if (options.sample) {
    STRATA_ASSIGN_OR_RETURN(Sample s, ds->Get(*options.sample));
    auto [shard, local] = ds->Locate(*options.sample);
    out += "\nsample " + std::to_string(*options.sample) + " (" + m.shards[shard].name + " #" + std::to_string(local) +
           ")\n" + DescribeSample(s);
  }
  return out;
}

}  // namespace strata::dataset
