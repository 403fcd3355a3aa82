// The exact-read half of `strata profile`'s analysis: every read the strata
// mount served (model.h), in start order.
#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "profile/model.h"

namespace strata::profile {

using nlohmann::json;

namespace {

// Bytes of [begin, end) already in `seen` (disjoint, start -> end); then
// adds the range, merging neighbours.
uint64_t OverlapAndAdd(std::map<uint64_t, uint64_t>& seen, uint64_t begin, uint64_t end) {
  uint64_t overlap = 0;
  auto it = seen.upper_bound(begin);
  if (it != seen.begin()) --it;
  uint64_t lo = begin, hi = end;
  while (it != seen.end() && it->first <= end) {
    if (it->second < begin) {
      ++it;
      continue;
    }
    overlap += std::min(end, it->second) - std::max(begin, it->first);
    lo = std::min(lo, it->first);
    hi = std::max(hi, it->second);
    it = seen.erase(it);
  }
  seen[lo] = hi;
  return overlap;
}

// A round bucket width giving at most 60 buckets.
double BucketWidth(double duration) {
  for (double w : {0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0})
    if (duration / w <= 60) return w;
  return std::ceil(duration / 60 / 3600) * 3600;
}

struct PerFile {
  uint64_t random_reads = 0, sequential_bytes = 0;
  std::unordered_map<uint64_t, bool> sequential_opens;  // opens with a sequential read
  std::map<uint64_t, uint64_t> seen;
};

}  // namespace

json AnalyzeReads(const ProfileData& d, const AnalyzeOptions& opt, ReadTotals* totals) {
  std::vector<const ReadEvent*> reads;
  reads.reserve(d.reads.size());
  for (const auto& r : d.reads)
    if (r.file < d.files.size() && r.length > 0) reads.push_back(&r);
  // Log lines are appended when a read ends: concurrent reads arrive out of start order.
  std::stable_sort(reads.begin(), reads.end(), [](const ReadEvent* a, const ReadEvent* b) { return a->t_s < b->t_s; });

  std::unordered_map<uint64_t, uint64_t> end_of_open;  // where each open's last read ended
  std::unordered_map<uint32_t, PerFile> files;
  std::map<uint64_t, uint64_t> size_hist;
  std::vector<uint64_t> lengths;
  double bytes = 0, reread = 0, seq_reads = 0, seq_bytes = 0, wait = 0, last_t = 0;
  for (const ReadEvent* r : reads) {
    auto [it, fresh] = end_of_open.try_emplace(r->open, 0);
    const bool sequential = r->offset == it->second;
    it->second = r->offset + r->length;
    PerFile& f = files[r->file];
    if (sequential) {
      ++seq_reads;
      seq_bytes += double(r->length);
      f.sequential_bytes += r->length;
      f.sequential_opens[r->open] = true;
    } else {
      ++f.random_reads;
    }
    reread += double(OverlapAndAdd(f.seen, r->offset, r->offset + r->length));
    bytes += double(r->length);
    wait += r->wait_s;
    ++size_hist[BucketUpper(r->length)];
    lengths.push_back(r->length);
    last_t = std::max(last_t, r->t_s);
  }
  // Against an object store: a ranged GET per random read; sequential runs in
  // request-size parts, at least one per open.
  double requests = 0;
  for (const auto& [_, f] : files) {
    requests += double(f.random_reads) +
                std::max(double(f.sequential_opens.size()), std::ceil(double(f.sequential_bytes) / opt.request_bytes));
  }
  std::sort(lengths.begin(), lengths.end());
  const double n = double(reads.size());
  const double median = lengths.empty() ? 0 : double(lengths[lengths.size() / 2]);
  const double duration = std::max(d.duration_s, last_t);
  const double width = BucketWidth(duration);
  std::vector<double> timeline(size_t(std::floor(duration / width)) + 1, 0.0);
  for (const ReadEvent* r : reads) timeline[std::min(timeline.size() - 1, size_t(r->t_s / width))] += double(r->length);

  json j = {{"count", n},
            {"bytes", bytes},
            {"per_s", n / std::max(duration, 1e-3)},
            {"median_size", median},
            {"mean_size", n > 0 ? bytes / n : 0},
            {"sequential",
             {{"reads", seq_reads},
              {"bytes", seq_bytes},
              {"share", n > 0 ? seq_reads / n : 0},
              {"bytes_share", bytes > 0 ? seq_bytes / bytes : 0}}},
            {"random",
             {{"reads", n - seq_reads},
              {"bytes", bytes - seq_bytes},
              {"share", n > 0 ? 1 - seq_reads / n : 0},
              {"bytes_share", bytes > 0 ? 1 - seq_bytes / bytes : 0}}},
            {"reread_bytes", reread},
            {"io_wait_s", wait},
            {"size_histogram", json::array()},
            {"timeline", {{"bucket_s", width}, {"bytes", timeline}}}};
  for (const auto& [upper, count] : size_hist) j["size_histogram"].push_back({{"le", upper}, {"count", count}});
  if (totals) {
    totals->bytes = bytes;
    totals->reread_bytes = reread;
    totals->requests = requests;
    totals->random_share = n > 0 ? 1 - seq_reads / n : 0;
    totals->median_read = median;
  }
  return j;
}

}  // namespace strata::profile
