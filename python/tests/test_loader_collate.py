"""StreamingDataLoader counts samples where batches are collated, whatever collate_fn returns."""

import pytest
import torch

import strata
from conftest import NUM_SAMPLES

BATCH = 7  # NUM_SAMPLES % BATCH != 0: the epoch ends with a short batch


class Holder:  # a custom batch object: no __len__, nothing to guess a count from
    def __init__(self, indices):
        self.indices = indices


def keys_of(samples):
    return [s["__key__"] for s in samples]


def idx_of(samples):
    return [int(s["__index__"]) for s in samples]


# Each collate returns a different shape of batch, and how to read its sample indices back (None:
# nothing to read). The old guess got lists of strings (a key's length), tuples whose first item
# is not per-sample, ints (TypeError) and None wrong.
COLLATES = {
    "dict_without_key": (lambda s: {"idx": idx_of(s), "n": torch.tensor(len(s))}, lambda b: b["idx"]),
    "tuple_first_not_per_sample": (lambda s: (torch.tensor(1.5), idx_of(s)), lambda b: b[1]),
    "list_of_strings": (keys_of, lambda b: [int(k) for k in b]),
    "custom_object": (lambda s: Holder(idx_of(s)), lambda b: b.indices),
    "int": (lambda s: 42, None),
    "none": (lambda s: None, None),
}


def run(loader, extract, stop=None):
    """Iterates loader (up to `stop` batches); returns the indices read from the batches or None."""
    got = [] if extract else None
    for n, batch in enumerate(loader):
        if extract:
            got.extend(extract(batch))
        if stop is not None and n + 1 == stop:
            break
    return got


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("name", sorted(COLLATES))
def test_any_collate_resumes_exactly(dataset_url, name, num_workers):
    collate, extract = COLLATES[name]
    ds = strata.StreamingDataset(dataset_url, seed=4, shuffle_window=2)
    ds.set_epoch(1)
    loader = strata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=num_workers, collate_fn=collate)
    # With workers the order deals each a run of shards (streams = num_workers, in whole batches of
    # the loader's batch_size), and a resume keeps it.
    order = [int(i) for i in ds.epoch_order(1, streams=max(1, num_workers))]
    before = run(loader, extract, stop=5)
    state = loader.state_dict()
    assert state["epoch"] == 1 and state["samples_consumed"] == 5 * BATCH
    if extract:
        assert before == order[:5 * BATCH]

    # Resume with another worker count: exactly the remaining samples, read back through the
    # default-collated indices (no repeat, no skip), and counted exactly by the custom collate.
    ds2 = strata.StreamingDataset(dataset_url, seed=4, shuffle_window=2)
    plain = strata.StreamingDataLoader(ds2, batch_size=BATCH, num_workers=3 - num_workers // 2)
    plain.load_state_dict(state)
    after = []
    for batch in plain:
        after.extend(int(i) for i in batch["__index__"])
    assert after == order[5 * BATCH:]

    ds3 = strata.StreamingDataset(dataset_url, seed=4, shuffle_window=2)
    resumed = strata.StreamingDataLoader(ds3, batch_size=BATCH, num_workers=1 if num_workers else 2,
                                         collate_fn=collate)
    resumed.load_state_dict(state)
    rest = run(resumed, extract)
    assert resumed.num_samples_yielded == NUM_SAMPLES - 5 * BATCH  # the last, short batch counted right
    if extract:
        assert rest == order[5 * BATCH:]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_full_epoch_count_with_short_last_batch(dataset_url, num_workers):
    ds = strata.StreamingDataset(dataset_url, seed=1)
    loader = strata.StreamingDataLoader(ds, batch_size=BATCH, num_workers=num_workers, collate_fn=keys_of)
    keys = run(loader, lambda b: b)
    assert loader.num_samples_yielded == NUM_SAMPLES == len(keys) == len(set(keys))


def test_without_auto_collation_counts_one_per_item(dataset_url):
    ds = strata.StreamingDataset(dataset_url, shuffle=False)
    loader = strata.StreamingDataLoader(ds, batch_size=None, num_workers=0, collate_fn=lambda s: s["__key__"])
    got = run(loader, lambda k: [k], stop=9)
    assert loader.num_samples_yielded == 9 and got == [f"{i:05d}" for i in range(9)]
    assert loader.state_dict()["samples_consumed"] == 9
