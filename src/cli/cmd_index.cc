// strata index URL...: indexes shards that were written without strata (a
// WebDataset tar set, TFRecord files): each shard's headers are scanned once
// (ranged reads hopping over the bodies) and an ".idx" sidecar per shard plus
// index.json are written next to them. The shards themselves are not touched.
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/url.h"
#include "cli/util.h"
#include "dataset/manifest.h"
#include "dataset/offset_index.h"
#include "dataset/shard_set.h"

namespace strata::cli {
namespace {

struct IndexArgs {
  std::vector<std::string> urls;
  int parallel = 16;
  bool force = false;
};

void RunIndex(const IndexArgs& a) {
  const std::string cmd = "index";
  const std::string where = a.urls.empty() ? "" : a.urls[0];
  if (a.parallel < 1 || a.parallel > 256) Fail(cmd, "--parallel", InvalidArgumentError("must be in 1..256"));
  ShardSetEndpoint set = Check(OpenShardSet(a.urls), cmd, where);
  object::ObjectStore& store = *set.dir.store;
  const std::string& prefix = set.dir.key;
  const std::string index_key = prefix + std::string(dataset::kIndexName);
  if (!a.force) {
    for (std::string_view name : {dataset::kIndexName, dataset::kManifestName}) {
      auto head = store.Head(prefix + std::string(name));
      if (head.ok()) {
        Fail(cmd, set.dir.UrlOf(prefix + std::string(name)),
             AlreadyExistsError("the dataset is already indexed (pass --force to replace index.json)"));
      }
      if (head.status().code() != Code::kNotFound) Fail(cmd, where, head.status());
    }
  }
  dataset::ScanOptions so;
  so.parallel = static_cast<size_t>(a.parallel);
  TimePoint start = RealClock().Now();
  dataset::ScannedSet scanned = Check(dataset::ScanShardSet(store, prefix, set.shards, so), cmd, where);
  dataset::Manifest& m = scanned.manifest;
  m.created_by = "strata index";
  uint64_t bytes = 0;
  for (size_t i = 0; i < m.shards.size(); ++i) {
    dataset::ShardEntry& e = m.shards[i];
    dataset::OffsetIndex idx{m.format, e.size, scanned.offsets[i]};
    e.sidecar = dataset::SidecarName(e.name);
    Check(store.Put(prefix + e.sidecar, dataset::EncodeOffsetIndex(idx)).status(), cmd,
          set.dir.UrlOf(prefix + e.sidecar));
    bytes += e.size;
  }
  // index.json last: a dataset with it is complete.
  Check(store.Put(index_key, Buffer::FromString(dataset::EncodeIndex(m))).status(), cmd, set.dir.UrlOf(index_key));
  double secs = Seconds(RealClock().Now() - start);
  std::cout << "indexed " << m.shards.size() << " " << dataset::FormatName(m.format) << " shards, " << m.total_samples()
            << " samples, " << FormatBytes(static_cast<double>(bytes)) << " in " << FormatDuration(secs) << ": wrote "
            << set.dir.UrlOf(index_key) << " and " << m.shards.size() << " .idx sidecars\n";
}

CommandRegistrar registrar("index", [](CLI::App& root) {
  auto a = std::make_shared<IndexArgs>();
  auto* sub = root.add_subcommand("index", "Index tar or TFRecord shards in place (writes index.json and .idx files)");
  sub->add_option("url", a->urls,
                  "A directory/prefix of .tar or .tfrecord shards, a brace pattern "
                  "(dir/train-{000000..000099}.tar), or several shard URLs of one directory")
      ->required();
  sub->add_option("-j,--parallel", a->parallel, "Shards scanned at once")->capture_default_str();
  sub->add_flag("--force", a->force, "Replace an existing index.json");
  sub->footer(
      "Reads only the tar headers / TFRecord length framing (ranged reads); the shards are not modified. "
      "index.json lists exactly the shards named, so opening the directory afterwards sees those.");
  sub->callback([a] { RunIndex(*a); });
});

}  // namespace
}  // namespace strata::cli
