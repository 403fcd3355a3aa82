// strata profile: runs a command, records its file accesses under the given
// directories (a strata mount's access log, else fanotify), and says what that pattern would cost against an
// object store and what to do about it (src/profile/model.h).
#include <unistd.h>

#include <iostream>

#include "base/json_text.h"
#include "base/units.h"
#include "cli/command.h"
#include "cli/demo.h"
#include "cli/util.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "profile/model.h"
#include "profile/record.h"

namespace strata::cli {
namespace {

constexpr const char* kCmd = "profile";

struct ProfileArgs {
  std::vector<std::string> paths, command;
  std::string duration, json_path, png, shard_size = "256MiB", request_size = "16MiB";
  bool all_processes = false, quiet = false, fanotify = false;
};

void RunProfile(const ProfileArgs& a) {
  profile::RecordOptions ro;
  ro.command = a.command;
  ro.paths = a.paths;
  if (ro.paths.empty()) ro.paths.push_back(".");
  ro.all_processes = a.all_processes;
  ro.fanotify = a.fanotify;
  if (!a.duration.empty()) ro.duration_s = Seconds(Check(ParseDuration(a.duration), kCmd, "--duration"));
  profile::AnalyzeOptions ao;
  ao.shard_bytes = double(Check(ParseSize(a.shard_size), kCmd, "--shard-size"));
  ao.request_bytes = double(Check(ParseSize(a.request_size), kCmd, "--request-size"));
  if (ao.shard_bytes <= 0 || ao.request_bytes <= 0)
    Fail(kCmd, "--shard-size", InvalidArgumentError("sizes must be positive"));

  auto data = Check(profile::Record(ro), kCmd, a.command.empty() ? std::string() : a.command[0]);
  const nlohmann::json report = profile::Analyze(data, ao);
  if (a.json_path == "-") {
    std::cout << DumpJson(report, 2) << "\n";
  } else {
    if (!a.quiet) std::cout << profile::FormatProfile(report);
    // Temp + fsync + rename: a reader (strata plan --from-profile) never sees half a report, nor a
    // report a crash can take back.
    if (!a.json_path.empty())
      Check(io::WriteFileAtomicCreatingDirs(io::DefaultFileSystem(), a.json_path, DumpJson(report, 2) + "\n"), kCmd,
            a.json_path);
  }
  if (!a.png.empty()) {
    const nlohmann::json charts = profile::Charts(report);
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
  sub->add_option("--png", a->png,
                  "Also plot the size histogram, requests, and (through a strata mount) read sizes and the read "
                  "timeline here (needs matplotlib)");
  sub->add_option("--shard-size", a->shard_size, "Shard size the verdict assumes")->capture_default_str();
  sub->add_option("--request-size", a->request_size, "Ranged GET size of large files and shards")
      ->capture_default_str();
  sub->add_flag("--all-processes", a->all_processes, "Count every process's accesses, not only the command's tree");
  sub->add_flag("--fanotify", a->fanotify, "Use fanotify even when the paths are on a strata mount");
  sub->add_flag("-q,--quiet", a->quiet, "No table (with --json FILE)");
  sub->add_option("command", a->command, "The command, after --")->required();
  sub->footer(
      "Through a strata mount (every --path on one): the mount logs every read with its offset and length\n"
      "(switched on for the profile only, via the xattr user.strata.profile on the mount's root; needs root or\n"
      "the mount's owner): exact bytes, sequential vs random share, read sizes, re-reads, a read timeline and\n"
      "the time waited on the mount. Overhead: files opened while profiled bypass the page cache (every read\n"
      "goes to the mount, about 10-30 us each, plus one log write of ~60 bytes), and shared mmap of them fails\n"
      "(ENODEV): profile such jobs with --fanotify.\n"
      "Elsewhere: fanotify, needs root (CAP_SYS_ADMIN). Opens are exact (permission events: each open of a\n"
      "watched file waits for the profiler: tens of microseconds on a busy machine); read notifications are\n"
      "merged by the kernel and carry no offsets, so bytes are estimated as whole files per open, and mmap\n"
      "reads are not seen. Ctrl-C is forwarded to the command, and the report is still written.\n"
      "Then: strata plan --from-profile FILE.\n"
      "Example: strata profile --path /data/imagenet --json prof.json -- python train.py --epochs 2");
  sub->callback([a] { RunProfile(*a); });
});

}  // namespace
}  // namespace strata::cli
