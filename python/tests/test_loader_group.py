"""StreamingDataset in a cache group from Python: three members (three nodes' datasets, here in
one process, each with its own peer endpoint and cache directory) stream the same dataset
byte-exact, and each shard lands on disk once in the whole group, at its owner."""

import os
import socket
import time

import strata
from conftest import NUM_SAMPLES


def free_loopback_ports(n):
    # All bound at once: a port closed and picked again could come back twice.
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def block_files(path):
    return [os.path.join(d, f) for d, _, files in os.walk(path) for f in files if f.endswith(".blk")]


def test_members_stream_byte_exact_and_each_shard_is_stored_once(dataset_url, tmp_path):
    num_shards = strata.StreamingDataset(dataset_url, cache_dir=False)._handle(1).num_shards
    secret = tmp_path / "group-secret"
    secret.write_text("a secret the three members share\n")
    secret.chmod(0o600)  # a group secret file must be private
    peers = [f"127.0.0.1:{port}" for port in free_loopback_ports(3)]
    group = "static://" + ",".join(peers)
    # Every member joins before any reads, as the nodes of a job would.
    members = [strata.StreamingDataset(dataset_url, cache_dir=str(tmp_path / f"node{i}"), seed=i, shuffle_window=4,
                                       cache_group=group, peer_listen=peers[i], group_secret_file=str(secret))
               for i in range(3)]
    for ds in members:
        seen = {}
        for s in ds:
            i = s["json"]["i"]
            assert s["bin"] == bytes([i % 256]) * (i % 7 + 1), i
            seen[i] = seen.get(i, 0) + 1
        assert seen == {i: 1 for i in range(NUM_SAMPLES)}
    # A member keeps on disk only the blocks it owns: one copy of each shard in the whole group.
    # Disk writes go behind the reads: wait (bounded) for the last ones to land.
    deadline = time.monotonic() + 30
    while True:
        per_member = [len(block_files(tmp_path / f"node{i}" / "group")) for i in range(3)]
        if sum(per_member) >= num_shards or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert sum(per_member) == num_shards, per_member
