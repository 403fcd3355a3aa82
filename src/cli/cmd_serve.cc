// strata serve --backend URL: an S3-compatible caching gateway (gateway/).
// Prints "listening on http://HOST:PORT" once ready; SIGINT/SIGTERM stop it
// gracefully (stop accepting, finish in-flight requests, exit 0).
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <charconv>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/stop_signals.h"
#include "base/units.h"
#include "cli/cache_flags.h"
#include "cli/command.h"
#include "cli/util.h"
#include "gateway/gateway.h"
#include "group/member.h"

namespace strata::cli {
namespace {

struct ServeArgs {
  std::string config_file;
  std::vector<std::string> backends;
  std::string listen, access_key, secret_key, emulate, region, access_log;
  bool allow_anonymous = false;  // retired: an error saying what replaced it
  std::vector<std::string> public_read;
  std::string max_connections, max_connections_per_client, min_transfer_rate, transfer_grace;
  std::string backend_timeout;
  bool strict_revalidate = false;
  std::string max_header, max_body, max_inflight, header_timeout, idle_timeout, spill_dir;
  int io_threads = 0, workers = 0;
};

void ApplySize(const std::string& text, uint64_t* out, const char* flag) {
  if (!text.empty()) *out = Check(ParseSize(text), "serve", flag);
}

void ApplyDuration(const std::string& text, Duration* out, const char* flag) {
  if (!text.empty()) *out = Check(ParseDuration(text), "serve", flag);
}

void ApplyCount(const std::string& text, uint64_t* out, const char* flag) {
  if (text.empty()) return;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n == 0) {
    Fail("serve", flag, InvalidArgumentError("expected a positive integer, got \"" + text + "\""));
  }
  *out = n;
}

// Each connection is a descriptor: take the hard limit the system allows,
// so the connection caps (not EMFILE) decide who is served.
void RaiseDescriptorLimit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  rl.rlim_cur = rl.rlim_max;
  (void)::setrlimit(RLIMIT_NOFILE, &rl);
}

gateway::GatewayConfig BuildConfig(const ServeArgs& a, const CacheFlags& cache, const CacheSettings& s) {
  gateway::GatewayConfig c;
  if (!a.config_file.empty()) {
    std::ifstream in(a.config_file);
    if (!in) Fail("serve", a.config_file, NotFoundError("cannot read config file " + a.config_file));
    std::stringstream ss;
    ss << in.rdbuf();
    Check(gateway::ParseGatewayConfigJson(ss.str(), &c), "serve", a.config_file);
  }
  if (!a.backends.empty()) c.backends = a.backends;
  if (!a.listen.empty()) c.listen = a.listen;
  if (!a.region.empty()) c.region = a.region;
  if (!a.emulate.empty()) c.emulate = a.emulate;
  if (!a.access_log.empty()) c.access_log = a.access_log;
  if (a.allow_anonymous) {
    Fail("serve", "--allow-anonymous",
         InvalidArgumentError("is gone: unsigned requests now read only what is public (--public-read BUCKET, "
                              "or the canned ACL public-read) and never write or delete"));
  }
  for (const auto& bucket : a.public_read) c.bucket_settings[bucket].public_read = true;
  if (!a.access_key.empty() || !a.secret_key.empty()) {
    if (a.access_key.empty() || a.secret_key.empty()) {
      Fail("serve", "--access-key", InvalidArgumentError("give both --access-key and --secret-key"));
    }
    c.keys[a.access_key] = a.secret_key;
  }
  if (a.io_threads > 0) c.io_threads = a.io_threads;
  if (a.workers > 0) c.workers = a.workers;
  // The cache flags given override the config file.
  if (cache.given(kCacheDir)) c.cache.dir = s.dir;
  if (cache.given(kCacheRam)) c.cache.ram_bytes = s.ram_bytes;
  if (cache.given(kCacheDisk)) c.cache.disk_bytes = s.disk_bytes;
  if (cache.given(kCacheFreeSpace)) c.cache.free_space = s.min_free;
  if (cache.given(kBlockSize)) c.cache.block_size = s.block_size;
  if (cache.given(kMetadataTtl)) c.cache.metadata_ttl = s.metadata_ttl;
  if (cache.given(kCacheEncryptionKeyFile)) c.cache.encryption_key_file = s.encryption_key_file;
  ApplyDuration(a.backend_timeout, &c.cache.backend_timeout, "--backend-timeout");
  if (a.strict_revalidate) c.cache.strict_revalidate = true;
  ApplySize(a.max_header, &c.limits.max_header_bytes, "--max-header-bytes");
  ApplySize(a.max_body, &c.limits.max_body_bytes, "--max-body");
  ApplySize(a.max_inflight, &c.limits.max_inflight_bytes, "--max-inflight");
  ApplyDuration(a.header_timeout, &c.limits.header_timeout, "--header-timeout");
  ApplyDuration(a.idle_timeout, &c.limits.idle_timeout, "--idle-timeout");
  ApplyCount(a.max_connections, &c.limits.max_connections, "--max-connections");
  ApplyCount(a.max_connections_per_client, &c.limits.max_connections_per_client, "--max-connections-per-client");
  if (!a.min_transfer_rate.empty()) {
    RateRules rules;
    rules.per_second_implied = true;
    c.limits.min_transfer_rate =
        static_cast<uint64_t>(Check(ParseRate(a.min_transfer_rate, rules), "serve", "--min-transfer-rate"));
  }
  ApplyDuration(a.transfer_grace, &c.limits.transfer_grace, "--transfer-grace");
  if (!a.spill_dir.empty()) c.limits.spill_dir = a.spill_dir;
  // Large bodies spill to the cache's disk (chosen for space) when there is one.
  if (c.limits.spill_dir.empty() && !c.cache.dir.empty()) c.limits.spill_dir = c.cache.dir;
  Check(gateway::ValidateGatewayConfig(c), "serve", "config");
  return c;
}

void RunServe(const ServeArgs& args, const CacheFlags& cache) {
  const CacheSettings s = cache.Settings();
  gateway::GatewayConfig config = BuildConfig(args, cache, s);
  RaiseDescriptorLimit();
  const sigset_t stop = BlockStopSignals();
  // Joined before the gateway so every bucket's store is attached as it is made.
  std::unique_ptr<group::GroupMember> member;
  std::function<void(const std::shared_ptr<cache::CachedStore>&)> attach;
  if (!s.group.empty()) {
    group::JoinOptions jo;
    jo.url = s.group;
    jo.listen = s.peer_listen;
    jo.secret = Check(group::ReadGroupSecret(s.group_secret_file), "serve", "--group-secret-file");
    jo.deadline = std::chrono::duration_cast<std::chrono::milliseconds>(s.peer_deadline);
    member = Check(group::GroupMember::Join(jo), "serve", s.group);
    attach = [m = member.get()](const std::shared_ptr<cache::CachedStore>& store) { m->Attach(store); };
    std::cout << "cache group " << s.group << ": peer endpoint " << member->address() << std::endl;
  }
  auto gateway = Check(gateway::Gateway::Start(config, attach), "serve", config.listen);
  std::cout << "listening on " << gateway->url() << std::endl;
  int sig = 0;
  sigwait(&stop, &sig);
  std::cerr << "strata serve: " << (sig == SIGINT ? "SIGINT" : "SIGTERM")
            << ": finishing in-flight requests, then exiting" << std::endl;
  gateway->Shutdown();
  member.reset();  // leave the group (the others stop asking), then stop the peer endpoint
}

CommandRegistrar registrar("serve", [](CLI::App& root) {
  auto a = std::make_shared<ServeArgs>();
  auto* sub = root.add_subcommand("serve", "Serve backends over an S3-compatible caching gateway");
  sub->add_option("--backend", a->backends,
                  "Store to serve (repeatable): file:///dir (each top-level directory is a bucket; "
                  "CreateBucket = mkdir), s3://bucket?endpoint=... (that bucket, under its name), "
                  "s3://?endpoint=... (every bucket of that endpoint; List/Create/Delete/HeadBucket "
                  "passed through to it), mem://name");
  sub->add_option("--config", a->config_file, "JSON config file (flags override it); see src/gateway/config.h");
  sub->add_option("--listen", a->listen, "HOST:PORT to listen on (default 127.0.0.1:9000; port 0 = any)");
  sub->add_option("--access-key", a->access_key, "Access key clients sign with (or \"keys\" in --config)");
  sub->add_option("--secret-key", a->secret_key,
                  "Its secret, 16 characters or more (prefer --config: flags show up in ps)");
  sub->add_flag("--allow-anonymous", a->allow_anonymous,
                "Retired (an error): unsigned requests read only public buckets and objects, see --public-read");
  sub->add_option("--public-read", a->public_read,
                  "Bucket (repeatable) anyone may list and read every object of, unsigned; anonymous clients "
                  "never write or delete");
  sub->add_option("--emulate", a->emulate, "Emulate a cloud bucket below the cache, e.g. ttfb=30ms,bw=25MB/s");
  sub->add_option("--region", a->region, "Region clients sign for (default us-east-1)");
  sub->add_option("--access-log", a->access_log, "Access log file, or - for stderr (default: none)");
  const gateway::GatewayCacheConfig gc;
  auto cache = AddCacheFlags(sub, {.command = "serve",
                                   .defaults = {.ram_bytes = gc.ram_bytes,
                                                .disk_bytes = gc.disk_bytes,
                                                .min_free = gc.free_space,
                                                .block_size = gc.block_size,
                                                .metadata_ttl = gc.metadata_ttl}});
  sub->add_option("--backend-timeout", a->backend_timeout,
                  "An uncached read the backend does not answer fails with 503 after this (default 60s)");
  sub->add_flag("--strict-revalidate", a->strict_revalidate,
                "Fail reads whose expired metadata cannot be revalidated (default: serve the cached version)");
  sub->add_option("--io-threads", a->io_threads, "Socket threads (default 2)");
  sub->add_option("--workers", a->workers, "Threads running S3 operations (default 32)");
  sub->add_option("--max-header-bytes", a->max_header, "Request header limit (default 64KiB; past it: 431)");
  sub->add_option("--max-body", a->max_body, "Request body limit (default 5GiB)");
  sub->add_option("--max-inflight", a->max_inflight,
                  "Memory for request bodies in flight, all clients together (default 256MiB; past it: 503 SlowDown)");
  sub->add_option(
      "--spill-dir", a->spill_dir,
      "Where PutObject/UploadPart bodies over 16MiB wait, as nameless temp files (default: the --cache-dir, "
      "else $TMPDIR; out of space: 503 SlowDown)");
  sub->add_option("--header-timeout", a->header_timeout,
                  "Deadline from a request's first byte to its last header (default 10s)");
  sub->add_option("--idle-timeout", a->idle_timeout, "Keep-alive idle timeout (default 60s)");
  sub->add_option("--max-connections", a->max_connections,
                  "Client connections kept at once (default 4096); at the cap the longest-idle one is closed for a "
                  "newcomer, which gets 503 only when none is idle");
  sub->add_option("--max-connections-per-client", a->max_connections_per_client,
                  "The same cap per client address (default 512)");
  sub->add_option("--min-transfer-rate", a->min_transfer_rate,
                  "Request bodies and response writes slower than this on average, after --transfer-grace, are "
                  "cut off (default 16KiB/s; 0: no floor)");
  sub->add_option("--transfer-grace", a->transfer_grace,
                  "Time a transfer gets before --min-transfer-rate applies (default 10s)");
  sub->footer([] {
    return std::string(
        "Example: strata serve --backend file:///data --access-key AK --secret-key \"$(cat sk)\" --emulate "
        "ttfb=30ms,bw=25MB/s\n"
        "Clients use path-style addressing (aws --endpoint-url http://127.0.0.1:9000). Unsigned GET /healthz and\n"
        "/metrics (Prometheus) are served on the same port.");
  });
  sub->callback([a, cache] { RunServe(*a, *cache); });
});

}  // namespace
}  // namespace strata::cli
