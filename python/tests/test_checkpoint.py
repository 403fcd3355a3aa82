import collections
import glob
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import strata
import strata.checkpoint as sc

DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128]


def make_tensor(dtype, shape, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-100 if dtype != torch.uint8 else 0, 100, shape, generator=g).to(dtype)


def nested_state():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    shared = torch.ones(3)
    od = collections.OrderedDict([("w", torch.randn(2, 2)), ("b", torch.zeros(2))])
    od._metadata = {"": {"version": 2}}
    return {
        "tensors": {str(d): make_tensor(d, (3, 5), i) for i, d in enumerate(DTYPES)},
        "strided": base.t(),  # non-contiguous
        "sliced": base[:, ::2],
        "scalar": torch.tensor(3.5, dtype=torch.float64),
        "empty": torch.empty(0, 7, dtype=torch.int32),
        "param": torch.nn.Parameter(torch.randn(4)),
        "shared_a": shared, "shared_b": shared,
        "odict": od,
        "array": np.arange(10, dtype=np.uint16).reshape(2, 5),
        "lists": [1, 2.5, "three", None, True, b"\x00\xff", [torch.tensor([1, 2])], (4, (5, "six"))],
        "ints": {0: {"step": 10 ** 30, "nan": float("nan")}, (1, 2): "tuple key", -1: float("-inf")},
        "misc": {"dtype": torch.bfloat16, "device": torch.device("cpu"), "size": torch.Size([2, 3]),
                 "complex": 1 + 2j, "unicode": "héllo ✓", "ba": bytearray(b"xy")},
    }


def assert_same(a, b, path="root"):
    assert type(a) is type(b), f"{path}: {type(a)} vs {type(b)}"
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        assert torch.equal(a, b), path
        assert a.requires_grad == b.requires_grad, path
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and (a == b).all(), path
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys()), path
        for k in a:
            assert_same(a[k], b[k], f"{path}/{k}")
        assert getattr(a, "_metadata", None) == getattr(b, "_metadata", None), path
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}/{i}")
    elif isinstance(a, float) and a != a:
        assert b != b, path
    else:
        assert a == b, path


def test_roundtrip_all_dtypes_and_structure(tmp_path):
    state = nested_state()
    with sc.Checkpointer(tmp_path / "ckpt") as ckpt:
        stats = ckpt.save(1, state, metadata={"note": "first"})
        assert stats["bytes"] > 0
        loaded = ckpt.load()
    assert_same(state, loaded)
    assert loaded["shared_a"] is loaded["shared_b"]  # one tensor object saved once, restored shared
    assert isinstance(loaded["param"], torch.nn.Parameter)
    assert ckpt.metadata(1) == {"note": "first"}
    assert ckpt.list() == [1] and ckpt.latest() == 1
    assert ckpt.verify(1)["ok"]


def test_model_and_optimizer_resume(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(5, 4)).sum().backward()
    opt.step()
    ckpt = sc.Checkpointer(tmp_path / "ckpt")
    ckpt.save(7, {"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3})
    ckpt.close()

    model2 = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt2 = torch.optim.Adam(model2.parameters(), lr=0.5)
    state = sc.Checkpointer(tmp_path / "ckpt").load(7)
    model2.load_state_dict(state["model"])
    opt2.load_state_dict(state["optim"])
    assert_same(model.state_dict(), model2.state_dict())
    assert opt2.state_dict()["param_groups"][0]["lr"] == 0.01
    assert torch.equal(opt.state_dict()["state"][0]["exp_avg"], opt2.state_dict()["state"][0]["exp_avg"])


def test_async_save_returns_after_staging(tmp_path):
    weights = torch.randn(1 << 20)  # 4 MiB
    expected = weights.clone()
    with sc.Checkpointer(tmp_path / "ckpt", remote=strata.to_url(tmp_path / "remote")) as ckpt:
        fut = ckpt.save(1, {"w": weights}, async_save=True)
        weights.add_(1.0)  # the bytes were staged before save returned: this must not leak in
        stats = fut.result(timeout=120)
        assert fut.done() and stats["bytes"] >= expected.numel() * 4
        fut.wait_uploaded()
        assert torch.equal(ckpt.load(1)["w"], expected)
        assert torch.equal(ckpt.load(1, source="remote")["w"], expected)
        assert ckpt.list(source="remote") == [1]


def _save_two_steps(d, n):
    """Saves steps 1 and 2 of "w", n float32s of 1.0 and of 2.0; returns step 2's first shard."""
    with sc.Checkpointer(d) as ckpt:
        ckpt.save(1, {"w": torch.full((n,), 1.0)})
        ckpt.save(2, {"w": torch.full((n,), 2.0)})
    return sorted(glob.glob(str(d / "step-000000002" / "*.safetensors")))[0]


def test_latest_valid_skips_corrupt_newest(tmp_path):
    d = tmp_path / "ckpt"
    shard = _save_two_steps(d, 1000)
    with open(shard, "r+b") as f:  # flip one data byte: sizes and commit markers still look fine
        f.seek(os.path.getsize(shard) - 100)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    ckpt = sc.Checkpointer(d)
    report = ckpt.verify(2)
    assert not report["ok"]
    # The problem names the tensor and its shard (not just "w" somewhere in the text).
    assert {"file": os.path.basename(shard), "tensor": "w"} in [
        {"file": p["file"], "tensor": p["tensor"]} for p in report["problems"]], report["problems"]
    assert ckpt.latest(full=True) == 1 and ckpt.latest() == 1
    with pytest.raises(strata.Corruption):
        ckpt.load(2)
    assert torch.equal(ckpt.load()["w"], torch.full((1000,), 1.0))  # newest valid


def test_latest_skips_zeroed_range_by_default(tmp_path):
    d = tmp_path / "ckpt"
    shard = _save_two_steps(d, 4096)
    with open(shard, "r+b") as f:  # zero 4 KiB of tensor data: size and markers unchanged
        f.seek(os.path.getsize(shard) - 8192)
        f.write(bytes(4096))
    ckpt = sc.Checkpointer(d)
    assert ckpt.latest() == 1  # every byte checked by default
    assert ckpt.latest(quick=True) == 2  # the opt-out only checks markers and sizes
    with pytest.raises(ValueError, match="level"):
        ckpt._local.latest("everything")


def test_refuses_unpicklable_objects(tmp_path):
    class Thing:
        pass

    with sc.Checkpointer(tmp_path / "ckpt") as ckpt:
        with pytest.raises(TypeError, match="opt/thing"):
            ckpt.save(1, {"opt": {"thing": Thing()}})
        assert ckpt.list() == []


def test_step_must_increase_and_missing_step(tmp_path):
    with sc.Checkpointer(tmp_path / "ckpt") as ckpt:
        ckpt.save(5, {"x": torch.zeros(1)})
        with pytest.raises(strata.Error):
            ckpt.save(5, {"x": torch.zeros(1)})
        with pytest.raises(strata.NotFound):
            ckpt.load(6)
    with pytest.raises(strata.NotFound):
        sc.Checkpointer(tmp_path / "empty").load()


def test_two_ranks_commit_together(tmp_path):
    d = tmp_path / "ckpt"
    with pytest.raises(ValueError, match="attempt="):  # no torch.distributed to agree on one
        sc.Checkpointer(d, rank=0, world_size=2).save(3, {"part": torch.zeros(1)})
    r0 = sc.Checkpointer(d, rank=0, world_size=2, attempt="run-1")
    r1 = sc.Checkpointer(d, rank=1, world_size=2, attempt="run-1")
    f1 = r1.save(3, {"part": torch.full((10,), 1.0), "rank": 1}, async_save=True)
    f0 = r0.save(3, {"part": torch.full((10,), 0.0), "rank": 0}, async_save=True)
    f0.result(timeout=120)
    f1.result(timeout=120)
    assert r0.latest() == 3
    # Both ranks stored the same names (as DDP replicas do); each loads its own part.
    names = [[t[0] for t in rank["tensors"]] for rank in strata._strata._open_location(str(d)).info(3)["ranks"]]
    assert names == [["part"], ["part"]]
    assert r0.load()["rank"] == 0 and torch.equal(r0.load()["part"], torch.full((10,), 0.0))
    assert r1.load()["rank"] == 1 and torch.equal(r1.load()["part"], torch.full((10,), 1.0))
    reader = sc.Checkpointer(d, rank=1, world_size=2)  # loading needs no attempt: nothing to agree on
    assert reader.latest() == 3 and reader.load()["rank"] == 1
    r0.close()
    r1.close()


_RANK_SCRIPT = r"""
import sys
import torch
import torch.distributed as dist
import strata.checkpoint as sc

rank, directory, init = int(sys.argv[1]), sys.argv[2], sys.argv[3]
dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
with sc.Checkpointer(directory) as ckpt:  # rank, world size and attempt from torch.distributed
    ckpt.save(4, {"part": torch.full((8,), float(rank))})
    print(ckpt._writer_args["attempt"])
dist.destroy_process_group()
"""


def test_ranks_agree_on_an_attempt_through_torch_distributed(tmp_path):
    script = tmp_path / "rank.py"
    script.write_text(_RANK_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), GLOO_SOCKET_IFNAME="lo")
    init = f"file://{tmp_path / 'pg'}"
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(tmp_path / "ckpt"), init], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
    try:
        outs = [p.communicate(timeout=240) for p in procs]
    finally:
        for p in procs:  # a hung rank must not outlive the test
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0], outs
    attempts = [out.strip().splitlines()[-1] for out, _ in outs]
    assert attempts[0] == attempts[1] and len(attempts[0]) == 32, attempts  # rank 0's UUID, on both ranks
    ckpt = sc.Checkpointer(tmp_path / "ckpt", rank=1, world_size=2, attempt="reader")
    assert ckpt.latest() == 4
    assert torch.equal(ckpt.load(4)["part"], torch.full((8,), 1.0))


def test_staging_bytes_and_save_stats(tmp_path):
    state = {"w": torch.randn(1 << 19), "b": torch.arange(1000), "a": np.ones(100, dtype=np.float32), "n": 3}
    state["w_again"] = state["w"]  # stored once, counted once
    assert sc.state_nbytes(state) == (1 << 19) * 4 + 1000 * 8 + 400
    with pytest.raises(ValueError, match="staging_bytes"):
        sc.Checkpointer(tmp_path / "bad", staging_bytes=-1)

    def check(stats, persisted=True):
        assert {"stall_s", "wait_s", "copy_s", "cold_staging", "persist_s", "upload_s", "bytes", "shards"} <= set(stats)
        assert isinstance(stats["cold_staging"], bool)
        # Staging figures are known when save() returns; bytes/shards once persisted.
        assert 0 <= stats["wait_s"] <= stats["stall_s"] and 0 <= stats["copy_s"] <= stats["stall_s"]
        if persisted:
            assert stats["bytes"] >= sc.state_nbytes(state) and stats["shards"] >= 1

    # Default: the first save maps its staging memory, the second reuses it.
    with sc.Checkpointer(tmp_path / "default") as ckpt:
        first, second = ckpt.save(1, state), ckpt.save(2, state)
    check(first)
    check(second)
    assert first["cold_staging"] and not second["cold_staging"]

    # With the state's size, the memory is ready before the first save.
    with sc.Checkpointer(tmp_path / "prefaulted", staging_bytes=sc.state_nbytes(state)) as ckpt:
        ckpt.wait_staging_ready()
        fut = ckpt.save(1, state, async_save=True)
        check(fut.stats(), persisted=False)
        stats = fut.result(timeout=120)
        check(stats)
        assert not stats["cold_staging"]
        assert torch.equal(ckpt.load(1)["w"], state["w"])


def test_retention_keeps_newest(tmp_path):
    with sc.Checkpointer(tmp_path / "ckpt", keep_local=2, policy="queue") as ckpt:
        futures = [ckpt.save(s, {"x": torch.tensor(s)}, async_save=True) for s in range(1, 5)]
        for f in futures:
            f.result(timeout=120)
    # Retention runs after each commit; close() waited for the writer's background work.
    ckpt = sc.Checkpointer(tmp_path / "ckpt")
    assert ckpt.list() == [3, 4]
    assert ckpt.load()["x"].item() == 4


def test_tiering_stats_metrics_and_backlog_options(tmp_path):
    remote = strata.to_url(tmp_path / "remote")
    with sc.Checkpointer(tmp_path / "ckpt", remote=remote) as ckpt:
        before = ckpt.stats()  # no writer yet: nothing known
        assert before["newest_local"] is None and before["pending_steps"] == 0
        for step in (1, 2, 3):
            fut = ckpt.save(step, {"w": torch.full((1000,), float(step))}, async_save=True)
            fut.wait_uploaded()
            assert fut.stats()["tiered"] and fut.stats()["backlog_wait_s"] >= 0
        ckpt.wait_for_uploads()
        stats = ckpt.stats()
        assert stats["newest_local"] == 3 and stats["newest_remote"] == 3
        assert stats["lag_steps"] == 0 and stats["lag_checkpoints"] == 0 and stats["lag_s"] == 0
        assert stats["pending_steps"] == 0 and stats["uploading"] is None and stats["uploaded"] == 3
        text = sc.Checkpointer.metrics_text()
        label = f'dir="{ckpt.dir}",rank="0"'
        assert f"strata_ckpt_uploads_total{{{label}}} 3\n" in text
        assert f"strata_ckpt_upload_lag_steps{{{label}}} 0\n" in text
        assert all(line.startswith(("strata_ckpt_", "# HELP strata_ckpt_", "# TYPE strata_ckpt_"))
                   for line in text.splitlines())
    for bad in ({"policy": "queue-ish"}, {"max_pending_steps": -1}, {"max_pending_bytes": "1G"}, {"max_queued": 0}):
        with pytest.raises(ValueError):
            sc.Checkpointer(tmp_path / "bad", remote=remote, **bad)
    # The old spelling: "queue" is "wait" with saves staged ahead (max_queued=2).
    with sc.Checkpointer(tmp_path / "q", remote=remote, policy="queue", keep_remote=5,
                         max_pending_steps=4, max_pending_bytes=1 << 30) as ckpt:
        assert ckpt._writer_args["policy"] == "wait" and ckpt._writer_args["max_queued"] == 2
        ckpt.save(10, {"w": torch.zeros(10)}, async_save=True).wait_uploaded()
