"""Caches encrypted at rest from Python (cache_encryption_key_file=): StreamingDataset's shard
cache and strata.open's block cache. No data byte is on disk in clear, the sealed files are read
back with the key (shards not fetched again), and another key is an error rather than other
bytes. Only the key's path travels, never its bytes."""

import gc
import os
import pickle
import time

import pytest

import strata
from conftest import NUM_SAMPLES

# Bytes every sample's JSON field holds (conftest.write_samples): in any clear tar shard.
MARKER = b'"name": "sample '


def key_file(path, fill=None):
    path.write_bytes(os.urandom(32) if fill is None else bytes([fill]) * 32)
    path.chmod(0o600)
    return path


def shard_files(cache):
    return sorted(e.path for e in os.scandir(cache) if e.name.endswith(".shard"))


def read_all(ds):
    """Every sample's JSON field, in storage order (shuffle off), and the iteration's stats."""
    names = [s["json"]["name"] for s in ds]
    return names, ds.stats()


def wait_for_shards(cache, count):
    """The shard files, once `count` are there: written behind the reader, they land by the time
    the dataset's cache goes (a bound on the wait, not a sleep to win a race)."""
    gc.collect()
    deadline = time.monotonic() + 30
    while len(shard_files(cache)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return shard_files(cache)


def open_sealed(url, cache, key):
    return strata.StreamingDataset(url, cache_dir=cache, cache_encryption_key_file=key, shuffle=False,
                                   batch_size=5)


def test_sealed_cache_holds_no_clear_bytes_and_reads_back_with_its_key(dataset_url, tmp_path):
    want = [f"sample {i}" for i in range(NUM_SAMPLES)]
    # The control: without a key the same shard files hold the marker, so its absence below means
    # the files are sealed, not that the marker is not where it is looked for.
    clear = tmp_path / "clear"
    ds = strata.StreamingDataset(dataset_url, cache_dir=clear, shuffle=False, batch_size=5)
    num_shards = ds._handle(1).num_shards
    assert read_all(ds)[0] == want
    del ds
    files = wait_for_shards(clear, num_shards)
    assert len(files) == num_shards and all(MARKER in open(p, "rb").read() for p in files)

    key = key_file(tmp_path / "cache.key")
    cache = tmp_path / "sealed"
    ds = open_sealed(dataset_url, cache, key)
    names, stats = read_all(ds)
    assert names == want
    assert stats["shards_fetched"] == num_shards
    del ds
    files = wait_for_shards(cache, num_shards)
    assert len(files) == num_shards
    for path in files:
        assert MARKER not in open(path, "rb").read(), path
    for root, _, names_here in os.walk(cache):
        for name in names_here:
            assert MARKER not in open(os.path.join(root, name), "rb").read(), name

    # Reopened with the key: every shard loads from its sealed file, exact.
    ds = open_sealed(dataset_url, cache, key)
    names, stats = read_all(ds)
    assert names == want
    assert stats["shards_from_cache"] == num_shards
    assert stats["shards_fetched"] == 0


def test_another_key_or_none_is_an_error_not_other_bytes(dataset_url, tmp_path):
    key = key_file(tmp_path / "cache.key", fill=0xA5)
    cache = tmp_path / "sealed"
    ds = open_sealed(dataset_url, cache, key)
    num_shards = ds._handle(1).num_shards
    assert len(read_all(ds)[0]) == NUM_SAMPLES
    wrong = key_file(tmp_path / "wrong.key", fill=0x5A)
    with pytest.raises(PermissionError):  # while the first's (shared) cache is open
        open_sealed(dataset_url, cache, wrong)
    del ds
    assert len(wait_for_shards(cache, num_shards)) == num_shards
    with pytest.raises(PermissionError):  # and from the files alone
        open_sealed(dataset_url, cache, wrong)
    with pytest.raises(strata.Error):
        strata.StreamingDataset(dataset_url, cache_dir=cache, shuffle=False)  # sealed dir, no key
    # The right key still opens it: the refused opens changed nothing.
    ds = open_sealed(dataset_url, cache, key)
    names, stats = read_all(ds)
    assert len(names) == NUM_SAMPLES and stats["shards_fetched"] == 0


def test_a_bad_key_file_is_refused_by_path(dataset_url, tmp_path):
    short = tmp_path / "short.key"
    short.write_bytes(b"x" * 16)
    short.chmod(0o600)
    with pytest.raises(ValueError, match="32 bytes"):
        open_sealed(dataset_url, tmp_path / "c1", short)
    with pytest.raises(FileNotFoundError):
        open_sealed(dataset_url, tmp_path / "c2", tmp_path / "missing.key")


def test_only_the_key_path_travels(dataset_url, tmp_path):
    key = key_file(tmp_path / "cache.key", fill=0x3C)
    ds = open_sealed(dataset_url, tmp_path / "sealed", key)
    secret = key.read_bytes()
    # What goes to spawned DataLoader workers, and what a log line would show.
    shipped = pickle.dumps(ds)
    assert str(key).encode() in shipped
    assert secret not in shipped
    assert secret.hex() not in repr(ds.__dict__) and repr(secret) not in repr(ds.__dict__)


def test_a_key_without_a_cache_dir_is_refused(dataset_url, tmp_path):
    key = key_file(tmp_path / "cache.key")
    with pytest.raises(ValueError, match="cache_dir"):
        strata.StreamingDataset(dataset_url, cache_dir=False, cache_encryption_key_file=key)
    with pytest.raises(ValueError, match="cache_dir"):
        strata.open(str(tmp_path / "bucket"), cache_encryption_key_file=key)


def files_under(root):
    return [os.path.join(d, n) for d, _, names in os.walk(root) for n in names]


def test_block_cache_of_strata_open_is_sealed(tmp_path):
    bucket, cache = tmp_path / "bucket", tmp_path / "cache"
    data = b"PLAINTEXT-BLOCK-MARKER " * 40000  # ~900 KiB
    strata.open(str(bucket)).put("obj.bin", data)
    key = key_file(tmp_path / "cache.key")
    store = strata.open(str(bucket), cache_dir=cache, cache_encryption_key_file=key)
    assert bytes(store.get("obj.bin")) == data
    del store
    gc.collect()
    # The disk tier's blocks land behind the read: wait for them (a bound, not a sleep to win).
    deadline = time.monotonic() + 30
    while sum(os.path.getsize(p) for p in files_under(cache)) < len(data) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sum(os.path.getsize(p) for p in files_under(cache)) >= len(data)
    for path in files_under(cache):
        assert b"PLAINTEXT-BLOCK-MARKER" not in open(path, "rb").read(), path

    store = strata.open(str(bucket), cache_dir=cache, cache_encryption_key_file=key)
    assert bytes(store.get("obj.bin")) == data
    del store
    gc.collect()
    with pytest.raises(PermissionError):
        strata.open(str(bucket), cache_dir=cache, cache_encryption_key_file=key_file(tmp_path / "wrong.key"))
