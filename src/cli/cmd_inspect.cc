// strata inspect DST [--sample N]: a packed dataset's shards, sample counts,
// fields, and a summary of one sample (read with one ranged GET).
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/url.h"
#include "dataset/dataset.h"

namespace strata::cli {
namespace {

struct InspectArgs {
  std::string dst;
  int64_t sample = -1;
  size_t shards = 20;
};

void RunInspect(const InspectArgs& a) {
  const std::string cmd = "inspect";
  Endpoint ds = Check(OpenTreeSource(Check(ParseObjectUrl(a.dst), cmd, a.dst)), cmd, a.dst);
  dataset::InspectOptions o;
  if (a.sample >= 0) o.sample = static_cast<uint64_t>(a.sample);
  o.max_shards_listed = a.shards;
  std::cout << Check(dataset::Inspect(ds.store, ds.key, o), cmd, a.dst);
}

CommandRegistrar registrar("inspect", [](CLI::App& root) {
  auto a = std::make_shared<InspectArgs>();
  auto* sub = root.add_subcommand("inspect", "Show a packed dataset's shards, counts, fields and a sample");
  sub->add_option("dst", a->dst, "Directory or store prefix holding index.json / manifest.json")->required();
  sub->add_option("--sample", a->sample, "Also summarise global sample N (0-based)");
  sub->add_option("--shards", a->shards, "List at most this many shards")->capture_default_str();
  sub->callback([a] { RunInspect(*a); });
});

}  // namespace
}  // namespace strata::cli
