#!/usr/bin/env python3
"""StreamingDataLoader(num_workers=W) against ds.batches() in one process, same cold dataset.

WebDataset tar shards (N samples of SIZE bytes, one raw field each) in a bucket that behaves like
a cloud one. By default (--bucket rgw) the bench starts the real thing itself: Ceph RGW
(scripts/rgw.sh, memstore) with the shards uploaded to it, behind the nginx cloud proxy
(scripts/cloud-proxy.sh: TTFB per request, a rate cap per connection); both are stopped (by the
PIDs the scripts recorded) when it ends. --bucket emulate reads a local copy through strata's
in-process emulation instead (file://...?emulate=ttfb=..,bw=..).

Each run opens a fresh dataset whose shard cache is empty (cold); the header scan at open is not
timed. The paths, interleaved RUNS times (the machine's load drifts; medians are quoted):
  ds.batches()                        in this process: the baseline
  StreamingDataLoader, default collate
  StreamingDataLoader, collate_fn=default_collate   (given explicitly: samples as dicts)
  StreamingDataLoader, collate_fn=stack_bytes       (a user's own: the raw bytes as one uint8 tensor)
Prints samples/s, CPU time per sample (all processes of the run), seconds to the first batch,
each loader's ratio to ds.batches(), and the command that reproduces it.

  PYTHONPATH=build/python /usr/bin/python3 bench/loader_workers_bench.py [--bucket rgw|emulate]
      [--samples 10000] [--size 102400] [--shards 16] [--batch 32] [--workers 4] [--runs 3]
      [--ttfb-ms 30] [--rate 25m] [--all-active] [--zero-copy]
"""

import argparse
import gc
import io
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np
import torch
from torch.utils.data._utils.collate import default_collate

import strata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stack_bytes(samples):
    """A user's collate_fn: keys as a list, the raw field of every sample as one [B, size] uint8 tensor."""
    return {"__key__": [s["__key__"] for s in samples],
            "bin": torch.from_numpy(np.stack([np.frombuffer(s["bin"], dtype=np.uint8) for s in samples]))}


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


class RgwBucket:
    """Ceph RGW with the shards, behind the cloud proxy; stop() stops both by their recorded PIDs."""

    def __init__(self, work, shards_dir, ttfb_ms, rate):
        self.rgw_dir, self.proxy_dir = os.path.join(work, "rgw"), os.path.join(work, "proxy")
        self.started = []
        env = self._start([os.path.join(ROOT, "scripts/rgw.sh"), "start", self.rgw_dir], self.rgw_dir)
        import boto3  # Debian's python3-boto3
        s3 = boto3.client("s3", endpoint_url=env["endpoint"], aws_access_key_id=env["access_key"],
                          aws_secret_access_key=env["secret_key"], region_name=env["region"])
        for name in sorted(os.listdir(shards_dir)):
            s3.upload_file(os.path.join(shards_dir, name), env["bucket"], "wds/" + name)
        port = self._free_port()
        proxy = self._start([os.path.join(ROOT, "scripts/cloud-proxy.sh"), "start", self.proxy_dir, str(port),
                             env["endpoint"], "--ttfb-ms", str(ttfb_ms), "--rate", rate], self.proxy_dir)
        os.environ.update(AWS_ACCESS_KEY_ID=env["access_key"], AWS_SECRET_ACCESS_KEY=env["secret_key"])
        self.url = f"s3://{env['bucket']}/wds/?endpoint={proxy['endpoint']}&region={env['region']}&path_style=1"
        self.where = f"Ceph RGW {env['endpoint']} behind the cloud proxy {proxy['endpoint']} " \
                     f"(ttfb {ttfb_ms} ms, {rate}/s per connection)"

    def _start(self, cmd, directory):
        self.started.append((cmd[0], directory))
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    @staticmethod
    def _free_port():
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def stop(self):
        for script, directory in reversed(self.started):
            subprocess.run([script, "stop", directory], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.started = []


def cpu_seconds():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run(url, args, path):
    """(samples/s, CPU us per sample, seconds to the first batch) of one cold epoch over `path`."""
    ds = strata.StreamingDataset(url, seed=1, batch_size=args.batch)
    ds.set_epoch(0)
    samples, first = 0, None
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    if path == "batches":
        for batch in ds.batches():
            first = first or time.perf_counter() - t0
            samples += len(batch["__key__"])
        assert ds.stats()["shards_fetched"] >= args.shards, ds.stats()  # cold: every shard from the bucket
    else:
        extra = {"zero_copy": args.zero_copy} if path == "default" else \
            {"collate_fn": default_collate if path == "default_collate" else stack_bytes}
        if args.all_active:
            extra["active_workers"] = args.workers  # every worker reads, even past the usable CPUs
        for batch in strata.StreamingDataLoader(ds, batch_size=args.batch, num_workers=args.workers, **extra):
            first = first or time.perf_counter() - t0
            samples += len(batch["__key__"])
    dt = time.perf_counter() - t0
    cpu = cpu_seconds() - cpu0  # workers count once they have exited (end of the epoch)
    assert samples == args.samples, (samples, args.samples)
    del ds
    gc.collect()  # its default cache directory goes with it: the next run starts cold
    return samples / dt, cpu * 1e6 / samples, first


PATHS = [("batches", "ds.batches() (1 process)"),
         ("default", "StreamingDataLoader, default collate"),
         ("default_collate", "  collate_fn=default_collate"),
         ("stack_bytes", "  collate_fn=stack_bytes (user's)")]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bucket", choices=["rgw", "emulate"], default="rgw")
    p.add_argument("--samples", type=int, default=10000)
    p.add_argument("--size", type=int, default=100 << 10, help="bytes per sample")
    p.add_argument("--shards", type=int, default=16)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--runs", type=int, default=3, help="rounds of every path, interleaved")
    p.add_argument("--ttfb-ms", type=int, default=30)
    p.add_argument("--rate", default="25m", help="per connection, nginx units (25m = 25 MiB/s)")
    p.add_argument("--zero-copy", action="store_true", help="default collate: raw fields as memoryviews, not bytes")
    p.add_argument("--all-active", action="store_true",
                   help="every worker reads (active_workers=num_workers), not only as many as usable CPUs")
    args = p.parse_args()
    command = "PYTHONPATH=build/python /usr/bin/python3 " + " ".join(map(shlex.quote, sys.argv))
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    bucket = None
    with tempfile.TemporaryDirectory(prefix="strata-workers-bench-") as work:
        shards = os.path.join(work, "shards")
        os.makedirs(shards)
        write_shards(shards, args.samples, args.size, args.shards)
        try:
            if args.bucket == "rgw":
                bucket = RgwBucket(work, shards, args.ttfb_ms, args.rate)
                url, where = bucket.url, bucket.where
            else:
                units = {"k": "KiB/s", "m": "MiB/s", "g": "GiB/s"}  # nginx's sizes, as the proxy takes them
                rate = args.rate[:-1] + units[args.rate[-1].lower()] if args.rate[-1:].isalpha() else args.rate + "B/s"
                url = f"file://{shards}?emulate=ttfb={args.ttfb_ms}ms,bw={rate}"
                where = f"in-process emulation {url}"
            print(f"dataset: {args.samples} x {args.size} B in {args.shards} tar shards; bucket: {where}")
            print(f"{len(os.sched_getaffinity(0))} CPUs; {args.workers} workers; {args.runs} interleaved runs")
            rates = {path: [] for path, _ in PATHS}
            cpus = {path: [] for path, _ in PATHS}
            firsts = {path: [] for path, _ in PATHS}
            for _ in range(args.runs):
                for path, _ in PATHS:
                    rate, cpu, first = run(url, args, path)
                    rates[path].append(rate)
                    cpus[path].append(cpu)
                    firsts[path].append(first)
        finally:
            if bucket:
                bucket.stop()
    base = statistics.median(rates["batches"])
    for path, label in PATHS:
        rate = statistics.median(rates[path])
        ratio = "" if path == "batches" else f"  {rate / base:6.1%} of ds.batches()"
        print(f"{label:38s} {rate:7.0f} samples/s {statistics.median(cpus[path]):6.0f} CPU us/sample "
              f"first batch {statistics.median(firsts[path]):5.2f} s{ratio}  "
              f"(runs: {', '.join(f'{r:.0f}' for r in rates[path])})")
    print("command:", command)


if __name__ == "__main__":
    main()
