"""Accept latency (p50, p99) against offered load, from bench_scale.py's --json output.

    .venv/bin/pip install -e '.[bench]'   # matplotlib
    .venv/bin/python bench/plot_latency.py scale.json [more.json ...] --out accept-latency.png

Each JSON file (one bench_scale run) becomes one pair of lines, labelled with its
--label or its file name; the 50 ms target is drawn across. The y axis is
logarithmic: below saturation latencies are milliseconds, past it seconds.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

TARGET_MS = 50.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("runs", nargs="+", type=Path, help="bench_scale.py --json files")
    parser.add_argument("--label", action="append", default=[], help="one per file, in order")
    parser.add_argument("--out", type=Path, default=Path("accept-latency.png"))
    args = parser.parse_args()
    figure, axes = plt.subplots(figsize=(8, 4.8), dpi=110)
    for index, path in enumerate(args.runs):
        run = json.loads(path.read_text())
        # A run with --targets coordinator,bare also holds the bare reference's steps.
        steps = [s for s in run["steps"] if s.get("target", "coordinator") == "coordinator"]
        offered = [s["offered_per_s"] for s in steps]
        label = args.label[index] if index < len(args.label) else path.stem
        label += f" @ {run.get('code', '?').split()[0]}"
        line = axes.plot(offered, [s["p99_ms"] for s in steps], marker="o", label=f"{label}: p99")
        axes.plot(offered, [s["p50_ms"] for s in steps], marker=".", linestyle="--",
                  color=line[0].get_color(), label=f"{label}: p50")  # fmt: skip
        for step in steps:
            if step["non_201"]:  # quick refusals pull the percentiles down: say so
                axes.annotate(f"{step['non_201']} x 503", (step["offered_per_s"], step["p99_ms"]),
                              fontsize=7, textcoords="offset points", xytext=(4, 4),
                              color=line[0].get_color())  # fmt: skip
    axes.axhline(TARGET_MS, color="grey", linewidth=1, linestyle=":")
    axes.text(axes.get_xlim()[0], TARGET_MS * 1.08, " target p99 50 ms", fontsize=8, color="grey")
    axes.set_yscale("log")
    axes.set_xlabel("offered jobs/s (1 job/s per printer; each printer's agent heartbeats 1/s)")
    axes.set_ylabel("POST /v1/jobs latency, ms (from each job's due time)")
    axes.set_title("One coordinator process: accept latency against offered load")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(args.out)
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
