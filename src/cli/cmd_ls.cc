// strata ls URL [--recursive] [--long]
#include <iostream>

#include "cli/command.h"
#include "cli/url.h"
#include "cli/util.h"
#include "object/transfer.h"

namespace strata::cli {
namespace {

struct LsArgs {
  std::string url;
  bool recursive = false;
  bool long_format = false;
};

void PrintObject(const LsArgs& args, const object::ObjectInfo& info) {
  if (!args.long_format) {
    std::cout << info.key << "\n";
    return;
  }
  char size[24];
  std::snprintf(size, sizeof(size), "%12llu", static_cast<unsigned long long>(info.size));
  std::cout << size << "  " << FormatTime(info.mtime) << "  " << info.key << "\n";
}

// Prefixes line up with keys in --long output (size and time columns blank).
void PrintPrefix(const LsArgs& args, const std::string& prefix) {
  std::cout << (args.long_format ? std::string(12 + 2 + 20 + 2, ' ') : "") << prefix << "\n";
}

void RunLs(const LsArgs& args) {
  const char* cmd = "ls";
  ObjectUrl url = Check(ParseObjectUrl(args.url), cmd, args.url);
  Endpoint ep = Check(OpenListing(url), cmd, args.url);
  std::vector<std::string> prefixes;
  auto objects = Check(object::ListAll(*ep.store, ep.key, args.recursive ? "" : "/", &prefixes), cmd, args.url);
  // Merge prefixes ("dir/") and objects in key order, as one listing.
  size_t p = 0;
  for (const auto& object : objects) {
    for (; p < prefixes.size() && prefixes[p] < object.key; ++p) {
      PrintPrefix(args, prefixes[p]);
    }
    PrintObject(args, object);
  }
  for (; p < prefixes.size(); ++p) {
    PrintPrefix(args, prefixes[p]);
  }
  std::cout.flush();
  if (objects.empty() && prefixes.empty() && !ep.key.empty()) {
    Fail(cmd, args.url, NotFoundError("no objects match"));
  }
}

CommandRegistrar registrar("ls", [](CLI::App& root) {
  auto args = std::make_shared<LsArgs>();
  auto* sub = root.add_subcommand("ls", "List objects under a URL (a key prefix, or a local directory)");
  sub->add_option("url", args->url, "s3://bucket/prefix, file:///dir, mem://name/prefix or a local path")->required();
  sub->add_flag("-r,--recursive", args->recursive, "List every key below, not just one level");
  sub->add_flag("-l,--long", args->long_format, "Show size and modification time");
  sub->footer([] {
    return "Prints one key per line (relative to the bucket root or the listed directory); prefixes end in '/'.\n"
           "Exits 3 if a prefix was given and nothing matches.\n"
           "Example: strata ls -l 's3://bucket/data/?endpoint=http://127.0.0.1:7480'";
  });
  sub->callback([args] { RunLs(*args); });
});

}  // namespace
}  // namespace strata::cli
