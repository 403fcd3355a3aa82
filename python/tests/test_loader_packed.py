"""StreamingDataLoader's default collate: whole batches collated in C++, moved from the workers in
reused shared-memory buffers (strata.streaming._PackedBatch), the same content as PyTorch's
default_collate of the sample dicts."""

import pytest
import torch
from torch.utils.data._utils.collate import default_collate

import strata
from strata import streaming
from conftest import NUM_SAMPLES

BATCH = 7


def reference(url, num_workers):
    """The batches of the per-sample path (sample dicts, collated by default_collate)."""
    ds = strata.StreamingDataset(url, seed=3)
    return list(strata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=num_workers, collate_fn=default_collate))


def assert_same(got, want, zero_copy=False):
    assert got.keys() == want.keys()
    assert got["__key__"] == want["__key__"]
    assert torch.equal(got["__index__"], want["__index__"]) and got["__index__"].dtype == torch.int64
    assert torch.equal(got["npy"], want["npy"]) and got["npy"].dtype == torch.float32
    assert torch.equal(got["json"]["i"], want["json"]["i"]) and got["json"]["name"] == want["json"]["name"]
    # Raw fields: bytes per sample, as default_collate gives them; with zero_copy a read-only
    # memoryview of the shared buffer, the same bytes.
    if zero_copy:
        assert all(isinstance(v, memoryview) and v.readonly for v in got["bin"])
    else:
        assert all(type(v) is bytes for v in got["bin"])
    assert [bytes(v) for v in got["bin"]] == want["bin"]


@pytest.mark.parametrize("zero_copy", [False, True])
@pytest.mark.parametrize("num_workers", [0, 1, 3])
def test_default_collate_matches_default_collate_of_samples_while_batches_are_held(dataset_url, num_workers,
                                                                                   zero_copy):
    want = reference(dataset_url, num_workers)
    ds = strata.StreamingDataset(dataset_url, seed=3)
    loader = strata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=num_workers, zero_copy=zero_copy)
    got = list(loader)  # every batch held: a buffer still viewed must never be reused under it
    assert len(got) == len(want) and loader.num_samples_yielded == NUM_SAMPLES
    for g, w in zip(got, want):
        assert_same(g, w, zero_copy)
    assert not streaming._RINGS  # the iteration's shared buffers are released with it


@pytest.mark.parametrize("zero_copy", [False, True])
def test_workers_reuse_their_buffers_once_the_main_process_lets_go(dataset_url, monkeypatch, zero_copy):
    slots = []
    unpack = streaming._PackedBatch.unpack

    def recording(self, *args, **kwargs):
        slots.append(self.slot)
        return unpack(self, *args, **kwargs)

    monkeypatch.setattr(streaming._PackedBatch, "unpack", recording)
    want = reference(dataset_url, 2)
    ds = strata.StreamingDataset(dataset_url, seed=3)
    n = 0
    for batch, w in zip(strata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=2, zero_copy=zero_copy), want):
        assert_same(batch, w, zero_copy)
        n += 1
        del batch  # the views go: the worker may overwrite the buffer with a later batch
    assert n == len(want) == len(slots) > 2 * streaming._RING_SLOTS
    assert all(s is not None and s[1] >= 0 for s in slots)  # every batch in a worker's ring, no one-off
    allocated = {(pid, slot, gen) for pid, slot, gen in slots}
    assert len(allocated) <= 2 * streaming._RING_SLOTS  # reused, not one buffer per batch


def test_transform_with_default_collate(dataset_url):
    def transform(s):
        return {"x": torch.from_numpy(s["npy"].copy()), "y": s["json"]["i"], "raw": bytes(s["bin"])}

    ds = strata.StreamingDataset(dataset_url, transform=transform, seed=5)
    loader = strata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=2)
    total = 0
    for batch in loader:
        assert (batch["x"][:, 0, 0].long() == batch["y"]).all()
        assert [len(r) for r in batch["raw"]] == [int(i) % 7 + 1 for i in batch["y"]]
        total += len(batch["y"])
    assert total == loader.num_samples_yielded == NUM_SAMPLES
    assert loader.batch_size == BATCH and not loader.drop_last and len(loader) == -(-NUM_SAMPLES // BATCH)


def test_resume_through_packed_batches(dataset_url):
    ds = strata.StreamingDataset(dataset_url, seed=6)
    loader = strata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=2)
    order = [int(i) for i in ds.epoch_order(0, streams=2)]
    seen = []
    for n, batch in enumerate(loader):
        seen.extend(int(i) for i in batch["__index__"])
        if n == 3:
            break
    state = loader.state_dict()
    assert state["samples_consumed"] == 4 * BATCH and seen == order[:4 * BATCH]
    resumed = strata.StreamingDataLoader(strata.StreamingDataset(dataset_url, seed=6), batch_size=BATCH, num_workers=3)
    resumed.load_state_dict(state)
    rest = [int(i) for b in resumed for i in b["__index__"]]
    assert rest == order[4 * BATCH:] and resumed.num_samples_yielded == NUM_SAMPLES - 4 * BATCH


def test_workers_share_the_ranks_budgets(dataset_url, monkeypatch):
    # Connections, decode threads and prefetch memory are the rank's: W workers get 1/W each, so
    # more workers never mean more requests in flight, threads or memory than one process uses.
    ds = strata.StreamingDataset(dataset_url, max_connections=64, decode_threads=4, prefetch_bytes=1 << 30)
    for workers in (2, 4, 8):
        share = streaming._worker_share(ds._options, workers)
        assert share["max_connections"] * workers <= 64 and share["max_connections"] >= 64 // workers
        assert share["prefetch_bytes"] * workers <= 1 << 30
        assert share["decode_threads"] == max(1, 4 // workers)
    # The default prefetch budget (4 x ram_cache) is split the same way, never below 64 MiB.
    share = streaming._worker_share(strata.StreamingDataset(dataset_url, ram_cache=256 << 20)._options, 4)
    assert share["prefetch_bytes"] == 256 << 20
    # ...and the split options are what a worker's dataset is opened with (recorded at the binding).
    opened = []
    real_open = streaming._strata._open_dataset

    def recording_open(url, opts):
        opened.append(opts)
        return real_open(url, opts)

    monkeypatch.setattr(streaming._strata, "_open_dataset", recording_open)
    ds._handle(4)
    assert opened and opened[-1]["num_workers"] == 4
    assert (opened[-1]["max_connections"], opened[-1]["decode_threads"], opened[-1]["prefetch_bytes"]) == (16, 1, 1 << 28)
    monkeypatch.undo()
    # Every sample once with 4 workers so configured.
    loader = strata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=4)
    assert sorted(i for b in loader for i in b["__index__"].tolist()) == list(range(NUM_SAMPLES))


def test_a_workers_raw_rows_go_to_the_ring_straight_from_the_shards(dataset_url):
    """A worker's handle (num_workers > 1) collates no buffer of its own for raw fields: its packed
    batch gives the rows as views of the shards' bytes, copied once into the ring, and they unpack
    to what the collated batch gives; other columns come collated as before."""
    ds = strata.StreamingDataset(dataset_url, seed=3, batch_size=BATCH, cache_dir=False)
    worker = ds._handle(2).iterate(0, 0, 0, ds.fingerprint, 1).next_batch(packed=True)
    plain = ds._handle(1).iterate(0, 0, 0, ds.fingerprint, 1).next_batch(packed=True)  # the same first batch
    assert worker["bin"][0] == "rows" and plain["bin"][0] == "raw"
    assert all(type(row) is memoryview for row in worker["bin"][1])
    got = streaming._PackedBatch.of(worker, streaming._Ring()).unpack()
    want = streaming._PackedBatch.of(plain, streaming._Ring()).unpack()
    assert [bytes(v) for v in got["bin"]] == [bytes(v) for v in want["bin"]]
    assert torch.equal(got["npy"], want["npy"]) and got["__key__"] == want["__key__"]
    in_process = streaming._PackedBatch.of(worker, None).unpack()  # no ring: the rows joined
    assert [bytes(v) for v in in_process["bin"]] == [bytes(v) for v in want["bin"]]
