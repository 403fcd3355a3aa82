"""A checkpointing job that crash-loops, as an OOM-killed job does, against Ceph RGW behind the cloud proxy.

A child process resumes after its newest local checkpoint and saves a deterministic state of
--state-mib MiB every --interval s with
strata.checkpoint.Checkpointer(dir, remote=bucket, keep_local=2, keep_remote=3, policy="wait") and
async saves, faster than the bucket takes them; it is SIGKILLed at a random moment (seeded, the seed
printed) and restarted, --rounds times. After every kill the newest local checkpoint must load
byte-exact and be at least the last step the child saw committed. At the end it reports what the
job would resume from: steps committed, the newest step in the bucket, the steps held locally and in
the bucket, and whether every checkpoint loadable from either tier is byte-exact.

    PYTHONPATH=build/python /usr/bin/python3 bench/ckpt_crash_loop.py [--rounds 100] [--seed N] [--json out.json]

It starts its own RGW (scripts/rgw.sh) and nginx proxy (scripts/cloud-proxy.sh: 30 ms before each
request, 25 MiB/s per connection) in a temporary directory and stops them by PID at the end.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP_DIR = re.compile(r"^step-(\d+)$")


def state(step, mib):
    import torch
    n = (mib << 20) // 8
    w = torch.arange(n, dtype=torch.int64).mul_(2654435761).add_(step)
    return {"w": w, "step": step}


def local_step_dirs(path):
    return sorted(int(m.group(1)) for m in map(STEP_DIR.match, os.listdir(path)) if m) if os.path.isdir(path) else []


def child(args):
    import strata.checkpoint as sc
    kwargs = json.loads(args.checkpointer_kwargs)
    ckpt = sc.Checkpointer(args.dir, remote=args.url, keep_local=args.keep_local, keep_remote=args.keep_remote,
                           policy=args.policy, **kwargs)
    step = max(ckpt.list(), default=-1) + 1  # resumes after the newest committed checkpoint, as training does

    def report(fut):
        if fut.exception() is None:
            print(f"committed {fut.step}", flush=True)
        else:
            print(f"failed {fut.step}: {fut.exception()}", flush=True)

    while True:
        t0 = time.monotonic()
        fut = ckpt.save(step, state(step, args.state_mib), async_save=True)
        fut.add_done_callback(report)
        step += 1
        time.sleep(max(0.0, args.interval - (time.monotonic() - t0)))


def free_port():
    """A free 127.0.0.1 port below the ephemeral range (no client takes it as its local port)."""
    rng = random.Random()
    for _ in range(64):
        port = rng.randrange(10000, 30000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port")


def start_servers(work):
    rgw_dir, proxy_dir = os.path.join(work, "rgw"), os.path.join(work, "proxy")
    out = subprocess.run(["bash", os.path.join(ROOT, "scripts/rgw.sh"), "start", rgw_dir], check=True,
                         capture_output=True, text=True, stdin=subprocess.DEVNULL).stdout
    env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    port = free_port()
    subprocess.run(["bash", os.path.join(ROOT, "scripts/cloud-proxy.sh"), "start", proxy_dir, str(port),
                    env["endpoint"], "--ttfb-ms", "30", "--rate", "25m"], check=True, capture_output=True,
                   stdin=subprocess.DEVNULL)
    url = (f"s3://{env['bucket']}/run?endpoint=http://127.0.0.1:{port}&region={env['region']}&path_style=1")
    return env, url, rgw_dir, proxy_dir


def stop_servers(rgw_dir, proxy_dir):
    subprocess.run(["bash", os.path.join(ROOT, "scripts/cloud-proxy.sh"), "stop", proxy_dir], stdin=subprocess.DEVNULL)
    subprocess.run(["bash", os.path.join(ROOT, "scripts/rgw.sh"), "stop", rgw_dir], stdin=subprocess.DEVNULL)


def exact(ckpt, step, source, mib):
    import torch
    try:
        got = ckpt.load(step, source=source)
    except Exception as e:  # noqa: BLE001  (reported, counted as not byte-exact)
        return f"{source} step {step}: {e}"
    want = state(step, mib)
    if got.get("step") != step or not torch.equal(got["w"], want["w"]):
        return f"{source} step {step}: bytes differ"
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--state-mib", type=int, default=24)
    p.add_argument("--interval", type=float, default=0.3, help="seconds between saves")
    p.add_argument("--kill-min", type=float, default=2.0, help="seconds after the start, at least")
    p.add_argument("--kill-max", type=float, default=6.0)
    p.add_argument("--keep-local", type=int, default=2)
    p.add_argument("--keep-remote", type=int, default=3)
    p.add_argument("--policy", default="wait")
    p.add_argument("--checkpointer-kwargs", default="{}", help="more Checkpointer arguments, as JSON")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--logs", help="keep every child's log in this directory")
    p.add_argument("--child", nargs=2, metavar=("DIR", "URL"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        args.dir, args.url = args.child
        return child(args)

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    command = " ".join([sys.executable] + sys.argv + ([] if args.seed is not None else ["--seed", str(seed)]))
    print(f"reproduce: PYTHONPATH={os.environ.get('PYTHONPATH', '')} {command}", flush=True)
    rng = random.Random(seed)
    import strata.checkpoint as sc
    work = tempfile.mkdtemp(prefix="strata-ckpt-crash-loop-")
    rgw_dir = proxy_dir = None
    try:
        env, url, rgw_dir, proxy_dir = start_servers(work)
        os.environ.update(AWS_ACCESS_KEY_ID=env["access_key"], AWS_SECRET_ACCESS_KEY=env["secret_key"])
        os.environ.pop("AWS_CA_BUNDLE", None)
        local = os.path.join(work, "local")
        os.makedirs(local)
        acked, problems, t_start = -1, [], time.monotonic()
        for i in range(args.rounds):
            log_path = os.path.join(work, "child.log")
            with open(log_path, "w") as log:
                c = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", local, url,
                                      "--state-mib", str(args.state_mib), "--interval", str(args.interval),
                                      "--keep-local", str(args.keep_local), "--keep-remote", str(args.keep_remote),
                                      "--policy", args.policy, "--checkpointer-kwargs", args.checkpointer_kwargs],
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
                try:
                    c.wait(timeout=rng.uniform(args.kill_min, args.kill_max))  # a random moment
                    problems.append(f"round {i}: the child ended on its own ({c.returncode})")
                except subprocess.TimeoutExpired:
                    os.kill(c.pid, signal.SIGKILL)
                    c.wait()
            text = open(log_path).read()
            if args.logs:
                os.makedirs(args.logs, exist_ok=True)
                shutil.copy(log_path, os.path.join(args.logs, f"child-{i:03d}.log"))
            acked = max([acked] + [int(s) for s in re.findall(r"^committed (\d+)$", text, re.M)])
            problems += [f"round {i}: {line}" for line in text.splitlines()
                         if line.startswith("failed ") or line.startswith("Traceback")]
            ckpt = sc.Checkpointer(local)
            newest = max(ckpt.list(), default=-1)
            if newest < acked:
                problems.append(f"round {i}: newest local step {newest} < acknowledged {acked}")
            if newest >= 0 and (err := exact(ckpt, newest, "local", args.state_mib)):
                problems.append(f"round {i}: {err}")
            if problems:
                print("\n".join(problems[-3:]), flush=True)
        seconds = time.monotonic() - t_start
        ckpt = sc.Checkpointer(local, remote=url)  # read-only use: no save, so no writer and no upload
        local_steps, remote_steps = ckpt.list("local"), ckpt.list("remote")
        exact_errors = [e for s in local_steps if (e := exact(ckpt, s, "local", args.state_mib))]
        exact_errors += [e for s in remote_steps if (e := exact(ckpt, s, "remote", args.state_mib))]
        newest_local, newest_remote = max(local_steps, default=-1), max(remote_steps, default=-1)
        figures = {
            "seed": seed, "rounds": args.rounds, "seconds": round(seconds, 1),
            "steps_committed": newest_local + 1, "newest_committed": newest_local, "last_acknowledged": acked,
            "newest_in_bucket": newest_remote, "behind": newest_local - newest_remote,
            "local_committed": local_steps, "local_dirs": len(local_step_dirs(local)),
            "bucket_committed": remote_steps, "byte_exact_errors": exact_errors, "problems": problems,
        }
        print(f"{args.rounds} kills in {seconds:.0f} s (seed {seed}): steps committed {newest_local + 1} "
              f"(0..{newest_local}, last acknowledged {acked}), newest in the bucket {newest_remote} "
              f"({newest_local - newest_remote} behind); held locally {len(local_steps)} committed "
              f"{local_steps} in {figures['local_dirs']} step dirs; in the bucket {len(remote_steps)} "
              f"{remote_steps}; byte-exact: {len(local_steps) + len(remote_steps) - len(exact_errors)}/"
              f"{len(local_steps) + len(remote_steps)}; problems {len(problems)}", flush=True)
        for e in exact_errors + problems[:10]:
            print("  " + e)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(figures, f, indent=1)
        return 0 if not exact_errors and not problems else 1
    finally:
        if rgw_dir:
            stop_servers(rgw_dir, proxy_dir)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
