"""Shard sets as users have them (no index.json): WebDataset tars written by Python's tarfile and
TFRecord files from a reference writer here, streamed byte-exact, resumed exactly, and indexed,
inspected and verified by the strata CLI without touching the shards."""

import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import tarfile

import pytest

import strata

SHARDS = [7, 5, 9, 4]  # samples per shard
TOTAL = sum(SHARDS)


def key_of(i):
    return (f"dir/k{i % 2}/" if i % 3 == 0 else "") + f"{i:06d}"  # some keys carry directories


def payload(i):
    return hashlib.sha256(str(i).encode()).digest() * (1 + i % 40)


def write_tar_shards(root):
    os.makedirs(root, exist_ok=True)
    i = 0
    for k, n in enumerate(SHARDS):
        with tarfile.open(os.path.join(root, f"train-{k:06d}.tar"), "w", format=tarfile.USTAR_FORMAT) as tar:
            for _ in range(n):
                for ext, data in (("bin", payload(i)), ("cls", str(i % 10).encode()),
                                  ("meta.json", json.dumps({"i": i}).encode())):
                    info = tarfile.TarInfo(f"{key_of(i)}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                i += 1


# -- a reference TFRecord writer: masked CRC32C framing, tf.train.Example by hand --------------
def _crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(num, data):  # length-delimited field
    return _varint(num << 3 | 2) + _varint(len(data)) + data


def example(features):  # {name: bytes}
    entries = b""
    for name, value in sorted(features.items()):
        feature = _field(1, _field(1, value))  # Feature.bytes_list.value
        entries += _field(1, _field(1, name.encode()) + _field(2, feature))
    return _field(1, entries)


def write_tfrecord_shards(root):
    os.makedirs(root, exist_ok=True)
    i = 0
    for k, n in enumerate(SHARDS):
        with open(os.path.join(root, f"part-{k:05d}.tfrecord"), "wb") as f:
            for _ in range(n):
                rec = example({"__key__": f"{i:06d}".encode(), "bin": payload(i)})
                head = struct.pack("<Q", len(rec))
                f.write(head + struct.pack("<I", masked(head)) + rec + struct.pack("<I", masked(rec)))
                i += 1


@pytest.fixture(scope="module")
def tar_dir(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("wds"))
    write_tar_shards(root)
    return root


@pytest.fixture(scope="module")
def tfrecord_dir(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("tfr"))
    write_tfrecord_shards(root)
    return root


def index_of(sample):
    return int(sample["__key__"].rsplit("/", 1)[-1])


@pytest.mark.parametrize("shuffle", [False, True])
def test_tarfile_shards_stream_byte_exact(tar_dir, shuffle):
    ds = strata.StreamingDataset(tar_dir, shuffle=shuffle, seed=3, shuffle_window=2)
    assert ds.size == TOTAL and set(ds.fields) == {"bin", "cls", "meta.json"}
    samples = list(ds)
    assert len(samples) == TOTAL
    for s in samples:
        i = index_of(s)
        assert s["__key__"] == key_of(i)
        assert s["bin"] == payload(i) and s["cls"] == str(i % 10).encode() and s["meta.json"] == {"i": i}
    got = [index_of(s) for s in samples]
    assert sorted(got) == list(range(TOTAL))
    assert (got == list(range(TOTAL))) == (not shuffle)


@pytest.mark.parametrize("shuffle", [False, True])
def test_reference_tfrecords_stream_byte_exact(tfrecord_dir, shuffle):
    ds = strata.StreamingDataset(tfrecord_dir, shuffle=shuffle, seed=1, shuffle_window=2)
    samples = list(ds)
    assert sorted(int(s["__key__"]) for s in samples) == list(range(TOTAL))
    for s in samples:
        assert s["bin"] == payload(int(s["__key__"]))


def test_brace_pattern_and_list(tar_dir):
    ds = strata.StreamingDataset(os.path.join(tar_dir, "train-{000001..000002}.tar"), shuffle=False)
    assert [index_of(s) for s in ds] == list(range(SHARDS[0], SHARDS[0] + SHARDS[1] + SHARDS[2]))
    urls = [os.path.join(tar_dir, "train-000003.tar"), os.path.join(tar_dir, "train-000000.tar")]
    ds = strata.StreamingDataset(urls, shuffle=False)
    assert ds.size == SHARDS[3] + SHARDS[0]


@pytest.mark.parametrize("workers", [(0, 2), (2, 3)])
def test_resume_with_another_worker_count(tar_dir, workers):
    ds = strata.StreamingDataset(tar_dir, seed=5, shuffle_window=2)
    ds.set_epoch(1)
    loader = strata.StreamingDataLoader(ds, batch_size=4, num_workers=workers[0], collate_fn=lambda b: len(b))
    # The order the loader deals (one run of shards per worker, in batches of 4), kept on resume.
    order = [int(i) for i in ds.epoch_order(1, streams=max(1, workers[0]))]
    for n, _ in enumerate(loader):
        if n == 2:
            break
    state = loader.state_dict()
    assert state["samples_consumed"] == 12
    ds2 = strata.StreamingDataset(tar_dir, seed=5, shuffle_window=2)
    loader2 = strata.StreamingDataLoader(ds2, batch_size=4, num_workers=workers[1])
    loader2.load_state_dict(state)
    rest = [int(i) for b in loader2 for i in b["__index__"]]
    assert rest == order[12:]


def test_workers_read_the_dataset_this_process_opened(tmp_path):
    """DataLoader workers take the index the process opened (no listing or scan of their own): a
    shard added under the prefix afterwards is in neither's epoch. (A worker that listed again saw
    another dataset and refused the epoch's fingerprint.)"""
    root = str(tmp_path / "wds")
    write_tar_shards(root)
    ds = strata.StreamingDataset(root, seed=5, shuffle_window=2, cache_dir=False)
    shutil.copy(os.path.join(root, "train-000000.tar"), os.path.join(root, "train-000009.tar"))
    loader = strata.StreamingDataLoader(ds, batch_size=4, num_workers=2, active_workers=2)
    order = [int(i) for i in ds.epoch_order(0, streams=2)]  # dealt in whole batches: after the loader set them
    assert [int(i) for batch in loader for i in batch["__index__"]] == order
    assert len(order) == TOTAL


def strata_bin():
    path = os.path.join(os.environ.get("STRATA_BINARY_DIR", ""), "src", "cli", "strata")
    if not os.path.exists(path):
        pytest.skip("the strata binary is not built")
    return path


def test_cli_index_inspect_verify_without_touching_shards(tar_dir, tmp_path):
    root = str(tmp_path / "wds")
    shutil.copytree(tar_dir, root)
    before = {n: open(os.path.join(root, n), "rb").read() for n in os.listdir(root) if n.endswith(".tar")}
    exe = strata_bin()
    out = subprocess.run([exe, "inspect", root], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert f"samples:     {TOTAL}" in out.stdout and "index:       none" in out.stdout
    out = subprocess.run([exe, "verify", root], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "structure checks only" in out.stdout
    out = subprocess.run([exe, "index", root], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert os.path.exists(os.path.join(root, "index.json"))
    assert all(open(os.path.join(root, n), "rb").read() == b for n, b in before.items())  # shards untouched
    ds = strata.StreamingDataset(root, shuffle=False)  # now through index.json and the sidecars
    assert [index_of(s) for s in ds] == list(range(TOTAL))
    assert subprocess.run([exe, "index", root], capture_output=True).returncode != 0  # already indexed
    # A damaged header: verify names the shard (exit 5).
    bad = os.path.join(root, "train-000002.tar")
    data = bytearray(before["train-000002.tar"])
    data[0] ^= 0x5A
    open(bad, "wb").write(bytes(data))
    os.remove(os.path.join(root, "index.json"))
    out = subprocess.run([exe, "verify", root], capture_output=True, text=True)
    assert out.returncode == 5 and "train-000002.tar" in out.stdout + out.stderr


def test_damaged_shard_is_named_or_skipped(tar_dir, tmp_path):
    root = str(tmp_path / "bad")
    shutil.copytree(tar_dir, root)
    path = os.path.join(root, "train-000001.tar")
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2 + 100])  # not on a 512-byte boundary: mid-member
    with pytest.raises(strata.Corruption, match="train-000001.tar"):
        strata.StreamingDataset(root, cache_dir=False)
    ds = strata.StreamingDataset(root, skip_corrupt=True, cache_dir=False)
    assert ds.size == TOTAL - SHARDS[1]
    assert len(list(ds)) == TOTAL - SHARDS[1]
