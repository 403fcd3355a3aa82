// Dataset generation for `strata bench train`: sample files and the shards
// packed from them (or from the same bytes made on the fly).
#include "train/generate.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "base/executor.h"
#include "base/json_text.h"
#include "dataset/pack.h"
#include "object/mem_store.h"
#include "object/store_wrapper.h"

namespace strata::train {

namespace {

uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Incompressible bytes, the sample's index first (so a reader can tell samples apart).
Buffer SampleBytes(uint64_t index, uint64_t size, uint64_t seed) {
  MutableBuffer b(size);
  uint64_t state = seed * 0x100000001b3ull + index;
  size_t i = 0;
  if (size >= 8) {
    std::memcpy(b.data(), &index, 8);
    i = 8;
  }
  for (; i + 8 <= size; i += 8) {
    uint64_t v = SplitMix(&state);
    std::memcpy(b.data() + i, &v, 8);
  }
  for (; i < size; ++i) b.data()[i] = static_cast<uint8_t>(SplitMix(&state));
  return std::move(b).Freeze();
}

// Per-sample bytes a shard adds around the payload (headers, framing, index
// entries), generously: the shard size target must fit exactly K samples.
uint64_t SampleOverhead(dataset::ShardFormat format) {
  switch (format) {
    case dataset::ShardFormat::kTar: return 2048;
    case dataset::ShardFormat::kTfRecord: return 96;
    case dataset::ShardFormat::kIndexed: return 128;
  }
  return 2048;
}

// The sample files Generate would write, made on the fly when asked for
// (Get and List of "<prefix>files/"), so the shards can be packed without
// writing them first. Every other call goes to an empty in-memory store.
class GeneratedFiles : public object::StoreWrapper {
 public:
  GeneratedFiles(std::string files, const GenerateOptions& o)
      : StoreWrapper(object::MakeMemStore()), files_(std::move(files)), o_(o) {}
  using StoreWrapper::Get;

  Result<object::GetResult> Get(std::string_view key, const object::GetOptions& options) override {
    STRATA_ASSIGN_OR_RETURN(object::ObjectInfo info, Head(key));
    if (options.range) return NotSupportedError("generated files are read whole");
    object::GetResult r;
    r.data = SampleBytes(Index(key), o_.record_size, o_.seed);
    r.info = std::move(info);
    return r;
  }
  Result<object::ObjectInfo> Head(std::string_view key) override {
    const uint64_t i = Index(key);
    if (i >= o_.samples || key != Key(i)) return NotFoundError("no generated file " + std::string(key));
    return Info(i);
  }
  Result<object::ListResult> List(const object::ListOptions& options) override {
    // Keys sort as indexes do (zero-padded); a page starts after the token or start_after.
    object::ListResult r;
    const std::string after = std::max(options.start_after, options.continuation_token);
    uint64_t i = 0;
    if (after > files_) {
      i = Index(after);
      if (i < o_.samples && Key(i) <= after) ++i;
    }
    const size_t page = size_t(std::clamp(options.max_keys, 1, 1000));
    for (; i < o_.samples && r.objects.size() < page; ++i) {
      if (Key(i).rfind(options.prefix, 0) == 0) r.objects.push_back(Info(i));
    }
    if (i < o_.samples && !r.objects.empty()) {
      r.truncated = true;
      r.next_continuation_token = r.objects.back().key;
    }
    return r;
  }

 private:
  std::string Key(uint64_t i) const {
    char name[32];
    std::snprintf(name, sizeof(name), "%08llu.", static_cast<unsigned long long>(i));
    return files_ + name + o_.field;
  }
  // The index a key names (digits after the prefix); o_.samples if none.
  uint64_t Index(std::string_view key) const {
    if (key.substr(0, files_.size()) != files_) return o_.samples;
    uint64_t i = 0;
    size_t n = 0;
    for (char c : key.substr(files_.size())) {
      if (c < '0' || c > '9' || ++n > 18) break;
      i = i * 10 + uint64_t(c - '0');
    }
    return n ? i : o_.samples;
  }
  object::ObjectInfo Info(uint64_t i) const {
    object::ObjectInfo info;
    info.key = Key(i);
    info.size = o_.record_size;
    info.etag = "generated-" + std::to_string(o_.seed) + "-" + std::to_string(i);
    return info;
  }

  std::string files_;
  GenerateOptions o_;
};

}  // namespace

Result<GenerateResult> Generate(object::ObjectStore& store, const std::string& prefix, const GenerateOptions& o) {
  if (o.samples == 0) return InvalidArgumentError("--samples must be at least 1");
  if (o.record_size < 16) return InvalidArgumentError("--record-size must be at least 16 bytes");
  if (o.samples_per_file == 0) return InvalidArgumentError("--samples-per-file must be at least 1");
  const TimePoint start = RealClock().Now();
  const std::string files = prefix + "files/";
  std::mutex mu;
  Status first_error;
  std::atomic<bool> failed{false};
  ParallelFor(o.write_files ? o.samples : 0, std::max(1, o.parallel), [&](size_t i) {
    if (failed.load()) return;
    char name[32];
    std::snprintf(name, sizeof(name), "%08zu.", i);
    std::string key = files + name + o.field;
    auto put = store.Put(key, SampleBytes(i, o.record_size, o.seed));
    if (!put.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (first_error.ok()) first_error = put.status().WithContext("writing " + key);
      failed = true;
    }
  });
  STRATA_RETURN_IF_ERROR(first_error);

  dataset::PackOptions pack;
  pack.format = o.format;
  // K samples per shard: K payloads plus overhead, and less than one more sample.
  pack.shard_size = o.samples_per_file * (o.record_size + SampleOverhead(o.format)) + o.record_size / 2;
  pack.shard_size = std::max<uint64_t>(pack.shard_size, 4096);
  pack.parallel = std::max(1, o.parallel);
  pack.imagefolder = dataset::ImageFolderMode::kOff;
  pack.created_by = "strata bench train";
  GeneratedFiles generated(files, o);
  object::ObjectStore& source = o.write_files ? store : generated;
  STRATA_ASSIGN_OR_RETURN(dataset::PackResult packed, dataset::Pack(source, files, store, prefix + "shards/", pack));
  GenerateResult r;
  r.samples = packed.manifest.total_samples();
  r.shards = packed.manifest.shards.size();
  r.file_bytes = o.write_files ? packed.input_bytes : 0;
  r.shard_bytes = packed.output_bytes;
  r.seconds = Seconds(RealClock().Now() - start);
  return r;
}

namespace {

constexpr const char* kGeneratedWith = "bench-train.json";

}  // namespace

nlohmann::json GeneratedWith(const GenerateOptions& g) {
  return {{"samples", g.samples},
          {"record_size", g.record_size},
          {"samples_per_file", g.samples_per_file},
          {"format", std::string(dataset::FormatName(g.format))},
          {"field", g.field},
          {"seed", g.seed},
          {"files", g.write_files}};
}

bool GeneratedAlready(object::ObjectStore& store, const std::string& prefix, const GenerateOptions& options) {
  auto marker = store.Get(prefix + kGeneratedWith);
  if (!marker.ok() || !store.Head(prefix + "shards/manifest.json").ok()) return false;
  const auto& d = marker->data;
  const nlohmann::json j = nlohmann::json::parse(d.data(), d.data() + d.size(), nullptr, /*allow_exceptions=*/false);
  return j == GeneratedWith(options);
}

Status MarkGenerated(object::ObjectStore& store, const std::string& prefix, const GenerateOptions& options) {
  return store.Put(prefix + kGeneratedWith, Buffer::Copy(DumpJson(GeneratedWith(options)))).status();
}

}  // namespace strata::train
