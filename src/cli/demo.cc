// strata demo [--quick] [--out DIR]: the main job, with no configuration.
#include "cli/demo.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/clock.h"
#include "base/json_text.h"
#include "cli/command.h"
#include "cli/util.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "object/file_store.h"

extern char** environ;

namespace strata::cli {
namespace fs = std::filesystem;
namespace {

std::vector<DemoSection>& Sections() {
  static std::vector<DemoSection> sections;
  return sections;
}

// Runs argv, stdout to /dev/null (and stderr too when `quiet`); returns the exit status.
Result<int> Spawn(const std::vector<std::string>& argv, bool quiet) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  if (quiet) posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int err = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return ErrnoToStatus(err, "cannot run " + argv[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ErrnoToStatus(errno, "waitpid");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string PlotScript() {
  const char* env = std::getenv("STRATA_SOURCE_DIR");
  std::string root = env && *env ? env : STRATA_SOURCE_DIR_DEFAULT;
  return root + "/bench/plot.py";
}

std::string Slug(const std::string& title) {
  std::string slug;
  for (char c : title) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!slug.empty() && slug.back() != '_') {
      slug += '_';
    }
    if (slug.size() >= 40) break;
  }
  while (!slug.empty() && slug.back() == '_') slug.pop_back();
  return slug.empty() ? "section" : slug;
}

// Removes the demo's temporary directory however the command ends.
struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

struct DemoArgs {
  bool quick = false;
  std::string out_dir;
};

// Temp + fsync + rename, as every file strata leaves behind: a figure is whole or absent.
Status WriteJson(const std::string& path, const nlohmann::json& json) {
  return io::WriteFileAtomic(io::DefaultFileSystem(), path, DumpJson(json, 2) + "\n");
}

// Writes the section's JSON and PNG; prints where, or why not.
void WriteSectionPlot(DemoContext& ctx, const std::string& title, bool* plot_note_printed) {
  if (ctx.plot_dir.empty() || ctx.charts.empty()) return;
  nlohmann::json doc = {{"title", title}, {"charts", nlohmann::json::array()}};
  for (const auto& chart : ctx.charts) doc["charts"].push_back(chart.ToJson());
  std::string base = ctx.plot_dir + "/demo_" + Slug(title);
  if (Status st = WriteJson(base + ".json", doc); !st.ok()) {
    ctx.out << "  (could not write " << base << ".json: " << st.message() << ")\n";
    return;
  }
  Status st = RunPlot(base + ".json", base + ".png");
  if (st.ok()) {
    ctx.out << "  plot: " << base << ".png\n";
  } else if (!*plot_note_printed) {
    ctx.out << "  (no plot: " << st.message() << "; the figures are in " << base << ".json)\n";
    *plot_note_printed = true;
  }
}

void RunDemo(const DemoArgs& args) {
  const char* cmd = "demo";
  auto start = RealClock().Now();
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/strata-demo-XXXXXX";
  TempDir temp;
  if (!mkdtemp(pattern.data())) Fail(cmd, pattern, ErrnoToStatus(errno, "cannot create a temporary directory"));
  temp.path = pattern;
  std::string store_dir = temp.path + "/bucket", work_dir = temp.path + "/work";
  // The error_code overloads: a failure here is a message and an exit code, not an exception.
  std::error_code ec;
  fs::create_directories(work_dir, ec);
  if (ec) Fail(cmd, work_dir, ErrnoToStatus(ec.value(), "cannot create the work directory"));
  std::string plot_dir;
  if (!args.out_dir.empty()) {
    fs::create_directories(args.out_dir, ec);
    if (ec) Fail(cmd, args.out_dir, ErrnoToStatus(ec.value(), "cannot create the output directory"));
    plot_dir = fs::absolute(args.out_dir, ec).string();
    if (ec) Fail(cmd, args.out_dir, ErrnoToStatus(ec.value(), "cannot resolve the output directory"));
  }

  DemoContext ctx(std::cout);
  // A throwaway bucket: no fsyncs, so the figures show the emulated cloud, not this disk.
  ctx.local = Check(object::OpenFileStore(store_dir, object::FileStoreOptions{.fsync = false}), cmd, store_dir);
  ctx.cloud = object::EmulateCloud(ctx.local, ctx.profile);
  ctx.store_dir = store_dir;
  ctx.work_dir = work_dir;
  ctx.plot_dir = plot_dir;
  ctx.quick = args.quick;
  ctx.out << "strata demo" << (args.quick ? " (quick)" : "") << ": an embedded bucket at file://" << store_dir
          << "\n  behind cloud emulation: " << FormatDuration(Seconds(ctx.profile.first_byte)) << " to first byte, "
          << FormatRate(ctx.profile.bytes_per_second_per_connection, 1)
          << " per connection (like a real cloud bucket; no network needed)\n";

  nlohmann::json report = {{"quick", args.quick},
                           {"profile", object::FormatCloudProfile(ctx.profile)},
                           {"sections", nlohmann::json::array()}};
  Status first_failure;
  bool plot_note_printed = false;
  int index = 0;
  for (const auto& section : DemoSections()) {
    ctx.results = nlohmann::json::object();
    ctx.charts.clear();
    ctx.out << "\n== " << ++index << ". " << section.title << " ==\n";
    ctx.out.flush();
    auto section_start = RealClock().Now();
    Status st = section.run(ctx);
    double seconds = Seconds(RealClock().Now() - section_start);
    nlohmann::json entry = {{"title", section.title}, {"seconds", seconds}, {"results", ctx.results}};
    if (st.ok()) {
      ctx.out << "  (" << FormatDuration(seconds) << ")\n";
      WriteSectionPlot(ctx, section.title, &plot_note_printed);
    } else {
      ctx.out << "  FAILED: " << st.ToString() << "\n";
      entry["error"] = st.ToString();
      if (first_failure.ok()) first_failure = st.WithContext("section \"" + section.title + "\"");
    }
    report["sections"].push_back(std::move(entry));
  }
  double total = Seconds(RealClock().Now() - start);
  report["seconds"] = total;
  if (!ctx.plot_dir.empty()) {
    Check(WriteJson(ctx.plot_dir + "/demo.json", report), cmd, ctx.plot_dir);
    ctx.out << "\nfigures: " << ctx.plot_dir << "/demo.json\n";
  }
  ctx.out << "\ndemo finished in " << FormatDuration(total) << "; temporary files removed.\n";
  ctx.out.flush();
  if (!first_failure.ok()) Fail(cmd, "", first_failure);
}

CommandRegistrar registrar("demo", [](CLI::App& root) {
  auto args = std::make_shared<DemoArgs>();
  auto* sub = root.add_subcommand(
      "demo", "Show what strata does, with figures: an embedded cloud-like bucket, no configuration or network");
  sub->add_flag("--quick", args->quick, "Smaller sizes: a few seconds in total");
  sub->add_option("--out", args->out_dir, "Write demo.json and one PNG plot per section to this directory");
  sub->footer([] {
    return std::string(
        "The bucket lives in a temporary directory (under $TMPDIR or /tmp) that is removed at the end.\n"
        "Plots need /usr/bin/python3 with matplotlib; without it the JSON is still written.");
  });
  sub->callback([args] { RunDemo(*args); });
});

}  // namespace

nlohmann::json DemoChart::ToJson() const {
  nlohmann::json series_json = nlohmann::json::array();
  for (const auto& [label, values] : series) series_json.push_back({{"label", label}, {"values", values}});
  return {{"title", title}, {"ylabel", ylabel}, {"groups", groups}, {"series", series_json}};
}

DemoSectionRegistrar::DemoSectionRegistrar(int order, std::string title, DemoSectionFn run) {
  Sections().push_back({order, std::move(title), std::move(run)});
}

std::vector<DemoSection> DemoSections() {
  auto sections = Sections();
  std::stable_sort(sections.begin(), sections.end(), [](const DemoSection& a, const DemoSection& b) {
    return a.order != b.order ? a.order < b.order : a.title < b.title;
  });
  return sections;
}

Status RunPlot(const std::string& json_path, const std::string& png_path) {
  const std::string python = "/usr/bin/python3";
  std::string script = PlotScript();
  if (access(python.c_str(), X_OK) != 0) return NotSupportedError(python + " is not installed");
  if (access(script.c_str(), R_OK) != 0) return NotSupportedError(script + " not found (set STRATA_SOURCE_DIR)");
  STRATA_ASSIGN_OR_RETURN(int has_mpl, Spawn({python, "-c", "import matplotlib"}, /*quiet=*/true));
  if (has_mpl != 0) return NotSupportedError("matplotlib is not installed for " + python);
  STRATA_ASSIGN_OR_RETURN(int rc, Spawn({python, script, json_path, png_path}, /*quiet=*/false));
  if (rc != 0) return IOError("plot.py exited with status " + std::to_string(rc));
  return Status::Ok();
}

Status PlotCharts(const nlohmann::json& charts, const std::string& png_path) {
  const std::string json_path = png_path + ".charts.json";
  {
    std::ofstream out(json_path);
    out << DumpJson(charts, 2) << "\n";
    out.close();
    if (!out) return IOError("cannot write " + json_path);
  }
  Status st = RunPlot(json_path, png_path);
  std::remove(json_path.c_str());
  return st;
}

}  // namespace strata::cli
