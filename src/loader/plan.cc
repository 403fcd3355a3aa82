#include "loader/plan.h"

#include <algorithm>
#include <cstdio>

#include "base/hash.h"

namespace strata::loader {

uint64_t SplitMix64::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::Below(uint64_t n) {
  // Lemire: the high half of x*n is uniform once the low half's biased zone is rejected.
  unsigned __int128 m = static_cast<unsigned __int128>(Next()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(Next()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

void SeededShuffle(std::vector<uint64_t>& v, uint64_t seed) {
  SplitMix64 rng(seed);
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.Below(i)]);
}

uint64_t MixSeed(std::initializer_list<uint64_t> parts) {
  uint64_t h = 0x243f6a8885a308d3ull;
  for (uint64_t p : parts) {
    SplitMix64 m(h ^ p);
    h = m.Next();
  }
  return h;
}

std::string Fingerprint(const dataset::Manifest& index, const OrderSpec& spec) {
  std::string canon = "strata-loader-order-v2\n";  // v2: with shard content hashes
  canon += std::string(dataset::FormatName(index.format)) + "\n" + index.compression + "\n";
  for (size_t k = 0; k < index.shards.size(); ++k) {
    const auto& s = index.shards[k];
    canon += s.name + "\t" + std::to_string(s.size) + "\t" + std::to_string(s.samples);
    // Content hashes, where the index has them (manifest.json): a dataset
    // regenerated with the same layout is another dataset.
    if (!s.sha256.empty()) canon += "\t" + s.sha256;
    // Shards opened without an index: their version (a rewritten shard is another dataset).
    if (k < index.etags.size()) canon += "\tetag=" + index.etags[k];
    canon += "\n";
  }
  canon += "seed=" + std::to_string(spec.seed) + " shuffle=" + std::to_string(static_cast<int>(spec.shuffle));
  if (spec.shuffle == Shuffle::kWindow) canon += " window=" + std::to_string(spec.shuffle_window);
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XxHash3(canon)));
  return hex;
}

std::vector<uint64_t> ShardOrder(size_t shards, const OrderSpec& spec, const std::string& fingerprint, uint64_t epoch) {
  std::vector<uint64_t> order(shards);
  for (size_t i = 0; i < shards; ++i) order[i] = i;
  if (spec.shuffle != Shuffle::kNone) SeededShuffle(order, MixSeed({XxHash3(fingerprint), epoch, 1}));
  return order;
}

std::vector<uint64_t> EpochOrder(const std::vector<uint64_t>& shard_samples, const OrderSpec& spec,
                                 const std::string& fingerprint, uint64_t epoch, size_t streams, uint64_t chunk) {
  std::vector<uint64_t> first(shard_samples.size() + 1, 0);
  for (size_t k = 0; k < shard_samples.size(); ++k) first[k + 1] = first[k] + shard_samples[k];
  const uint64_t total = first.back();
  std::vector<uint64_t> shards = ShardOrder(shard_samples.size(), spec, fingerprint, epoch);
  chunk = std::max<uint64_t>(chunk, 1);
  streams = spec.shuffle == Shuffle::kNone ? 1 : std::max<size_t>(streams, 1);  // kNone stays storage order
  // Streams take turns by chunk, so stream s gets every streams-th of the
  // total/chunk whole chunks, the first (whole % streams) one more, and the
  // stream whose turn follows the last whole chunk the partial one: then each
  // chunk's global batch g comes from stream g % streams, to the end.
  const uint64_t whole = total / chunk, rounds = whole / streams, extra = whole % streams;
  std::vector<uint64_t> ends(streams);  // stream s: [ends[s-1], ends[s]) of the shard order's samples
  for (size_t s = 0; s < streams; ++s) {
    ends[s] = (s ? ends[s - 1] : 0) + chunk * (rounds + (s < extra ? 1 : 0)) + (s == extra ? total % chunk : 0);
  }
  // A segment is a run of one shard's samples inside one stream (a shard at a
  // stream boundary is split in two); windows are counted in segments.
  struct Segment {
    uint64_t begin, end;  // global sample indices
    size_t seq;           // position in the list of all segments (seeds its window)
  };
  std::vector<std::vector<Segment>> pieces(streams);
  uint64_t pos = 0;
  size_t seq = 0;
  for (uint64_t k : shards) {
    uint64_t i = first[k];
    while (i < first[k + 1]) {
      const size_t s = std::upper_bound(ends.begin(), ends.end(), pos) - ends.begin();
      const uint64_t n = std::min(first[k + 1] - i, ends[s] - pos);
      pieces[s].push_back({i, i + n, seq++});
      i += n, pos += n;
    }
  }
  const size_t window = spec.shuffle == Shuffle::kWindow ? std::max<size_t>(spec.shuffle_window, 1) : 1;
  const uint64_t fp = XxHash3(fingerprint);
  std::vector<std::vector<uint64_t>> orders(streams);
  for (size_t s = 0; s < streams; ++s) {
    std::vector<uint64_t>& order = orders[s];
    const std::vector<Segment>& segs = pieces[s];
    // With several streams, each has at least two windows: its first batch waits for its first
    // window's shards, and only a second one's fetch overlaps the consumer (2 workers x a window
    // of 8 of 16 shards fetched the whole dataset before their first batch). Rounded down: a run
    // of 8 shards and a few samples of a 9th (split at the run's end) takes windows of 4, whose
    // fetch fits the worker's connections (4 x 16 parts) at once, not 5 in two rounds.
    const size_t span = streams > 1 ? std::clamp<size_t>(segs.size() / 2, 1, window) : window;
    for (size_t w = 0; w < segs.size(); w += span) {
      size_t begin = order.size();
      for (size_t k = w; k < std::min(segs.size(), w + span); ++k) {
        for (uint64_t i = segs[k].begin; i < segs[k].end; ++i) order.push_back(i);
      }
      if (spec.shuffle == Shuffle::kWindow) {
        // Seeded by the window's first segment's position: with one stream, its first shard's.
        std::vector<uint64_t> part(order.begin() + begin, order.end());
        SeededShuffle(part, MixSeed({fp, epoch, 2, segs[w].seq}));
        std::copy(part.begin(), part.end(), order.begin() + begin);
      }
    }
  }
  if (streams == 1) return std::move(orders[0]);
  // Chunks of the streams in turn (only the last round is short).
  std::vector<uint64_t> out;
  out.reserve(total);
  for (uint64_t c = 0; out.size() < total; c += chunk) {
    for (const auto& o : orders) {
      if (c < o.size()) out.insert(out.end(), o.begin() + c, o.begin() + std::min<uint64_t>(c + chunk, o.size()));
    }
  }
  return out;
}

Status ValidatePartition(const PartitionSpec& spec) {
  if (spec.world_size == 0 || spec.num_workers == 0 || spec.batch_size == 0) {
    return InvalidArgumentError("world_size, num_workers and batch_size must be at least 1 (got " +
                                std::to_string(spec.world_size) + ", " + std::to_string(spec.num_workers) + ", " +
                                std::to_string(spec.batch_size) + ")");
  }
  if (spec.rank >= spec.world_size) {
    return InvalidArgumentError("rank " + std::to_string(spec.rank) + " is not below world_size " +
                                std::to_string(spec.world_size));
  }
  return Status::Ok();
}

std::vector<PositionRange> RankBatches(const PartitionSpec& spec, uint64_t consumed) {
  std::vector<PositionRange> out;
  if (consumed >= spec.total) return out;
  const uint64_t b = spec.batch_size, g = b * spec.world_size;
  const uint64_t remain = spec.total - consumed;
  const uint64_t full = remain / g, tail = remain % g;
  out.reserve(full + 1);
  for (uint64_t i = 0; i < full; ++i) {
    uint64_t begin = consumed + i * g + spec.rank * b;
    out.push_back({begin, begin + b});
  }
  if (tail == 0) return out;
  const uint64_t tail_begin = consumed + full * g;
  if (spec.even_batches) {
    // Every rank gets one more batch, or none: DDP's collectives need equal step counts.
    if (!spec.drop_last) {
      const uint64_t per_rank = (tail + spec.world_size - 1) / spec.world_size;
      out.push_back({tail_begin + spec.rank * per_rank, tail_begin + (spec.rank + 1) * per_rank});
    }
    return out;
  }
  uint64_t skip = spec.rank * b;
  if (tail > skip) {
    uint64_t len = std::min<uint64_t>(b, tail - skip);
    if (len == b || !spec.drop_last) out.push_back({tail_begin + skip, tail_begin + skip + len});
  }
  return out;
}

std::vector<PositionRange> WorkerBatches(const PartitionSpec& spec, uint64_t consumed, size_t worker) {
  std::vector<PositionRange> all = RankBatches(spec, consumed), out;
  for (size_t i = worker; i < all.size(); i += spec.num_workers) out.push_back(all[i]);
  return out;
}

uint64_t RankSampleCount(const PartitionSpec& spec, uint64_t consumed) {
  uint64_t n = 0;
  for (const auto& r : RankBatches(spec, consumed)) n += r.size();
  return n;
}

}  // namespace strata::loader
