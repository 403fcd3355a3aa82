"""A user's collate_fn in DataLoader workers: its tensors, numpy arrays and lists of bytes reach the
main process through the worker's reused shared buffers (strata._transport._PackedTree), the same
values, types and structure as without workers, not through fresh shared memory per batch."""

import collections

import numpy as np
import pytest
import torch

import strata
from strata import _transport, streaming
from conftest import NUM_SAMPLES

BATCH = 6
Pair = collections.namedtuple("Pair", ["tensor", "label"])


def collate(samples):
    """Every kind of value a collate_fn returns, nested."""
    x = torch.stack([torch.from_numpy(s["npy"].copy()) for s in samples])  # [B, 2, 3] float32
    return {
        "x": x,
        "x_t": x.transpose(1, 2),  # not contiguous
        "index": torch.tensor([s["__index__"] for s in samples]),
        "mask": torch.tensor([s["__index__"] % 2 == 0 for s in samples]),  # bool
        "first": x[0, 0, 0].clone(),  # 0-d
        "none": torch.empty(0, 4, dtype=torch.float64),  # no bytes
        "grad": torch.zeros(2, requires_grad=True),  # left to pickling
        "arr": np.stack([s["npy"] for s in samples]).astype(np.float64),
        "raw": [s["bin"] for s in samples],  # a list of bytes
        "pair": Pair(x.sum(dim=(1, 2)), "label"),
        "meta": (len(samples), "batch", [s["__key__"] for s in samples]),
    }


def assert_same(got, want):
    assert type(got) is type(want)
    if isinstance(want, torch.Tensor):
        assert got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)
        assert got.requires_grad == want.requires_grad
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    elif isinstance(want, dict):
        assert got.keys() == want.keys()
        for k in want:
            assert_same(got[k], want[k])
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    else:
        assert got == want


def batches(url, num_workers):
    ds = strata.StreamingDataset(url, seed=4)
    loader = strata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=num_workers, collate_fn=collate)
    out = list(loader)  # every batch held: a buffer still viewed is never reused under it
    assert loader.num_samples_yielded == NUM_SAMPLES
    return out


def reference(url, num_workers, monkeypatch):
    """The batches as torch's own worker transport (pickling, fresh shared memory) delivers them."""
    with monkeypatch.context() as m:
        m.setattr(_transport._PackedTree, "of", classmethod(lambda cls, batch, ring: batch))
        return batches(url, num_workers)


@pytest.mark.parametrize("num_workers", [1, 3])
def test_collate_fn_results_arrive_as_collated(dataset_url, num_workers, monkeypatch):
    want = reference(dataset_url, num_workers, monkeypatch)
    got = batches(dataset_url, num_workers)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same(g, w)
    assert not streaming._RINGS  # the iteration's shared buffers are released with it


def test_workers_reuse_their_buffers_and_tensors_are_writable(dataset_url, monkeypatch):
    slots = []
    unpack = _transport._PackedTree.unpack

    def recording(self):
        slots.append(self.slot)
        return unpack(self)

    want = reference(dataset_url, 2, monkeypatch)
    monkeypatch.setattr(_transport._PackedTree, "unpack", recording)
    ds = strata.StreamingDataset(dataset_url, seed=4)
    n = 0
    for batch, w in zip(strata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=2, collate_fn=collate), want):
        assert_same(batch, w)
        batch["x"] += 1  # in the shared buffer, this batch's own
        assert torch.equal(batch["x"], w["x"] + 1)
        n += 1
        del batch  # the views go: the worker may reuse the buffer for a later batch
    assert n == len(want) == len(slots) > 2 * streaming._RING_SLOTS
    assert all(s is not None and s[1] >= 0 for s in slots)  # every batch in a worker's ring, no one-off
    assert len(set(slots)) <= 2 * streaming._RING_SLOTS  # reused, not one buffer per batch


def test_values_not_for_the_ring_pass_through(dataset_url):
    def keys_only(samples):
        return [s["__key__"] for s in samples]

    ds = strata.StreamingDataset(dataset_url, seed=4)
    got = list(strata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=2, collate_fn=keys_only))
    assert sorted(k for b in got for k in b) == sorted(f"{i:05d}" for i in range(NUM_SAMPLES))


def indexed(samples):
    """A custom collate whose tensors all travel through the workers' rings."""
    return {"index": torch.tensor([int(s["__index__"]) for s in samples]),
            "npy": torch.stack([torch.from_numpy(s["npy"].copy()) for s in samples])}


def read_held(loader, stop=None):
    """Indices of the batches of `loader` (up to `stop`), checked after every batch was held: a ring
    slot reused under a live batch, or a sample delivered with another's payload, shows here."""
    held = []
    for n, batch in enumerate(loader):
        held.append(batch)
        if stop is not None and n + 1 == stop:
            break
    indices = []
    for batch in held:
        index = [int(i) for i in batch["__index__" if "__index__" in batch else "index"]]
        assert [int(v) for v in batch["npy"][:, 0, 0]] == index  # each sample's array is full of its index
        indices.extend(index)
    return indices


@pytest.mark.parametrize("collate_fn", [None, indexed], ids=["default_collate", "custom_collate"])
def test_four_workers_lose_no_sample_repeat_none_and_resume_exactly(dataset_url, collate_fn):
    kwargs = {} if collate_fn is None else {"collate_fn": collate_fn}
    ds = strata.StreamingDataset(dataset_url, seed=5, shuffle_window=2)
    ds.set_epoch(1)
    # All four read (active_workers; the default is one per CPU), each through its own ring.
    loader = strata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=4, active_workers=4, **kwargs)
    order = [int(i) for i in ds.epoch_order(1, streams=4)]  # dealt in whole batches: after the loader set them
    assert sorted(order) == list(range(NUM_SAMPLES))
    whole = read_held(loader)
    assert whole == order  # every sample once, in the order the workers are dealt

    ds.set_epoch(1)
    loader = strata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=4, active_workers=4, **kwargs)
    before = read_held(loader, stop=5)
    state = loader.state_dict()
    assert state["streams"] == 4 and state["samples_consumed"] == 5 * BATCH and before == order[:5 * BATCH]
    ds2 = strata.StreamingDataset(dataset_url, seed=5, shuffle_window=2)
    resumed = strata.StreamingDataLoader(ds2, batch_size=BATCH, num_workers=2, active_workers=2, **kwargs)
    resumed.load_state_dict(state)
    assert read_held(resumed) == order[5 * BATCH:]  # exactly the rest: none repeated, none skipped
    assert resumed.num_samples_yielded == NUM_SAMPLES - 5 * BATCH
