// strata inspect DST [--sample N]: a packed dataset's shards, sample counts,
// fields, and a summary of one sample (read with one ranged GET). Shard sets
// without an index are scanned (headers only) first.
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/url.h"
#include "dataset/dataset.h"

namespace strata::cli {
namespace {

struct InspectArgs {
  std::vector<std::string> dst;
  int64_t sample = -1;
  size_t shards = 20;
};

void RunInspect(const InspectArgs& a) {
  const std::string cmd = "inspect";
  const std::string where = a.dst.empty() ? "" : a.dst[0];
  ShardSetEndpoint set = Check(OpenShardSet(a.dst), cmd, where);
  Endpoint& ds = set.dir;
  dataset::InspectOptions o;
  o.open.shards = std::move(set.shards);
  if (a.sample >= 0) o.sample = static_cast<uint64_t>(a.sample);
  o.max_shards_listed = a.shards;
  std::cout << Check(dataset::Inspect(ds.store, ds.key, o), cmd, where);
}

CommandRegistrar registrar("inspect", [](CLI::App& root) {
  auto a = std::make_shared<InspectArgs>();
  auto* sub = root.add_subcommand("inspect", "Show a packed dataset's shards, counts, fields and a sample");
  sub->add_option("dst", a->dst,
                  "Directory or store prefix holding index.json / manifest.json or .tar / .tfrecord shards "
                  "(scanned if unindexed), a brace pattern (dir/train-{000000..000009}.tar), or shard URLs")
      ->required();
  sub->add_option("--sample", a->sample, "Also summarise global sample N (0-based)");
  sub->add_option("--shards", a->shards, "List at most this many shards")->capture_default_str();
  sub->callback([a] { RunInspect(*a); });
});

}  // namespace
}  // namespace strata::cli
