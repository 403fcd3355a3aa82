// strata rm URL [--recursive]: deletes one object, or everything under a
// prefix / in a local directory.
#include <atomic>
#include <iostream>
#include <mutex>

#include "base/executor.h"
#include "cli/command.h"
#include "cli/url.h"
#include "cli/util.h"
#include "object/transfer.h"

namespace strata::cli {
namespace {

struct RmArgs {
  std::string url;
  bool recursive = false;
  int parallel = 16;
  bool quiet = false;
};

void RunRm(const RmArgs& args) {
  const char* cmd = "rm";
  if (args.parallel < 1 || args.parallel > 1024) {
    Fail(cmd, "--parallel", InvalidArgumentError("must be between 1 and 1024"));
  }
  ObjectUrl url = Check(ParseObjectUrl(args.url), cmd, args.url);
  if (!args.recursive) {
    Endpoint ep = Check(OpenObject(url), cmd, args.url);
    // S3 deletes of missing keys succeed; a script asking to remove a name
    // that is not there wants to know (exit 3).
    Check(ep.store->Head(ep.key).status(), cmd, ep.UrlOf(ep.key));
    Check(ep.store->Delete(ep.key), cmd, ep.UrlOf(ep.key));
    if (!args.quiet) std::cout << "deleted " << ep.UrlOf(ep.key) << "\n";
    return;
  }
  Endpoint ep = Check(OpenTreeSource(url), cmd, args.url);
  auto objects = Check(object::ListAll(*ep.store, ep.key), cmd, args.url);
  if (objects.empty()) Fail(cmd, args.url, NotFoundError("no objects to delete"));
  std::mutex mu;
  Status first_error;
  std::string failed_key;
  std::atomic<size_t> deleted{0};
  ParallelFor(objects.size(), std::min<size_t>(args.parallel, objects.size()), [&](size_t i) {
    Status st = ep.store->Delete(objects[i].key);
    if (st.ok()) {
      deleted.fetch_add(1);
      return;
    }
    std::lock_guard<std::mutex> lock(mu);
    if (first_error.ok()) {
      first_error = st;
      failed_key = objects[i].key;
    }
  });
  if (!first_error.ok()) {
    Fail(cmd, ep.UrlOf(failed_key),
         first_error.WithContext("deleted " + std::to_string(deleted.load()) + " of " + std::to_string(objects.size()) +
                                 " objects, then"));
  }
  if (!args.quiet) std::cout << "deleted " << objects.size() << " objects under " << ep.UrlOf(ep.key) << "\n";
}

CommandRegistrar registrar("rm", [](CLI::App& root) {
  auto args = std::make_shared<RmArgs>();
  auto* sub = root.add_subcommand("rm", "Delete an object, or everything under a prefix with --recursive");
  sub->add_option("url", args->url, "s3://bucket/key, file:///path, mem://name/key or a local path")->required();
  sub->add_flag("-r,--recursive", args->recursive, "Delete every object under URL (a prefix or directory)");
  sub->add_option("-j,--parallel", args->parallel, "Deletes in flight at once (with --recursive)")
      ->capture_default_str();
  sub->add_flag("-q,--quiet", args->quiet, "Do not print what was deleted");
  sub->footer([] {
    return std::string(
        "Exits 3 if the object (or, with --recursive, anything under the prefix) does not exist.\n"
        "With --recursive, s3://bucket/data means the prefix data/ (never data2/...).");
  });
  sub->callback([args] { RunRm(*args); });
});

}  // namespace
}  // namespace strata::cli
