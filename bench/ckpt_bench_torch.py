#!/usr/bin/python3
"""Baseline for bench/ckpt_bench: a synchronous torch.save of the same state.

Usage: ckpt_bench_torch.py OUT_FILE SIZE_BYTES...   (one float32 tensor per size)
Prints one JSON line: {"save_s": ..., "fsync_s": ..., "bytes": ...}. Only the
save is timed (tensor creation is not); fsync is timed separately.
"""
import json
import os
import sys
import time

import torch


def main():
    out = sys.argv[1]
    sizes = [int(s) for s in sys.argv[2:]]
    state = {}
    for i, n in enumerate(sizes):
        t = torch.empty(n // 4, dtype=torch.float32)
        t.fill_(float(i % 251))  # touch every page before timing
        state[f"layer{i}.weight"] = t
    total = sum(sizes)
    start = time.perf_counter()
    with open(out, "wb") as f:
        torch.save(state, f)
        f.flush()
        saved = time.perf_counter()
        os.fsync(f.fileno())
    synced = time.perf_counter()
    os.unlink(out)
    print(json.dumps({"save_s": saved - start, "fsync_s": synced - saved, "bytes": total,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
