#!/usr/bin/python3
"""PyTorch DataLoader baseline for `strata bench train`: the same emulated accelerators
(DLIO / MLPerf Storage style) fed by torch.utils.data.DataLoader reading one file per sample.

Each accelerator is one process (as with DistributedDataParallel: one process per GPU) with
its own DataLoader(num_workers=W) over its part of the epoch (DistributedSampler: shuffled
with seed + epoch, padded so every rank gets the same number of samples). Per step it takes a
batch, "computes" for --compute-time seconds (sleep: the emulated accelerator), then waits at
a barrier with the others. AU = nominal compute time of every step / (N x wall time), the
window opening before the DataLoader's iterator exists (its queues empty: forking the workers
and filling them is timed, as in `strata bench train`); au_dlio counts the measured sleeps
instead; samples/s over the same window; MiB/s = samples/s x record size / 2^20. Sweeps N
(--accelerators 1,2,4,8) and stops after the first N whose AU is below --threshold in every
epoch (unless --no-stop).

Each result is checked against the run rules of `strata bench train` (src/train/rules.h):
at least 100 steps and 2 s; for a cold epoch (--cold-epochs first: the first epoch of a bucket
path), a dataset at least 5 x the DataLoaders' memory (per rank W x prefetch_factor batches
queued + the batch in use). Only valid results count toward the largest N. --rule-sized reads,
at each N, only the first files the rules need there (for slow paths).

Usage:
  /usr/bin/python3 bench/train_baseline.py --dir DIR --batch 32 --compute-time 0.0179 \\
      --accelerators 1,2,4,8 --epochs 2 --workers 2 --threshold 0.9 --label "PyTorch local" \\
      --json out.json
DIR holds the samples as individual files (any names; sorted, so the order matches the packed
dataset's storage order). Prints one line per (N, epoch) and writes the JSON.
"""
import argparse
import json
import math
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
    start = time.monotonic()  # the window opens: no worker, nothing queued
    batches = iter(loader)  # forks the workers, which keep the normal policy
    prefer_accelerator_thread()
    first_batch = None
    for batch in batches:
        if first_batch is None:
            first_batch = time.monotonic()
        c0 = time.monotonic()
        time.sleep(args.compute_time)  # the emulated accelerator
        c1 = time.monotonic()
        barrier.wait()
        steps.append((time.monotonic(), c1 - c0, int(batch.shape[0]), int(batch.numel())))
    results.put((rank, start, steps, first_batch or start))


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
    start = min(s for _, s, _, _ in got)
    first_batch = max(f for _, _, steps, f in got if steps)
    first_end = max(steps[0][0] for _, _, steps, _ in got if steps)
    end = max(steps[-1][0] for _, _, steps, _ in got if steps)
    window = max(end - start, 1e-9)
    compute = sum(c for _, _, steps, _ in got for _, c, _, _ in steps)
    samples = sum(n for _, _, steps, _ in got for _, _, n, _ in steps)
    nbytes = sum(b for _, _, steps, _ in got for _, _, _, b in steps)
    nsteps = max(len(steps) for _, _, steps, _ in got)
    # AU counts the nominal compute time per step (a fixed amount of accelerator work); the
    # measured sleeps, which a busy CPU stretches, give DLIO's figure (au_dlio).
    all_steps = sum(len(steps) for _, _, steps, _ in got)
    au = all_steps * args.compute_time / (world * window) if nsteps else 0.0
    au_dlio = compute / (world * window) if nsteps else 0.0
    sps = samples / window
    cold = args.cold_epochs == "first" and epoch == 0
    memory = loader_memory(args, world)
    failures = check_rules(cold, nsteps, window, nbytes, memory)
    return {
        "accelerators": world,
        "epoch": epoch + 1,
        "au": au,
        "au_dlio": au_dlio,
        "samples_per_s": sps,
        "mib_per_s": sps * args.record_size / 2**20,
        "wall_s": window,
        "measured_s": window,
        "first_batch_s": first_batch - start,
        "first_step_s": first_end - start,
        "steps": nsteps,
        "samples": samples,
        "bytes": nbytes,
        "cold": cold,
        "loader_memory_bytes": memory,
        "valid": not failures,
        "not_valid": failures,
    }


# The run rules of `strata bench train` (src/train/rules.h), the same numbers.
MIN_STEPS, MIN_SECONDS, MEMORY_FACTOR = 100, 2.0, 5.0


def min_steps_for(compute_time):
    return max(MIN_STEPS, math.ceil(MIN_SECONDS / compute_time - 1e-9)) if compute_time > 0 else MIN_STEPS


def loader_memory(args, world):
    """What the DataLoaders may hold: per rank W x prefetch_factor batches queued (2 in the
    main process without workers) and the batch in use."""
    queued = max(args.workers, 1) * (args.prefetch_factor if args.workers else 2)
    return world * (queued + 1) * args.batch * args.record_size


def required_files(args, world):
    by_steps = min_steps_for(args.compute_time) * world * args.batch
    by_memory = math.ceil(MEMORY_FACTOR * loader_memory(args, world) / args.record_size)
    return max(by_steps, by_memory)


def check_rules(cold, steps, seconds, dataset_bytes, memory):
    failures = []
    if cold and dataset_bytes < MEMORY_FACTOR * memory:
        failures.append(f"fits in memory (dataset {dataset_bytes / 2**20:.1f} MiB < {MEMORY_FACTOR:g} x the "
                        f"DataLoaders' {memory / 2**20:.1f} MiB)")
    if steps < MIN_STEPS:
        failures.append(f"too short ({steps} steps < {MIN_STEPS})")
    if seconds < MIN_SECONDS:
        failures.append(f"too short ({seconds:.2f} s < {MIN_SECONDS:g} s)")
    return failures


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
    p.add_argument("--cold-epochs", choices=["first", "none"], default="none",
                   help="first: epoch 1 reads a bucket (the memory rule applies); none: local files")
    p.add_argument("--rule-sized", action="store_true",
                   help="at each N, read only the first files the run rules need there")
    p.add_argument("--quick", action="store_true", help="a smoke run: every result marked not valid")
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
        use = paths[:required_files(args, world)] if args.rule_sized else paths
        for epoch in range(args.epochs):
            if len(use) < world * args.batch:
                print(f"{args.label}: stopped: N={world} needs at least {world * args.batch} files "
                      f"(a batch per accelerator), there are {len(use)}")
                below = False
                break
            r = run_epoch(args, use, world, epoch)
            r["files"] = len(use)
            if args.quick:
                r["not_valid"].insert(0, "--quick smoke run")
                r["valid"] = False
            results.append(r)
            below = below and r["au"] < args.threshold
            verdict = "valid" if r["valid"] else "not valid: " + "; ".join(r["not_valid"])
            print(f"{args.label}: N={world:3d} epoch {epoch + 1}: AU {100 * r['au']:5.1f}%  "
                  f"{r['samples_per_s']:9.1f} samples/s  {r['mib_per_s']:8.1f} MiB/s  "
                  f"({r['steps']} steps, {r['measured_s']:.2f} s from empty queues; {len(use)} files); {verdict}",
                  flush=True)
        if below and not args.no_stop and world >= args.min_n:
            break
        if not results or results[-1]["accelerators"] != world:
            break

    best = {}
    for epoch in range(1, args.epochs + 1):
        ok = [r["accelerators"] for r in results
              if r["epoch"] == epoch and r["valid"] and r["au"] >= args.threshold]
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
        "rules": {"min_steps": MIN_STEPS, "min_seconds": MIN_SECONDS, "memory_factor": MEMORY_FACTOR,
                  "cold_epochs": args.cold_epochs, "rule_sized": args.rule_sized},
        "torch": torch.__version__,
        "results": results,
        "max_accelerators": best,
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
    print(f"{args.label}: largest N with AU >= {100 * args.threshold:.0f}% and a valid result: "
          + ", ".join(f"epoch {e}: {n}" for e, n in best.items()))


if __name__ == "__main__":
    main()
