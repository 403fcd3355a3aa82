import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import strata
from conftest import NUM_SAMPLES

def indices(loader):
    out = []
    for batch in loader:
        out.extend(int(i) for i in batch["__index__"])
    return out


def test_sample_fields_and_zero_copy(dataset_url):
    ds = strata.StreamingDataset(dataset_url, shuffle=False)
    assert len(ds) == NUM_SAMPLES and ds.size == NUM_SAMPLES
    assert set(ds.fields) >= {"json", "npy", "bin"}
    samples = list(ds)
    assert [s["__index__"] for s in samples] == list(range(NUM_SAMPLES))
    s = samples[17]
    assert s["__key__"] == "00017"
    assert s["json"] == {"i": 17, "name": "sample 17"}  # parsed JSON
    assert s["bin"] == bytes([17]) * (17 % 7 + 1)  # raw bytes
    arr = s["npy"]
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float32 and arr.shape == (2, 3)
    assert (arr == 17).all()
    # Zero-copy: the array views a strata.Buffer (its base) and is read-only.
    assert isinstance(arr.base, strata.Buffer)
    assert not arr.flags.writeable and not arr.flags.owndata
    assert arr.base.address <= arr.ctypes.data < arr.base.address + len(arr.base)
    with pytest.raises(ValueError):
        arr[0, 0] = 1
    assert ds[17]["json"]["i"] == 17  # random access


def test_dataloader_two_workers_every_sample_once_in_epoch_order(dataset_url):
    ds = strata.StreamingDataset(dataset_url, shuffle=True, seed=3, shuffle_window=2, batch_size=8)
    loader = DataLoader(ds, batch_size=8, num_workers=2)
    seen = indices(loader)
    assert sorted(seen) == list(range(NUM_SAMPLES))
    # Batches are dealt to workers in turn and the DataLoader takes them in turn: the epoch order.
    assert seen == [int(i) for i in ds.epoch_order(0)]
    assert seen != list(range(NUM_SAMPLES))


def test_order_is_deterministic_per_seed_and_epoch(dataset_url):
    ds = strata.StreamingDataset(dataset_url, seed=5, batch_size=4)
    loader = DataLoader(ds, batch_size=4, num_workers=2)
    first = indices(loader)
    assert indices(loader) == first  # same (seed, epoch): same order
    ds.set_epoch(1)
    second = indices(loader)
    assert second != first and sorted(second) == sorted(first)
    other_seed = strata.StreamingDataset(dataset_url, seed=6, batch_size=4)
    assert indices(DataLoader(other_seed, batch_size=4, num_workers=2)) != first


def test_ranks_partition_the_epoch(dataset_url):
    parts = []
    for rank in range(3):
        ds = strata.StreamingDataset(dataset_url, seed=1, batch_size=5, world_size=3, rank=rank)
        got = indices(DataLoader(ds, batch_size=5, num_workers=2))
        assert len(got) == len(ds)
        parts.append(got)
    flat = [i for p in parts for i in p]
    assert sorted(flat) == list(range(NUM_SAMPLES))


@pytest.mark.parametrize("stop_after", [3, 10])
def test_resume_mid_epoch_with_more_workers(dataset_url, stop_after):
    ds = strata.StreamingDataset(dataset_url, seed=11, shuffle_window=3)
    loader = strata.StreamingDataLoader(ds, batch_size=6, num_workers=2)
    ds.set_epoch(2)
    before = []
    for n, batch in enumerate(loader):
        before.extend(int(i) for i in batch["__index__"])
        if n + 1 == stop_after:
            break
    state = loader.state_dict()
    assert state["epoch"] == 2 and state["samples_consumed"] == len(before) == stop_after * 6

    ds2 = strata.StreamingDataset(dataset_url, seed=11, shuffle_window=3)
    loader2 = strata.StreamingDataLoader(ds2, batch_size=6, num_workers=3)
    loader2.load_state_dict(state)
    after = indices(loader2)
    assert not set(before) & set(after), "a sample was repeated"
    assert sorted(before + after) == list(range(NUM_SAMPLES)), "a sample was skipped"
    assert before + after == [int(i) for i in ds2.epoch_order(2)]
    # The resumed epoch is complete: the next iteration starts the epoch afresh.
    assert len(indices(loader2)) == NUM_SAMPLES


def test_resume_twice(dataset_url):
    ds = strata.StreamingDataset(dataset_url, seed=2)
    loader = strata.StreamingDataLoader(ds, batch_size=4, num_workers=2)
    got = []
    for n, batch in enumerate(loader):
        got.extend(int(i) for i in batch["__index__"])
        if n == 4:
            break
    state = loader.state_dict()
    loader = strata.StreamingDataLoader(strata.StreamingDataset(dataset_url, seed=2), batch_size=4, num_workers=1)
    loader.load_state_dict(state)
    for n, batch in enumerate(loader):
        got.extend(int(i) for i in batch["__index__"])
        if n == 6:
            break
    state = loader.state_dict()
    assert state["samples_consumed"] == len(got)
    loader = strata.StreamingDataLoader(strata.StreamingDataset(dataset_url, seed=2), batch_size=4, num_workers=3)
    loader.load_state_dict(state)
    got.extend(indices(loader))
    assert got == [int(i) for i in loader.dataset.epoch_order(0)]


def test_foreign_state_is_refused(dataset_url, other_dataset_url):
    ds = strata.StreamingDataset(dataset_url, seed=1)
    state = ds.state_dict(10)
    with pytest.raises(ValueError, match="another dataset"):
        strata.StreamingDataset(dataset_url, seed=2).load_state_dict(state)
    with pytest.raises(ValueError, match="another dataset"):
        strata.StreamingDataset(other_dataset_url, seed=1).load_state_dict(state)
    with pytest.raises(ValueError):
        ds.load_state_dict({"epoch": 0})
    ds.load_state_dict(state)  # its own state is accepted


def test_batches_fast_path(dataset_url):
    ds = strata.StreamingDataset(dataset_url, shuffle=False, batch_size=10)
    batches = list(ds.batches())
    assert sum(len(b["__key__"]) for b in batches) == NUM_SAMPLES
    b = batches[1]
    arr = b["npy"]
    assert isinstance(arr, np.ndarray) and arr.shape == (10, 2, 3) and arr.dtype == np.float32
    assert (arr[:, 0, 0] == np.arange(10, 20)).all()
    assert not arr.flags.writeable
    assert [j["i"] for j in b["json"]] == list(range(10, 20))
    assert bytes(b["bin"][3]) == bytes([13]) * (13 % 7 + 1)
    stats = ds.stats()
    assert stats["samples"] == NUM_SAMPLES and stats["batches"] == len(batches)


def test_collates_into_tensors(dataset_url):
    ds = strata.StreamingDataset(dataset_url, transform=lambda s: {"x": torch.from_numpy(s["npy"].copy()),
                                                                   "y": s["json"]["i"]})
    loader = DataLoader(ds, batch_size=16, num_workers=2)
    batch = next(iter(loader))
    assert batch["x"].shape == (16, 2, 3) and batch["y"].shape == (16,)
    assert (batch["x"][:, 0, 0].long() == batch["y"]).all()


def test_bad_url_is_not_found(tmp_path):
    with pytest.raises(strata.NotFound):
        strata.StreamingDataset(str(tmp_path / "missing"))


def test_fetch_timeout_is_an_option(dataset_url):
    # The bound itself is tested against a hung store in C++ (LoaderHungStore.*).
    ds = strata.StreamingDataset(dataset_url, shuffle=False, fetch_timeout=5.5)
    assert [s["__index__"] for s in ds] == list(range(NUM_SAMPLES))
    assert len(list(strata.StreamingDataset(dataset_url, fetch_timeout=0))) == NUM_SAMPLES  # 0: unbounded
    with pytest.raises(ValueError, match="fetch_timeout"):
        strata.StreamingDataset(dataset_url, fetch_timeout=-1)


def test_arrays_outlive_the_dataset(dataset_url):
    import gc

    ds = strata.StreamingDataset(dataset_url, shuffle=False)
    arrays = [s["npy"] for s in ds]
    del ds
    gc.collect()
    assert all((a == i).all() for i, a in enumerate(arrays))  # the Buffers are kept alive by the arrays


def test_spawned_workers(dataset_url):
    ds = strata.StreamingDataset(dataset_url, seed=4, batch_size=10)
    loader = DataLoader(ds, batch_size=10, num_workers=2, multiprocessing_context="spawn")
    assert indices(loader) == [int(i) for i in ds.epoch_order(0)]


def test_corrupt_shard_is_named_or_skipped(dataset_url, tmp_path):
    import shutil

    src = dataset_url[len("file://"):]
    dst = tmp_path / "copy"
    shutil.copytree(src, dst)
    shards = sorted(p for p in dst.iterdir() if p.suffix == ".tar")
    victim = shards[2]
    victim.write_bytes(victim.read_bytes()[:700])  # truncated mid-sample
    ds = strata.StreamingDataset(str(dst), shuffle=False, retries=0)
    with pytest.raises(strata.Error, match=victim.name):
        list(ds)
    ds = strata.StreamingDataset(str(dst), shuffle=False, retries=0, skip_corrupt=True)
    got = [s["__index__"] for s in ds]
    assert 0 < len(got) < NUM_SAMPLES and len(set(got)) == len(got)
    assert ds.stats()["shards_skipped"] == 1


def test_verify_checks_the_manifests_crc32c_or_sha256_or_nothing(dataset_url, tmp_path):
    import json
    import shutil

    src = dataset_url[len("file://"):]
    dst = tmp_path / "copy"
    shutil.copytree(src, dst)
    manifest = json.loads((dst / "manifest.json").read_text())
    assert all(len(s["crc32c"]) == 8 and len(s["sha256"]) == 64 for s in manifest["shards"])
    # The recorded CRC-32C is the one S3 computes (x-amz-checksum-crc32c): checked with the AWS
    # CRT's own implementation (python3-awscrt, which the aws CLI depends on), not ours.
    from awscrt import checksums

    for shard in manifest["shards"]:
        assert shard["crc32c"] == f"{checksums.crc32c((dst / shard['name']).read_bytes()):08x}", shard["name"]
    # One payload byte changed in place: same size, tar framing intact (a stale replica's kind of change).
    victim = dst / manifest["shards"][1]["name"]
    data = bytearray(victim.read_bytes())
    data[512 + 3] ^= 0x20  # inside the first member's payload
    victim.write_bytes(bytes(data))
    for verify, alg in (("auto", "crc32c"), ("sha256", "sha256")):
        ds = strata.StreamingDataset(str(dst), shuffle=False, retries=0, verify=verify, cache_dir=False)
        with pytest.raises(strata.Error, match=f"{victim.name}.*{alg}"):
            list(ds)
    ds = strata.StreamingDataset(str(dst), shuffle=False, retries=0, verify="off", cache_dir=False)
    assert len(list(ds)) == NUM_SAMPLES  # nothing but sizes and framing checked: the change goes through
    with pytest.raises(ValueError, match="verify"):
        strata.StreamingDataset(str(dst), verify="md5")


def test_ragged_npy_batches_keep_each_rows_dtype_and_shape(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    arrays = []
    for i in range(10):
        a = np.arange(i + 1, dtype=np.int32) if i % 2 == 0 else np.full((2, i), i, dtype=np.float64, order="F")
        arrays.append(a)
        np.save(raw / f"{i:05d}.npy", a)
    strata.pack(str(raw), str(tmp_path / "packed"), format="tar", shard_size=1 << 10)
    ds = strata.StreamingDataset(str(tmp_path / "packed"), shuffle=False, batch_size=4)
    rows = []
    for batch in ds.batches():
        assert isinstance(batch["npy"], list)
        rows.extend(batch["npy"])
    assert len(rows) == 10
    for i, (got, want) in enumerate(zip(rows, arrays)):
        assert isinstance(got, np.ndarray), i
        assert got.dtype == want.dtype and got.shape == want.shape, (i, got.dtype, got.shape)
        assert (got == want).all(), i
        assert isinstance(got.base, strata.Buffer) and not got.flags.writeable  # a view, not a copy
    assert rows[3].flags.f_contiguous and not rows[3].flags.c_contiguous  # Fortran order kept


@pytest.mark.parametrize("world,batch", [(2, 4), (3, 7), (4, 7), (5, 3)])
def test_even_batches_every_rank_the_same_number_of_batches(dataset_url, world, batch):
    counts, seen = [], []
    for rank in range(world):
        ds = strata.StreamingDataset(dataset_url, seed=1, batch_size=batch, world_size=world, rank=rank)
        got = [[int(i) for i in b["__index__"]] for b in DataLoader(ds, batch_size=batch, num_workers=2)]
        counts.append(len(got))
        assert sum(map(len, got)) == len(ds)
        seen.extend(i for b in got for i in b)
    assert len(set(counts)) == 1, counts  # DDP's allreduce gets a partner at every step
    assert set(seen) == set(range(NUM_SAMPLES))
    padding = len(seen) - NUM_SAMPLES
    assert 0 <= padding < world
    order = [int(i) for i in ds.epoch_order(0)]
    assert sorted(seen) == sorted(list(range(NUM_SAMPLES)) + order[:padding])  # repeats of the epoch's start

    # drop_last drops the partial global batch everywhere; even_batches=False yields each sample once.
    dropped = [len(indices(strata.StreamingDataLoader(
        strata.StreamingDataset(dataset_url, seed=1, world_size=world, rank=r), batch_size=batch, drop_last=True)))
        for r in range(world)]
    assert dropped == [NUM_SAMPLES // (batch * world) * batch] * world
    once = [indices(DataLoader(strata.StreamingDataset(dataset_url, seed=1, batch_size=batch, world_size=world,
                                                       rank=r, even_batches=False), batch_size=batch))
            for r in range(world)]
    assert sorted(i for part in once for i in part) == list(range(NUM_SAMPLES))


def test_state_dict_counts_what_this_process_iterated(dataset_url):
    ds = strata.StreamingDataset(dataset_url, seed=7, world_size=1)
    with pytest.raises(ValueError, match="StreamingDataLoader"):
        ds.state_dict()  # nothing iterated here: no silent 0
    before = []
    for s in ds:
        before.append(s["__index__"])
        if len(before) == 25:
            break
    state = ds.state_dict()
    assert state["samples_consumed"] == 25
    ds2 = strata.StreamingDataset(dataset_url, seed=7)
    ds2.load_state_dict(state)
    after = [s["__index__"] for s in ds2]
    assert before + after == [int(i) for i in ds.epoch_order(0)]

    # batches() counts too; a DataLoader's workers cannot report back, so no guess is made.
    ds3 = strata.StreamingDataset(dataset_url, seed=7, batch_size=10)
    for n, _ in enumerate(ds3.batches()):
        if n == 2:
            break
    assert ds3.state_dict()["samples_consumed"] == 30
    ds3.set_epoch(1)
    with pytest.raises(ValueError):
        ds3.state_dict()
    ds4 = strata.StreamingDataset(dataset_url, seed=7, batch_size=10)
    next(iter(DataLoader(ds4, batch_size=10, num_workers=2)))
    with pytest.raises(ValueError, match="did not iterate"):
        ds4.state_dict()
    assert ds4.state_dict(40)["samples_consumed"] == 40  # explicit counts still work


def test_state_dict_with_ranks_counts_whole_batches_only(dataset_url):
    world, batch = 2, 4

    def rank_ds(r):
        return strata.StreamingDataset(dataset_url, seed=5, world_size=world, rank=r, batch_size=batch,
                                       even_batches=False)

    before, states = [], []
    for r in range(world):
        ds = rank_ds(r)
        it = iter(ds)
        before.extend(next(it)["__index__"] for _ in range(6))
        with pytest.raises(ValueError, match="whole batches"):
            ds.state_dict()  # mid-batch: the ranks' positions are not a prefix of the epoch
        before.extend(next(it)["__index__"] for _ in range(2))
        states.append(ds.state_dict())
    assert states[0] == states[1] and states[0]["samples_consumed"] == world * 8
    after = []
    for r in range(world):
        ds = rank_ds(r)
        ds.load_state_dict(states[r])
        after.extend(s["__index__"] for s in ds)
    assert sorted(before + after) == list(range(NUM_SAMPLES))  # nothing repeated, nothing skipped


def test_stats_count_skipped_samples_waits_and_rates(dataset_url, tmp_path):
    import shutil

    dst = tmp_path / "copy"
    shutil.copytree(dataset_url[len("file://"):], dst)
    shards = sorted(p for p in dst.iterdir() if p.suffix == ".tar")
    first = shards[0]
    first.write_bytes(first.read_bytes()[:700])  # fails to parse: retried after a backoff, then skipped
    victim = shards[3]
    data = victim.read_bytes()
    key = data[data.index(b'{"i": ') + 6:].split(b",")[0]
    victim.write_bytes(data.replace(b'{"i": ' + key + b",", b'{"i"# ' + key + b",", 1))  # one bad JSON field
    # ...in a shard written that way: its manifest sha256 matches (else the whole shard is refused
    # as a replaced one, before any sample is parsed); its CRC-32C from the AWS CRT, as S3 computes it.
    from awscrt import checksums

    manifest = json.loads((dst / "manifest.json").read_text())
    for shard in manifest["shards"]:
        if shard["name"] == victim.name:
            shard["sha256"] = hashlib.sha256(victim.read_bytes()).hexdigest()
            shard["crc32c"] = f"{checksums.crc32c(victim.read_bytes()):08x}"
    (dst / "manifest.json").write_text(json.dumps(manifest))
    ds = strata.StreamingDataset(str(dst), shuffle=False, retries=1, skip_corrupt=True)
    got = [s["__index__"] for s in ds]
    st = ds.stats()
    assert st["shards_skipped"] == 1 and st["shard_fetch_retries"] == 1
    assert st["samples_skipped"] == 1
    assert int(key) not in got
    assert st["samples"] == len(got)
    assert st["shards_parsed"] == len(shards) - 1 and st["shards_from_cache"] == 0
    # The consumer's waits are counted (the first unit comes after a retry's backoff). Not ">= the
    # backoff": the pipeline starts with the iterator, and a loaded machine can spend the backoff
    # before the consumer's first call (0.002 s once under ASan).
    assert 0 < st["consumer_wait_s"] <= st["elapsed_s"]
    assert st["samples_per_second"] == pytest.approx(st["samples"] / st["elapsed_s"], rel=1e-9)
    assert st["bytes_per_second"] == pytest.approx(st["bytes"] / st["elapsed_s"], rel=1e-9)
    assert st["bytes"] > 0
    # Without skip_corrupt the bad field fails the iteration, naming the sample and field.
    first.write_bytes((Path(dataset_url[len("file://"):]) / first.name).read_bytes())
    with pytest.raises(strata.Error, match=f"sample '{int(key):05d}' field 'json'"):
        list(strata.StreamingDataset(str(dst), shuffle=False, retries=0))
