#include "profile/model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "base/units.h"

namespace strata::profile {

using nlohmann::json;

uint64_t BucketUpper(uint64_t size) {
  if (size == 0) return 0;
  uint64_t b = 1;
  while (b < size && b < (uint64_t(1) << 62)) b <<= 1;
  return b;
}

namespace {

std::string Printf(const char* format, double a) {
  char buf[96];
  std::snprintf(buf, sizeof buf, format, a);
  return buf;
}

std::string Count(double n) {
  char buf[32];
  if (n >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f M", n / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", n);
  }
  return buf;
}

// The figures the report is made of: per-file counts summed over the files
// read (for exact reads, bytes and requests from the mount's log instead),
// and the rates and ratios derived from them.
struct Totals {
  std::vector<const FileRecord*> read;  // files opened and read
  uint64_t opens = 0, opened_only = 0, written = 0, max_reads = 0;
  double unique = 0, bytes = 0, reread_bytes = 0, read_opens = 0, read_events = 0, requests = 0;
  std::map<uint64_t, uint64_t> hist;  // BucketUpper(size) -> files read
  std::vector<uint64_t> sizes;        // of the files read
  ReadTotals exact;                   // exact reads only
  json reads_json;
  // Derived.
  double median = 0, duration = 0, sharded_requests = 0, factor = 1, files = 0, epochs = 0;
};

void SumFiles(const ProfileData& d, const AnalyzeOptions& opt, Totals* t) {
  for (const auto& f : d.files) {
    t->opens += f.opens;
    if (f.write_closes > 0) ++t->written;
    if (f.read_opens > 0) {
      t->read.push_back(&f);
    } else if (f.opens > 0) {
      ++t->opened_only;
    }
  }
  for (const FileRecord* f : t->read) {
    const double size = double(f->size);
    t->unique += size;
    t->bytes += size * double(f->read_opens);
    t->reread_bytes += size * double(f->read_opens - 1);
    t->read_opens += double(f->read_opens);
    t->read_events += double(f->read_events);
    t->max_reads = std::max(t->max_reads, f->read_opens);
    // A whole-file GET, large files in ranged parts.
    t->requests += double(f->read_opens) * std::max(1.0, std::ceil(size / opt.request_bytes));
    ++t->hist[BucketUpper(f->size)];
    t->sizes.push_back(f->size);
  }
}

Totals Tally(const ProfileData& d, const AnalyzeOptions& opt) {
  Totals t;
  SumFiles(d, opt, &t);
  if (d.exact_reads) {
    // The mount's log: what was read, not whole files per open.
    t.reads_json = AnalyzeReads(d, opt, &t.exact);
    t.bytes = t.exact.bytes;
    t.reread_bytes = t.exact.reread_bytes;
    t.requests = t.exact.requests;
  }
  std::sort(t.sizes.begin(), t.sizes.end());
  t.median = t.sizes.empty() ? 0 : double(t.sizes[t.sizes.size() / 2]);
  // Rates over the reading window (first to last open), not the start-up.
  double first = 0, last = 0;
  for (size_t i = 0; i < t.read.size(); ++i) {
    first = i == 0 ? t.read[i]->first_s : std::min(first, t.read[i]->first_s);
    last = i == 0 ? t.read[i]->last_s : std::max(last, t.read[i]->last_s);
  }
  const double window = last - first;
  t.duration = std::max(window > 0.01 ? window : d.duration_s, 1e-3);
  t.sharded_requests = t.bytes > 0 ? std::ceil(t.bytes / opt.request_bytes) : 0;
  t.factor = t.sharded_requests > 0 ? t.requests / t.sharded_requests : 1;
  t.files = double(t.read.size());
  t.epochs = t.files > 0 ? t.read_opens / t.files : 0;
  return t;
}

json ReportJson(const ProfileData& d, const AnalyzeOptions& opt, const Totals& t) {
  const double duration = t.duration;
  json j = {{"tool", "strata profile"},
            {"command", d.command},
            {"paths", d.paths},
            {"duration_s", d.duration_s},
            {"reading_window_s", duration},
            {"exit_code", d.exit_code},
            {"interrupted", d.interrupted},
            {"files", t.read.size()},
            {"files_opened_not_read", t.opened_only},
            {"files_written", t.written},
            {"unique_bytes", t.unique},
            {"bytes_read_estimate", t.bytes},
            {"opens", t.opens},
            {"read_opens", t.read_opens},
            {"read_events", t.read_events},
            {"opens_per_s", t.read_opens / duration},
            {"bytes_per_s_estimate", t.bytes / duration},
            {"median_size", t.median},
            {"mean_size", t.files > 0 ? t.unique / t.files : 0},
            {"reads_per_file", {{"mean", t.epochs}, {"max", t.max_reads}}},
            {"read_events_per_open", t.read_opens > 0 ? t.read_events / t.read_opens : 0},
            {"rereads",
             {{"opens", t.read_opens - t.files},
              {"bytes", t.reread_bytes},
              {"fraction", t.bytes > 0 ? t.reread_bytes / t.bytes : 0}}},
            {"size_histogram", json::array()},
            {"object_store",
             {{"requests", t.requests},
              {"requests_per_s", t.requests / duration},
              {"in_flight_at_100ms_first_byte", t.requests / duration * 0.1},
              {"requests_if_sharded", t.sharded_requests},
              {"request_bytes", opt.request_bytes},
              {"shard_bytes", opt.shard_bytes},
              {"fewer_requests_if_sharded", t.factor}}},
            {"process", {{"cpu_s", d.cpu_s}, {"cpu_share", d.cpu_s / duration}}},
            {"profiler",
             {{"method", "fanotify: FAN_OPEN_PERM (exact opens), FAN_ACCESS (merged read notifications), FAN_CLOSE"},
              {"events", d.events},
              {"other_process_events", d.other_process_events},
              {"queue_overflows", d.queue_overflows},
              {"cpu_s", d.profiler_cpu_s},
              {"bytes_note",
               "bytes are estimated: each open followed by a read counts the whole file (fanotify reports no "
               "offsets or lengths; mmap reads raise no event)"}}},
            {"verdicts", json::array()},
            {"top_files", json::array()}};
  if (d.exact_reads) {
    j["exact_reads"] = true;
    j["bytes_read"] = t.bytes;
    j["reads"] = t.reads_json;
    j["io_wait_s"] = t.reads_json["io_wait_s"];
    j["mounts"] = d.mounts;
    j["profiler"]["method"] =
        "strata mount access log (user.strata.profile): every read with offset and length, files opened with "
        "direct I/O while profiled";
    j["profiler"]["bad_log_lines"] = d.bad_log_lines;
    j["profiler"]["bytes_note"] =
        "bytes are exact: every read reached the mount (no page cache while profiled); reads over 1 MiB arrive "
        "as 1 MiB pieces";
  } else {
    j["exact_reads"] = false;
  }
  for (const auto& [upper, count] : t.hist) j["size_histogram"].push_back({{"le", upper}, {"count", count}});
  return j;
}

// What to do about the pattern: shards, a local cache, small blocks, ranged
// reads, or nothing.
void AddVerdicts(const ProfileData& d, const AnalyzeOptions& opt, const Totals& t, json* j) {
  auto verdict = [&](const std::string& what, const std::string& why) {
    (*j)["verdicts"].push_back({{"verdict", what}, {"reason", why}});
  };
  if (t.read.empty()) {
    verdict("nothing to plan",
            "no file under the watched paths was read; check --path (the directories the job reads)");
    return;
  }
  const double median = t.median, unique = t.unique;
  if (t.files >= 16 && median < 4.0 * (1 << 20) && t.factor >= 4) {
    verdict("pack into shards", Count(t.files) + " files of median " + FormatBytes(median) + ", each read whole " +
                                    Printf("%.1f", t.epochs) + " time(s): pack them into " +
                                    FormatBytes(opt.shard_bytes) + " shards (`strata pack`) read in " +
                                    FormatBytes(opt.request_bytes) + " requests, expect " + Printf("%.0f", t.factor) +
                                    "x fewer requests (" + Count(t.requests) + " -> " + Count(t.sharded_requests) +
                                    ")");
  }
  if (t.bytes > 0 && t.reread_bytes / t.bytes >= 0.25) {
    verdict("cache locally", Printf("%.0f%%", 100 * t.reread_bytes / t.bytes) +
                                 " of the bytes read were read before (" + Printf("%.1f", t.epochs) +
                                 " reads per file): a local cache of " + FormatBytes(unique) +
                                 " (every file touched) serves them: the loader's shard cache, or `strata mount` "
                                 "with a disk cache");
  }
  const bool random = d.exact_reads && t.exact.random_share >= 0.5 && t.exact.median_read <= 256.0 * 1024;
  if (random) {
    verdict("block cache with small blocks, no read-ahead",
            Printf("%.0f%%", 100 * t.exact.random_share) + " of the reads are random, median read " +
                FormatBytes(t.exact.median_read) + " inside files of median " + FormatBytes(median) +
                ": read-ahead would fetch bytes nobody reads; `strata mount --block-size 1MiB` and a cache "
                "holding the hot part of the " +
                FormatBytes(unique) + " touched");
  }
  if (median >= 64.0 * (1 << 20) && !random) {
    std::string why = "median file " + FormatBytes(median) + ": stream with parallel ranged GETs of " +
                      FormatBytes(opt.request_bytes) + " (" + Printf("%.0f", t.requests) + " requests)";
    if (!d.exact_reads && t.read_opens > 0 && t.read_events / t.read_opens >= 64)
      why +=
          "; many reads per open: if they are at random offsets, a block cache with 1 MiB blocks and no "
          "read-ahead (`strata mount`)";
    verdict("large files: ranged reads", why);
  }
  if ((*j)["verdicts"].empty()) {
    verdict("fine as is", Printf("%.1f", t.requests / t.duration) +
                              " requests/s against an object store, files of median " + FormatBytes(median) +
                              ", few re-reads: streaming from the bucket should keep up");
  }
}

// The ten files that cost the most bytes.
void AddTopFiles(const Totals& t, json* j) {
  std::vector<const FileRecord*> top = t.read;
  std::sort(top.begin(), top.end(), [](const FileRecord* a, const FileRecord* b) {
    return double(a->size) * double(a->read_opens) > double(b->size) * double(b->read_opens);
  });
  if (top.size() > 10) top.resize(10);
  for (const FileRecord* f : top)
    (*j)["top_files"].push_back({{"path", f->path}, {"size", f->size}, {"reads", f->read_opens}});
}

}  // namespace

json Analyze(const ProfileData& d, const AnalyzeOptions& opt) {
  const Totals t = Tally(d, opt);
  json j = ReportJson(d, opt, t);
  AddVerdicts(d, opt, t, &j);
  AddTopFiles(t, &j);
  return j;
}

std::string FormatProfile(const json& r) {
  std::ostringstream s;
  const auto num = [&](const char* key) { return r.value(key, 0.0); };
  s << "profiled for " << Printf("%.2f s", num("duration_s")) << " (exit code " << r.value("exit_code", 0)
    << (r.value("interrupted", false) ? ", interrupted" : "") << "), process CPU "
    << Printf("%.2f s", r["process"].value("cpu_s", 0.0)) << "\n";
  s << "files read: " << Count(num("files")) << ", " << FormatBytes(num("unique_bytes")) << " touched, "
    << FormatBytes(num("bytes_read_estimate")) << (r.value("exact_reads", false) ? " read" : " read (estimated)")
    << ", median file " << FormatBytes(num("median_size")) << "\n";
  s << "opens: " << Count(num("read_opens")) << " with reads (" << Printf("%.1f", num("opens_per_s")) << "/s over the "
    << Printf("%.2f s", num("reading_window_s")) << " from the first to the last), reads per file "
    << Printf("%.2f", r["reads_per_file"].value("mean", 0.0)) << " mean, " << r["reads_per_file"].value("max", 0)
    << " max; re-reads: " << Count(r["rereads"].value("opens", 0.0)) << " opens, "
    << FormatBytes(r["rereads"].value("bytes", 0.0)) << " ("
    << Printf("%.0f%%", 100 * r["rereads"].value("fraction", 0.0)) << " of the bytes)\n";
  const json& os = r["object_store"];
  if (r.value("exact_reads", false) && r.contains("reads")) {
    const json& rd = r["reads"];
    s << "reads (exact, through the strata mount): " << Count(rd.value("count", 0.0)) << ", "
      << FormatBytes(rd.value("bytes", 0.0)) << ", median " << FormatBytes(rd.value("median_size", 0.0)) << "; "
      << Printf("%.0f%%", 100 * rd["sequential"].value("share", 0.0)) << " sequential, "
      << Printf("%.0f%%", 100 * rd["random"].value("share", 0.0)) << " random; re-read "
      << FormatBytes(rd.value("reread_bytes", 0.0)) << "; waited " << Printf("%.2f s", rd.value("io_wait_s", 0.0))
      << " on the mount\n";
    s << "read sizes:";
    for (const auto& b : rd["size_histogram"])
      s << " <=" << FormatBytes(b.value("le", 0.0)) << ":" << Count(b.value("count", 0.0));
    s << "\n";
  }
  s << "against an object store: " << Count(os.value("requests", 0.0)) << " GETs ("
    << Printf("%.1f/s", os.value("requests_per_s", 0.0)) << ", "
    << Printf("%.0f", std::ceil(os.value("in_flight_at_100ms_first_byte", 0.0)))
    << " in flight at 100 ms first byte); as shards: " << Count(os.value("requests_if_sharded", 0.0)) << "\n";
  s << "sizes:\n";
  double most = 1;
  for (const auto& b : r["size_histogram"]) most = std::max(most, b.value("count", 0.0));
  for (const auto& b : r["size_histogram"]) {
    const double c = b.value("count", 0.0);
    s << "  <= " << std::string(std::max(0, 10 - int(FormatBytes(b.value("le", 0.0)).size())), ' ')
      << FormatBytes(b.value("le", 0.0)) << " " << Printf("%8.0f ", c)
      << std::string(size_t(std::ceil(40 * c / most)), '#') << "\n";
  }
  for (const auto& v : r["verdicts"])
    s << "verdict: " << v.value("verdict", std::string()) << ": " << v.value("reason", std::string()) << "\n";
  s << "note: " << r["profiler"].value("bytes_note", std::string()) << "\n";
  if (r["profiler"].value("queue_overflows", 0) > 0)
    s << "warning: the kernel's event queue overflowed: some reads were not counted\n";
  return s.str();
}

json Charts(const json& report) {
  json groups = json::array(), counts = groups;
  for (const auto& b : report["size_histogram"]) {
    groups.push_back("<= " + FormatBytes(b["le"].get<double>()));
    counts.push_back(b["count"]);
  }
  const json& os = report["object_store"];
  json charts = {{"title", "strata profile"},
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
  if (report.value("exact_reads", false)) {
    // Exact reads: their sizes, and bytes over time.
    const json& rd = report["reads"];
    json rg = json::array(), rc = rg, tg = rg, tb = rg;
    for (const auto& b : rd["size_histogram"]) {
      rg.push_back("<= " + FormatBytes(b["le"].get<double>()));
      rc.push_back(b["count"]);
    }
    const double w = rd["timeline"]["bucket_s"].get<double>();
    size_t i = 0;
    for (const auto& b : rd["timeline"]["bytes"]) {
      char label[32];
      std::snprintf(label, sizeof label, "%g", double(i++) * w);
      tg.push_back(label);
      tb.push_back(b.get<double>() / (1 << 20));
    }
    charts["charts"].push_back({{"title", "Read sizes (exact)"},
                                {"ylabel", "reads"},
                                {"groups", rg},
                                {"series", {{{"label", "reads"}, {"values", rc}}}}});
    charts["charts"].push_back({{"title", "Read timeline (MiB per " + FormatDuration(w) + ", from second 0)"},
                                {"ylabel", "MiB"},
                                {"groups", tg},
                                {"series", {{{"label", "MiB read"}, {"values", tb}}}}});
  }
  return charts;
}

}  // namespace strata::profile
