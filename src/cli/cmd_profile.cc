// strata profile: runs a command, records its file accesses under the given
// directories (fanotify), and says what that pattern would cost against an
// object store and what to do about it (profile_model.h).
#include <unistd.h>

#include <fstream>
#include <iostream>

#include "cli/command.h"
#include "cli/demo.h"
#include "cli/plan_model.h"
#include "cli/profile_model.h"
#include "cli/profile_record.h"
#include "cli/util.h"

namespace strata::cli {
namespace {

constexpr const char* kCmd = "profile";

struct ProfileArgs {
  std::vector<std::string> paths, command;
  std::string duration, json_path, png, shard_size = "256MiB", request_size = "16MiB";
  bool all_processes = false, quiet = false;
};

void RunProfile(const ProfileArgs& a) {
  profile::RecordOptions ro;
  ro.command = a.command;
  ro.paths = a.paths;
  if (ro.paths.empty()) ro.paths.push_back(".");
  ro.all_processes = a.all_processes;
  if (!a.duration.empty()) ro.duration_s = Seconds(Check(ParseDuration(a.duration), kCmd, "--duration"));
  profile::AnalyzeOptions ao;
  ao.shard_bytes = double(Check(ParseSize(a.shard_size), kCmd, "--shard-size"));
  ao.request_bytes = double(Check(ParseSize(a.request_size), kCmd, "--request-size"));
  if (ao.shard_bytes <= 0 || ao.request_bytes <= 0)
    Fail(kCmd, "--shard-size", InvalidArgumentError("sizes must be positive"));

  auto data = Check(profile::Record(ro), kCmd, a.command.empty() ? std::string() : a.command[0]);
  const nlohmann::json report = profile::Analyze(data, ao);
  if (a.json_path == "-") {
    std::cout << report.dump(2) << "\n";
  } else {
    if (!a.quiet) std::cout << profile::FormatProfile(report);
    if (!a.json_path.empty()) {
      // Temp + rename: a reader never sees half a report.
      const std::string tmp = a.json_path + ".tmp";
      {
        std::ofstream out(tmp);
        out << report.dump(2) << "\n";
        out.close();
        if (!out) Fail(kCmd, a.json_path, IOError("cannot write " + tmp));
      }
      if (std::rename(tmp.c_str(), a.json_path.c_str()) != 0)
        Fail(kCmd, a.json_path, ErrnoToStatus(errno, "rename " + tmp));
    }
  }
  if (!a.png.empty()) {
    nlohmann::json groups = nlohmann::json::array(), counts = groups;
    for (const auto& b : report["size_histogram"]) {
      groups.push_back("<= " + FormatBytes(b["le"].get<double>()));
      counts.push_back(b["count"]);
    }
    const nlohmann::json& os = report["object_store"];
    nlohmann::json charts = {
        {"title", "strata profile"},
        {"charts",
         {{{"title", "File sizes (files read)"},
           {"ylabel", "files"},
           {"groups", groups},
           {"series", {{{"label", "files"}, {"values", counts}}}}},
          {{"title", "GETs against an object store"},
           {"ylabel", "requests"},
           {"groups", {"as files", "as shards"}},
           {"series", {{{"label", "requests"}, {"values", {os["requests"], os["requests_if_sharded"]}}}}}}}}};
    if (groups.empty()) charts["charts"].erase(0);
    Status st = PlotCharts(charts, a.png);
    if (!st.ok()) std::cerr << "strata: profile: no PNG: " << st.message() << "\n";
  }
  if (data.exit_code != 0 && !data.interrupted) {
    std::cerr << "strata: profile: the command exited with code " << data.exit_code << "\n";
    throw QuietExit{kExitFailure};
  }
}

CommandRegistrar registrar("profile", [](CLI::App& root) {
  auto a = std::make_shared<ProfileArgs>();
  auto* sub = root.add_subcommand(
      "profile", "Run a command and record its file accesses: sizes, re-reads, object-store requests, a verdict");
  sub->add_option("-p,--path", a->paths,
                  "Directory the job reads (recursively; repeatable; default: the current directory)");
  sub->add_option("--duration", a->duration, "Stop after this long (SIGINT to the command), e.g. 5m");
  sub->add_option("--json", a->json_path,
                  "Write the report as JSON here (- for stdout instead of the table, after the command's own output)");
  sub->add_option("--png", a->png, "Also plot the size histogram and requests here (needs matplotlib)");
  sub->add_option("--shard-size", a->shard_size, "Shard size the verdict assumes")->capture_default_str();
  sub->add_option("--request-size", a->request_size, "Ranged GET size of large files and shards")
      ->capture_default_str();
  sub->add_flag("--all-processes", a->all_processes, "Count every process's accesses, not only the command's tree");
  sub->add_flag("-q,--quiet", a->quiet, "No table (with --json FILE)");
  sub->add_option("command", a->command, "The command, after --")->required();
  sub->footer(
      "Needs root (fanotify, CAP_SYS_ADMIN). Opens are exact (permission events: each open of a watched file\n"
      "waits for the profiler: tens of microseconds on a busy machine); read notifications are merged by the kernel "
      "and carry no\n"
      "offsets, so bytes are estimated as whole files per open, and mmap reads are not seen. Ctrl-C is\n"
      "forwarded to the command, and the report is still written. Then: strata plan --from-profile FILE.\n"
      "Example: strata profile --path /data/imagenet --json prof.json -- python train.py --epochs 2");
  sub->callback([a] { RunProfile(*a); });
});

}  // namespace
}  // namespace strata::cli
