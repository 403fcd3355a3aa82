#include "cli/cache_flags.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/units.h"
#include "cli/command.h"

namespace strata::cli {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// One command with the flag set, parsed from `args` (after the command name).
struct Command {
  explicit Command(CacheFlagSpec spec) : app("strata") {
    sub = app.add_subcommand(spec.command.substr(spec.command.rfind(' ') + 1));  // "ckpt pull": "pull"
    flags = AddCacheFlags(sub, std::move(spec));
  }
  void Parse(std::vector<std::string> args) {
    args.insert(args.begin(), sub->get_name());
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(args);
  }
  // The CliError Settings() throws, rendered; empty when it does not throw.
  std::string Refusal() {
    try {
      (void)flags->Settings();
    } catch (const CliError& e) {
      EXPECT_EQ(e.exit_code(), kExitUsage) << e.Render();
      return e.Render();
    }
    return {};
  }
  CLI::App app;
  CLI::App* sub = nullptr;
  std::shared_ptr<CacheFlags> flags;
};

TEST(CacheFlags, EveryFlagParsesInTheOneGrammar) {
  Command c({.command = "mount"});
  c.Parse({"--cache-ram",     "512MiB",         "--cache-disk",        "2TB",
           "--cache-dir",     "/nvme/cache",    "--block-size",        "1M",
           "--metadata-ttl",  "1.5m",           "--cache-group",       "static://127.0.0.1:7001",
           "--peer-listen",   "127.0.0.1:7001", "--group-secret-file", "/etc/secret",
           "--peer-deadline", "250ms",          "--cache-free-space",  "0.5%"});
  const CacheSettings s = c.flags->Settings();
  EXPECT_EQ(s.ram_bytes, 512ull << 20);
  EXPECT_EQ(s.disk_bytes, 2000000000000ull);
  EXPECT_EQ(s.dir, "/nvme/cache");
  EXPECT_EQ(s.block_size, 1ull << 20);
  EXPECT_EQ(s.metadata_ttl, seconds(90));
  EXPECT_EQ(s.group, "static://127.0.0.1:7001");
  EXPECT_EQ(s.peer_listen, "127.0.0.1:7001");
  EXPECT_EQ(s.group_secret_file, "/etc/secret");
  EXPECT_EQ(s.peer_deadline, milliseconds(250));
  EXPECT_EQ(s.min_free, (SpaceFloor{.percent = 0.5}));
  for (CacheFlag f : {kCacheRam, kCacheDisk, kCacheDir, kBlockSize, kMetadataTtl, kCacheGroup, kPeerListen,
                      kGroupSecretFile, kPeerDeadline, kCacheFreeSpace}) {
    EXPECT_TRUE(c.flags->given(f)) << CacheFlagName(f);
  }
}

TEST(CacheFlags, FlagsNotGivenTakeTheCommandsDefaults) {
  Command c({.command = "ckpt pull", .defaults = {.ram_bytes = 256ull << 20, .peer_deadline = seconds(3)}});
  c.Parse({});
  const CacheSettings s = c.flags->Settings();
  EXPECT_EQ(s.ram_bytes, 256ull << 20);
  EXPECT_EQ(s.disk_bytes, 10ull << 30);
  EXPECT_EQ(s.peer_deadline, seconds(3));
  EXPECT_EQ(s.min_free, cache::kDefaultCacheFreeSpace);
  EXPECT_FALSE(c.flags->given(kCacheRam));
  const std::string help = c.sub->help();
  EXPECT_NE(help.find("RAM tier size (default 256MiB)"), std::string::npos) << help;
  EXPECT_NE(help.find("(default 3s)"), std::string::npos) << help;
  EXPECT_NE(help.find("--cache-free-space"), std::string::npos) << help;
  EXPECT_NE(help.find("(default 2%)"), std::string::npos) << help;
}

TEST(CacheFlags, MetadataTtlMayBeForever) {
  Command c({.command = "serve"});
  c.Parse({"--metadata-ttl", "forever"});
  EXPECT_EQ(c.flags->Settings().metadata_ttl, kForever);
}

TEST(CacheFlags, BadValuesNameTheFlagAndTheAcceptedForms) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--cache-ram", "lots"}, "strata: warm: --cache-ram: expected a size such as 4096, 64KiB"},
      {{"--block-size", "4Mb"}, "strata: warm: --block-size: expected a size"},
      {{"--metadata-ttl", "10 parsecs"}, "strata: warm: --metadata-ttl: expected a duration such as 250ms"},
      {{"--cache-group", "static://127.0.0.1:1", "--peer-deadline", "2m"},
       "strata: warm: --peer-deadline: expected a duration"},
      {{"--cache-group", "static://127.0.0.1:1", "--peer-deadline", "0"},
       "strata: warm: --peer-deadline: must be more than 0 and at most 1m"},
      {{"--cache-group", "static://127.0.0.1:1", "--peer-deadline", "forever"},
       "strata: warm: --peer-deadline: expected a duration"},
  };
  for (const auto& [args, want] : cases) {
    Command c({.command = "warm"});
    c.Parse(args);
    EXPECT_EQ(c.Refusal().rfind(want, 0), 0u) << args[0] << " -> " << c.Refusal();
  }
}

TEST(CacheFlags, OldSpellingIsAHiddenAliasThatPrintsOneDeprecationLine) {
  Command c({.command = "mount", .deprecated = {{"--cache-mem", kCacheRam}}});
  ::testing::internal::CaptureStderr();
  c.Parse({"--cache-mem", "64MiB"});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "strata: mount: --cache-mem is deprecated; use --cache-ram (the same value)\n");
  EXPECT_TRUE(c.flags->given(kCacheRam));
  EXPECT_EQ(c.flags->Settings().ram_bytes, 64ull << 20);
  EXPECT_EQ(c.sub->help().find("--cache-mem"), std::string::npos) << c.sub->help();

  Command both({.command = "mount", .deprecated = {{"--cache-mem", kCacheRam}}});
  ::testing::internal::CaptureStderr();
  both.Parse({"--cache-mem", "64MiB", "--cache-ram", "1GiB"});
  (void)::testing::internal::GetCapturedStderr();
  EXPECT_EQ(both.Refusal().rfind("strata: mount: --cache-ram: given twice: as itself and as --cache-mem", 0), 0u)
      << both.Refusal();
}

TEST(CacheFlags, RefusedFlagsAreHiddenAndRefusedWithTheReason) {
  const CacheFlagSpec spec{.command = "bench train", .refused = {{kBlockSize, "the loader caches whole shards"}}};
  Command c(spec);
  EXPECT_EQ(c.sub->help().find("--block-size"), std::string::npos) << c.sub->help();
  c.Parse({"--block-size", "1MiB"});
  EXPECT_EQ(c.Refusal(),
            "strata: bench train: --block-size: not supported by bench train: the loader caches whole shards\n"
            "  hint: see `strata bench train --help` for the accepted forms\n");
  Command fine(spec);
  fine.Parse({"--cache-ram", "1GiB"});
  EXPECT_EQ(fine.Refusal(), "");
}

TEST(CacheFlags, GroupFlagsNeedACacheGroup) {
  for (const char* flag : {"--peer-listen", "--group-secret-file", "--peer-deadline"}) {
    Command c({.command = "serve"});
    c.Parse({flag, "1s"});
    EXPECT_EQ(c.Refusal().rfind(std::string("strata: serve: ") + flag + ": needs --cache-group", 0), 0u) << c.Refusal();
  }
  Command pull({.command = "ckpt pull", .needs_group = kGroupMemberFlags | kCacheDir});
  pull.Parse({"--cache-dir", "/tmp/x"});
  EXPECT_EQ(pull.Refusal().rfind("strata: ckpt pull: --cache-dir: needs --cache-group", 0), 0u) << pull.Refusal();
  Command joined({.command = "serve"});
  joined.Parse({"--cache-group", "static://127.0.0.1:7001", "--peer-listen", "127.0.0.1:7001"});
  EXPECT_EQ(joined.Refusal(), "");
}

TEST(CacheFlags, RequiredFlagsAreRequiredUnderEitherSpelling) {
  const CacheFlagSpec spec{
      .command = "warm", .required = kCacheDir | kCacheDisk, .deprecated = {{"--cache-size", kCacheDisk}}};
  Command no_dir(spec);  // a flag without an old spelling: the parser requires it
  EXPECT_THROW(no_dir.Parse({"--cache-disk", "1GiB"}), CLI::RequiredError);
  Command no_disk(spec);
  no_disk.Parse({"--cache-dir", "/tmp/c"});
  EXPECT_EQ(no_disk.Refusal().rfind("strata: warm: --cache-disk: is required", 0), 0u) << no_disk.Refusal();
  Command old(spec);
  ::testing::internal::CaptureStderr();
  old.Parse({"--cache-dir", "/tmp/c", "--cache-size", "1GiB"});
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("--cache-size is deprecated; use --cache-disk"),
            std::string::npos);
  EXPECT_EQ(old.Refusal(), "");
  EXPECT_EQ(old.flags->Settings().disk_bytes, 1ull << 30);
}

}  // namespace
}  // namespace strata::cli
