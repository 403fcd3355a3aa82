#include "dataset/pack.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <set>

#include "base/clock.h"
#include "base/executor.h"
#include "base/hash.h"
#include "base/utf8.h"
#include "dataset/object_sink.h"
#include "dataset/offset_index.h"
#include "dataset/shard.h"
#include "object/transfer.h"

namespace strata::dataset {
namespace {

struct InputField {
  std::string name;
  std::string key;    // object key in the source store; empty for a synthetic field
  std::string value;  // synthetic field content (ImageFolder "cls")
  uint64_t size = 0;
};

struct InputSample {
  std::string key;
  std::vector<InputField> fields;
};

struct Plan {
  std::vector<InputSample> samples;
  std::vector<std::pair<size_t, size_t>> shards;  // [begin, end) sample indices
  std::vector<std::string> classes;
  std::vector<std::string> skipped;
  uint64_t files = 0, bytes = 0;
};

bool Hidden(std::string_view rel) {
  size_t start = 0;
  while (start < rel.size()) {
    if (rel[start] == '.') return true;
    size_t slash = rel.find('/', start);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return false;
}

Result<Plan> MakePlan(object::ObjectStore& src, const std::string& prefix, const PackOptions& o) {
  STRATA_ASSIGN_OR_RETURN(std::vector<object::ObjectInfo> objects, object::ListAll(src, prefix));
  Plan plan;
  std::vector<std::pair<std::string, const object::ObjectInfo*>> files;
  for (const object::ObjectInfo& obj : objects) {
    std::string rel = obj.key.substr(prefix.size());
    if (rel.empty() || rel.back() == '/') continue;
    if (Hidden(rel)) {
      plan.skipped.push_back(obj.key);
      continue;
    }
    // Field and class names go into the JSON manifest, which holds only UTF-8.
    if (!IsValidUtf8(rel)) {
      std::string shown;
      for (unsigned char c : rel) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        shown += c < 0x80 ? std::string(1, char(c)) : std::string(hex);
      }
      return InvalidArgumentError("input '" + prefix + shown + "' has a name that is not valid UTF-8; rename it");
    }
    files.emplace_back(std::move(rel), &obj);
  }
  bool imagefolder = o.imagefolder == ImageFolderMode::kOn;
  if (o.imagefolder == ImageFolderMode::kAuto) {
    imagefolder = !files.empty() && std::all_of(files.begin(), files.end(), [](const auto& f) {
      return std::count(f.first.begin(), f.first.end(), '/') == 1;
    });
  }
  std::map<std::string, size_t> class_index;
  if (imagefolder) {
    std::set<std::string> names;
    for (const auto& f : files) {
      size_t slash = f.first.find('/');
      if (slash == std::string::npos)
        return InvalidArgumentError("ImageFolder layout expects class/file, got " + f.first);
      names.insert(f.first.substr(0, slash));
    }
    plan.classes.assign(names.begin(), names.end());
    for (size_t i = 0; i < plan.classes.size(); ++i) class_index[plan.classes[i]] = i;
  }
  std::map<std::string, InputSample> by_key;  // sorted by key: deterministic order
  for (const auto& [rel, info] : files) {
    std::string_view key, field;
    if (!SplitSampleName(rel, &key, &field)) {
      plan.skipped.push_back(info->key);
      continue;
    }
    InputSample& s = by_key[std::string(key)];
    s.key = std::string(key);
    s.fields.push_back({std::string(field), info->key, "", info->size});
    ++plan.files;
    plan.bytes += info->size;
  }
  for (auto& [key, s] : by_key) {
    if (imagefolder) {
      if (std::any_of(s.fields.begin(), s.fields.end(), [](const InputField& f) { return f.name == "cls"; })) {
        return InvalidArgumentError("sample '" + key + "' already has a .cls file; pack with --imagefolder off");
      }
      std::string cls = std::to_string(class_index[key.substr(0, key.find('/'))]);
      s.fields.push_back({"cls", "", cls, cls.size()});
    }
    std::sort(s.fields.begin(), s.fields.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    plan.samples.push_back(std::move(s));
  }
  if (plan.samples.empty())
    return InvalidArgumentError("no samples found under '" + prefix + "' (files need an extension)");
  // Greedy cut by estimated size; at least one sample per shard.
  uint64_t current = ShardOverheadBytes(o.format);
  size_t begin = 0;
  for (size_t i = 0; i < plan.samples.size(); ++i) {
    std::vector<std::pair<std::string, uint64_t>> sizes;
    for (const auto& f : plan.samples[i].fields) sizes.emplace_back(f.name, f.size);
    uint64_t est = EstimateSampleBytes(o.format, plan.samples[i].key, sizes);
    if (i > begin && current + est > o.shard_size) {
      plan.shards.emplace_back(begin, i);
      begin = i;
      current = ShardOverheadBytes(o.format);
    }
    current += est;
  }
  plan.shards.emplace_back(begin, plan.samples.size());
  return plan;
}

std::string ShardName(const PackOptions& o, size_t i) {
  char num[32];
  snprintf(num, sizeof num, "%06zu", i);
  return o.shard_prefix + num + std::string(ShardExtension(o.format));
}

struct ShardOutput {
  ShardEntry entry;
  std::optional<FileEntry> sidecar;
  std::set<std::string> fields;
};

class ShardJob {
 public:
  ShardJob(object::ObjectStore& src, object::ObjectStore& dst, const std::string& dst_prefix, const PackOptions& o,
           Executor& pool, std::atomic<bool>& cancelled)
      : src_(src), dst_(dst), dst_prefix_(dst_prefix), o_(o), pool_(pool), cancelled_(cancelled) {}

  Result<ShardOutput> Run(const Plan& plan, size_t shard) {
    ShardOutput out;
    out.entry.name = ShardName(o_, shard);
    ObjectSink sink(dst_, dst_prefix_ + out.entry.name, {o_.part_size, 4});
    ShardWriteOptions wo;
    wo.format = o_.format;
    wo.zstd = o_.zstd;
    wo.zstd_level = o_.zstd_level;
    auto writer = ShardWriter::Make(sink, wo);
    auto [begin, end] = plan.shards[shard];
    // Fetch files in order with a window of GETs in flight.
    std::vector<const InputField*> queue;
    for (size_t i = begin; i < end; ++i) {
      for (const auto& f : plan.samples[i].fields) queue.push_back(&f);
    }
    std::deque<std::future<Result<Buffer>>> window;
    size_t next = 0;
    auto fill = [&] {
      while (next < queue.size() && window.size() < static_cast<size_t>(std::max(o_.fetch_concurrency, 1))) {
        window.push_back(Fetch(*queue[next++]));
      }
    };
    for (size_t i = begin; i < end; ++i) {
      if (cancelled_) return CancelledError("cancelled after another shard failed");
      Sample sample;
      sample.key = plan.samples[i].key;
      uint64_t bytes = 0;
      for (const auto& f : plan.samples[i].fields) {
        fill();
        Result<Buffer> data = window.front().get();
        window.pop_front();
        if (!data.ok()) return data.status();
        bytes += data->size();
        sample.fields.push_back({f.name, std::move(data).value()});
        out.fields.insert(f.name);
      }
      STRATA_RETURN_IF_ERROR(writer->Add(sample));
      if (o_.on_progress) o_.on_progress(1, bytes);
    }
    STRATA_ASSIGN_OR_RETURN(Buffer sidecar, writer->Finish());
    STRATA_ASSIGN_OR_RETURN(WrittenObject written, sink.Close());
    out.entry.size = written.size;
    out.entry.sha256 = written.sha256;
    out.entry.crc32c = written.crc32c;
    out.entry.samples = writer->samples();
    if (!sidecar.empty()) {
      FileEntry fe{SidecarName(out.entry.name), sidecar.size(), ToHex(Sha256(sidecar.data(), sidecar.size()))};
      auto put = dst_.Put(dst_prefix_ + fe.name, sidecar);
      if (!put.ok()) return put.status().WithContext("writing " + fe.name);
      out.entry.sidecar = fe.name;
      out.sidecar = fe;
    }
    return out;
  }

 private:
  std::future<Result<Buffer>> Fetch(const InputField& f) {
    if (f.key.empty()) {
      std::promise<Result<Buffer>> p;
      p.set_value(Buffer::Copy(f.value));
      return p.get_future();
    }
    auto p = std::make_shared<std::promise<Result<Buffer>>>();
    auto fut = p->get_future();
    object::ObjectStore* src = &src_;
    std::string key = f.key;
    pool_.Submit([p, src, key] {
      auto got = src->Get(key);
      if (!got.ok()) {
        p->set_value(got.status().WithContext("reading input " + key));
      } else {
        p->set_value(std::move(got->data));
      }
    });
    return fut;
  }

  object::ObjectStore& src_;
  object::ObjectStore& dst_;
  const std::string& dst_prefix_;
  const PackOptions& o_;
  Executor& pool_;
  std::atomic<bool>& cancelled_;
};

Status CheckOptions(const PackOptions& o) {
  if (o.shard_size < 1024) return InvalidArgumentError("--shard-size must be at least 1 KiB");
  if (o.parallel < 1 || o.parallel > 1024) return InvalidArgumentError("--parallel must be in 1..1024");
  if (o.fetch_concurrency < 1 || o.fetch_concurrency > 1024)
    return InvalidArgumentError("fetch concurrency must be in 1..1024");
  if (o.zstd && o.format != ShardFormat::kIndexed) {
    return InvalidArgumentError(
        "--compress zstd applies to the indexed format only (tar and TFRecord stay readable by "
        "their standard tools)");
  }
  if (o.shard_prefix.empty() || o.shard_prefix.find('/') != std::string::npos) {
    return InvalidArgumentError("shard prefix must be a non-empty name without '/'");
  }
  return Status::Ok();
}

}  // namespace

Result<PackResult> Pack(object::ObjectStore& src, const std::string& src_prefix, object::ObjectStore& dst,
                        const std::string& dst_prefix, const PackOptions& o) {
  STRATA_RETURN_IF_ERROR(CheckOptions(o));
  TimePoint start = RealClock().Now();
  STRATA_ASSIGN_OR_RETURN(Plan plan, MakePlan(src, src_prefix, o));
  if (o.on_plan) o.on_plan(plan.samples.size(), plan.bytes, plan.shards.size());
  // A stale manifest must not describe shards being rewritten.
  STRATA_RETURN_IF_ERROR(dst.Delete(dst_prefix + std::string(kManifestName)));

  std::vector<Result<ShardOutput>> outputs(plan.shards.size(), CancelledError("not run"));
  std::atomic<bool> cancelled{false};
  {
    ThreadPool pool(std::min<size_t>(256, static_cast<size_t>(o.parallel) * o.fetch_concurrency), "strata-pack");
    ParallelFor(plan.shards.size(), o.parallel, [&](size_t i) {
      if (cancelled) return;
      ShardJob job(src, dst, dst_prefix, o, pool, cancelled);
      outputs[i] = job.Run(plan, i);
      if (!outputs[i].ok()) cancelled = true;
    });
  }
  for (auto& r : outputs) {
    if (!r.ok() && r.status().code() != Code::kCancelled) return r.status();
  }
  for (auto& r : outputs) {
    if (!r.ok()) return r.status();
  }

  PackResult result;
  Manifest& m = result.manifest;
  m.format = o.format;
  m.compression = o.zstd ? "zstd" : "none";
  m.created_by = o.created_by;
  m.classes = plan.classes;
  std::set<std::string> fields;
  for (auto& r : outputs) {
    m.shards.push_back(r->entry);
    if (r->sidecar) m.files.push_back(*r->sidecar);
    fields.insert(r->fields.begin(), r->fields.end());
    result.output_bytes += r->entry.size;
  }
  m.fields.assign(fields.begin(), fields.end());
  std::string index = EncodeIndex(m);
  auto put_index = dst.Put(dst_prefix + std::string(kIndexName), Buffer::FromString(index));
  if (!put_index.ok()) return put_index.status().WithContext("writing index.json");
  m.files.push_back({std::string(kIndexName), index.size(), ToHex(Sha256(index))});
  auto put = dst.Put(dst_prefix + std::string(kManifestName), Buffer::FromString(EncodeManifest(m, o.sign_key)));
  if (!put.ok()) return put.status().WithContext("writing manifest.json");
  result.input_files = plan.files;
  result.input_bytes = plan.bytes;
  result.skipped = std::move(plan.skipped);
  result.seconds = Seconds(RealClock().Now() - start);
  return result;
}

}  // namespace strata::dataset
