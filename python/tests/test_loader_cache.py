"""The loader's shard cache from Python: DataLoader workers share downloads through the default
cache directory, a small cache_limit is kept while streaming, and ranks resume exactly."""

import fcntl
import gc
import os
import shutil
import subprocess
import tempfile

import pytest
from torch.utils.data import DataLoader, get_worker_info

import strata
from conftest import NUM_SAMPLES


def shard_files(path):
    return [e for e in os.scandir(path) if e.name.endswith(".shard")]


def shard_bytes_on_disk(path):
    """Bytes of the shard files present now; one evicted between listing and stat counts as gone."""
    total = 0
    for entry in shard_files(path):
        try:
            total += entry.stat().st_size
        except FileNotFoundError:
            pass
    return total


def fetches_per_worker(ds, num_workers):
    """Iterates an epoch with DataLoader workers; returns {worker: (shards fetched, from cache)}."""

    def note(sample):  # runs in the worker: its iterator's stats so far ride along with the sample
        st = ds.stats()
        return {"i": sample["__index__"], "w": get_worker_info().id, "fetched": st["shards_fetched"],
                "cached": st["shards_from_cache"]}

    ds.transform = note
    seen, last = [], {}
    for batch in DataLoader(ds, batch_size=5, num_workers=num_workers):
        seen.extend(int(i) for i in batch["i"])
        for w, f, c in zip(batch["w"].tolist(), batch["fetched"].tolist(), batch["cached"].tolist()):
            last[w] = (f, c)  # counters only grow: the last is the worker's total
    assert sorted(seen) == list(range(NUM_SAMPLES))
    return last


def test_workers_share_downloads_through_the_default_cache_dir(dataset_url):
    num_shards = strata.StreamingDataset(dataset_url, cache_dir=False)._handle(1).num_shards
    ds = strata.StreamingDataset(dataset_url, seed=3, shuffle_window=4, batch_size=5)
    path = ds.cache_dir
    assert os.path.dirname(os.path.dirname(path)) == tempfile.gettempdir()
    per_worker = fetches_per_worker(ds, 2)
    assert len(per_worker) == 2
    # Each worker read (nearly) every shard, but each shard came from the store once.
    assert sum(f for f, _ in per_worker.values()) == num_shards
    assert sum(c for _, c in per_worker.values()) > 0
    assert len(shard_files(path)) == num_shards
    del ds
    gc.collect()
    assert not os.path.exists(path)  # removed with its last dataset

    # RAM only (cache_dir=False): every worker downloads what it reads.
    ram = strata.StreamingDataset(dataset_url, seed=3, shuffle_window=4, batch_size=5, cache_dir=False)
    assert ram.cache_dir is None
    assert sum(f for f, _ in fetches_per_worker(ram, 2).values()) > num_shards


def test_a_workers_queued_shard_files_land_before_it_exits(dataset_url, tmp_path):
    """A DataLoader worker ends with os._exit: the shard files still queued behind its reader are
    written before it goes (their download locks go with it), so later workers read them."""
    cache = tmp_path / "cache"
    ds = strata.StreamingDataset(dataset_url, cache_dir=cache, seed=3, shuffle_window=4, batch_size=5)
    num_shards = ds._handle(1).num_shards
    held = {}

    def hold_the_disk(_):  # in the worker, its cache open: no file can be written while this is held
        ds._handle(1)
        held["budget"] = open(cache / "budget.lock", "a")
        fcntl.flock(held["budget"], fcntl.LOCK_EX)
        held["samples"] = 0

    def release_at_the_last_sample(sample):
        held["samples"] += 1
        if held["samples"] == NUM_SAMPLES:
            held["queued_then"] = len(shard_files(cache))  # every shard read, none written yet
            fcntl.flock(held["budget"], fcntl.LOCK_UN)
        return {"i": sample["__index__"], "files": held.get("queued_then", -1)}

    ds.transform = release_at_the_last_sample
    seen, files_at_the_end = [], None
    for batch in DataLoader(ds, batch_size=5, num_workers=1, worker_init_fn=hold_the_disk):
        seen.extend(int(i) for i in batch["i"])
        files_at_the_end = int(batch["files"][-1])
    assert sorted(seen) == list(range(NUM_SAMPLES))
    assert files_at_the_end == 0  # all were still queued when the worker's reading ended
    assert len(shard_files(cache)) == num_shards  # ... and all landed before it exited
    assert sum(f for f, _ in fetches_per_worker(ds, 2).values()) == 0  # the next workers fetch none


def test_default_cache_dir_refuses_a_root_others_can_write(dataset_url, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    root = tmp_path / f"strata-stream-{os.getuid()}"
    root.mkdir()
    root.chmod(0o777)  # as if another user had made it first, open to all
    with pytest.raises(PermissionError, match="not a private directory"):
        strata.StreamingDataset(dataset_url)
    root.chmod(0o700)
    ds = strata.StreamingDataset(dataset_url)
    assert os.path.dirname(ds.cache_dir) == str(root)


def test_small_cache_limit_is_kept_while_streaming(dataset_url, tmp_path):
    probe = strata.StreamingDataset(dataset_url, cache_dir=False)
    shard_bytes = max(os.path.getsize(p) for p in
                      (os.path.join(dataset_url[len("file://"):], n) for n in os.listdir(dataset_url[len("file://"):]))
                      if p.endswith(".tar"))
    limit = 3 * (shard_bytes + 512)  # three shard files with their headers, of >= 8 shards
    cache = tmp_path / "cache"
    ds = strata.StreamingDataset(dataset_url, cache_dir=cache, cache_limit=limit, ram_cache=0, shuffle_window=2,
                                 batch_size=10)
    for epoch in range(2):
        ds.set_epoch(epoch)
        seen = []
        for batch in ds.batches():
            seen.extend(int(i) for i in batch["__index__"])
            assert shard_bytes_on_disk(cache) <= limit
            assert len(shard_files(cache)) <= 3
        assert sorted(seen) == list(range(NUM_SAMPLES))
        # The disk keeps the three it admitted (the dataset is larger than it: the rest would only churn it);
        # every other shard comes back from the store (epoch 1's first ones while epoch 0 ended).
        stats = ds.stats()
        assert stats["shards_fetched"] + stats["shards_from_previous_epoch"] >= probe._handle(1).num_shards - 3
        assert epoch == 0 or ds.stats()["cache_not_admitted_no_reuse"] > 0
        ds._handle(1).flush_cache_writes()  # what is still queued lands (or is refused) now
    with pytest.raises(ValueError, match="shuffle window"):
        strata.StreamingDataset(dataset_url, cache_dir=cache, cache_limit=shard_bytes, shuffle_window=4)


def test_cache_free_space_is_left_on_a_small_file_system(dataset_url, tmp_path):
    """A real tmpfs of about the dataset's size under cache_dir: with cache_free_space="50%" half of it
    stays free while streaming; shards that do not fit are served, counted, not kept."""
    root = dataset_url[len("file://"):]
    dataset_bytes = sum(os.path.getsize(os.path.join(root, n)) for n in os.listdir(root) if n.endswith(".tar"))
    size = (dataset_bytes // (64 << 10) + 1) * (64 << 10)
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(small)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        ds = strata.StreamingDataset(dataset_url, cache_dir=small / "cache", cache_limit=1 << 40, ram_cache=0,
                                     cache_free_space="50%", batch_size=10)
        for epoch in range(2):
            ds.set_epoch(epoch)
            seen = []
            for batch in ds.batches():
                seen.extend(int(i) for i in batch["__index__"])
                assert shutil.disk_usage(small).free >= size // 2
            assert sorted(seen) == list(range(NUM_SAMPLES))
            ds._handle(1).flush_cache_writes()  # the shards still queued are kept or refused now
            assert shutil.disk_usage(small).free >= size // 2
        # Counted in the shared cache's counters by the end of the second epoch: the first's refusals.
        stats = ds.stats()
        assert shard_files(small / "cache"), "the room above the floor is used"
        assert stats["cache_not_admitted_low_space"] > 0, stats
        assert stats["shards_from_cache"] > 0, stats  # what was kept is read from disk (ram_cache=0)
        del ds
        gc.collect()
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)


def test_cache_free_space_takes_a_share_or_a_size(dataset_url, tmp_path):
    for ok in ("0", "0.5%", "20GiB", 1 << 30):
        strata.StreamingDataset(dataset_url, cache_dir=tmp_path / "c", cache_free_space=ok)
    with pytest.raises(ValueError, match=r"cache_free_space.*more than 100%"):
        strata.StreamingDataset(dataset_url, cache_dir=tmp_path / "c", cache_free_space="150%")
    with pytest.raises(ValueError, match="cache_free_space must be"):
        strata.StreamingDataset(dataset_url, cache_dir=tmp_path / "c", cache_free_space=True)


@pytest.mark.parametrize("workers_after", [1, 3])
def test_two_ranks_resume_with_other_worker_counts(dataset_url, workers_after):
    world, batch, stop_after = 2, 5, 4  # 150 samples = 15 global batches of 10: no padding
    before, states = [], []
    for rank in range(world):
        ds = strata.StreamingDataset(dataset_url, seed=8, shuffle_window=3, world_size=world, rank=rank)
        loader = strata.StreamingDataLoader(ds, batch_size=batch, num_workers=2)
        for n, b in enumerate(loader):
            before.extend(int(i) for i in b["__index__"])
            if n + 1 == stop_after:
                break
        states.append(loader.state_dict())
    assert states[0] == states[1]  # every rank saves the same state
    assert states[0]["samples_consumed"] == world * batch * stop_after == len(before)
    after = []
    for rank in range(world):
        ds = strata.StreamingDataset(dataset_url, seed=8, shuffle_window=3, world_size=world, rank=rank)
        loader = strata.StreamingDataLoader(ds, batch_size=batch, num_workers=workers_after)
        loader.load_state_dict(states[rank])
        for b in loader:
            after.extend(int(i) for i in b["__index__"])
    assert not set(before) & set(after), "a sample was repeated"
    assert sorted(before + after) == list(range(NUM_SAMPLES)), "a sample was skipped"


@pytest.mark.parametrize("num_workers", [2, 3])
def test_loader_workers_each_fetch_only_their_run_of_shards(dataset_url, num_workers):
    """StreamingDataLoader deals each worker a run of shards: with RAM-only caches (each worker
    fetches what it reads itself), a worker's fetches are about 1/num_workers of the shards, not
    nearly all of them (a plain DataLoader's one-stream order, checked above), and the epoch is
    still every sample once, in epoch_order(streams=num_workers)."""
    num_shards = strata.StreamingDataset(dataset_url, cache_dir=False)._handle(1).num_shards
    ds = strata.StreamingDataset(dataset_url, seed=3, shuffle_window=4, cache_dir=False)

    def note(sample):
        return {"i": sample["__index__"], "w": get_worker_info().id, "fetched": ds.stats()["shards_fetched"]}

    ds.transform = note
    seen, last = [], {}
    for batch in strata.StreamingDataLoader(ds, batch_size=5, num_workers=num_workers, active_workers=num_workers):
        seen.extend(int(i) for i in batch["i"])
        for w, f in zip(batch["w"].tolist(), batch["fetched"].tolist()):
            last[w] = f
    assert seen == [int(i) for i in ds.epoch_order(0, streams=num_workers)]
    assert sorted(seen) == list(range(NUM_SAMPLES))
    assert len(last) == num_workers
    for w, fetched in last.items():
        assert fetched <= num_shards // num_workers + 2, (w, fetched, num_shards)
    assert sum(last.values()) <= num_shards + 2 * (num_workers - 1)


def test_surplus_workers_read_nothing_and_resume_stays_exact(dataset_url):
    """Workers beyond active_workers (default: the usable CPUs) end at once: the readers split the
    epoch as that many would (epoch_order(streams=active)), each fetching only its run of shards,
    and a resume with other counts gives exactly the rest."""
    ds = strata.StreamingDataset(dataset_url, seed=3, shuffle_window=4, cache_dir=False)

    def note(sample):
        return {"i": sample["__index__"], "w": get_worker_info().id}

    ds.transform = note
    loader = strata.StreamingDataLoader(ds, batch_size=5, num_workers=4, active_workers=2)
    seen, readers = [], set()
    for n, batch in enumerate(loader):
        seen.extend(int(i) for i in batch["i"])
        readers.update(batch["w"].tolist())
        if n + 1 == 7:
            break
    state = loader.state_dict()
    assert state["streams"] == 2 and state["samples_consumed"] == 35
    order = [int(i) for i in ds.epoch_order(0, streams=2)]
    assert seen == order[:35]
    assert readers == {0, 1}, "only the active workers read"
    ds2 = strata.StreamingDataset(dataset_url, seed=3, shuffle_window=4, cache_dir=False)
    resumed = strata.StreamingDataLoader(ds2, batch_size=5, num_workers=3, active_workers=3)
    resumed.load_state_dict(state)
    after = [int(i) for b in resumed for i in b["__index__"]]
    assert seen + after == order, "a sample was repeated or skipped"
    # The default: as many readers as this process may use CPUs (never more than num_workers).
    ds3 = strata.StreamingDataset(dataset_url, seed=3, cache_dir=False)
    default = strata.StreamingDataLoader(ds3, batch_size=5, num_workers=8)
    assert sorted(int(i) for b in default for i in b["__index__"]) == list(range(NUM_SAMPLES))
    assert ds3.state_dict(0)["streams"] == min(8, len(os.sched_getaffinity(0)))
    with pytest.raises(ValueError, match="active_workers"):
        strata.StreamingDataLoader(ds3, batch_size=5, num_workers=2, active_workers=0)


def test_a_state_of_the_earlier_order_of_several_workers_is_refused(dataset_url):
    """Format 1 states were saved when a worker's run of shards could be one shuffle window: with
    several streams that order is not this one, so resuming it would repeat and skip samples."""
    ds = strata.StreamingDataset(dataset_url, seed=3, shuffle_window=4, cache_dir=False)
    state = ds.state_dict(10)
    assert state["format"] == "strata.StreamingDataset/2"
    with pytest.raises(ValueError, match="earlier strata"):
        ds.load_state_dict(dict(state, format="strata.StreamingDataset/1", streams=2))
    ds.load_state_dict(dict(state, format="strata.StreamingDataset/1", streams=1))  # one stream: the same order
    assert [int(b["__index__"][0]) for b in ds.batches()][:1] == [int(ds.epoch_order(0)[10])]


def test_the_next_epochs_first_shards_are_fetched_while_this_one_ends(dataset_url):
    # No disk tier: epoch 1's first shards come from what the loader fetched while epoch 0 ended, or
    # without prefetch_next_epoch from the store (or a RAM tier other tests' datasets of this URL may
    # still share in this process); the samples are epoch 1's either way.
    orders = {}
    for ahead in (True, False):
        ds = strata.StreamingDataset(dataset_url, cache_dir=False, ram_cache=0, batch_size=10,
                                     prefetch_next_epoch=ahead)
        orders[ahead] = []
        for epoch in range(2):
            ds.set_epoch(epoch)
            orders[ahead].append([int(i) for batch in ds.batches() for i in batch["__index__"]])
        stats = ds.stats()
        assert (stats["shards_from_previous_epoch"] > 0) == ahead, stats
        # The same through PyTorch's own DataLoader in this process (as a training loop reads it).
        for epoch in (2, 3):
            ds.set_epoch(epoch)
            got = [int(i) for batch in DataLoader(ds, batch_size=10, num_workers=0) for i in batch["__index__"]]
            assert sorted(got) == list(range(NUM_SAMPLES))
            orders[ahead].append(got)
        assert (ds.stats()["shards_from_previous_epoch"] > 0) == ahead, ds.stats()
    assert orders[True] == orders[False]
    assert sorted(orders[True][1]) == list(range(NUM_SAMPLES)) and orders[True][1] != orders[True][0]
