// strata cache stats|ls|evict|verify --cache-dir D: inspect and maintain a
// cache directory. stats, ls and verify open it read-only (safe beside a
// running owner); evict and verify --repair take its lock.
// strata cache group URL: a cache group's members and, with the group
// secret, each one's blocks, bytes and hit counters (its peer /status).
#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "base/json_text.h"
#include "cache/block_cache.h"
#include "cli/command.h"
#include "cli/util.h"
#include "group/member.h"

namespace strata::cli {
namespace {

struct CacheArgs {
  std::string dir;
  std::string prefix;
  bool all = false;
  bool json = false;
  bool blocks = false;
  bool repair = false;
  std::string group_url, group_secret_file;
};

std::shared_ptr<cache::BlockCache> OpenDir(const CacheArgs& args, const char* cmd, bool write) {
  cache::CacheOptions options;
  options.dir = args.dir;
  options.ram_bytes = 0;
  options.disk_bytes = UINT64_MAX / 4;  // the owner's limit is not ours to apply
  options.disk_min_free = {};           // nor its free-space floor
  options.read_only = !write;
  options.headers_only = true;  // lists, evicts and checks headers and checksums: no key needed
  return Check(cache::BlockCache::Open(options), cmd, args.dir);
}

struct ObjectSummary {
  std::string store, etag;
  uint64_t blocks = 0, bytes = 0;
};

std::map<std::string, ObjectSummary> ByObject(const std::vector<cache::DiskBlockInfo>& blocks) {
  std::map<std::string, ObjectSummary> out;
  for (const auto& b : blocks) {
    auto& s = out[b.id.store + "\t" + b.id.key];
    s.store = b.id.store;
    s.etag = b.id.etag;
    ++s.blocks;
    s.bytes += b.length;
  }
  return out;
}

void RunStats(const CacheArgs& args) {
  auto cache = OpenDir(args, "cache stats", false);
  auto blocks = cache->disk()->List();
  uint64_t data = 0;
  int64_t oldest = INT64_MAX, newest = 0;
  for (const auto& b : blocks) {
    data += b.length;
    oldest = std::min(oldest, b.created_ms);
    newest = std::max(newest, b.created_ms);
  }
  auto objects = ByObject(blocks);
  if (args.json) {
    std::cout << nlohmann::json{{"dir", args.dir},
                                {"blocks", blocks.size()},
                                {"objects", objects.size()},
                                {"data_bytes", data},
                                {"file_bytes", cache->disk()->bytes()}}
                     .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)  // a path may not be UTF-8
              << "\n";
    return;
  }
  std::cout << "cache directory  " << args.dir << "\n"
            << "blocks           " << blocks.size() << "\n"
            << "objects          " << objects.size() << "\n"
            << "data             " << FormatBytes(data) << "\n"
            << "on disk          " << FormatBytes(cache->disk()->bytes()) << " (4 KiB header per block)\n";
  if (!blocks.empty()) {
    auto t = [](int64_t ms) { return FormatTime(WallTime(std::chrono::milliseconds(ms))); };
    std::cout << "oldest block     " << t(oldest) << "\nnewest block     " << t(newest) << "\n";
  }
}

void RunLs(const CacheArgs& args) {
  auto cache = OpenDir(args, "cache ls", false);
  auto blocks = cache->disk()->List();
  std::erase_if(blocks, [&](const cache::DiskBlockInfo& b) { return !b.id.key.starts_with(args.prefix); });
  if (args.blocks) {
    std::sort(blocks.begin(), blocks.end(), [](const auto& a, const auto& b) {
      return std::tie(a.id.key, a.id.index) < std::tie(b.id.key, b.id.index);
    });
    for (const auto& b : blocks) {
      std::cout << b.id.key << "\t" << b.id.index << "\t" << b.length << "\t" << b.id.etag << "\t" << b.path << "\n";
    }
    return;
  }
  for (const auto& [name, s] : ByObject(blocks)) {
    std::cout << FormatBytes(s.bytes) << "\t" << s.blocks << " blocks\t" << name.substr(name.find('\t') + 1) << "\t"
              << s.etag << "\t" << s.store << "\n";
  }
}

void RunEvict(const CacheArgs& args) {
  if (args.prefix.empty() && !args.all) {
    Fail("cache evict", args.dir, InvalidArgumentError("give a key prefix, or --all to empty the cache"));
  }
  auto cache = OpenDir(args, "cache evict", true);
  uint64_t before = cache->disk()->bytes();
  size_t n = cache->EvictPrefix(args.prefix);
  std::cout << "evicted " << n << " blocks, " << FormatBytes(before - cache->disk()->bytes()) << "\n";
}

void RunVerify(const CacheArgs& args) {
  auto cache = OpenDir(args, "cache verify", args.repair);
  strata::cache::VerifyReport r = cache->disk()->Verify(args.repair);
  for (const auto& p : r.bad_paths) std::cout << "BAD " << p << "\n";
  std::cout << "checked " << r.checked << " blocks: " << r.ok << " ok, " << r.bad << " bad"
            << (args.repair && r.bad ? " (dropped)" : "") << "\n";
  if (r.bad && !args.repair) {
    Fail("cache verify", args.dir,
         CorruptionError(std::to_string(r.bad) + " blocks failed verification; rerun with --repair to drop them"));
  }
}

void RunGroup(const CacheArgs& args) {
  const char* cmd = "cache group";
  auto secret = group::ReadGroupSecret(args.group_secret_file);
  if (!secret.ok() && !args.group_secret_file.empty()) Fail(cmd, "--group-secret-file", secret.status());
  const bool etcd = !args.group_url.starts_with("static://");
  if (!secret.ok() && etcd) {
    // etcd's records count only when their signature verifies, which needs the secret.
    Fail(cmd, "--group-secret-file", secret.status().WithContext("an etcd group's members are known by its secret"));
  }
  auto members = Check(group::ListGroupMembers(args.group_url, secret.value_or("")), cmd, args.group_url);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : members) {
    nlohmann::json row{{"id", m.id}, {"address", m.address}};
    if (secret.ok()) {
      auto st = group::FetchMemberStatus(m, *secret, std::chrono::seconds(2));
      nlohmann::json j = st.ok() ? nlohmann::json::parse(*st, nullptr, false) : nlohmann::json();
      row["alive"] = st.ok() && j.is_object();
      if (st.ok() && j.is_object()) {
        row["status"] = j;
      } else {
        row["error"] = st.ok() ? "status is not JSON" : st.status().ToString();
      }
    }
    out.push_back(std::move(row));
  }
  if (args.json) {
    // A member's id, address and error text come from the group: they may not be UTF-8.
    std::cout << DumpJson(nlohmann::json{{"group", args.group_url}, {"members", out}}, 2) << "\n";
    return;
  }
  std::cout << "cache group " << args.group_url << ": " << members.size() << " members\n";
  for (const auto& r : out) {
    std::string alive = r.contains("alive") ? (r["alive"].get<bool>() ? "alive" : "DOWN") : "?";
    std::cout << "  " << r["id"].get<std::string>() << "  " << r["address"].get<std::string>() << "  " << alive;
    if (r.contains("status")) {
      const auto& s = r["status"];
      // A member's answer: a counter of another type is shown as 0, not thrown (value() would).
      auto n = [&](const char* k) {
        auto it = s.find(k);
        return it != s.end() && it->is_number_unsigned() ? it->get<uint64_t>() : uint64_t{0};
      };
      std::cout << "  disk " << n("disk_blocks") << " blocks " << FormatBytes(n("disk_bytes")) << ", ram "
                << n("ram_blocks") << " blocks " << FormatBytes(n("ram_bytes")) << ", bucket fetches "
                << n("bucket_fetches") << ", served " << n("served") << ", peer hits " << n("peer_hits")
                << ", peer misses " << n("peer_misses");
    } else if (r.contains("error")) {
      std::cout << "  (" << r["error"].get<std::string>() << ")";
    }
    std::cout << "\n";
  }
  if (!secret.ok()) std::cout << "(no group secret: members only; give --group-secret-file or STRATA_GROUP_SECRET)\n";
}

CommandRegistrar registrar("cache", [](CLI::App& root) {
  auto args = std::make_shared<CacheArgs>();
  auto* sub = root.add_subcommand("cache", "Inspect or maintain a cache directory");
  sub->require_subcommand(1);
  auto dir = [&](CLI::App* c) { c->add_option("--cache-dir", args->dir, "Cache directory")->required(); };
  auto* stats = sub->add_subcommand("stats", "Blocks, objects and bytes held");
  dir(stats);
  stats->add_flag("--json", args->json, "Machine-readable output");
  stats->callback([args] { RunStats(*args); });
  auto* ls = sub->add_subcommand("ls", "Cached objects (or blocks) under a key prefix");
  dir(ls);
  ls->add_option("prefix", args->prefix, "Key prefix");
  ls->add_flag("--blocks", args->blocks, "One line per block: key, index, length, etag, file");
  ls->callback([args] { RunLs(*args); });
  auto* evict = sub->add_subcommand("evict", "Drop cached blocks of keys under a prefix");
  dir(evict);
  evict->add_option("prefix", args->prefix, "Key prefix");
  evict->add_flag("--all", args->all, "Drop every block");
  evict->callback([args] { RunEvict(*args); });
  auto* verify = sub->add_subcommand("verify", "Read every block and check its header and checksum");
  dir(verify);
  verify->add_flag("--repair", args->repair, "Drop bad blocks (takes the directory's lock)");
  verify->callback([args] { RunVerify(*args); });
  auto* grp = sub->add_subcommand("group", "A cache group's members, their blocks, bytes and hit counters");
  grp->add_option("url", args->group_url, "etcd://HOST:PORT/GROUP or static://HOST:PORT,...")->required();
  grp->add_option("--group-secret-file", args->group_secret_file,
                  "The group's secret (default: $STRATA_GROUP_SECRET); without it: members only");
  grp->add_flag("--json", args->json, "Machine-readable output");
  grp->callback([args] { RunGroup(*args); });
  sub->footer([] { return std::string("Example: strata cache stats --cache-dir /nvme/strata"); });
});

}  // namespace
}  // namespace strata::cli
