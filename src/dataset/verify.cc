#include "dataset/verify.h"

#include <algorithm>
#include <mutex>
#include <set>

#include "base/executor.h"
#include "base/hash.h"
#include "dataset/byte_source.h"
#include "dataset/offset_index.h"
#include "dataset/shard.h"
#include "dataset/shard_set.h"
#include "object/transfer.h"

namespace strata::dataset {
namespace {

using Kind = Problem::Kind;
constexpr uint64_t kUnknownCount = ~uint64_t{0};

struct Checked {
  std::vector<Problem> problems;
  uint64_t samples = 0, bytes = 0;
  std::vector<uint64_t> sample_offsets;  // where each sample started, for the sidecar check
};

// Streams one object: size and SHA-256 against the manifest, and (for shards)
// a full parse. Returns the problems found.
Checked CheckObject(object::ObjectStore& store, const std::string& prefix, const std::string& name, uint64_t want_size,
                    const std::string& want_sha, const ShardFormat* format, uint64_t want_samples,
                    uint64_t chunk_size) {
  Checked c;
  Sha256Hasher hasher;
  StreamOptions so;
  so.chunk_size = chunk_size;
  so.hasher = &hasher;
  auto src = ObjectSource::Open(store, prefix + name, so);
  if (!src.ok()) {
    Kind k = src.status().code() == Code::kNotFound ? Kind::kMissing : Kind::kUnreadable;
    c.problems.push_back({k, name, src.status().ToString()});
    return c;
  }
  ObjectSource& s = **src;
  c.bytes = s.size();
  if (s.size() < want_size) {
    c.problems.push_back(
        {Kind::kTruncated, name, std::to_string(s.size()) + " bytes, manifest says " + std::to_string(want_size)});
  } else if (s.size() > want_size) {
    c.problems.push_back(
        {Kind::kSizeMismatch, name, std::to_string(s.size()) + " bytes, manifest says " + std::to_string(want_size)});
  }
  Status parse_error;
  if (format) {
    auto stream = MakeSampleStream(*format, s);
    while (true) {
      uint64_t at = s.position();
      auto next = stream->Next();
      if (!next.ok()) {
        parse_error = next.status();
        break;
      }
      if (!*next) break;
      c.sample_offsets.push_back(at);
      ++c.samples;
    }
  }
  Status drained = s.DrainToEnd();
  if (!drained.ok()) {
    c.problems.push_back({Kind::kUnreadable, name, drained.ToString()});
    return c;
  }
  std::string sha = ToHex(hasher.Finish());
  if (!want_sha.empty() && sha != want_sha && s.size() == want_size)
    c.problems.push_back({Kind::kChecksumMismatch, name, "sha256 " + sha + ", manifest says " + want_sha});
  if (!parse_error.ok()) {
    c.problems.push_back({Kind::kUnparseable, name, parse_error.message()});
  } else if (format && want_samples != kUnknownCount && c.samples != want_samples) {
    c.problems.push_back({Kind::kCountMismatch, name,
                          std::to_string(c.samples) + " samples, manifest says " + std::to_string(want_samples)});
  }
  return c;
}

// The sidecar must decode and agree with the shard it indexes.
void CheckSidecar(object::ObjectStore& store, const std::string& prefix, const ShardEntry& shard,
                  std::vector<Problem>* out) {
  auto got = store.Get(prefix + shard.sidecar);
  if (!got.ok()) return;  // missing/unreadable already reported by the file check
  auto idx = DecodeOffsetIndex(got->data, shard.sidecar);
  if (!idx.ok()) {
    out->push_back({Kind::kUnparseable, shard.sidecar, idx.status().message()});
  } else if (idx->count() != shard.samples || idx->shard_size != shard.size) {
    out->push_back({Kind::kCountMismatch, shard.sidecar, "sidecar does not describe " + shard.name});
  }
}

}  // namespace

std::string_view ProblemKindName(Problem::Kind kind) {
  switch (kind) {
    case Kind::kMissing: return "missing";
    case Kind::kTruncated: return "truncated";
    case Kind::kSizeMismatch: return "size mismatch";
    case Kind::kChecksumMismatch: return "altered (sha256 mismatch)";
    case Kind::kUnparseable: return "unparseable";
    case Kind::kCountMismatch: return "sample count mismatch";
    case Kind::kSignature: return "bad signature";
    case Kind::kUnreadable: return "unreadable";
  }
  return "unknown";
}

std::string VerifyReport::Describe() const {
  std::string out;
  for (const Problem& p : problems) {
    out +=
        std::string(ProblemKindName(p.kind)) + ": " + p.name + (p.detail.empty() ? "" : " (" + p.detail + ")") + "\n";
  }
  return out;
}

namespace {

// Shards without a manifest: each parsed in full (headers, framing, CRCs).
Result<VerifyReport> VerifyStructure(object::ObjectStore& store, const std::string& prefix,
                                     const VerifyOptions& options) {
  VerifyReport report;
  report.structure_only = true;
  if (!options.sign_key.empty()) {
    report.problems.push_back({Kind::kSignature, std::string(kManifestName), "no manifest whose signature to check"});
  }
  std::vector<std::string> names = options.shards;
  if (names.empty()) {
    STRATA_ASSIGN_OR_RETURN(auto all, object::ListAll(store, prefix));
    for (const auto& o : all) {
      std::string rel = o.key.substr(prefix.size());
      if (rel.find('/') == std::string::npos && FormatFromName(rel)) names.push_back(rel);
    }
    if (names.empty()) {
      return NotFoundError("no manifest.json and no .tar/.tfrecord shards under '" + prefix + "' in " + store.Url());
    }
  }
  Manifest& m = report.manifest;
  for (const auto& n : names) {
    auto f = FormatFromName(n);
    if (!f) return InvalidArgumentError(n + ": not a .tar or .tfrecord shard");
    if (!m.shards.empty() && *f != m.format) return InvalidArgumentError("the shards mix tar and TFRecord files");
    m.format = *f;
    ShardEntry e;
    e.name = n;
    m.shards.push_back(std::move(e));
  }
  std::mutex mu;
  ParallelFor(m.shards.size(), std::max(options.parallel, 1), [&](size_t i) {
    ShardEntry& e = m.shards[i];
    auto head = store.Head(prefix + e.name);
    Checked c;
    if (!head.ok()) {
      Kind k = head.status().code() == Code::kNotFound ? Kind::kMissing : Kind::kUnreadable;
      c.problems.push_back({k, e.name, head.status().ToString()});
    } else {
      e.size = head->size;
      c = CheckObject(store, prefix, e.name, e.size, "", &m.format, kUnknownCount, options.chunk_size);
      e.samples = c.samples;
    }
    std::lock_guard lock(mu);
    report.shards_checked++;
    report.samples += c.samples;
    report.bytes += c.bytes;
    for (auto& p : c.problems) report.problems.push_back(std::move(p));
  });
  std::sort(report.problems.begin(), report.problems.end(),
            [](const Problem& a, const Problem& b) { return a.name < b.name; });
  return report;
}

}  // namespace

Result<VerifyReport> Verify(object::ObjectStore& store, const std::string& prefix, const VerifyOptions& options) {
  std::string manifest_key = prefix + std::string(kManifestName);
  if (!options.shards.empty()) return VerifyStructure(store, prefix, options);
  auto got = store.Get(manifest_key);
  if (!got.ok() && got.status().code() == Code::kNotFound) return VerifyStructure(store, prefix, options);
  if (!got.ok()) return got.status().WithContext("reading " + manifest_key);
  VerifyReport report;
  STRATA_ASSIGN_OR_RETURN(report.manifest, ParseManifest(got->data.view(), manifest_key));
  const Manifest& m = report.manifest;
  if (!options.sign_key.empty()) {
    report.signature_checked = true;
    Status sig = CheckManifestSignature(got->data.view(), options.sign_key, manifest_key);
    if (!sig.ok()) report.problems.push_back({Kind::kSignature, std::string(kManifestName), sig.message()});
  }
  std::mutex mu;
  size_t jobs = m.shards.size() + m.files.size();
  ParallelFor(jobs, std::max(options.parallel, 1), [&](size_t i) {
    Checked c;
    std::vector<Problem> extra;
    if (i < m.shards.size()) {
      const ShardEntry& s = m.shards[i];
      c = CheckObject(store, prefix, s.name, s.size, s.sha256, &m.format, s.samples, options.chunk_size);
      if (!s.sidecar.empty()) CheckSidecar(store, prefix, s, &extra);
    } else {
      const FileEntry& f = m.files[i - m.shards.size()];
      c = CheckObject(store, prefix, f.name, f.size, f.sha256, nullptr, 0, options.chunk_size);
    }
    std::lock_guard lock(mu);
    (i < m.shards.size() ? report.shards_checked : report.files_checked)++;
    report.samples += c.samples;
    report.bytes += c.bytes;
    for (auto& p : c.problems) report.problems.push_back(std::move(p));
    for (auto& p : extra) report.problems.push_back(std::move(p));
  });
  std::sort(report.problems.begin(), report.problems.end(),
            [](const Problem& a, const Problem& b) { return a.name < b.name; });
  // Objects nobody listed: an injected shard would show up here.
  std::set<std::string> known = {std::string(kManifestName)};
  for (const auto& s : m.shards) known.insert(s.name);
  for (const auto& f : m.files) known.insert(f.name);
  auto all = object::ListAll(store, prefix);
  if (all.ok()) {
    for (const auto& o : *all) {
      std::string rel = o.key.substr(prefix.size());
      if (!known.count(rel)) report.unlisted.push_back(rel);
    }
  }
  return report;
}

}  // namespace strata::dataset
