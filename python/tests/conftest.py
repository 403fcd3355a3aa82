"""Shared fixtures: a small packed dataset, built once per session with strata.pack."""

import json
import os

import numpy as np
import pytest

import strata

NUM_SAMPLES = 150


def write_samples(root, n):
    os.makedirs(root, exist_ok=True)
    for i in range(n):
        key = os.path.join(root, f"{i:05d}")
        with open(key + ".json", "w") as f:
            json.dump({"i": i, "name": f"sample {i}"}, f)
        np.save(key + ".npy", np.full((2, 3), i, dtype=np.float32))
        with open(key + ".bin", "wb") as f:
            f.write(bytes([i % 256]) * (i % 7 + 1))


@pytest.fixture(scope="session")
def dataset_url(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_samples(str(root / "raw"), NUM_SAMPLES)
    # ~10 samples per shard: enough shards for windows, workers and ranks to matter.
    result = strata.pack(str(root / "raw"), str(root / "packed"), format="tar", shard_size=16 << 10)
    assert result["samples"] == NUM_SAMPLES
    assert result["shards"] >= 8, result
    return strata.to_url(str(root / "packed"))


@pytest.fixture(scope="session")
def other_dataset_url(tmp_path_factory):
    root = tmp_path_factory.mktemp("other")
    write_samples(str(root / "raw"), 40)
    strata.pack(str(root / "raw"), str(root / "packed"), format="tar", shard_size=16 << 10)
    return strata.to_url(str(root / "packed"))
