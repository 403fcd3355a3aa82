// strata pack SRC DST: packs a tree of small files into WebDataset tar,
// TFRecord or indexed shards with a manifest (dataset/pack.h does the work).
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

#include "base/units.h"
#include "cli/command.h"
#include "cli/url.h"
#include "cli/util.h"
#include "dataset/pack.h"

#ifndef STRATA_VERSION_STRING
#define STRATA_VERSION_STRING "0.1.0"  // kept in step with `strata --version`
#endif

namespace strata::cli {
namespace {

struct PackArgs {
  std::string src, dst;
  std::string format = "tar";
  std::string shard_size = "64MiB";
  std::string compress = "none";
  int parallel = 4;
  int fetch = 16;
  std::string imagefolder = "auto";
  std::string sign_key_env;
  bool quiet = false;
};

std::string SignKeyFromEnv(const std::string& cmd, const std::string& var) {
  if (var.empty()) return "";
  const char* v = std::getenv(var.c_str());
  if (!v || !*v)
    Fail(cmd, "--sign-key-env", InvalidArgumentError("environment variable " + var + " is unset or empty"));
  return v;
}

void RunPack(const PackArgs& a) {
  const std::string cmd = "pack";
  dataset::PackOptions o;
  o.format = Check(dataset::ParseShardFormat(a.format), cmd, "--format");
  o.shard_size = Check(ParseSize(a.shard_size), cmd, "--shard-size");
  if (a.compress != "none" && a.compress != "zstd") {
    Fail(cmd, "--compress", InvalidArgumentError("expected none or zstd, got '" + a.compress + "'"));
  }
  o.zstd = a.compress == "zstd";
  o.parallel = a.parallel;
  o.fetch_concurrency = a.fetch;
  if (a.imagefolder == "auto")
    o.imagefolder = dataset::ImageFolderMode::kAuto;
  else if (a.imagefolder == "on")
    o.imagefolder = dataset::ImageFolderMode::kOn;
  else if (a.imagefolder == "off")
    o.imagefolder = dataset::ImageFolderMode::kOff;
  else
    Fail(cmd, "--imagefolder", InvalidArgumentError("expected auto, on or off"));
  o.sign_key = SignKeyFromEnv(cmd, a.sign_key_env);
  o.created_by = "strata " STRATA_VERSION_STRING;
  Endpoint src = Check(OpenTreeSource(Check(ParseObjectUrl(a.src), cmd, a.src)), cmd, a.src);
  Endpoint dst = Check(OpenTreeDestination(Check(ParseObjectUrl(a.dst), cmd, a.dst)), cmd, a.dst);

  std::optional<Progress> progress;
  o.on_plan = [&](uint64_t samples, uint64_t bytes, uint64_t) { progress.emplace("packed", samples, bytes); };
  o.on_progress = [&](uint64_t samples, uint64_t bytes) { progress->Add(samples, bytes); };
  auto result = dataset::Pack(*src.store, src.key, *dst.store, dst.key, o);
  std::string summary = progress ? progress->Summary() : "";
  progress.reset();
  if (!result.ok()) Fail(cmd, a.dst, result.status());
  const auto& m = result->manifest;
  if (!result->skipped.empty()) {
    std::cerr << "strata: pack: skipped " << result->skipped.size()
              << " files that are not sample members (hidden, or no extension), e.g. " << result->skipped[0] << "\n";
  }
  if (!a.quiet) {
    std::cout << summary << "\n"
              << "wrote " << m.shards.size() << " " << dataset::FormatName(m.format) << " shards, " << m.total_samples()
              << " samples, " << FormatBytes(static_cast<double>(result->output_bytes)) << " ("
              << FormatRate(static_cast<double>(result->input_bytes), result->seconds) << " packed) to "
              << dst.UrlOf(dst.key) << "\n"
              << "manifest: " << dst.UrlOf(dst.key + std::string(dataset::kManifestName))
              << (o.sign_key.empty() ? "" : " (signed)") << "\n";
    if (!m.classes.empty()) std::cout << "ImageFolder: " << m.classes.size() << " classes -> field 'cls'\n";
  }
}

CommandRegistrar registrar("pack", [](CLI::App& root) {
  auto a = std::make_shared<PackArgs>();
  auto* sub = root.add_subcommand("pack", "Pack a tree of small files into shards (WebDataset tar, TFRecord, indexed)");
  sub->add_option("src", a->src, "Directory or store prefix of input files")->required();
  sub->add_option("dst", a->dst, "Directory or store prefix for the shards and manifest")->required();
  sub->add_option("--format", a->format, "tar | tfrecord | indexed")->capture_default_str();
  sub->add_option("--shard-size", a->shard_size, "Target shard size")->capture_default_str();
  sub->add_option("--compress", a->compress, "none | zstd (indexed format only; per-sample frames)")
      ->capture_default_str();
  sub->add_option("-j,--parallel", a->parallel, "Shards written at once")->capture_default_str();
  sub->add_option("--fetch", a->fetch, "Input GETs in flight per shard")->capture_default_str();
  sub->add_option("--imagefolder", a->imagefolder, "auto | on | off: class/file.jpg gets a 'cls' label field")
      ->capture_default_str();
  sub->add_option("--sign-key-env", a->sign_key_env,
                  "Sign the manifest with HMAC-SHA256 using the key in this env var");
  sub->add_flag("-q,--quiet", a->quiet, "Print nothing on success");
  sub->footer(
      "Samples are grouped WebDataset-style (key = path up to the first dot of the file name). Input is sorted,\n"
      "so the same input gives byte-identical shards. manifest.json (per-shard size, samples, SHA-256) is\n"
      "written last; check it with `strata verify`.\n"
      "Example: strata pack ./imagenet/train s3://bucket/train-shards/ --format tar --shard-size 256MiB -j 8");
  sub->callback([a] { RunPack(*a); });
});

}  // namespace
}  // namespace strata::cli
