// StreamingDataset: a packed dataset (dataset/) streamed for training.
//
// The epoch's global order is a pure function of (index, seed, epoch,
// shuffle options): shard order shuffled, then samples shuffled across a
// window of consecutive shards. The order is dealt out to (rank, worker) in
// units of one batch, so what a rank has consumed is always a prefix of its
// part of the order and a resume state is just "samples consumed this epoch"
// (as in MosaicML Streaming): resuming with another number of workers (or
// ranks) re-deals only the remainder, nothing repeated or skipped.
//
// Shards are read through a bounded local cache (RAM + optional disk
// directory): the shards the iterator will need next are fetched ahead with
// parallel ranged reads, and shards already consumed are the first evicted
// when the cache is full, so a dataset larger than the local disk streams.
//
// Thread safety: StreamingDataset is thread-safe and may back many
// iterators; one Iterator is used by one consumer thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/buffer.h"
#include "base/clock.h"
#include "base/status.h"
#include "base/units.h"
#include "cache/disk_tier.h"
#include "dataset/manifest.h"
#include "dataset/sample.h"
#include "io/file_system.h"
#include "object/object_store.h"

namespace strata::loader {

class StreamingDataset;

enum class Shuffle {
  kNone,    // storage order
  kShards,  // shard order shuffled, samples in storage order within a shard
  kWindow,  // shard order shuffled, then samples shuffled across windows of `shuffle_window` shards
};

// How a field's bytes are turned into a value. kAuto picks by field name
// suffix: ".npy" -> kNpy, ".json" -> kJson, in TFRecord shards int64/float
// features -> kExample (the feature as protobuf JSON), else kRaw. An explicit
// kExample on a tar/indexed field parses its bytes as a serialized Example.
enum class Decode { kAuto, kRaw, kJson, kNpy, kExample };

// What a shard's bytes fetched from the store are checked against, beyond
// their size and the format's own framing, when the dataset's manifest.json
// records it (strata pack writes both). A stale replica's old shard of the
// same size passes every other check.
//  - kAuto: the manifest's crc32c (12 GB/s here), else its sha256 (1.5 GB/s:
//    about one core for a 1.5 GB/s cold stream).
//  - kSha256: the sha256 (a forged shard cannot match it; with a signed
//    manifest checked by `strata verify --key`, tamper-evident).
//  - kOff: neither (size and framing only).
// Bytes served again under an ETag already verified are not hashed again.
enum class ShardVerify { kAuto, kSha256, kOff };
// "auto", "sha256" or "off" (the CLI's and Python's spelling); else InvalidArgument.
Result<ShardVerify> ParseShardVerify(std::string_view name);

struct StreamingOptions {
  // Local shard cache. Empty `cache_dir`: RAM only (`ram_cache_bytes`).
  // With share_cache, every dataset of a process opened on the same data
  // (store URL, prefix, index) and cache_dir shares one cache: its RAM tier,
  // fetches and parsed shards, so ranks run as threads fetch and parse each
  // shard once. The bounds are then per process: the largest any of them asked for.
  std::string cache_dir;
  // Shard sets without an index (WebDataset tar, TFRecord): where each
  // shard's scan is kept, keyed by its ETag, so later opens and processes do
  // not rescan it. Empty: `cache_dir`/index (and RAM only without cache_dir).
  std::string index_cache_dir;
  uint64_t cache_limit_bytes = 16ull << 30;
  // Free space cache_dir leaves on its file system (a share or bytes; cache/disk_tier.h).
  SpaceFloor cache_min_free = cache::kDefaultCacheFreeSpace;
  uint64_t ram_cache_bytes = 256ull << 20;
  bool share_cache = true;
  // A 32-byte key file (mode 0600): shard files in cache_dir, and the group
  // member's blocks in cache_dir/group, are encrypted at rest with it
  // (cache/block_sealer.h). Empty: clear.
  std::string cache_encryption_key_file;

  Shuffle shuffle = Shuffle::kWindow;
  uint64_t seed = 0;
  size_t shuffle_window = 8;  // shards per shuffle window (kWindow)

  // Partitioning. Every sample goes to exactly one (rank, worker) per epoch.
  size_t world_size = 1;
  size_t rank = 0;
  size_t num_workers = 1;  // data-loading workers per rank
  size_t batch_size = 1;   // per rank; the unit dealt to workers
  // The epoch's last, partial global batch (fewer than batch_size x world_size
  // samples). even_batches (default): every rank gets the same number of
  // batches, as DDP's collectives need: the partial global batch is split
  // evenly over the ranks and padded with samples from the epoch's start
  // (at most world_size - 1 repeats, as torch's DistributedSampler pads), or
  // with drop_last dropped for every rank. Without even_batches every sample
  // is yielded exactly once but ranks may differ by one batch; drop_last then
  // drops only the one partial rank batch. With world_size 1 both agree.
  bool drop_last = false;
  bool even_batches = true;

  // Pipeline. Prefetch is sized by demand (loader/prefetch.h): the iterator
  // measures the bytes/s its consumer takes and what one store request
  // delivers, and keeps demand x request time bytes in flight (Little's
  // law), within `prefetch_bytes` ahead of the consumer but never less than
  // `prefetch_batches` whole batches (batches larger than that budget: as
  // many as fit, at least two). Large shards are fetched as parallel
  // ranged reads; small ones by many shards in flight. The counts below are
  // upper bounds only.
  uint64_t prefetch_bytes = 0;  // memory budget ahead of the consumer; 0: 4 x ram_cache_bytes (>= 64 MiB)
  size_t prefetch_shards = 0;   // at most this many shards beyond the batch being decoded; 0: no bound
  size_t prefetch_batches = 8;  // bound of the queue to the consumer, and the prefetch floor (see above)
  size_t decode_threads = 2;    // per iterator
  // Once every shard of its epoch is requested, an iterator fetches the first
  // two batches' shards of its worker's next epoch (within its window), for the next
  // iterator to take (loader/epoch_head.h): an epoch's first batch then does
  // not wait for the store. They are held until taken, replaced or the
  // dataset goes; an iterator for another epoch releases them.
  bool prefetch_next_epoch = true;
  // Batches view the samples' bytes (Column::views) rather than copying
  // them into one buffer: no per-batch copy of what the shards already hold
  // (unet3d's 7 x 140 MiB per step). JSON columns are copied either way.
  bool batch_views = false;
  size_t fetch_concurrency = 16;  // ranged reads per shard fetch
  // Store requests in flight per iterator at most; the prefetch sizer opens only what demand x
  // request time needs. A 3.18 GB/s consumer (unet3d) over 25 MB/s, 30 ms connections and 8.7 MiB
  // parts keeps 3.18 GB/s x 0.4 s = 138 in flight, 207 with the sizer's headroom: 128 capped it.
  size_t max_connections = 256;
  uint64_t min_part_bytes = 4ull << 20;  // a ranged read is at least this (unless the shard is smaller)
  // Write cache_dir copies behind the reader (ShardCacheOptions::async_disk_writes): a cold
  // fetch is delivered without waiting for its file, a shard the disk cannot keep up with is
  // not kept on disk (Stats::cache_not_admitted_busy), and a file may appear after the
  // iterator that fetched it is done (until the dataset's cache goes). false: every fetch
  // writes its file before it is delivered.
  bool async_cache_writes = true;
  uint64_t cache_write_behind_bytes = 0;  // writes waiting at most; 0: max(ram_cache_bytes, 64 MiB)
  std::map<std::string, Decode> decode;   // per field; unlisted fields use kAuto
  // Another handle of this dataset (same URL) that this process, or the one it was forked from,
  // opened already: its index, shard scans and content hashes are taken as they are, with no
  // store request (a forked DataLoader worker's open was three serial round trips, 0.2 s at the
  // start of its epoch). Only its immutable index is read, never its store, cache or threads;
  // it is not kept. nullptr: read them from the store.
  std::shared_ptr<const StreamingDataset> same_index_as;
  ShardVerify verify = ShardVerify::kAuto;

  // Bad input: a shard that fails to fetch or parse is retried `retries`
  // times, then fails the iterator with an error naming it, unless
  // `skip_corrupt` (then it is skipped and counted in Stats).
  // Retry k waits about retry_backoff x 2^(k-1) (half of it random jitter, at
  // most 2 s), on `clock` if set (tests pass a FakeClock), else on the real
  // clock, cut short when the iterator is destroyed.
  int retries = 2;
  bool skip_corrupt = false;
  // A shard fetch from the store (all its ranged reads) that gets no answer
  // within this fails with a retryable DeadlineExceeded naming the shard
  // (then `retries` / `skip_corrupt` apply), rather than waiting as long as
  // the store's own timeouts; the hung reads finish in the background.
  // 0: no bound. As `strata serve --backend-timeout`.
  std::chrono::milliseconds fetch_timeout{60000};
  std::chrono::milliseconds retry_backoff{50};
  Clock* clock = nullptr;        // nullptr: RealClock()
  io::FileSystem* fs = nullptr;  // holds cache_dir; nullptr: DefaultFileSystem()

  // Cache group (group/group_store.h): with `cache_group` set, shard bytes
  // come through this process's member of the group: a block owned by
  // another member is asked of it (it serves it from its cache or fetches it
  // from the store once), a block this member owns is fetched here once and
  // served to the others. N nodes streaming one dataset then read each byte
  // from the store once. The blocks this member owns are kept in
  // cache_dir/group (bounded by cache_limit_bytes too; RAM only without
  // cache_dir). The shard cache and its checks (sizes, ETags, record CRCs,
  // disk copies' XXH3) are the same either way; index files are read directly.
  std::string cache_group;                  // etcd://HOST:PORT/GROUP or static://HOST:PORT,...; empty: none
  std::string peer_listen = "127.0.0.1:0";  // this member's peer endpoint (static lists need a fixed port)
  std::string group_secret;                 // empty: group_secret_file, else $STRATA_GROUP_SECRET
  std::string group_secret_file;
  std::chrono::milliseconds group_deadline{2000};  // a peer fetch takes at most this long
};

// The memory budget ahead of one iterator's consumer: prefetch_bytes, or by
// default 4 x ram_cache_bytes (at least 64 MiB).
uint64_t PrefetchBudgetBytes(const StreamingOptions& options);

// A decoded field. Exactly one of the members is meaningful, by `kind`.
struct Value {
  Decode kind = Decode::kRaw;
  Buffer bytes;                // kRaw: the field; kNpy: the array data (zero-copy slice)
  std::string dtype;           // kNpy: numpy descr, e.g. "<f4"
  std::vector<int64_t> shape;  // kNpy
  bool fortran_order = false;  // kNpy
  std::string json;            // kJson: the validated JSON text; kExample: the Example as JSON
};

struct DecodedSample {
  uint64_t index = 0;  // global sample index (storage order)
  std::string key;
  std::map<std::string, Value> fields;
};

// One .npy array's layout (the data is elsewhere).
struct ArrayMeta {
  std::string dtype;  // numpy descr, e.g. "<f4"
  std::vector<int64_t> shape;
  bool fortran_order = false;
  bool operator==(const ArrayMeta&) const = default;
};

// A batch with each field collated into one contiguous buffer: when every
// sample's field has the same size (fixed-shape arrays, fixed records),
// `data` is [batch x item] and `offsets` is empty; otherwise `offsets` has
// batch+1 entries into `data`.
struct Column {
  Decode kind = Decode::kRaw;
  Buffer data;
  std::vector<uint64_t> offsets;
  std::string dtype;           // kNpy when all samples agree (C order, same dtype and shape)
  std::vector<int64_t> shape;  // kNpy: per-sample shape when all samples agree
  // kNpy when the samples' arrays differ (ragged: shape, dtype or order):
  // each row's layout, its data at offsets[i]..offsets[i+1]; else empty.
  std::vector<ArrayMeta> rows;
  // StreamingOptions::batch_views: row i's bytes (a slice of its shard's
  // buffer, no copy), `data` empty; `offsets` as if `data` held the rows
  // back to back. Empty otherwise (and for JSON columns).
  std::vector<Buffer> views;
  uint64_t size() const;  // bytes of the column: data, or the views together
};

struct Batch {
  uint64_t epoch = 0;
  uint64_t first_position = 0;    // position in the epoch's global order of the batch's first sample
  std::vector<uint64_t> indices;  // global sample indices
  std::vector<std::string> keys;
  std::map<std::string, Column> columns;
};

// Resume state. `samples_consumed` counts samples of the epoch's global order
// consumed by all ranks (a prefix of it). `fingerprint` identifies the
// dataset and order options; a state with another fingerprint is refused.
// `streams` is the order's stream count (EpochOrder in plan.h: the worker
// count the epoch started with, so each worker reads its own shards); a
// resume keeps it for the rest of that epoch, whatever the workers now.
inline constexpr uint64_t kMaxStreams = 4096;  // a bound on State::streams (workers per rank)
struct State {
  uint64_t epoch = 0;
  uint64_t samples_consumed = 0;
  std::string fingerprint;
  uint64_t streams = 1;

  std::string ToJson() const;
  static Result<State> FromJson(std::string_view json);  // InvalidArgument on malformed input
};

struct Stats {
  uint64_t samples = 0;
  uint64_t bytes = 0;
  uint64_t batches = 0;
  uint64_t shards_fetched = 0;
  uint64_t shard_fetch_retries = 0;
  uint64_t shards_skipped = 0;
  uint64_t shards_from_cache = 0;           // shards served by the local cache (RAM or disk), not the store
  uint64_t shards_parsed = 0;               // shards this iterator parsed (others shared another's parse)
  uint64_t shards_from_previous_epoch = 0;  // fetched ahead by the previous epoch's iterator (prefetch_next_epoch)
  uint64_t samples_skipped = 0;             // skip_corrupt: samples whose fields failed to decode
  // The dataset's shard cache (shared by its iterators) since it opened: shards fetched but not
  // kept on disk, because the disk was behind the store (its write-behind queue full), or
  // because the dataset is larger than the disk bound and the disk is full of its shards.
  uint64_t cache_not_admitted_busy = 0;
  uint64_t cache_not_admitted_no_reuse = 0;
  uint64_t cache_not_admitted_low_space = 0;  // the disk was down to its free-space floor
  // ... disk hits read from the page cache (memory speed), and shards whose file was there but
  // fetched from the store (the disk's queued reads would have taken longer than the store).
  uint64_t cache_disk_hits_resident = 0;
  uint64_t cache_store_instead_of_disk = 0;
  uint64_t queue_depth = 0;                   // batches ready now
  std::chrono::nanoseconds consumer_wait{0};  // total time Next() blocked
  std::chrono::nanoseconds elapsed{0};        // since the iterator started
  double samples_per_second() const;
  double bytes_per_second() const;
};

// One (rank, worker)'s stream over one epoch, produced on background threads.
class Iterator {
 public:
  virtual ~Iterator() = default;
  // The next sample, std::nullopt at the end of this worker's part of the epoch.
  virtual Result<std::optional<DecodedSample>> NextSample() = 0;
  // The next batch of up to batch_size samples (a short final batch unless drop_last).
  virtual Result<std::optional<Batch>> NextBatch() = 0;
  virtual Stats stats() const = 0;
};

class StreamingDataset {
 public:
  // `url` is anything OpenStore accepts (s3://, file://, mem://, ...) naming
  // the dataset prefix: index.json or manifest.json under it, else the .tar
  // or .tfrecord shards directly under it (scanned at Open, in parallel, so
  // sample counts are known before partitioning). Its last component may be
  // a brace pattern as WebDataset writes them ("train-{000000..000099}.tar").
  static Result<std::shared_ptr<StreamingDataset>> Open(std::string_view url, StreamingOptions options = {});
  // A list of shard URLs in one directory of one store.
  static Result<std::shared_ptr<StreamingDataset>> Open(const std::vector<std::string>& urls,
                                                        StreamingOptions options = {});
  // `shards`: names under `prefix` (empty: the index, or every shard there).
  static Result<std::shared_ptr<StreamingDataset>> Open(object::ObjectStorePtr store, std::string prefix,
                                                        StreamingOptions options = {},
                                                        std::vector<std::string> shards = {});
  virtual ~StreamingDataset() = default;

  virtual const dataset::Manifest& index() const = 0;
  virtual const StreamingOptions& options() const = 0;
  virtual uint64_t size() const = 0;  // samples in the dataset
  // Samples the given rank sees this epoch (all its workers together; with
  // even_batches, padding included, so every rank's count is the same).
  virtual uint64_t RankSize(size_t rank) const = 0;
  // The epoch's global order (global sample indices), the pure function above.
  // `streams`: the order dealt in that many runs of shards (State::streams).
  virtual std::vector<uint64_t> EpochOrder(uint64_t epoch, uint64_t streams = 1) const = 0;
  virtual std::string fingerprint() const = 0;
  // The resume state after `samples_consumed` samples of `epoch` (all ranks)
  // of the order of `streams` (State::streams).
  State MakeState(uint64_t epoch, uint64_t samples_consumed, uint64_t streams = 1) const {
    return {epoch, samples_consumed, fingerprint(), streams};
  }

  // Iterates `worker`'s part of this rank's remainder of `state.epoch` after
  // `state.samples_consumed`. InvalidArgument (naming both) if the
  // state's fingerprint differs (another dataset or order).
  virtual Result<std::unique_ptr<Iterator>> Iterate(size_t worker, const State& state) = 0;
  // Random access to one decoded sample (global index).
  virtual Result<DecodedSample> Get(uint64_t index) = 0;
  // Waits until the shard cache's disk writes queued so far (async_cache_writes) are done, on
  // this thread if the writer is behind. For a process about to end without destructors (a
  // forked DataLoader worker exits with os._exit), whose queued writes would be lost.
  virtual void FlushCacheWrites() = 0;
};

}  // namespace strata::loader
