// strata verify DST: checks every shard of a packed dataset against its
// manifest (size, SHA-256, a full parse) and optionally the manifest's HMAC
// signature. Exit code 5 names the missing, truncated or altered shards.
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/url.h"
#include "cli/util.h"
#include "dataset/verify.h"

namespace strata::cli {
namespace {

struct VerifyArgs {
  std::vector<std::string> dst;
  std::string sign_key_env;
  int parallel = 4;
  bool quiet = false;
};

void RunVerify(const VerifyArgs& a) {
  const std::string cmd = "verify";
  dataset::VerifyOptions o;
  if (!a.sign_key_env.empty()) {
    const char* v = std::getenv(a.sign_key_env.c_str());
    if (!v || !*v) {
      Fail(cmd, "--sign-key-env",
           InvalidArgumentError("environment variable " + a.sign_key_env + " is unset or empty"));
    }
    o.sign_key = v;
  }
  if (a.parallel < 1 || a.parallel > 256) Fail(cmd, "--parallel", InvalidArgumentError("must be in 1..256"));
  o.parallel = a.parallel;
  const std::string where = a.dst.empty() ? "" : a.dst[0];
  ShardSetEndpoint set = Check(OpenShardSet(a.dst), cmd, where);
  Endpoint& ds = set.dir;
  o.shards = std::move(set.shards);
  TimePoint start = RealClock().Now();
  auto report = Check(dataset::Verify(*ds.store, ds.key, o), cmd, where);
  double secs = Seconds(RealClock().Now() - start);
  for (const auto& u : report.unlisted) std::cerr << "strata: verify: warning: not in the manifest: " << u << "\n";
  if (!report.ok()) {
    std::cout << report.Describe();
    Fail(cmd, where,
         CorruptionError(std::to_string(report.problems.size()) + " problem(s) in " +
                         std::to_string(report.manifest.shards.size()) + " shards; see above"));
  }
  if (!a.quiet) {
    std::cout << "OK: " << report.shards_checked << " shards, " << report.samples << " samples, "
              << FormatBytes(static_cast<double>(report.bytes))
              << (report.structure_only ? " parse cleanly (no manifest: structure checks only, headers and CRCs; "
                                          "no sizes or SHA-256 to compare)"
                                        : " match the manifest")
              << (report.signature_checked ? " (signature valid)" : "") << " in " << FormatDuration(secs) << " ("
              << FormatRate(static_cast<double>(report.bytes), secs) << ")\n";
    if (!report.signature_checked && !report.manifest.signature.empty()) {
      std::cout << "note: the manifest is signed; pass --sign-key-env to check the signature\n";
    }
  }
}

CommandRegistrar registrar("verify", [](CLI::App& root) {
  auto a = std::make_shared<VerifyArgs>();
  auto* sub = root.add_subcommand("verify", "Check a packed dataset's shards against its manifest");
  sub->add_option("dst", a->dst,
                  "Directory or store prefix holding manifest.json; without one (or for a brace pattern or shard "
                  "URLs) the .tar/.tfrecord shards' structure is checked only")
      ->required();
  sub->add_option("--sign-key-env", a->sign_key_env,
                  "Require a valid HMAC-SHA256 signature by the key in this env var");
  sub->add_option("-j,--parallel", a->parallel, "Shards checked at once")->capture_default_str();
  sub->add_flag("-q,--quiet", a->quiet, "Print nothing on success");
  sub->footer("Exit code 5 if any shard is missing, truncated, altered or unparseable, or the signature fails.");
  sub->callback([a] { RunVerify(*a); });
});

}  // namespace
}  // namespace strata::cli
