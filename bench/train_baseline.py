#!/usr/bin/python3
"""PyTorch DataLoader baseline for `strata bench train`: the same emulated accelerators
(DLIO / MLPerf Storage style) fed by torch.utils.data.DataLoader reading one file per sample.

Each accelerator is one process (as with DistributedDataParallel: one process per GPU) with
its own DataLoader(num_workers=W) over its part of the epoch (DistributedSampler: shuffled
with seed + epoch, padded so every rank gets the same number of samples). Per step it takes a
batch, "computes" for --compute-time seconds (sleep: the emulated accelerator), then waits at
a barrier with the others. AU = compute time / (N x wall time), both from the end of the first
step to the end of the epoch (the first step pays worker start-up), counting the nominal compute
time per step (au_dlio counts the measured sleeps instead); samples/s over the same
window; MiB/s = samples/s x record size / 2^20. Sweeps N (--accelerators 1,2,4,8) and stops
after the first N whose AU is below --threshold in every epoch (unless --no-stop).

Usage:
  /usr/bin/python3 bench/train_baseline.py --dir DIR --batch 32 --compute-time 0.0179 \\
      --accelerators 1,2,4,8 --epochs 2 --workers 2 --threshold 0.9 --label "PyTorch local" \\
      --json out.json
DIR holds the samples as individual files (any names; sorted, so the order matches the packed
dataset's storage order). Prints one line per (N, epoch) and writes the JSON.
"""
import argparse
import json
import multiprocessing as mp
import os
import sys
import time
import warnings

import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class FileDataset(Dataset):
    """One sample = one file's bytes, as a uint8 tensor (what a decode-free reader returns)."""

    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            data = f.read()
        return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def prefer_accelerator_thread():
    """Real-time priority for the emulated accelerator's thread, as `strata bench train` gives
    its own: a real accelerator's step does not wait for a CPU the data loader keeps busy. The
    thread sleeps almost all the time, so it cannot starve the workers. Best effort."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        return True
    except (PermissionError, OSError, AttributeError):
        return False


def rank_main(rank, world, args, paths, epoch, barrier, results):
    torch.set_num_threads(1)
    sampler = DistributedSampler(FileDataset(paths), num_replicas=world, rank=rank, shuffle=True,
                                 seed=args.seed, drop_last=False)
    sampler.set_epoch(epoch)
    loader = DataLoader(FileDataset(paths), batch_size=args.batch, sampler=sampler,
                        num_workers=args.workers, prefetch_factor=args.prefetch_factor if args.workers else 2,
                        drop_last=False)
    steps = []  # (end of step, compute seconds, samples, bytes)
    barrier.wait()  # every rank starts together
    start = time.monotonic()
    batches = iter(loader)  # forks the workers, which keep the normal policy
    prefer_accelerator_thread()
    for batch in batches:
        c0 = time.monotonic()
        time.sleep(args.compute_time)  # the emulated accelerator
        c1 = time.monotonic()
        barrier.wait()
        steps.append((time.monotonic(), c1 - c0, int(batch.shape[0]), int(batch.numel())))
    results.put((rank, start, steps))


def run_epoch(args, paths, world, epoch):
    ctx = mp.get_context("fork")  # forked from this single-threaded process: safe, and torch is already imported
    barrier = ctx.Barrier(world)
    results = ctx.Queue()
    procs = [ctx.Process(target=rank_main, args=(r, world, args, paths, epoch, barrier, results))
             for r in range(world)]
    for p in procs:
        p.start()
    got = [results.get() for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode != 0:
            sys.exit(f"train_baseline.py: rank process exited with {p.exitcode}")
    start = min(s for _, s, _ in got)
    first_end = max(steps[0][0] for _, _, steps in got if steps)
    end = max(steps[-1][0] for _, _, steps in got if steps)
    window = max(end - first_end, 1e-9)
    compute = sum(c for _, _, steps in got for _, c, _, _ in steps[1:])
    samples_after = sum(n for _, _, steps in got for _, _, n, _ in steps[1:])
    samples = sum(n for _, _, steps in got for _, _, n, _ in steps)
    nbytes = sum(b for _, _, steps in got for _, _, _, b in steps)
    nsteps = max(len(steps) for _, _, steps in got)
    # AU counts the nominal compute time per step (a fixed amount of accelerator work); the
    # measured sleeps, which a busy CPU stretches, give DLIO's figure (au_dlio).
    steps_after = sum(max(len(steps) - 1, 0) for _, _, steps in got)
    au = steps_after * args.compute_time / (world * window) if nsteps > 1 else 0.0
    au_dlio = compute / (world * window) if nsteps > 1 else 0.0
    sps = samples_after / window
    return {
        "accelerators": world,
        "epoch": epoch + 1,
        "au": au,
        "au_dlio": au_dlio,
        "samples_per_s": sps,
        "mib_per_s": sps * args.record_size / 2**20,
        "wall_s": end - start,
        "measured_s": window,
        "first_step_s": first_end - start,
        "steps": nsteps,
        "samples": samples,
        "bytes": nbytes,
    }


def parse_accelerators(text, max_n):
    if text:
        return [int(x) for x in text.split(",") if x]
    n, out = 1, []
    while n <= max_n:
        out.append(n)
        n *= 2
    return out


def main():
    # DataLoader warns when num_workers exceeds the cores; the worker count is the experiment's choice.
    warnings.filterwarnings("ignore", message="This DataLoader will create")
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", required=True, help="directory of sample files")
    p.add_argument("--batch", type=int, required=True, help="batch size per accelerator")
    p.add_argument("--compute-time", type=float, required=True, help="seconds of emulated compute per batch")
    p.add_argument("--record-size", type=int, default=0, help="bytes per sample for MiB/s (default: first file's size)")
    p.add_argument("--accelerators", default="", help="comma list, e.g. 1,2,4,8 (default: powers of 2 to --max)")
    p.add_argument("--max", type=int, default=64, help="largest N when --accelerators is not given")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--workers", type=int, default=2, help="DataLoader num_workers per accelerator")
    p.add_argument("--prefetch-factor", type=int, default=2)
    p.add_argument("--threshold", type=float, default=0.9, help="AU threshold (fraction)")
    p.add_argument("--no-stop", action="store_true", help="run every N even after AU fell below the threshold")
    p.add_argument("--min-n", type=int, default=1, help="never stop the sweep before this N")
    p.add_argument("--ext", default="", help="only files with this extension")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, default=0, help="use only the first N files")
    p.add_argument("--label", default="PyTorch DataLoader")
    p.add_argument("--json", default="", help="write the results here")
    args = p.parse_args()

    # No stat per file: over a FUSE mount of a bucket that would be one HEAD each.
    names = sorted(n for n in os.listdir(args.dir) if not args.ext or n.endswith("." + args.ext))
    paths = [os.path.join(args.dir, n) for n in names]
    if args.limit:
        paths = paths[:args.limit]
    if not paths:
        sys.exit(f"train_baseline.py: no files in {args.dir}")
    if not args.record_size:
        args.record_size = os.path.getsize(paths[0])

    results = []
    for world in parse_accelerators(args.accelerators, args.max):
        below = True
        for epoch in range(args.epochs):
            if len(paths) < 2 * world * args.batch:
                print(f"{args.label}: stopped: N={world} needs at least {2 * world * args.batch} files "
                      f"(2 batches per accelerator), there are {len(paths)}")
                below = False
                break
            r = run_epoch(args, paths, world, epoch)
            results.append(r)
            below = below and r["au"] < args.threshold
            print(f"{args.label}: N={world:3d} epoch {epoch + 1}: AU {100 * r['au']:5.1f}%  "
                  f"{r['samples_per_s']:9.1f} samples/s  {r['mib_per_s']:8.1f} MiB/s  "
                  f"({r['steps']} steps, {r['measured_s']:.2f} s measured)", flush=True)
        if below and not args.no_stop and world >= args.min_n:
            break
        if not results or results[-1]["accelerators"] != world:
            break

    best = {}
    for epoch in range(1, args.epochs + 1):
        ok = [r["accelerators"] for r in results if r["epoch"] == epoch and r["au"] >= args.threshold]
        best[str(epoch)] = max(ok) if ok else 0
    doc = {
        "tool": "pytorch",
        "label": args.label,
        "dir": args.dir,
        "files": len(paths),
        "record_size": args.record_size,
        "batch": args.batch,
        "compute_time_s": args.compute_time,
        "workers_per_accelerator": args.workers,
        "threshold": args.threshold,
        "torch": torch.__version__,
        "results": results,
        "max_accelerators": best,
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
    print(f"{args.label}: largest N with AU >= {100 * args.threshold:.0f}%: "
          + ", ".join(f"epoch {e}: {n}" for e, n in best.items()))


if __name__ == "__main__":
    main()
