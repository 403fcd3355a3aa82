#!/usr/bin/python3
"""Plot the checkpoint benchmark (bench/out/ckpt.json, written by build/bench/ckpt_bench).

Usage: /usr/bin/python3 bench/plot_ckpt.py [IN.json [OUT.png]]
       (defaults: bench/out/ckpt.json, and OUT beside IN with .png)

Three panels, every figure from the same run:
  - training stall (time until save returns): synchronous torch.save vs strata's first save
    (staging memory prefaulted), its warm saves, its first save without prefaulting (when
    measured), and a plain memcpy of the same bytes (2 and 1 threads: memory speed);
  - persist: a plain sequential write + fsync of the same bytes vs strata's background persist;
  - load (page cache dropped): a plain read of the shards vs strata's verified loads (xxh3,
    and with SHA-256).
Bars carry their value (and ms per GB for stalls); the stall axis is logarithmic because
the synchronous save is orders of magnitude above the rest. Missing fields leave out
their bar. Exits 2 on a malformed file, 3 if matplotlib is missing.
"""
import json
import os
import sys


def fail(code, message):
    print(f"plot_ckpt.py: {message}", file=sys.stderr)
    sys.exit(code)


def number(doc, *path):
    """doc[path...] as a float, or None when absent / not a positive number."""
    v = doc
    for k in path:
        if not isinstance(v, dict) or k not in v:
            return None
        v = v[k]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
        return None
    return float(v)


def panels(doc):
    """[(title, ylabel, log, [(label, seconds, colour)])] from the bench's JSON fields."""
    grey, blue, light, red = "#888888", "#1f77b4", "#9ecae1", "#d62728"
    reps = doc.get("reps", 2)
    stall = [
        ("torch.save\n(synchronous)", number(doc, "torch", "save_s"), red),
        ("strata\nfirst save", number(doc, "strata_first_stall_s"), blue),
        (f"strata warm\nsave (best of {reps})", number(doc, "strata_stall_s"), blue),
        ("strata first,\nnot prefaulted", number(doc, "strata_unprefaulted_first_stall_s"), light),
        ("memcpy, 2 threads\n(best in the run)", number(doc, "memcpy_2thread_s"), grey),
        ("memcpy\n1 thread", number(doc, "memcpy_1thread_s"), grey),
    ]
    persist = [
        (f"plain write\n+ fsync (best of {reps})", number(doc, "plain_write_fsync_s"), grey),
        (f"strata persist\n(background, best of {reps})", number(doc, "strata_persist_s"), blue),
    ]
    torch_total = number(doc, "torch", "save_s")
    if torch_total is not None and number(doc, "torch", "fsync_s") is not None:
        persist.insert(0, ("torch.save\n+ fsync", torch_total + number(doc, "torch", "fsync_s"), red))
    load = [
        ("plain read\n(no hashing)", number(doc, "plain_read_s"), grey),
        ("strata load\n+ xxh3 verify", number(doc, "load_verified_s"), blue),
        ("strata load\n+ SHA-256", number(doc, "load_verified_sha256_s"), light),
    ]
    out = []
    for title, ylabel, log, bars in [
        ("Training stall (until save returns)", "seconds (log scale)", True, stall),
        ("Persist to local disk", "seconds", False, persist),
        ("Load, page cache dropped", "seconds", False, load),
    ]:
        bars = [b for b in bars if b[1] is not None]
        if bars:
            out.append((title, ylabel, log, bars))
    return out


def label(seconds, gb, per_gb):
    text = f"{seconds * 1e3:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"
    if per_gb and gb:
        text += f"\n{seconds * 1e3 / gb:.0f} ms/GB"
    return text


def main(argv):
    if len(argv) > 3:
        fail(2, "usage: plot_ckpt.py [IN.json [OUT.png]]")
    src = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "ckpt.json")
    dst = argv[2] if len(argv) > 2 else os.path.splitext(src)[0] + ".png"
    try:
        with open(src, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(2, f"{src}: {e}")
    if not isinstance(doc, dict):
        fail(2, f"{src}: expected a JSON object")
    charts = panels(doc)
    if not charts:
        fail(2, f"{src}: no checkpoint figures in it (expected e.g. strata_stall_s, load_verified_s)")
    gb = (number(doc, "state_bytes") or 0) / 1e9
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail(3, "matplotlib is not installed (use /usr/bin/python3); the JSON is still there")

    widths = [max(3.0, 1.3 * len(bars)) for _, _, _, bars in charts]
    fig, axes = plt.subplots(1, len(charts), figsize=(sum(widths) + 1, 5.2),
                             gridspec_kw={"width_ratios": widths}, squeeze=False)
    for ax, (title, ylabel, log, bars) in zip(axes[0], charts):
        names, values, colours = zip(*bars)
        rects = ax.bar(range(len(bars)), values, color=colours)
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels(names, fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
            ax.set_ylim(min(values) / 3, max(values) * 6)
        else:
            ax.set_ylim(0, max(values) * 1.25)
        for rect, v in zip(rects, values):
            ax.annotate(label(v, gb, log), (rect.get_x() + rect.get_width() / 2, v), ha="center", va="bottom",
                        fontsize=7, xytext=(0, 2), textcoords="offset points")
    heading = f"strata checkpoints: {gb:.2f} GB state"
    if "tensors" in doc:
        heading += f", {doc['tensors']} tensors"
    ratio = number(doc, "stall_ratio_torch_over_strata")
    if ratio:
        heading += f"; warm stall {ratio:.0f}x below torch.save"
    if number(doc, "load_average_1m"):
        heading += f" (load average {doc['load_average_1m']:.1f})"
    fig.suptitle(heading, fontsize=11)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    fig.savefig(dst, dpi=110)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main(sys.argv)
