// strata stat URL: size, ETag and modification time of one object.
#include <iostream>

#include "cli/command.h"
#include "cli/url.h"
#include "cli/util.h"

namespace strata::cli {
namespace {

void RunStat(const std::string& text) {
  const char* cmd = "stat";
  ObjectUrl url = Check(ParseObjectUrl(text), cmd, text);
  Endpoint ep = Check(OpenObject(url), cmd, text);
  object::ObjectInfo info = Check(ep.store->Head(ep.key), cmd, ep.UrlOf(ep.key));
  std::cout << "url:   " << ep.UrlOf(ep.key) << "\n"
            << "key:   " << info.key << "\n"
            << "size:  " << info.size << " (" << FormatBytes(static_cast<double>(info.size)) << ")\n"
            << "etag:  " << info.etag << "\n"
            << "mtime: " << FormatTime(info.mtime) << "\n";
}

CommandRegistrar registrar("stat", [](CLI::App& root) {
  auto url = std::make_shared<std::string>();
  auto* sub = root.add_subcommand("stat", "Show an object's size, ETag and modification time");
  sub->add_option("url", *url, "s3://bucket/key, file:///path, mem://name/key or a local path")->required();
  sub->footer([] { return std::string("Exits 3 if the object does not exist."); });
  sub->callback([url] { RunStat(*url); });
});

}  // namespace
}  // namespace strata::cli
