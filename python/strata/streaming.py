"""The streaming loader for PyTorch: ``StreamingDataset`` and ``StreamingDataLoader``.

The epoch's order is a pure function of (dataset, seed, epoch, shuffle options) and is dealt to
ranks and dataloader workers in units of one batch, so a ``DataLoader`` (which takes batches from
its workers in turn) consumes a prefix of each rank's order. A resume state is therefore just the
number of samples consumed in the epoch; ``StreamingDataLoader`` counts them for you.
"""

import hashlib
import os
import shutil
import stat
import tempfile
import weakref

from torch.utils.data import DataLoader, IterableDataset, get_worker_info
from torch.utils.data._utils.collate import default_collate

from . import _strata
from ._distributed import rank_world
from ._transport import _RING_SLOTS  # noqa: F401 (tests read it here)
from ._transport import (_RINGS, _CountedBatch, _PackedBatch, _PackedTree, _process_ring, _raw_as_bytes, _Ring,
                         prime_malloc)
from .store import to_url

_SHUFFLE = {True: "window", False: "none", None: "none", "window": "window", "shards": "shards", "none": "none"}
_STATE_FORMAT = "strata.StreamingDataset/2"  # 2: each of several streams keeps at least two windows
_STATE_FORMAT_ONE_STREAM = "strata.StreamingDataset/1"  # the same order with one stream
_FORK_INHERITED = []  # C++ handles inherited from the parent process through fork(): never freed
_DEFAULT_CACHE_LIMIT = 16 << 30
_TEMP_DIRS = {}  # default cache dir -> datasets of this process using it


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _temp_cache_dir(url):
    """The default cache dir: one per (process, dataset URL) under the system temp dir.

    DataLoader workers inherit the path, so they share downloads through it (a per-shard lock:
    one worker downloads, the others read its verified file) instead of each fetching every
    shard. Removed when the process's last dataset using it goes; directories left by dead
    processes are removed when the next one is made.
    """
    root = os.path.join(tempfile.gettempdir(), f"strata-stream-{os.getuid()}")
    os.makedirs(root, mode=0o700, exist_ok=True)
    # The name is predictable: whoever made it first could plant shard files. Only ours will do.
    st = os.lstat(root)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(f"{root} is not a private directory of this user (owner uid {st.st_uid}, mode "
                              f"{stat.filemode(st.st_mode)}): remove it, or pass cache_dir= (or False for RAM only)")
    for name in os.listdir(root):
        pid = name.split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    path = os.path.join(root, f"{os.getpid()}-{hashlib.sha1(url.encode()).hexdigest()[:16]}")
    _TEMP_DIRS[path] = _TEMP_DIRS.get(path, 0) + 1
    return path


def _release_temp_cache_dir(path, owner, handles):
    if os.getpid() != owner:  # a forked worker's copy of the dataset: the parent owns the dir
        return
    _TEMP_DIRS[path] -= 1
    if _TEMP_DIRS[path] == 0:
        del _TEMP_DIRS[path]
        for handle in handles.values():
            handle.flush_cache_writes()  # shard files still being written behind the reader land first
        shutil.rmtree(path, ignore_errors=True)


def _usable_cpus():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _worker_share(opts, num_workers):
    """A DataLoader worker's part of the rank's budgets: connections, decode threads and prefetch
    memory are the rank's, shared by its workers, so more workers never mean more of them (on
    2 cores, 4 workers each with the whole budget spent 16% more CPU per sample than 2)."""
    prefetch = _strata._prefetch_budget(opts)
    return dict(max_connections=max(1, opts["max_connections"] // num_workers),
                decode_threads=max(1, opts["decode_threads"] // num_workers),
                prefetch_bytes=max(64 << 20, prefetch // num_workers))


class StreamingDataset(IterableDataset):
    """A packed dataset (``strata pack`` / ``strata.pack``) streamed from any URL.

    Shards as users have them work too, without repacking: a directory/prefix of WebDataset tar
    shards or TFRecord files, a brace pattern (``"s3://b/laion/{000000..000999}.tar"``) or a list
    of shard URLs. Their headers are scanned once at open (ranged reads, in parallel; cached by
    ETag) so sample counts, partitioning and resume are exact.

    Yields dicts ``{"__key__": str, "__index__": int, field: value}`` where a value is ``bytes``
    (raw fields), a read-only numpy array viewing strata's buffer without a copy (``.npy``
    fields), or the parsed JSON (``.json`` fields, TFRecord ``Example``s). ``decode`` maps a
    field name to "raw", "json", "npy", "example" or "auto" (by suffix); ``transform`` is
    applied to every sample dict in the worker.

    ``shuffle``: True or "window" (shard order shuffled, then samples across windows of
    ``shuffle_window`` shards), "shards" (shard order only) or False. Call ``set_epoch(e)``
    before each epoch (as with DistributedSampler); the order is a function of (seed, epoch).

    ``cache_dir``: where shards are kept while in use (bounded by ``cache_limit`` bytes). The
    default, None, is a directory under the system temp dir shared by this process's DataLoader
    workers (each shard is downloaded once, not once per worker), bounded by 16 GiB or half the
    free space there (divided by LOCAL_WORLD_SIZE ranks per node), and removed with the dataset;
    False keeps shards in RAM only (per process). ``cache_free_space``: what ``cache_dir`` leaves
    free on its file system, a share (``"2%"``, the default) or bytes (an int, or ``"20GiB"``): past
    it other files' shards and then this dataset's are evicted, and a shard that still does not fit
    is not kept (``stats()["cache_not_admitted_low_space"]``). ``cache_encryption_key_file``: the path of a
    32-byte key (``head -c 32 /dev/urandom > FILE; chmod 600 FILE``) that encrypts the shard files
    in ``cache_dir`` at rest (AES-256-GCM, as the CLI's ``--cache-encryption-key-file``); a
    directory sealed with one key opens with that key only (another is a PermissionError). Only the
    path is kept and handed to workers, never the key's bytes.

    ``prefetch_next_epoch`` (default True): once every shard of an epoch is requested, the first
    two batches' shards of the next epoch are fetched while this one ends, so the next epoch's
    first batch does not wait for the store (``stats()["shards_from_previous_epoch"]``). Not in
    StreamingDataLoader's workers, which end with their epoch.

    ``cache_group``: share shard fetches with the other nodes of a cache group
    (``"etcd://127.0.0.1:2379/train"`` or ``"static://host:port,..."``): each block is asked of its
    owner, so N nodes streaming one dataset read each byte from the bucket once. ``peer_listen``
    is this node's peer endpoint (``"host:port"``; a static list needs a fixed port),
    ``group_secret_file`` the group's secret (default: ``$STRATA_GROUP_SECRET``). DataLoader
    workers forked from the process read as clients of its member.

    ``batch_size`` must equal the DataLoader's for exact resume (StreamingDataLoader sets it).
    ``even_batches`` (default True): every rank gets the same number of batches (DDP needs it):
    the last partial global batch is padded with samples from the epoch start, at most
    world_size - 1 (as DistributedSampler), or dropped for all ranks with ``drop_last``.
    False: every sample exactly once, but ranks may differ by one batch.
    Rank and world size come from the arguments, torch.distributed or RANK / WORLD_SIZE.
    ``fetch_timeout`` (seconds, default 60; 0: no bound): a shard fetch the store does not answer
    within it fails (retryable, naming the shard) and ``retries`` / ``skip_corrupt`` apply,
    instead of waiting as long as the store client's own timeouts.
    ``verify``: what shard bytes fetched from the bucket are checked against when the dataset's
    manifest.json records it (strata pack writes both): ``"auto"`` (default) its crc32c, else its
    sha256; ``"sha256"`` the sha256 (about one core per 1.5 GB/s); ``"off"`` size and format
    framing only (a lagging replica's old shard of the same size then goes unnoticed).
    ``persistent_workers=True`` is not supported: workers would not see set_epoch/resume.
    """

    def __init__(self, url, *, cache_dir=None, cache_limit=None, ram_cache=256 << 20, shuffle=True, seed=0,
                 shuffle_window=8, batch_size=None, drop_last=False, even_batches=True, prefetch=0,
                 prefetch_batches=8, prefetch_bytes=0, max_connections=256, decode=None, transform=None, skip_corrupt=False, retries=2, decode_threads=2,
                 fetch_concurrency=16, world_size=None, rank=None, cache_group=None, peer_listen=None,
                 group_secret_file=None, fetch_timeout=60.0, verify="auto", cache_encryption_key_file=None,
                 cache_free_space="2%", prefetch_next_epoch=True):
        if shuffle not in _SHUFFLE:
            raise ValueError(f"shuffle must be True, False, 'window', 'shards' or 'none', not {shuffle!r}")
        if fetch_timeout is None or fetch_timeout < 0:
            raise ValueError(f"fetch_timeout must be >= 0 seconds (0: no bound), not {fetch_timeout!r}")
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, not {batch_size}")
        if cache_encryption_key_file and cache_dir is False:
            raise ValueError("cache_encryption_key_file encrypts cache_dir: not with cache_dir=False (RAM only)")
        if isinstance(cache_free_space, bool) or not isinstance(cache_free_space, (int, str)):
            raise ValueError(f"cache_free_space must be a share such as '2%' or a size (an int, or '20GiB'), "
                             f"not {cache_free_space!r}")
        if decode is not None and not isinstance(decode, dict):
            raise ValueError("decode must be a dict {field: 'raw'|'json'|'npy'|'example'|'auto'}")
        # One URL (a prefix, or a brace pattern such as ".../train-{000000..000099}.tar"), or a list of
        # shard URLs of one directory.
        self.url = [to_url(u) for u in url] if isinstance(url, (list, tuple)) else to_url(url)
        self.rank, self.world_size = rank_world(rank, world_size)
        self._batch_size_set = batch_size is not None
        self.batch_size = batch_size or 1
        self.drop_last = bool(drop_last)
        self.even_batches = bool(even_batches)
        self.transform = transform
        url_id = "\n".join(self.url) if isinstance(self.url, list) else self.url
        index_cache_dir = ""
        self._handles = {}
        if cache_dir is None:
            cache_dir = _temp_cache_dir(url_id)
            # Scans of shards without an index outlive this process's cache dir: keyed by ETag, so
            # the next process (or a spawned worker) does not rescan.
            index_cache_dir = os.path.join(os.path.dirname(cache_dir), "index")
            weakref.finalize(self, _release_temp_cache_dir, cache_dir, os.getpid(), self._handles)
            if cache_limit is None:
                # Half the free space, shared by the ranks on this node (each has its own dir).
                free = shutil.disk_usage(os.path.dirname(cache_dir)).free
                local_ranks = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1))
                cache_limit = min(_DEFAULT_CACHE_LIMIT, free // 2 // local_ranks)
        elif cache_dir is False:
            cache_dir = ""  # RAM only
        self.cache_dir = os.fspath(cache_dir) or None
        self._options = dict(
            cache_dir=os.fspath(cache_dir), index_cache_dir=index_cache_dir, cache_limit=int(_DEFAULT_CACHE_LIMIT if cache_limit is None else cache_limit),
            ram_cache=int(ram_cache), shuffle=_SHUFFLE[shuffle], seed=int(seed), shuffle_window=int(shuffle_window),
            prefetch=int(prefetch), prefetch_batches=int(prefetch_batches), prefetch_bytes=int(prefetch_bytes),
            max_connections=int(max_connections), decode=decode,
            skip_corrupt=bool(skip_corrupt), retries=int(retries), decode_threads=int(decode_threads),
            fetch_concurrency=int(fetch_concurrency), cache_group=cache_group or "",
            peer_listen=peer_listen or "127.0.0.1:0", group_secret_file=os.fspath(group_secret_file or ""),
            fetch_timeout=float(fetch_timeout), verify=verify,
            cache_encryption_key_file=os.fspath(cache_encryption_key_file or ""),
            cache_free_space=str(cache_free_space), prefetch_next_epoch=bool(prefetch_next_epoch))
        self.epoch = 0
        self._resume = None  # (epoch, samples_consumed, streams): where the next iteration of that epoch starts
        # The order's stream count (plan.h EpochOrder) per epoch, as this process last iterated or
        # resumed it: StreamingDataLoader deals each worker a run of shards, so its epoch order
        # depends on the worker count the epoch started with; a resume state records it.
        self._streams = {}
        self._deal_shards = False  # set while StreamingDataLoader starts its workers
        self._packed_batches = False  # likewise: iterate whole C++ batches (_PackedBatch), not samples
        self._active_workers = 0  # likewise: workers that read (0: all); the others end at once
        self._ring = None  # a worker's shared buffers for _PackedBatch
        self._yielded = None  # samples this process's own iteration yielded this epoch (None: none)
        self._yield_base = 0  # samples consumed when that iteration started
        self._last_iter = None
        self._last_stats = None
        self._fingerprint = self._handle(1).fingerprint  # open now: a bad URL or index fails here, not in a worker

    # -- the C++ dataset, one per (process, worker count, batch size) ---------------------------
    def _handle(self, num_workers):
        key = (os.getpid(), num_workers, self.batch_size, self.drop_last, self.even_batches)
        h = self._handles.get(key)
        if h is None:
            # Another handle of this dataset (a forked worker's parent's too): the new one takes its
            # index as it is, without the store's round trips (the listing, index probes).
            same = next(iter(self._handles.values()), None)
            if any(k[0] != key[0] for k in self._handles):
                # A forked worker: the parent's handles own threads that do not exist here, so
                # they must never be destroyed (or used) in this process.
                _FORK_INHERITED.extend(self._handles.values())
                self._handles = {}
            opts = dict(self._options, world_size=self.world_size, rank=self.rank, num_workers=num_workers,
                        batch_size=self.batch_size, drop_last=self.drop_last, even_batches=self.even_batches)
            if get_worker_info() is not None:
                # A DataLoader worker ends with its epoch (persistent_workers is not supported): the
                # next epoch's first shards, fetched while this one ends, would be fetched for nothing.
                opts["prefetch_next_epoch"] = False
            if num_workers > 1:  # a DataLoader worker's
                opts.update(_worker_share(opts, num_workers))
                # Its packed batches go to a shared buffer (_PackedBatch) row by row from the shards'
                # bytes: collating them into a buffer of their own first was a second copy.
                opts["batch_views"] = True
            h = self._handles[key] = _strata._open_dataset(self.url, dict(opts, same_index_as=same))
        return h

    def __getstate__(self):  # for spawned workers: the C++ handles stay behind
        state = dict(self.__dict__)
        state["_handles"] = {}
        state["_last_iter"] = None
        state["_ring"] = None
        return state

    @property
    def fingerprint(self):
        """Identifies the dataset and order options (seed, shuffle, window)."""
        if self._fingerprint is None:  # kept: a worker need not open the dataset a second time for it
            self._fingerprint = self._handle(1).fingerprint
        return self._fingerprint

    @property
    def size(self):
        """Samples in the whole dataset."""
        return self._handle(1).size

    @property
    def fields(self):
        return list(self._handle(1).fields)

    def __len__(self):
        """Samples this rank sees per epoch (all its workers together)."""
        return self._handle(1).rank_size(self.rank)

    def __getitem__(self, index):
        """Random access to global sample ``index`` (storage order), decoded."""
        return self._handle(1).get(int(index))

    def epoch_order(self, epoch=None, streams=None):
        """The epoch's global order of sample indices (numpy array).

        ``streams``: the order dealt to that many workers, each a run of the shards (what
        ``StreamingDataLoader(num_workers=streams)`` yields, in whole batches of the dataset's
        ``batch_size``, which the loader sets); default: as this process last iterated or resumed
        the epoch, else 1 (``ds.batches()``, ``for s in ds``, a plain DataLoader).
        """
        epoch = self.epoch if epoch is None else int(epoch)
        streams = self._streams.get(epoch, 1) if streams is None else int(streams)
        return self._handle(1).epoch_order(epoch, streams)

    def set_epoch(self, epoch):
        if int(epoch) != self.epoch:
            self._yielded = None
        self.epoch = int(epoch)

    # -- resume -------------------------------------------------------------------------------
    def _start(self):
        if self._resume is not None and self._resume[0] == self.epoch:
            return self._resume[1]
        return 0

    def _order_streams(self, num_workers):
        """The stream count of the order an iteration with ``num_workers`` workers follows now."""
        if self._resume is not None and self._resume[0] == self.epoch:
            return self._resume[2]  # the rest of a resumed epoch keeps its order, whatever the workers
        return num_workers if self._deal_shards else 1

    def state_dict(self, num_samples=None, from_beginning=True):
        """Resume state after ``num_samples`` samples of this epoch consumed by ALL ranks.

        ``from_beginning=False``: ``num_samples`` counts from where this run resumed the epoch.
        Without ``num_samples``: what this process's own iteration (``for s in ds``,
        ``ds.batches()``) yielded, times world_size; ValueError if it did not iterate (DataLoader
        workers did: use ``StreamingDataLoader.state_dict()``, which counts what it yielded).
        """
        if num_samples is None:
            if self._yielded is None:
                raise ValueError("state_dict() cannot tell how far this epoch got: this process did not iterate "
                                 "the dataset itself (DataLoader workers do not report back). Use "
                                 "strata.StreamingDataLoader(...).state_dict(), or pass num_samples (consumed by "
                                 "all ranks)")
            if self.world_size > 1 and self._yielded % self.batch_size:
                # Ranks take runs of batch_size positions in turn: only whole batches per rank
                # add up to a prefix of the epoch.
                raise ValueError(f"state_dict() with {self.world_size} ranks needs whole batches: this rank "
                                 f"yielded {self._yielded} samples, not a multiple of batch_size "
                                 f"{self.batch_size}; call it between batches, or pass num_samples")
            num_samples, from_beginning = self._yield_base + self._yielded * self.world_size, True
        consumed = int(num_samples) + (0 if from_beginning else self._start())
        streams = self._streams.get(self.epoch, self._order_streams(1))
        return {"format": _STATE_FORMAT, "epoch": self.epoch, "samples_consumed": min(consumed, self.size),
                "fingerprint": self.fingerprint, "streams": streams}

    def load_state_dict(self, state):
        """Resumes at ``state`` on the next iteration; ValueError for another dataset's state."""
        if not isinstance(state, dict) or state.get("format") not in (_STATE_FORMAT, _STATE_FORMAT_ONE_STREAM):
            raise ValueError(f"not a strata.StreamingDataset state: {state!r:.200}")
        if state["format"] == _STATE_FORMAT_ONE_STREAM and state.get("streams", 1) != 1:
            raise ValueError(f"this state was saved by an earlier strata, whose order with several DataLoader workers "
                             f"differs from this one's ({state.get('streams')} streams): resume it with that version, "
                             f"or start epoch {state.get('epoch')} over")
        if state.get("fingerprint") != self.fingerprint:
            raise ValueError(
                f"resume state is from another dataset or order options (state fingerprint "
                f"{state.get('fingerprint')}, this dataset {self.fingerprint} at {self.url}): "
                f"same index, seed, shuffle and shuffle_window are required")
        consumed = int(state["samples_consumed"])
        if consumed < 0 or consumed > self.size:
            raise ValueError(f"samples_consumed {consumed} is outside [0, {self.size}]")
        streams = state.get("streams", 1)  # states saved before streams: one
        if not isinstance(streams, int) or not 1 <= streams <= 4096:
            raise ValueError(f"streams {streams!r} is not an integer in [1, 4096]")
        self.epoch = int(state["epoch"])
        self._resume = (self.epoch, consumed, streams)
        self._streams[self.epoch] = streams
        self._yielded = None

    # -- iteration ----------------------------------------------------------------------------
    def _iterator(self, worker, num_workers, in_main_process):
        start, streams = self._start(), self._order_streams(num_workers)
        self._streams[self.epoch] = streams
        it = self._handle(num_workers).iterate(worker, self.epoch, start, self.fingerprint, streams)
        self._last_iter = it
        if in_main_process:
            self._yielded, self._yield_base = 0, start
        return it

    def _finish(self, it, completed, in_main_process, num_workers=1):
        self._last_stats = it.stats()
        self._last_iter = None
        it.close()
        if not in_main_process:
            # A DataLoader worker ends with os._exit (no destructors): the shard files still queued
            # behind its reader are written now, or their download locks would go with it and the
            # workers waiting on them would fetch those shards again (this also runs when the
            # worker's generator is closed early, as its loop returns).
            self._handle(num_workers).flush_cache_writes()
        if completed and in_main_process:
            self._resume = None  # the resumed epoch is done

    def __iter__(self):
        prime_malloc()  # sample dicts' bytes (a worker's, or this process's)
        info = get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        if info is not None and 0 < self._active_workers < num_workers:
            if worker >= self._active_workers:
                return iter(())  # a surplus worker: the DataLoader goes on with the others, in order
            num_workers = self._active_workers
        if self._packed_batches:  # read now: StreamingDataLoader sets it only while its iterator starts
            return self._packed(worker, num_workers, info)
        return self._samples(worker, num_workers, info)

    def _samples(self, worker, num_workers, info):
        it = self._iterator(worker, num_workers, info is None)
        completed = False
        try:
            while True:
                sample = it.next_sample()
                if sample is None:
                    completed = True
                    break
                if info is None:
                    self._yielded += 1
                yield self.transform(sample) if self.transform is not None else sample
        finally:
            self._finish(it, completed, info is None, num_workers)

    def _packed(self, worker, num_workers, info):
        """Whole batches for StreamingDataLoader's default collate, each a _PackedBatch.

        Collated in C++ (no dict per sample); in a worker, every raw field and fixed-shape array
        goes to the main process as one shared-memory tensor. With a transform: its samples,
        default-collated here.
        """
        it = self._iterator(worker, num_workers, info is None)
        completed = False
        try:
            while True:
                if self.transform is None:
                    batch = it.next_batch(packed=True)
                    if batch is not None and info is not None and self._ring is None:
                        self._ring = _Ring()
                    packed = None if batch is None else _PackedBatch.of(batch, self._ring if info else None)
                else:
                    samples = []
                    while len(samples) < self.batch_size:
                        sample = it.next_sample()
                        if sample is None:
                            break
                        samples.append(self.transform(sample))
                    packed = _PackedBatch.ready(default_collate(samples), len(samples)) if samples else None
                if packed is None:
                    completed = True
                    break
                if info is None:
                    self._yielded += packed.count
                yield packed
        finally:
            self._finish(it, completed, info is None, num_workers)

    def batches(self):
        """Iterates this rank's batches collated in C++, in this process (the fast path).

        Each batch is a dict: ``__key__`` (list), ``__index__`` (uint64 array), and per field a
        ``[B, ...]`` read-only numpy array when every item has the same size and dtype
        (fixed-shape .npy, fixed-size raw records as uint8 ``[B, nbytes]``), else a list (one
        memoryview / parsed JSON per sample; ragged .npy: one array per sample with its own
        dtype and shape, viewing the batch's buffer).
        """
        it = self._iterator(0, 1, True)
        completed = False
        try:
            while True:
                batch = it.next_batch()
                if batch is None:
                    completed = True
                    break
                self._yielded += len(batch["__key__"])
                yield batch
        finally:
            self._finish(it, completed, True)

    def stats(self):
        """Pipeline statistics of this process's current (else last) iterator, or None."""
        if self._last_iter is not None:
            return self._last_iter.stats()
        return self._last_stats


def _packed_passthrough(item):
    """StreamingDataLoader's collate_fn over _PackedBatch items (not auto-collated)."""
    return item


class _CountingCollate:
    """Wraps a collate_fn: returns the batch with len(samples) beside it (picklable for spawn)."""

    def __init__(self, collate_fn):
        self.collate_fn = collate_fn

    def __call__(self, samples):
        batch = self.collate_fn(samples)
        if get_worker_info() is not None:  # a worker: large values go through a reused shared buffer
            batch = _PackedTree.of(batch, _process_ring())
        return _CountedBatch(batch, len(samples))


class StreamingDataLoader(DataLoader):
    """A ``DataLoader`` that counts the samples it yields, for exact mid-epoch resume.

    ``state_dict()`` / ``load_state_dict()`` save and restore the position in the epoch (the
    number of workers may differ on resume). The dataset's batch_size is set to the loader's.
    The count comes from the collate step (how many samples it was given), never from the
    batch's contents, so any ``collate_fn`` works.

    ``zero_copy=True`` (default collate only): raw fields come as read-only ``memoryview``s of the
    worker's shared buffer instead of ``bytes`` copies (saves a copy per sample in this process).

    ``active_workers``: how many of the ``num_workers`` read. The default, None, is the number
    of CPUs this process may run on: the C++ pipeline already fetches and parses in parallel
    inside each worker, so a worker beyond the cores only adds a process competing for them (on
    2 cores, 4 reading workers were 6-8% slower than 2). The surplus start and end at once.
    Pass a larger number when the transform or collate_fn waits on something other than CPU.
    """

    def __init__(self, dataset, *args, zero_copy=False, active_workers=None, **kwargs):
        if active_workers is not None and (not isinstance(active_workers, int) or active_workers < 1):
            raise ValueError(f"active_workers must be a positive integer or None, not {active_workers!r}")
        batch_size = kwargs.get("batch_size", args[0] if args else 1)
        # The default collate over whole batches collated in C++ (_PackedBatch): no dict per sample,
        # and from workers no bytes pickled per sample. The DataLoader itself then sees one item
        # per batch (batch_size None); its batch_size and drop_last read as given.
        packed = (isinstance(dataset, StreamingDataset) and batch_size is not None and len(args) <= 1
                  and kwargs.get("collate_fn") is None and kwargs.get("batch_sampler") is None)
        drop_last = bool(kwargs.get("drop_last", False))
        if packed:
            kwargs.update(batch_size=None, drop_last=False, collate_fn=_packed_passthrough)
            args = ()
        if kwargs.get("persistent_workers"):
            raise ValueError("StreamingDataLoader does not support persistent_workers "
                             "(workers would miss set_epoch and resume)")
        if isinstance(dataset, StreamingDataset) and batch_size is not None:
            if not dataset._batch_size_set:
                dataset.batch_size = batch_size
            elif dataset.batch_size != batch_size:
                raise ValueError(f"dataset batch_size {dataset.batch_size} differs from the loader's "
                                 f"{batch_size}: exact resume needs them equal")
            if drop_last:
                dataset.drop_last = True  # only the last batch can be short: drop it in C++
        super().__init__(dataset, *args, **kwargs)
        self._packed = packed
        self._zero_copy = bool(zero_copy)
        self._active_limit = active_workers
        if packed:
            object.__setattr__(self, "batch_size", batch_size)  # DataLoader refuses setting it after init
            object.__setattr__(self, "drop_last", drop_last)
        elif self._auto_collation:  # collate_fn gets a list of samples: count them there
            self.collate_fn = _CountingCollate(self.collate_fn)
        self.num_samples_yielded = 0
        self._base = 0

    def __iter__(self):
        prime_malloc()  # the bytes the default collate makes of every batch's raw fields
        ds = self.dataset
        self.num_samples_yielded = 0
        self._base = 0
        if not isinstance(ds, StreamingDataset):
            yield from self._counted(super().__iter__())
            return
        self._base = ds._start()
        # Reading workers take runs of shards (the order's streams = the active workers the epoch
        # starts with), so each reads about 1/active of the shards instead of nearly all of them.
        # They see the flag as they start (forked or pickled in the iterator's constructor).
        ds._deal_shards = self.num_workers > 0
        ds._packed_batches = self._packed
        active = min(self.num_workers, self._active_limit or _usable_cpus())
        ds._active_workers = active
        ds._streams[ds.epoch] = ds._order_streams(max(1, active))
        try:
            it = super().__iter__()
        finally:
            ds._deal_shards = ds._packed_batches = False
            ds._active_workers = 0
        pids = {w.pid for w in getattr(it, "_workers", ())}
        try:
            yield from self._counted(it)
        finally:
            for key in [k for k in _RINGS if k[0] in pids]:  # this iteration's workers' shared buffers
                del _RINGS[key]
        ds._resume = None  # the epoch is complete: the next iteration starts it afresh

    def _counted(self, it):
        for batch in it:
            if type(batch) is _PackedBatch:
                batch, count = batch.unpack(), batch.count
            elif type(batch) is _CountedBatch:
                batch, count = batch
                if type(batch) is _PackedTree:
                    batch = batch.unpack()
            else:  # no auto-collation: collate_fn sees one sample at a time
                count = 1
            self.num_samples_yielded += count
            if self._packed and not self._zero_copy and isinstance(batch, dict):
                batch = _raw_as_bytes(batch)
            yield batch

    def state_dict(self):
        ds = self.dataset
        if not isinstance(ds, StreamingDataset):
            return None
        return ds.state_dict(self._base + self.num_samples_yielded * ds.world_size, from_beginning=True)

    def load_state_dict(self, state):
        self.dataset.load_state_dict(state)
