"""PNG figures of a sweep (matplotlib, Agg; no pyplot state, so it is safe in threads and workers).

- `accuracy_vs_<axis>.png` per axis: mean top-1 accuracy with ± one standard deviation over seeds
  and every seed's value as a dot, one line per setting of the other axes (at most `MAX_LINES`;
  beyond that their mean with the min–max band), the float model's accuracy dashed;
- `energy_vs_accuracy.png`: every point's energy per image against its mean accuracy, the Pareto
  front joined and labelled.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from cimxdsl.explore.results import ExploreResults

MAX_LINES = 8
DPI = 110
SIZE = (6.4, 4.2)


def write_plots(results: ExploreResults, out_dir: Path) -> dict[str, Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    written = {}
    for axis in results.sweep.axes:
        figure = Figure(figsize=SIZE, dpi=DPI)
        FigureCanvasAgg(figure)
        accuracy_vs_axis(figure.subplots(), results, axis)
        figure.tight_layout()
        path = out_dir / f"accuracy_vs_{slug(axis.name)}.png"
        figure.savefig(path)
        written[f"accuracy_vs_{axis.name}"] = path
    figure = Figure(figsize=(2 * SIZE[0], SIZE[1]), dpi=DPI)
    FigureCanvasAgg(figure)
    energy_vs_accuracy(figure.subplots(1, 2), results)
    figure.suptitle(f"{results.sweep.name}: energy vs accuracy", fontsize=10)
    figure.tight_layout()
    path = out_dir / "energy_vs_accuracy.png"
    figure.savefig(path)
    written["energy_vs_accuracy"] = path
    return written


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def accuracy_vs_axis(ax, results: ExploreResults, axis) -> None:
    sweep = results.sweep
    numeric = all(isinstance(v[0], int | float) and not isinstance(v[0], bool) for v in axis.values)
    positions, ticks = axis_positions(axis, numeric)
    others = [f for f in sweep.swept_fields if f not in axis.fields]
    rows_of = defaultdict(list)
    for row in results.rows:
        rows_of[row["point"]].append(row)
    lines: dict[tuple, list[tuple[float, dict, list[float]]]] = defaultdict(list)
    failed = 0
    for entry in results.summary:
        if axis.name not in entry["axes"]:
            continue
        if entry["status"] != "ok":
            failed += 1
            continue
        x = positions[tuple(entry[f] for f in axis.fields)]
        seeds = [r["accuracy"] for r in rows_of[entry["point"]] if r["status"] == "ok"]
        lines[tuple((f, entry[f]) for f in others)].append((x, entry, seeds))
    if len(lines) <= MAX_LINES:
        order = {
            (f, values[i]): step
            for a in sweep.axes
            for step, values in enumerate(a.values)
            for i, f in enumerate(a.fields)
        }
        for n, (group, items) in enumerate(sorted(lines.items(), key=lambda kv: [order.get(fv, -1) for fv in kv[0]])):
            items.sort(key=lambda item: item[0])
            xs = np.array([item[0] for item in items], dtype=float)
            means = np.array([100 * item[1]["accuracy_mean"] for item in items])
            stds = np.array([100 * item[1]["accuracy_std"] for item in items])
            label = ", ".join(f"{f}={_fmt(v, f)}" for f, v in group) or None
            color = f"C{n % 10}"
            ax.errorbar(xs, means, yerr=stds, marker="o", ms=4, capsize=3, color=color, label=label)
            for x, _, seeds in items:
                if len(seeds) > 1:
                    ax.plot([x] * len(seeds), 100 * np.array(seeds), ".", color=color, alpha=0.35, ms=3)
    else:
        by_x: dict[float, list[float]] = defaultdict(list)
        for items in lines.values():
            for x, _, seeds in items:
                by_x[x].extend(seeds)
        xs = np.array(sorted(by_x), dtype=float)
        values = [100 * np.array(by_x[x]) for x in sorted(by_x)]
        label = f"mean over {len(lines)} settings of the other axes"
        if numeric:
            ax.plot(xs, [v.mean() for v in values], "o-", ms=4, label=label)
            ax.fill_between(xs, [v.min() for v in values], [v.max() for v in values], alpha=0.2, label="min–max")
        else:
            ax.boxplot(values, positions=xs, widths=0.4, showmeans=True, manage_ticks=False)
            ax.plot([], [], "^", color="C2", label=label + " (box: quartiles, whiskers: 1.5 IQR)")
    ax.axhline(100 * results.float_accuracy, color="0.4", ls="--", lw=1, label="float model")
    title = axis.name if axis.fields == (axis.name,) else f"{axis.name} ({', '.join(axis.fields)})"
    ax.set_xlabel(title)
    ax.set_ylabel("top-1 accuracy (%)")
    ax.set_title(f"{sweep.name}: accuracy vs {axis.name}", fontsize=10)
    if ticks is not None:
        ax.set_xticks(*ticks)
    else:
        xs = sorted(positions.values())
        positive = [x for x in xs if x > 0]
        if xs[0] >= 0 and positive and xs[-1] / positive[0] >= 20:
            ax.set_xscale("symlog", linthresh=positive[0], linscale=0.5)
            ax.set_xlim(left=0, right=xs[-1] * 1.3)
    if failed:
        ax.text(0.01, 0.01, f"{failed} point(s) failed", transform=ax.transAxes, fontsize=8, color="C3")
    ax.set_ylim(bottom=max(0, ax.get_ylim()[0]), top=min(101, ax.get_ylim()[1]))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")


def axis_positions(axis, numeric: bool) -> tuple[dict[tuple, float], tuple[list, list] | None]:
    """Where each step of `axis` goes on the x axis, and the ticks (None: matplotlib's own).
    Categories are evenly spaced; integers get a tick each, and a lossless ADC (adc_bits = 0) is
    drawn right of the widest one, labelled "lossless"."""
    if not numeric:
        positions = {values: float(i) for i, values in enumerate(axis.values)}
        return positions, (list(positions.values()), ["/".join(_fmt(v) for v in values) for values in axis.values])
    positions = {values: float(values[0]) for values in axis.values}
    if not all(isinstance(v[0], int) for v in axis.values):
        return positions, None
    labels = {values: str(values[0]) for values in axis.values}
    if axis.fields[0] == "adc_bits" and (0,) in positions and len(positions) > 1:
        finite = sorted(x for x in positions.values() if x > 0)
        gap = min((b - a for a, b in itertools.pairwise(finite)), default=1.0)
        positions[(0,)] = finite[-1] + gap
        labels[(0,)] = "lossless"
    values = list(positions)
    return positions, ([positions[v] for v in values], [labels[v] for v in values])


def energy_vs_accuracy(axes, results: ExploreResults) -> None:
    """Left: every point; right: the accuracy range of the Pareto front, its points numbered and
    listed."""
    ok = [s for s in results.summary if s["status"] == "ok"]
    front = results.pareto
    energy = np.array([s["energy_per_image_pj"] / 1e3 for s in ok])
    low = min((100 * s["accuracy_mean"] for s in front), default=0.0) - 2
    colour_by = next(
        (a for a in results.sweep.axes if len(a) <= 6 and all(isinstance(v[0], str) for v in a.values)), None
    )
    classes = (
        [(None, "points")]
        if colour_by is None
        else [(values, f"{colour_by.name}={'/'.join(values)}") for values in colour_by.values]
    )
    for n, ax in enumerate(axes):
        for c, (values, label) in enumerate(classes):
            shown = [
                s
                for s in ok
                if (n == 0 or 100 * s["accuracy_mean"] >= low)
                and (values is None or tuple(s[f] for f in colour_by.fields) == values)
            ]
            ax.errorbar(
                [s["energy_per_image_pj"] / 1e3 for s in shown],
                [100 * s["accuracy_mean"] for s in shown],
                yerr=[100 * s["accuracy_std"] for s in shown],
                fmt="o",
                ms=4,
                color=f"C{c}",
                alpha=0.6,
                label=f"{label} (± std over seeds)",
            )
        if front:
            fx = [s["energy_per_image_pj"] / 1e3 for s in front]
            fy = [100 * s["accuracy_mean"] for s in front]
            ax.plot(fx, fy, "s-", color="C3", ms=7, lw=1.5, mfc="none", mew=1.5, label="Pareto front")
            if n == 1:
                for i, (x, y) in enumerate(zip(fx, fy, strict=True)):
                    ax.annotate(str(i + 1), (x, y), textcoords="offset points", xytext=(3, 4), fontsize=7, color="C3")
        ax.axhline(100 * results.float_accuracy, color="0.4", ls="--", lw=1, label="float model")
        if len(energy) and energy.min() > 0 and energy.max() / energy.min() >= 10:
            ax.set_xscale("log")
        ax.set_xlabel("energy per image (nJ)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("top-1 accuracy (%)")
    axes[0].set_title("all points", fontsize=9)
    axes[1].set_title("near the Pareto front", fontsize=9)
    axes[0].legend(fontsize=7, loc="lower right")
    listing = "\n".join(f"{i + 1}: {s['label']}" for i, s in enumerate(front[:10]))
    if listing:
        axes[1].text(
            0.98,
            0.03,
            listing,
            transform=axes[1].transAxes,
            fontsize=6,
            ha="right",
            va="bottom",
            bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.8, "edgecolor": "0.8"},
        )


def _fmt(value, field: str = "") -> str:
    if field == "adc_bits" and value == 0:
        return "lossless"
    return f"{value:g}" if isinstance(value, float) else str(value)
