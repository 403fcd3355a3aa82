#!/usr/bin/python3
"""Turn a strata bench/demo JSON file into a PNG of grouped bar charts.

Usage: /usr/bin/python3 bench/plot.py IN.json OUT.png

Input schema (shared by every bench and demo section):
  {
    "title": "optional figure title",
    "charts": [
      {
        "title": "chart title",
        "ylabel": "MB/s",
        "groups": ["loopback", "emulated cloud"],          # x-axis labels
        "series": [                                         # one bar per group per series
          {"label": "strata", "values": [900.0, 400.0]},
          {"label": "aws s3 cp", "values": [150.0, 25.0]}
        ]
      }
    ]
  }
Missing values may be null (no bar drawn). Exits 2 on a malformed file,
3 if matplotlib is missing (callers print a note and keep the JSON).
"""
import json
import sys


def fail(code, message):
    print(f"plot.py: {message}", file=sys.stderr)
    sys.exit(code)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(2, f"{path}: {e}")
    charts = doc.get("charts") if isinstance(doc, dict) else None
    if not isinstance(charts, list) or not charts:
        fail(2, f"{path}: expected an object with a non-empty \"charts\" list")
    for i, chart in enumerate(charts):
        groups = chart.get("groups")
        series = chart.get("series")
        if not isinstance(groups, list) or not isinstance(series, list) or not series:
            fail(2, f"{path}: chart {i} needs \"groups\" and \"series\" lists")
        for s in series:
            values = s.get("values")
            if not isinstance(values, list) or len(values) != len(groups):
                fail(2, f"{path}: chart {i} series {s.get('label')!r} needs one value per group")
    return doc


def main(argv):
    if len(argv) != 3:
        fail(2, "usage: plot.py IN.json OUT.png")
    doc = load(argv[1])
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail(3, "matplotlib is not installed for this Python")

    charts = doc["charts"]
    fig, axes = plt.subplots(1, len(charts), figsize=(5.5 * len(charts), 4.8), squeeze=False)
    for ax, chart in zip(axes[0], charts):
        groups, series = chart["groups"], chart["series"]
        width = 0.8 / len(series)
        for k, s in enumerate(series):
            xs = [g + (k - (len(series) - 1) / 2) * width for g in range(len(groups))]
            values = [v if isinstance(v, (int, float)) else 0 for v in s["values"]]
            bars = ax.bar(xs, values, width, label=s.get("label", ""))
            for bar, v in zip(bars, s["values"]):
                if isinstance(v, (int, float)):
                    ax.annotate(f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                                ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, fontsize=9)
        ax.set_ylabel(chart.get("ylabel", ""))
        ax.set_title(chart.get("title", ""), fontsize=10)
        if len(series) > 1:  # below the axes: inside, it can hide the tallest bars' labels
            ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=min(len(series), 2), frameon=False)
        ax.margins(y=0.15)
    if doc.get("title"):
        fig.suptitle(doc["title"])
    fig.tight_layout()
    try:
        fig.savefig(argv[2], dpi=110)
    except OSError as e:
        fail(1, f"{argv[2]}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
