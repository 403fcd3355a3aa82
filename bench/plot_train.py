#!/usr/bin/python3
"""Merge the per-path results of bench/train_bench.sh, print the table, plot AU vs N.

Usage:
  /usr/bin/python3 bench/plot_train.py --out-json OUT.json --out-png OUT.png \\
      [--config JSON] [--command TEXT] PATH1.json PATH2.json ...
  /usr/bin/python3 bench/plot_train.py --from OUT.json --out-png OUT.png   (re-plot a merged file)

Each PATH*.json is what `strata bench train --json` or bench/train_baseline.py --json wrote:
  {"label": ..., "threshold": 0.9, "results": [{"accelerators": N, "epoch": E, "au": ...,
   "samples_per_s": ..., "mib_per_s": ..., "valid": true|false, "not_valid": [...]}, ...], ...}
The table lists every result with the run rules' verdict; the plot has one line per (data
path, epoch) through its valid results only (epoch 1 solid, later epochs dotted; for strata:
cold, then from its local shard cache), and the AU threshold as a dashed line. A result
without "valid" (written before the run rules) counts as not valid.
Exits 2 on malformed input, 3 if matplotlib is missing (the JSON and table are still written).
"""
import argparse
import json
import sys


def fail(code, message):
    print(f"plot_train.py: {message}", file=sys.stderr)
    sys.exit(code)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(2, f"{path}: {e}")


def epoch_name(path, epoch):
    if path.get("tool") == "strata":
        return "epoch 1, cold" if epoch == 1 else f"epoch {epoch}, warm cache"
    return f"epoch {epoch}"


def table(doc):
    lines = []
    thr = doc["threshold"]
    header = f"{'data path':46s} {'epoch':>20s} {'N':>4s} {'AU %':>7s} {'samples/s':>10s} {'MiB/s':>8s}"
    lines.append(header)
    lines.append("-" * len(header))
    for path in doc["paths"]:
        for r in sorted(path["results"], key=lambda r: (r["epoch"], r["accelerators"])):
            mark = "" if r["au"] >= thr else "  < threshold"
            if not r.get("valid", False):
                mark += "  not valid: " + "; ".join(r.get("not_valid", ["no run-rule verdict"]))
            lines.append(f"{path['label']:46.46s} {epoch_name(path, r['epoch']):>20s} {r['accelerators']:4d} "
                         f"{100 * r['au']:7.1f} {r['samples_per_s']:10.1f} {r['mib_per_s']:8.1f}{mark}")
    lines.append("")
    lines.append(f"largest N with AU >= {100 * thr:.0f}% and a valid result:")
    for path in doc["paths"]:
        best = ", ".join(f"{epoch_name(path, int(e))}: {n}" for e, n in sorted(path["max_accelerators"].items()))
        lines.append(f"  {path['label']}: {best}")
    return "\n".join(lines)


def plot(doc, out_png):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail(3, "matplotlib is not installed for this interpreter")
    fig, ax = plt.subplots(figsize=(8, 6.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    all_n = set()
    for i, path in enumerate(doc["paths"]):
        epochs = sorted({r["epoch"] for r in path["results"]})
        for e in epochs:
            pts = sorted((r["accelerators"], 100 * r["au"]) for r in path["results"]
                         if r["epoch"] == e and r.get("valid", False))
            if not pts:
                continue
            all_n.update(n for n, _ in pts)
            ax.plot([n for n, _ in pts], [a for _, a in pts], marker="o" if e == 1 else "s",
                    linestyle="-" if e == 1 else ":", color=colors[i % len(colors)],
                    label=f"{path['label']} ({epoch_name(path, e)})")
    thr = 100 * doc["threshold"]
    ax.axhline(thr, linestyle="--", color="gray", label=f"AU threshold {thr:.0f}%")
    ax.set_xscale("log", base=2)
    ticks = sorted(all_n)
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(n) for n in ticks])
    ax.set_ylim(0, 105)
    ax.set_xlabel("emulated accelerators (N)")
    ax.set_ylabel("accelerator utilisation (%)")
    w = doc.get("config", {})
    title = "AU vs accelerators (results valid under the run rules)"
    if w:
        title += (f": {w.get('workload', '')} ({w.get('accelerator', '')}), {w.get('samples', '')} samples of "
                  f"{w.get('record_size', '')} B, batch {w.get('batch', '')}, {w.get('compute_time_s', '')} s/batch")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2)
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)


def main():
    p = argparse.ArgumentParser(description="merge, tabulate and plot bench/train_bench.sh results")
    p.add_argument("inputs", nargs="*")
    p.add_argument("--from", dest="merged", default="", help="an already merged JSON to re-plot")
    p.add_argument("--out-json", default="")
    p.add_argument("--out-png", default="")
    p.add_argument("--config", default="{}", help="JSON object describing the run")
    p.add_argument("--command", default="", help="the command that reproduces the run")
    args = p.parse_args()
    if args.merged:
        doc = load(args.merged)
    else:
        if not args.inputs:
            fail(2, "no inputs")
        paths = [load(i) for i in args.inputs]
        for path, name in zip(paths, args.inputs):
            if not isinstance(path, dict) or "results" not in path or "label" not in path:
                fail(2, f"{name}: not a bench train result (no label/results)")
        try:
            config = json.loads(args.config)
        except ValueError as e:
            fail(2, f"--config: {e}")
        doc = {"config": config, "threshold": paths[0]["threshold"], "paths": paths, "command": args.command}
    text = table(doc)
    doc["table"] = text.split("\n")
    print(text)
    if args.out_json:
        with open(args.out_json, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"\nwrote {args.out_json}")
    if args.out_png:
        plot(doc, args.out_png)
        print(f"wrote {args.out_png}")


if __name__ == "__main__":
    main()
