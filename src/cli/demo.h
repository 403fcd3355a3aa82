// The `strata demo` framework. The command creates an embedded file:// store
// in a temporary directory, wraps it in the cloud-emulating decorator, and
// runs every registered section in `order`. Each later feature adds one
// demo_<name>.cc with a static DemoSectionRegistrar (see demo_basic.cc).
// Sections run one at a time on the main thread; they may use threads inside.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "object/cloud_store.h"
#include "object/object_store.h"

namespace strata::cli {

// One chart for bench/plot.py: grouped bars, one bar per (group, series).
struct DemoChart {
  std::string title;
  std::string ylabel;
  std::vector<std::string> groups;                                  // x-axis labels
  std::vector<std::pair<std::string, std::vector<double>>> series;  // label, one value per group
  nlohmann::json ToJson() const;
};

struct DemoContext {
  explicit DemoContext(std::ostream& out_stream) : out(out_stream) {}

  object::ObjectStorePtr cloud;  // the embedded bucket behind EmulateCloud(profile)
  object::ObjectStorePtr local;  // the same bucket without emulation (setup, verification)
  object::CloudProfile profile;  // ttfb 30 ms, 25 MB/s per connection
  std::string store_dir;         // the bucket's directory
  std::string work_dir;          // scratch space for sections (removed at exit)
  std::ostream& out;             // where sections print what they did
  std::string plot_dir;          // --out DIR, or empty: no JSON/PNG wanted
  bool quick = false;            // --quick: smaller sizes, a few seconds in total

  // The dataset written by the basic section (order 0), for later sections:
  // large/obj-NNNN.bin (1 MiB each) and small/file-NNNNN.bin (10 KiB each).
  std::vector<std::string> large_keys;
  std::vector<std::string> small_keys;

  // Per section (reset before each): figures for demo.json and charts for
  // the section's PNG.
  nlohmann::json results = nlohmann::json::object();
  std::vector<DemoChart> charts;
};

using DemoSectionFn = std::function<Status(DemoContext&)>;

struct DemoSectionRegistrar {
  DemoSectionRegistrar(int order, std::string title, DemoSectionFn run);
};

struct DemoSection {
  int order;
  std::string title;
  DemoSectionFn run;
};
// Registered sections sorted by order (then title).
std::vector<DemoSection> DemoSections();

// Runs `/usr/bin/python3 bench/plot.py json_path png_path`. NotSupported
// when Python, matplotlib or the script is missing (the caller prints a note).
Status RunPlot(const std::string& json_path, const std::string& png_path);
// Writes `charts` (bench/plot.py's schema) next to `png_path` as a temporary
// JSON file, plots it, and removes the JSON. For commands with --png.
Status PlotCharts(const nlohmann::json& charts, const std::string& png_path);

}  // namespace strata::cli
