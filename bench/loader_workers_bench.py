#!/usr/bin/env python3
"""StreamingDataLoader(num_workers=W) against ds.batches() in one process, same cold dataset.

WebDataset tar shards (N samples of SIZE bytes, one raw field each) are written to a temp dir
and read through strata's in-process cloud emulation (file://...?emulate=ttfb=30ms,bw=25MB/s:
first-byte latency and a per-connection rate, as a bucket). Every run opens a fresh dataset,
so its shard cache (a new temp dir) is cold; the header scan at open is not timed. Prints
samples/s, MB/s and CPU time per sample (all processes) of each and the ratio workers /
batches(). On a shared 2-core machine the rates follow the load; CPU per sample does less.

  PYTHONPATH=build/python /usr/bin/python3 bench/loader_workers_bench.py [--samples 10000]
      [--size 102400] [--shards 16] [--batch 32] [--workers 1,2,4] [--emulate ttfb=30ms,bw=25MB/s]
      [--all-active]
"""

import argparse
import io
import os
import resource
import shlex
import sys
import tarfile
import tempfile
import time

import strata
from torch.utils.data._utils.collate import default_collate


def write_shards(root, samples, size, shards):
    per = (samples + shards - 1) // shards
    payload = os.urandom(size)
    n = 0
    for s in range(shards):
        with tarfile.open(os.path.join(root, f"train-{s:06d}.tar"), "w", format=tarfile.USTAR_FORMAT) as tar:
            for _ in range(min(per, samples - n)):
                info = tarfile.TarInfo(f"{n:08d}.bin")
                info.size = size
                tar.addfile(info, io.BytesIO(payload))
                n += 1


def cpu_seconds():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run(url, args, workers, per_sample=False):
    ds = strata.StreamingDataset(url, seed=1, batch_size=args.batch)
    ds.set_epoch(0)
    samples = nbytes = 0
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    if workers == 0:
        for batch in ds.batches():
            samples += len(batch["__key__"])
            nbytes += sum(len(v) for v in batch["bin"]) if isinstance(batch["bin"], list) else batch["bin"].nbytes
    else:
        # An explicit collate_fn, for comparison with the default.
        extra = {"collate_fn": default_collate} if per_sample else {"zero_copy": args.zero_copy}
        if args.all_active:
            extra["active_workers"] = workers  # every worker reads, even past the usable CPUs
        loader = strata.StreamingDataLoader(ds, batch_size=args.batch, num_workers=workers, **extra)
        for batch in loader:
            samples += len(batch["__key__"])
            nbytes += sum(len(v) for v in batch["bin"])
    dt = time.perf_counter() - t0
    cpu = cpu_seconds() - cpu0  # workers count once they have exited (end of the epoch)
    assert samples == args.samples, (samples, args.samples)
    return samples / dt, nbytes / dt / 1e6, cpu * 1e6 / samples


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", type=int, default=10000)
    p.add_argument("--size", type=int, default=100 << 10, help="bytes per sample")
    p.add_argument("--shards", type=int, default=16)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--workers", default="4", help="worker counts, comma-separated (each a run)")
    p.add_argument("--emulate", default="ttfb=30ms,bw=25MB/s", help="cloud profile ('' for none)")
    p.add_argument("--per-sample", action="store_true", help="also time the loader with an explicit collate_fn")
    p.add_argument("--zero-copy", action="store_true", help="raw fields as memoryviews (zero_copy=True), not bytes")
    p.add_argument("--all-active", action="store_true",
                   help="every worker reads (active_workers=num_workers), not only as many as usable CPUs")
    args = p.parse_args()
    print("command:", "PYTHONPATH=build/python /usr/bin/python3", " ".join(map(shlex.quote, sys.argv)))
    with tempfile.TemporaryDirectory(prefix="strata-workers-bench-") as root:
        write_shards(root, args.samples, args.size, args.shards)
        url = "file://" + root + (f"?emulate={args.emulate}" if args.emulate else "")
        print(f"dataset: {args.samples} x {args.size} B in {args.shards} tar shards, {url}")
        base = run(url, args, 0)
        print(f"ds.batches() (1 process):          {base[0]:8.0f} samples/s {base[1]:7.1f} MB/s {base[2]:6.0f} CPU us/sample")
        for workers in [int(w) for w in str(args.workers).split(",")]:
            got = run(url, args, workers)
            print(f"StreamingDataLoader(num_workers={workers}): {got[0]:8.0f} samples/s {got[1]:7.1f} MB/s "
                  f"{got[2]:6.0f} CPU us/sample  ({got[0] / base[0]:.1%} of ds.batches())")
        if args.per_sample:
            old = run(url, args, workers, per_sample=True)
            print(f"  collate_fn given:                  {old[0]:8.0f} samples/s {old[1]:7.1f} MB/s {old[2]:6.0f} CPU us/sample "
                  f"({old[0] / base[0]:.1%})")


if __name__ == "__main__":
    main()
