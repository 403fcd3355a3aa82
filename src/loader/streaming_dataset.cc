#include "loader/streaming_dataset.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "dataset/byte_source.h"
#include "dataset/shard.h"
#include "group/group_store.h"
#include "loader/decode.h"
#include "loader/internal.h"
#include "loader/scan_cache.h"
#include "object/store_url.h"

namespace strata::loader {

// ---- State / Stats ----------------------------------------------------------

double Stats::samples_per_second() const {
  double s = std::chrono::duration<double>(elapsed).count();
  return s > 0 ? static_cast<double>(samples) / s : 0;
}

double Stats::bytes_per_second() const {
  double s = std::chrono::duration<double>(elapsed).count();
  return s > 0 ? static_cast<double>(bytes) / s : 0;
}

// ---- shard parsing and sample decoding --------------------------------------

namespace {

// What a parsed shard holds beyond its bytes: the sample and Example
// structures, and field values that are not slices of the shard (decoded
// numeric features). An estimate (allocator overhead is a guess), so the
// shared RAM bound counts parsed shards at about their real cost.
uint64_t ParsedExtraBytes(const ParsedShard& p) {
  constexpr uint64_t kNode = 48;  // a std::map node's links and allocator header
  const uint8_t* begin = p.bytes.data();
  const uint8_t* end = begin + p.bytes.size();
  auto outside = [&](const Buffer& b) { return b.size() > 0 && (b.data() < begin || b.data() >= end) ? b.size() : 0; };
  uint64_t n = sizeof(ParsedShard) + p.samples.capacity() * sizeof(dataset::Sample) +
               p.examples.capacity() * sizeof(dataset::Example);
  for (const dataset::Sample& s : p.samples) {
    n += s.key.capacity() + s.fields.capacity() * sizeof(dataset::Field);
    for (const dataset::Field& f : s.fields) n += f.name.capacity() + outside(f.data);
  }
  for (const dataset::Example& ex : p.examples) {
    for (const auto& [name, feature] : ex) {
      n += kNode + sizeof(std::pair<const std::string, dataset::Feature>) + name.capacity();
      n += feature.bytes.capacity() * sizeof(Buffer) + feature.floats.capacity() * sizeof(float) +
           feature.int64s.capacity() * sizeof(int64_t);
      for (const Buffer& b : feature.bytes) n += outside(b);
    }
  }
  return n;
}

}  // namespace

Result<std::shared_ptr<const ParsedShard>> ParseShard(dataset::ShardFormat format, Buffer bytes, const std::string& key,
                                                      uint64_t expected, uint64_t first_index, bool verified) {
  auto out = std::make_shared<ParsedShard>();
  out->bytes = bytes;
  dataset::BufferSource src(bytes, key);
  out->samples.reserve(expected);
  dataset::ReadLimits limits;
  limits.verify_checksums = !verified;
  if (format == dataset::ShardFormat::kTfRecord) {
    dataset::TfRecordReader reader(src, limits);
    while (true) {
      STRATA_ASSIGN_OR_RETURN(std::optional<Buffer> payload, reader.Next());
      if (!payload) break;
      auto ex = dataset::DecodeExample(*payload);
      if (!ex.ok()) {
        return CorruptionError(
            key + ": record at offset " + std::to_string(reader.record_offset()) + " is not a tf.train.Example",
            ex.status().ToString());
      }
      out->samples.push_back(dataset::ExampleToSample(*ex, std::to_string(first_index + out->examples.size())));
      out->examples.push_back(std::move(*ex));
      if (out->samples.size() > expected) break;
    }
  } else {
    auto stream = dataset::MakeSampleStream(format, src, limits);
    while (true) {
      STRATA_ASSIGN_OR_RETURN(std::optional<dataset::Sample> s, stream->Next());
      if (!s) break;
      out->samples.push_back(std::move(*s));
      if (out->samples.size() > expected) break;
    }
  }
  if (out->samples.size() != expected) {
    return CorruptionError(key + ": holds " + (out->samples.size() > expected ? "more than " : "") +
                           std::to_string(out->samples.size()) + " samples, the index says " +
                           std::to_string(expected));
  }
  out->extra_bytes = ParsedExtraBytes(*out);
  return std::shared_ptr<const ParsedShard>(std::move(out));
}

Result<DecodedSample> DecodeSample(const StreamingOptions& options, uint64_t index, const dataset::Sample& sample,
                                   const dataset::Example* example) {
  DecodedSample out;
  out.index = index;
  out.key = sample.key;
  for (const dataset::Field& f : sample.fields) {
    const dataset::Feature* feature = nullptr;
    if (example) {
      auto it = example->find(f.name);
      if (it != example->end()) feature = &it->second;
    }
    bool numeric = feature && feature->kind != dataset::Feature::Kind::kBytes;
    Decode kind = ResolveDecode(options, f.name, example != nullptr, numeric);
    STRATA_ASSIGN_OR_RETURN(Value v, DecodeField(sample.key, f.name, f.data, kind, feature));
    out.fields.emplace(f.name, std::move(v));
  }
  return out;
}

// ---- the dataset --------------------------------------------------------------

uint64_t PrefetchBudgetBytes(const StreamingOptions& o) {
  return o.prefetch_bytes ? o.prefetch_bytes : std::max<uint64_t>(4 * o.ram_cache_bytes, 64ull << 20);
}

Result<ShardVerify> ParseShardVerify(std::string_view name) {
  if (name == "auto") return ShardVerify::kAuto;
  if (name == "sha256") return ShardVerify::kSha256;
  if (name == "off") return ShardVerify::kOff;
  return InvalidArgumentError("verify is auto, sha256 or off, not '" + std::string(name) + "'");
}

namespace {

// `index` with each shard's sha256 and crc32c from manifest.json, when the dataset has
// one (strata pack writes index.json without hashes and manifest.json with
// them), so the fingerprint tells a regenerated dataset of the same layout
// from the original. Corruption if the two files list different shards.
Result<dataset::Manifest> WithContentHashes(object::ObjectStore& store, const std::string& prefix,
                                            const dataset::Manifest& index) {
  dataset::Manifest out = index;
  bool hashed = std::all_of(out.shards.begin(), out.shards.end(), [](const auto& s) { return !s.sha256.empty(); });
  if (hashed || out.shards.empty()) return out;
  const std::string key = prefix + std::string(dataset::kManifestName);
  auto got = store.Get(key);
  if (!got.ok()) {
    if (got.status().code() == Code::kNotFound) return out;
    return got.status().WithContext("reading " + key + " for the shards' content hashes");
  }
  STRATA_ASSIGN_OR_RETURN(dataset::Manifest m, dataset::ParseManifest(got->data.view(), key));
  bool same = m.shards.size() == out.shards.size();
  for (size_t k = 0; same && k < m.shards.size(); ++k) {
    const auto &a = m.shards[k], &b = out.shards[k];
    same = a.name == b.name && a.size == b.size && a.samples == b.samples;
    if (same && b.sha256.empty()) out.shards[k].sha256 = a.sha256;
    if (same && b.crc32c.empty()) out.shards[k].crc32c = a.crc32c;
  }
  if (!same) {
    return CorruptionError(key + " lists other shards than the dataset's index (a pack interrupted or mixed with " +
                           "another?): repack the dataset");
  }
  return out;
}

}  // namespace

Result<std::shared_ptr<DatasetImpl>> DatasetImpl::Make(object::ObjectStorePtr store, std::string prefix,
                                                       StreamingOptions options, std::vector<std::string> shard_names) {
  PartitionSpec part{0,
                     options.world_size,
                     options.rank,
                     options.num_workers,
                     options.batch_size,
                     options.drop_last,
                     options.even_batches};
  STRATA_RETURN_IF_ERROR(ValidatePartition(part));
  if (options.shuffle == Shuffle::kWindow && options.shuffle_window == 0) {
    return InvalidArgumentError("shuffle_window must be at least 1 shard");
  }
  if (options.retries < 0) return InvalidArgumentError("retries must be >= 0");
  if (options.retry_backoff.count() < 0) return InvalidArgumentError("retry_backoff must be >= 0");
  if (options.fetch_timeout.count() < 0) return InvalidArgumentError("fetch_timeout must be >= 0");
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  std::shared_ptr<DatasetImpl> d(new DatasetImpl());
  d->store_ = store;
  d->options_ = options;
  dataset::OpenOptions open;
  open.shards = std::move(shard_names);
  open.scan.parallel = std::max<size_t>(options.fetch_concurrency, 1);
  open.scan.skip_corrupt = options.skip_corrupt;
  std::string scan_dir = !options.index_cache_dir.empty() ? options.index_cache_dir
                         : !options.cache_dir.empty()     ? options.cache_dir + "/index"
                                                          : "";
  std::optional<DiskScanCache> scan_cache;
  if (!scan_dir.empty()) open.scan.cache = &scan_cache.emplace(scan_dir);
  d->prefix_ = prefix;
  const auto* same = dynamic_cast<const DatasetImpl*>(options.same_index_as.get());
  d->options_.same_index_as = nullptr;  // not kept: it may be a forked parent's, never to be destroyed here
  if (options.same_index_as && (!same || same->prefix_ != prefix || same->store_->Url() != store->Url())) {
    return InvalidArgumentError("same_index_as is a handle of another dataset than " + store->Url() + prefix);
  }
  if (same) {
    d->ds_ = same->ds_->Reopen(store);
  } else {
    STRATA_ASSIGN_OR_RETURN(d->ds_, dataset::Dataset::Open(store, prefix, open));
  }
  const auto& shards = d->ds_->index().shards;
  d->first_.push_back(0);
  std::vector<std::string> keys;
  std::vector<uint64_t> sizes;
  for (size_t k = 0; k < shards.size(); ++k) {
    d->shard_samples_.push_back(shards[k].samples);
    d->first_.push_back(d->first_.back() + shards[k].samples);
    keys.push_back(d->ds_->ShardKey(k));
    sizes.push_back(shards[k].size);
  }
  d->spec_ = {options.shuffle, options.seed, options.shuffle_window};
  // Each step frees a batch's shard buffers and its collated batch and
  // allocates the next ones, of the same sizes: unet3d's 7 x 140 MiB twice,
  // above the pool's default bound, so every step would map (and fault in)
  // fresh memory. While the dataset is open the pool keeps that much for reuse.
  uint64_t per_sample = 0, largest = 0;
  for (const auto& s : shards) {
    if (s.samples) per_sample = std::max(per_sample, s.size / s.samples);
    largest = std::max(largest, s.size);
  }
  const uint64_t batch_bytes = std::max<uint64_t>(options.batch_size, 1) * per_sample;
  d->pool_reserve_ = std::make_unique<BufferPoolReservation>(batch_bytes + std::max(batch_bytes, largest));
  // Scanned shard sets have no manifest.json: their ETags identify the content.
  if (same) {
    d->hashed_ = same->hashed_;
  } else if (d->ds_->scanned()) {
    d->hashed_ = std::make_shared<const dataset::Manifest>(d->ds_->index());
  } else {
    STRATA_ASSIGN_OR_RETURN(dataset::Manifest m, WithContentHashes(*store, prefix, d->ds_->index()));
    d->hashed_ = std::make_shared<const dataset::Manifest>(std::move(m));
  }
  const dataset::Manifest& hashed = *d->hashed_;
  d->fingerprint_ = Fingerprint(hashed, d->spec_);

  // A window's shards are all read at once, so a disk cache that cannot hold
  // them would evict what the window still needs and refetch it (thrash).
  if (!options.cache_dir.empty()) {
    size_t window = options.shuffle == Shuffle::kWindow ? options.shuffle_window : 1;
    std::sort(sizes.begin(), sizes.end(), std::greater<>());
    uint64_t need = 0;
    for (size_t i = 0; i < std::min(window, sizes.size()); ++i) need += sizes[i];
    if (need > options.cache_limit_bytes) {
      return InvalidArgumentError("cache_limit_bytes " + std::to_string(options.cache_limit_bytes) +
                                  " is smaller than the " + std::to_string(need) + " bytes one shuffle window needs (" +
                                  std::to_string(std::min(window, sizes.size())) + " shards of up to " +
                                  std::to_string(sizes.empty() ? 0 : sizes[0]) +
                                  " bytes): raise cache_limit_bytes or lower shuffle_window");
    }
    sizes.clear();
    for (const auto& s : shards) sizes.push_back(s.size);
  }
  ShardCacheOptions co;
  co.dir = options.cache_dir;
  co.content_id = Fingerprint(hashed, OrderSpec{});
  for (const auto& s : hashed.shards) {
    const bool crc = options.verify == ShardVerify::kAuto && !s.crc32c.empty();
    const bool sha = !crc && options.verify != ShardVerify::kOff;
    co.crc32c.push_back(crc ? s.crc32c : "");
    co.sha256.push_back(sha ? s.sha256 : "");
  }
  co.disk_bytes = options.cache_limit_bytes;
  co.min_free = options.cache_min_free;
  co.ram_bytes = options.ram_cache_bytes;
  co.fetch_concurrency = std::max<size_t>(options.fetch_concurrency, 1);
  co.connections = std::max<size_t>(options.max_connections, 1);
  co.async_disk_writes = options.async_cache_writes;
  co.write_behind_bytes = options.cache_write_behind_bytes;
  co.fetch_timeout = options.fetch_timeout;
  co.min_part_size = std::max<uint64_t>(options.min_part_bytes, 1);
  co.max_part_size = std::max(co.max_part_size, co.min_part_size);
  co.fs = options.fs;
  co.clock = options.clock;
  if (!options.cache_encryption_key_file.empty()) {
    STRATA_ASSIGN_OR_RETURN(co.sealer, cache::BlockSealer::FromKeyFile(options.cache_encryption_key_file));
  }
  object::ObjectStorePtr shard_store = store;
  if (!options.cache_group.empty()) {
    group::GroupStoreOptions go;
    go.url = options.cache_group;
    go.listen = options.peer_listen;
    go.secret = options.group_secret;
    go.secret_file = options.group_secret_file;
    go.deadline = options.group_deadline;
    go.cache_dir = options.cache_dir.empty() ? "" : options.cache_dir + "/group";
    go.disk_bytes = options.cache_limit_bytes;
    go.disk_min_free = options.cache_min_free;
    go.ram_bytes = options.ram_cache_bytes;
    go.sealer = co.sealer;
    auto joined = group::JoinGroupStore(store, go);
    if (!joined.ok()) return joined.status().WithContext("joining cache group " + options.cache_group);
    shard_store = std::move(*joined);
  }
  if (options.share_cache) {
    // The data (the store's URL names its bytes, the index fingerprint its
    // shards) and the directory; not the order or partition, which every rank
    // differs in. A group's readers share only with readers of that group,
    // and a reader asking for another check (verify) gets a cache doing it.
    std::string identity = store->Url() + "\n" + prefix + "\n" + co.content_id + "\n" + options.cache_dir + "\n" +
                           options.cache_group + "\nverify " + std::to_string(static_cast<int>(options.verify)) +
                           "\nkey " + (co.sealer ? co.sealer->key_id() : "none");
    STRATA_ASSIGN_OR_RETURN(d->cache_,
                            ShardCache::OpenShared(identity, shard_store, std::move(keys), std::move(sizes), co));
  } else {
    STRATA_ASSIGN_OR_RETURN(d->cache_, ShardCache::Open(shard_store, std::move(keys), std::move(sizes), co));
  }
  // `raw`: the head is the dataset's and goes before the rest of it (a shared_ptr would keep it alive from its own
  // threads).
  DatasetImpl* raw = d.get();
  d->head_ = std::make_unique<EpochHead>(
      *d->cache_, [raw](size_t shard) { return raw->cache_->GetParsed(shard, ShardParserFor(*raw, shard)); },
      std::clamp<size_t>(options.max_connections, 1, 16));
  return d;
}

PartitionSpec DatasetImpl::Partition() const {
  return {size(),
          options_.world_size,
          options_.rank,
          options_.num_workers,
          options_.batch_size,
          options_.drop_last,
          options_.even_batches};
}

uint64_t DatasetImpl::RankSize(size_t rank) const {
  PartitionSpec p = Partition();
  p.rank = rank;
  if (rank >= p.world_size) return 0;
  return RankSampleCount(p, 0);
}

std::shared_ptr<const std::vector<uint64_t>> DatasetImpl::Order(uint64_t epoch, uint64_t streams) const {
  MutexLock lock(order_mu_);
  const std::pair<uint64_t, uint64_t> key{epoch, streams};
  for (const auto& [k, o] : orders_) {
    if (k == key) return o;
  }
  // Streams take whole global batches in turn (batch x world), so rank batches never straddle two.
  const uint64_t chunk = std::max<uint64_t>(options_.batch_size, 1) * std::max<uint64_t>(options_.world_size, 1);
  auto o = std::make_shared<const std::vector<uint64_t>>(
      loader::EpochOrder(shard_samples_, spec_, fingerprint_, epoch, streams, chunk));
  orders_.emplace_back(key, o);
  if (orders_.size() > 2) orders_.erase(orders_.begin());
  return o;
}

Result<std::unique_ptr<Iterator>> DatasetImpl::Iterate(size_t worker, const State& state) {
  if (worker >= options_.num_workers) {
    return InvalidArgumentError("worker " + std::to_string(worker) + " is not below num_workers " +
                                std::to_string(options_.num_workers));
  }
  if (!state.fingerprint.empty() && state.fingerprint != fingerprint_) {
    return InvalidArgumentError("resume state is for another dataset or order (state fingerprint " + state.fingerprint +
                                ", this dataset " + fingerprint_ +
                                ": same shards, seed, shuffle and shuffle_window are required)");
  }
  if (state.streams < 1 || state.streams > kMaxStreams) {
    return InvalidArgumentError("resume state's streams " + std::to_string(state.streams) + " is not in [1, " +
                                std::to_string(kMaxStreams) + "]");
  }
  if (state.samples_consumed > size()) {
    return InvalidArgumentError("resume state says " + std::to_string(state.samples_consumed) +
                                " samples consumed, but the epoch has only " + std::to_string(size()));
  }
  return MakeIterator(shared_from_this(), worker, state);
}

Result<DecodedSample> DatasetImpl::Get(uint64_t index) {
  if (ds_->index().format != dataset::ShardFormat::kTfRecord) {
    STRATA_ASSIGN_OR_RETURN(dataset::Sample s, ds_->Get(index));
    return DecodeSample(options_, index, s, nullptr);
  }
  // TFRecord: parse the record as iteration parses a shard (the Example kept,
  // numeric features rendered, a missing key numbered globally), so both agree.
  STRATA_ASSIGN_OR_RETURN(Buffer record, ds_->GetRecord(index));  // range-checked
  auto [shard, local] = Locate(index);
  STRATA_ASSIGN_OR_RETURN(auto parsed, ParseShard(ds_->index().format, std::move(record),
                                                  ShardKey(shard) + " sample " + std::to_string(local), 1, index));
  return DecodeSample(options_, index, parsed->samples[0], &parsed->examples[0]);
}

Result<std::shared_ptr<StreamingDataset>> StreamingDataset::Open(object::ObjectStorePtr store, std::string prefix,
                                                                 StreamingOptions options,
                                                                 std::vector<std::string> shards) {
  STRATA_ASSIGN_OR_RETURN(
      auto d, DatasetImpl::Make(std::move(store), std::move(prefix), std::move(options), std::move(shards)));
  return std::shared_ptr<StreamingDataset>(std::move(d));
}

namespace {

// "s3://b/dir/name?endpoint=..." -> ("s3://b/dir/?endpoint=...", "name"):
// the directory's store URL (the query kept) and the last path component.
std::pair<std::string, std::string> SplitLast(std::string_view url, size_t before = std::string_view::npos) {
  const object::UrlDirName split = object::SplitUrlDirName(url, before);
  const std::string query(split.query);
  if (!split.dir) return {query, std::string(split.name)};
  // mem:// and s3:// take the path as a literal key prefix: keep its '/'.
  const std::string slash = url.starts_with("file:") ? "" : "/";
  return {std::string(*split.dir) + slash + query, std::string(split.name)};
}

}  // namespace

Result<std::shared_ptr<StreamingDataset>> StreamingDataset::Open(std::string_view url, StreamingOptions options) {
  if (url.find('{') != std::string_view::npos) {
    auto [dir, pattern] = SplitLast(url, url.find('{'));
    if (pattern.find('/') != std::string::npos) {
      return InvalidArgumentError(std::string(url) + ": a brace pattern may name files of one directory only");
    }
    STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, dataset::ExpandBraces(pattern));
    STRATA_ASSIGN_OR_RETURN(object::ObjectStorePtr store, object::OpenStore(dir));
    return Open(std::move(store), "", std::move(options), std::move(names));
  }
  STRATA_ASSIGN_OR_RETURN(object::ObjectStorePtr store, object::OpenStore(url));
  return Open(std::move(store), "", std::move(options));
}

Result<std::shared_ptr<StreamingDataset>> StreamingDataset::Open(const std::vector<std::string>& urls,
                                                                 StreamingOptions options) {
  if (urls.empty()) return InvalidArgumentError("an empty list of shard URLs");
  std::string dir;
  std::vector<std::string> names;
  for (const auto& u : urls) {
    auto [d, name] = SplitLast(u);
    if (names.empty()) dir = d;
    if (d != dir || name.empty()) {
      return InvalidArgumentError("shard URLs must name files of one directory: " + u + " is not in " + dir +
                                  " (open each directory as its own dataset)");
    }
    names.push_back(std::move(name));
  }
  STRATA_ASSIGN_OR_RETURN(object::ObjectStorePtr store, object::OpenStore(dir));
  return Open(std::move(store), "", std::move(options), std::move(names));
}

}  // namespace strata::loader
