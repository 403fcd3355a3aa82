// strata csi: the Kubernetes CSI driver (src/csi): Identity, Node and
// Controller over gRPC on a unix socket. strata scheduler-extender: the
// scheduler extender that sends pods where their datasets are cached.
#include <unistd.h>

#include <climits>
#include <memory>

#include "base/log.h"
#include "base/units.h"
#include "cli/cache_flags.h"
#include "cli/command.h"
#include "csi/driver.h"
#include "csi/extender_server.h"
#include "csi/mount_host.h"
#include "csi/sealed.h"
#include "group/member.h"

namespace strata::cli {
namespace {

struct CsiArgs {
  csi::DriverOptions driver;
  std::string mode = "all";
  std::string log_level = "info";
  std::string secrets_key_file;
  std::string mount_host;  // unix:///path: the mount host's socket
};

std::string SelfBinary() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "strata";
}

// The shared cache flags given to `strata csi` are the defaults of every volume's
// mount (its volume_context keys of the same names win), in the mount's spellings.
csi::StringMap MountDefaults(const CacheFlags& flags) {
  const CacheSettings s = flags.Settings();
  csi::StringMap out;
  if (flags.given(kCacheRam)) out["cache-ram"] = FormatSizeExact(s.ram_bytes);
  if (flags.given(kCacheDisk)) out["cache-disk"] = FormatSizeExact(s.disk_bytes);
  if (flags.given(kCacheFreeSpace)) out["cache-free-space"] = FormatSpaceFloor(s.min_free);
  if (flags.given(kBlockSize)) out["block-size"] = FormatSizeExact(s.block_size);
  if (flags.given(kMetadataTtl)) out["metadata-ttl"] = FormatDurationExact(s.metadata_ttl);
  if (flags.given(kCacheGroup)) out["cache-group"] = s.group;
  if (flags.given(kPeerListen)) out["peer-listen"] = s.peer_listen;
  if (flags.given(kPeerDeadline)) out["peer-deadline"] = FormatDurationExact(s.peer_deadline);
  return out;
}

std::string MountHostSocket(const std::string& flag) {
  if (!flag.starts_with("unix:///")) {
    Fail("csi", "--mount-host", InvalidArgumentError("must be unix:///absolute/path/to/socket"));
  }
  return flag.substr(7);
}

void RunCsi(CsiArgs& a, const CacheFlags& flags) {
  SetLogLevel(a.log_level);
  if (a.mode != "all" && a.mode != "node" && a.mode != "controller" && a.mode != "mounts") {
    Fail("csi", "--mode", InvalidArgumentError("must be node, controller, all or mounts"));
  }
  if (a.mode == "mounts") {
    if (a.mount_host.empty()) Fail("csi", "--mount-host", InvalidArgumentError("is required with --mode=mounts"));
    csi::MountHostOptions o;
    o.socket_path = MountHostSocket(a.mount_host);
    o.strata_binary = a.driver.node_options.strata_binary.empty() ? SelfBinary() : a.driver.node_options.strata_binary;
    Check(csi::RunMountHost(o), "csi", a.mount_host);
    return;
  }
  if (!a.mount_host.empty()) a.driver.node_options.mount_host = MountHostSocket(a.mount_host);
  a.driver.node = a.mode != "controller";
  a.driver.controller = a.mode != "node";
  a.driver.version = STRATA_VERSION_STRING;
  auto& no = a.driver.node_options;
  if (no.strata_binary.empty()) no.strata_binary = SelfBinary();
  no.mount_defaults = MountDefaults(flags);
  no.cache_disk_default = flags.Settings().disk_bytes;
  no.cache_free_space_default = flags.Settings().min_free;
  if (!a.secrets_key_file.empty()) {
    no.seal_key = Check(csi::ReadSealKey(a.secrets_key_file), "csi", a.secrets_key_file);
  }
  Check(csi::RunDriver(a.driver), "csi", a.driver.endpoint);
}

CommandRegistrar csi_registrar("csi", [](CLI::App& root) {
  auto a = std::make_shared<CsiArgs>();
  auto* sub = root.add_subcommand("csi", "Serve the Kubernetes CSI driver (csi.strata.dev) on a unix socket");
  sub->add_option("--endpoint", a->driver.endpoint, "unix:///path/csi.sock (default unix:///csi/csi.sock)");
  sub->add_option("--node-id", a->driver.node_options.node_id, "This node's name (the Kubernetes node name)");
  sub->add_option("--state-dir", a->driver.node_options.state_dir,
                  "Where staged volumes are recorded and mounts log (a hostPath that outlives the driver)");
  sub->add_option("--cache-root", a->driver.node_options.cache_root,
                  "Each volume's disk cache goes in CACHE_ROOT/<volume> (default STATE_DIR/cache)");
  sub->add_option("--mode", a->mode,
                  "node (the node DaemonSet), controller (the provisioner's pod), all (default), or mounts (the "
                  "mount host: launches the node plugin's mounts in its own container, so they outlive the plugin's)");
  sub->add_option("--mount-host", a->mount_host,
                  "unix:///path: the mount host's socket (--mode=mounts listens on it; --mode=node has it launch "
                  "each volume's mount; default: the plugin launches them itself)");
  sub->add_option("--strata-binary", a->driver.node_options.strata_binary,
                  "The strata executable mounts run (default: this one)");
  CacheFlagSpec spec;
  spec.command = "csi";
  spec.refused = {
      {kCacheDir, "each volume's disk cache is CACHE_ROOT/<volume> (--cache-root)"},
      {kGroupSecretFile, "the group secret comes from each volume's secrets (STRATA_GROUP_SECRET), never a file"}};
  spec.needs_group = 0;  // --peer-listen alone: the address of the volumes that name a group themselves
  spec.help = {{kCacheRam, "Default RAM tier of each volume's mount (its volume_context cache-ram wins)"},
               {kCacheDisk, "Default disk tier of each volume's mount"},
               {kCacheFreeSpace, "Default free space each volume's disk tier leaves on the cache root's file system"},
               {kBlockSize, "Default cache block size of each volume's mount"},
               {kMetadataTtl, "Default metadata TTL of each volume's mount ('forever' for immutable datasets)"},
               {kCacheGroup, "Default cache group of each volume's mount (etcd://HOST:PORT/GROUP)"},
               {kPeerListen, "Peer endpoint (HOST:PORT; port 0: any) of the mounts in a cache group"},
               {kPeerDeadline, "Default peer deadline of each volume's mount"}};
  auto cache = AddCacheFlags(sub, spec);
  sub->add_option("--secrets-key-file", a->secrets_key_file,
                  "64 hex characters (openssl rand -hex 32): volumes' secrets are kept sealed with it in the state "
                  "dir, so mounts that died with the driver's container are remounted (default: memory only)");
  sub->add_option("--log-level", a->log_level, "trace, debug, info (default), warn, error");
  sub->footer(
      "Volumes: volume_context url=s3://bucket/prefix?endpoint=... plus the mount options (cache-ram, cache-disk,\n"
      "block-size, metadata-ttl, cache-group, peer-listen, peer-deadline, read-only, dataset). Secrets "
      "(AWS_ACCESS_KEY_ID,\n"
      "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, STRATA_GROUP_SECRET) come from the request's secrets only.\n"
      "Each staged volume is its own `strata mount` process, recorded in --state-dir and re-adopted on restart.");
  sub->callback([a, cache] {
    if (a->mode == "node" || a->mode == "all") {
      if (a->driver.node_options.node_id.empty()) Fail("csi", "--node-id", InvalidArgumentError("is required"));
      if (a->driver.node_options.state_dir.empty()) Fail("csi", "--state-dir", InvalidArgumentError("is required"));
    }
    RunCsi(*a, *cache);
  });
});

CommandRegistrar extender_registrar("scheduler-extender", [](CLI::App& root) {
  auto o = std::make_shared<csi::ExtenderOptions>();
  auto level = std::make_shared<std::string>("warn");
  auto* sub = root.add_subcommand("scheduler-extender",
                                  "Serve the Kubernetes scheduler extender: pods go where their datasets are cached");
  sub->add_option("--listen", o->listen, "HOST:PORT (default 127.0.0.1:8888)");
  sub->add_option("--cache-group", o->cache_groups, "etcd://HOST:PORT/GROUP whose members publish what they cache")
      ->required();
  auto secret_files = std::make_shared<std::vector<std::string>>();
  sub->add_option("--group-secret-file", *secret_files,
                  "The group secret that signs the members' records (a Kubernetes Secret's file; default: "
                  "STRATA_GROUP_SECRET): once for every --cache-group, or once per --cache-group in order");
  sub->add_option("--min-fraction", o->min_fraction,
                  "filter: nodes holding less than this fraction of the pod's cached data fail (default 0: none)");
  auto idle = std::make_shared<std::string>("120s");
  sub->add_option("--idle-timeout", *idle,
                  "A connection that sends no whole request for this long is closed (default 120s: longer than "
                  "the scheduler's HTTP client keeps an idle connection, so the client closes it first)");
  sub->add_option("--max-connections", o->max_connections,
                  "Connections open at once (default 64); one past it is closed on arrival")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--log-level", *level, "trace, debug, info, warn (default), error");
  sub->callback([o, level, secret_files, idle] {
    SetLogLevel(*level);
    const char* cmd = "scheduler-extender";
    o->idle_timeout =
        std::chrono::duration_cast<std::chrono::milliseconds>(Check(ParseDuration(*idle), cmd, "--idle-timeout"));
    if (secret_files->empty()) secret_files->push_back("");  // STRATA_GROUP_SECRET
    for (const auto& f : *secret_files) {
      o->group_secrets.push_back(Check(group::ReadGroupSecret(f), cmd, f.empty() ? "STRATA_GROUP_SECRET" : f));
    }
    Check(csi::RunExtender(*o), cmd, o->listen);
  });
});

}  // namespace
}  // namespace strata::cli
