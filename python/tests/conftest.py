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


if os.environ.get("STRATA_PY_ASAN") == "1":
    # The sanitizer tree's ASan runtime (clang-14) takes no lock of its allocator around fork (LLVM
    # 18's does): a child forked while another thread of this process is inside malloc can wait
    # forever at its own first malloc (seen: a forked child stuck in operator new). Before each
    # fork, wait (bounded) until every other thread here sleeps, so none is amid an allocation: the
    # window left is the check's to the fork's. A thread busy past the bound is forked over (a test
    # that keeps threads busy across forks is skipped under ASan: test_loader_fork.py).
    import threading
    import time

    def _other_threads_running():
        me = str(threading.get_native_id())
        running = 0
        for tid in os.listdir("/proc/self/task"):
            if tid == me:
                continue
            try:
                with open(f"/proc/self/task/{tid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:  # the thread ended
                continue
            running += state in ("R", "D")
        return running

    def _let_threads_settle_before_fork():
        deadline = time.monotonic() + 10.0
        while _other_threads_running() and time.monotonic() < deadline:
            time.sleep(0.001)

    os.register_at_fork(before=_let_threads_settle_before_fork)
