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

}  // namespace

json Analyze(const ProfileData& d, const AnalyzeOptions& opt) {
  std::vector<const FileRecord*> read;
  uint64_t opens = 0, opened_only = 0, written = 0;
  for (const auto& f : d.files) {
    opens += f.opens;
    if (f.write_closes > 0) ++written;
    if (f.read_opens > 0) {
      read.push_back(&f);
    } else if (f.opens > 0) {
      ++opened_only;
    }
  }
  double unique = 0, bytes = 0, reread_bytes = 0, read_opens = 0, read_events = 0, requests = 0;
  uint64_t max_reads = 0;
  std::map<uint64_t, uint64_t> hist;
  std::vector<uint64_t> sizes;
  for (const FileRecord* f : read) {
    const double size = double(f->size);
    unique += size;
    bytes += size * double(f->read_opens);
    reread_bytes += size * double(f->read_opens - 1);
    read_opens += double(f->read_opens);
    read_events += double(f->read_events);
    max_reads = std::max(max_reads, f->read_opens);
    // A whole-file GET, large files in ranged parts.
    requests += double(f->read_opens) * std::max(1.0, std::ceil(size / opt.request_bytes));
    ++hist[BucketUpper(f->size)];
    sizes.push_back(f->size);
  }
  ReadTotals exact;
  json reads_json;
  if (d.exact_reads) {
    // The mount's log: what was read, not whole files per open.
    reads_json = AnalyzeReads(d, opt, &exact);
    bytes = exact.bytes;
    reread_bytes = exact.reread_bytes;
    requests = exact.requests;
  }
  std::sort(sizes.begin(), sizes.end());
  const double median = sizes.empty() ? 0 : double(sizes[sizes.size() / 2]);
  // Rates over the reading window (first to last open), not the start-up.
  double first = 0, last = 0;
  for (size_t i = 0; i < read.size(); ++i) {
    first = i == 0 ? read[i]->first_s : std::min(first, read[i]->first_s);
    last = i == 0 ? read[i]->last_s : std::max(last, read[i]->last_s);
  }
  const double window = last - first;
  const double duration = std::max(window > 0.01 ? window : d.duration_s, 1e-3);
  const double sharded_requests = bytes > 0 ? std::ceil(bytes / opt.request_bytes) : 0;
  const double factor = sharded_requests > 0 ? requests / sharded_requests : 1;
  const double files = double(read.size());
  const double epochs = files > 0 ? read_opens / files : 0;

  json j = {
      {"tool", "strata profile"},
      {"command", d.command},
      {"paths", d.paths},
      {"duration_s", d.duration_s},
      {"reading_window_s", duration},
      {"exit_code", d.exit_code},
      {"interrupted", d.interrupted},
      {"files", read.size()},
      {"files_opened_not_read", opened_only},
      {"files_written", written},
      {"unique_bytes", unique},
      {"bytes_read_estimate", bytes},
      {"opens", opens},
      {"read_opens", read_opens},
      {"read_events", read_events},
      {"opens_per_s", read_opens / duration},
      {"bytes_per_s_estimate", bytes / duration},
      {"median_size", median},
      {"mean_size", files > 0 ? unique / files : 0},
      {"reads_per_file", {{"mean", epochs}, {"max", max_reads}}},
      {"read_events_per_open", read_opens > 0 ? read_events / read_opens : 0},
      {"rereads",
       {{"opens", read_opens - files}, {"bytes", reread_bytes}, {"fraction", bytes > 0 ? reread_bytes / bytes : 0}}},
      {"size_histogram", json::array()},
      {"object_store",
       {{"requests", requests},
        {"requests_per_s", requests / duration},
        {"in_flight_at_100ms_first_byte", requests / duration * 0.1},
        {"requests_if_sharded", sharded_requests},
        {"request_bytes", opt.request_bytes},
        {"shard_bytes", opt.shard_bytes},
        {"fewer_requests_if_sharded", factor}}},
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
    j["bytes_read"] = bytes;
    j["reads"] = reads_json;
    j["io_wait_s"] = reads_json["io_wait_s"];
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
  for (const auto& [upper, count] : hist) j["size_histogram"].push_back({{"le", upper}, {"count", count}});

  auto verdict = [&](const std::string& what, const std::string& why) {
    j["verdicts"].push_back({{"verdict", what}, {"reason", why}});
  };
  if (read.empty()) {
    verdict("nothing to plan",
            "no file under the watched paths was read; check --path (the directories the job reads)");
  } else {
    if (files >= 16 && median < 4.0 * (1 << 20) && factor >= 4) {
      verdict("pack into shards", Count(files) + " files of median " + FormatBytes(median) + ", each read whole " +
                                      Printf("%.1f", epochs) + " time(s): pack them into " +
                                      FormatBytes(opt.shard_bytes) + " shards (`strata pack`) read in " +
                                      FormatBytes(opt.request_bytes) + " requests, expect " + Printf("%.0f", factor) +
                                      "x fewer requests (" + Count(requests) + " -> " + Count(sharded_requests) + ")");
    }
    if (bytes > 0 && reread_bytes / bytes >= 0.25) {
      verdict("cache locally", Printf("%.0f%%", 100 * reread_bytes / bytes) + " of the bytes read were read before (" +
                                   Printf("%.1f", epochs) + " reads per file): a local cache of " +
                                   FormatBytes(unique) +
                                   " (every file touched) serves them: the loader's shard cache, or `strata mount` "
                                   "with a disk cache");
    }
    const bool random = d.exact_reads && exact.random_share >= 0.5 && exact.median_read <= 256.0 * 1024;
    if (random) {
      verdict("block cache with small blocks, no read-ahead",
              Printf("%.0f%%", 100 * exact.random_share) + " of the reads are random, median read " +
                  FormatBytes(exact.median_read) + " inside files of median " + FormatBytes(median) +
                  ": read-ahead would fetch bytes nobody reads; `strata mount --block-size 1MiB` and a cache "
                  "holding the hot part of the " +
                  FormatBytes(unique) + " touched");
    }
    if (median >= 64.0 * (1 << 20) && !random) {
      std::string why = "median file " + FormatBytes(median) + ": stream with parallel ranged GETs of " +
                        FormatBytes(opt.request_bytes) + " (" + Printf("%.0f", requests) + " requests)";
      if (!d.exact_reads && read_opens > 0 && read_events / read_opens >= 64)
        why +=
            "; many reads per open: if they are at random offsets, a block cache with 1 MiB blocks and no "
            "read-ahead (`strata mount`)";
      verdict("large files: ranged reads", why);
    }
    if (j["verdicts"].empty()) {
      verdict("fine as is", Printf("%.1f", requests / duration) +
                                " requests/s against an object store, files of median " + FormatBytes(median) +
                                ", few re-reads: streaming from the bucket should keep up");
    }
  }
  std::vector<const FileRecord*> top = read;
  std::sort(top.begin(), top.end(), [](const FileRecord* a, const FileRecord* b) {
    return double(a->size) * double(a->read_opens) > double(b->size) * double(b->read_opens);
  });
  if (top.size() > 10) top.resize(10);
  for (const FileRecord* f : top)
    j["top_files"].push_back({{"path", f->path}, {"size", f->size}, {"reads", f->read_opens}});
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

}  // namespace strata::profile
