"""PNG figures of a sweep (matplotlib, Agg; no pyplot state, so it is safe in threads and workers).

- `accuracy_vs_<axis>.png` per axis: mean top-1 accuracy with ± one standard deviation over seeds
  and every seed's value as a dot, one line per combination of the other axes' values (colour: the
  first other axis; dash and marker: the rest), the float model's accuracy dashed;
- `energy_vs_accuracy.png`: every point's energy per image against its mean accuracy, the Pareto
  front joined and labelled;
- a search's (no per-axis plots: its points are scattered over the space) `search_hypervolume.png`:
  the normalised hypervolume of the front found so far against trials and simulated points, and
  `search_front.png`: every trial's objectives (the first against each other one), coloured by
  trial, the final front joined.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from cimxdsl.explore.results import ExploreResults

INSIDE_LEGEND = 4
"""Plots with more lines than this get their legend beside the axes (and a wider figure)."""
DASHES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P")
DPI = 110
SIZE = (6.4, 4.2)


def write_plots(results: ExploreResults, out_dir: Path) -> dict[str, Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    written = {}
    for axis in results.sweep.axes if results.search is None else ():
        wide = len(accuracy_lines(results, axis)[0]) > INSIDE_LEGEND
        figure = Figure(figsize=(SIZE[0] + (2.4 if wide else 0), SIZE[1]), dpi=DPI)
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
    if results.search is not None:
        for name, draw, width in (
            ("search_hypervolume", hypervolume_curve, SIZE[0]),
            ("search_front", search_front, SIZE[0] * max(1, len(results.search["objectives"]) - 1)),
        ):
            figure = Figure(figsize=(width, SIZE[1]), dpi=DPI, layout="constrained")
            FigureCanvasAgg(figure)
            draw(figure, results)
            written[name] = out_dir / f"{name}.png"
            figure.savefig(written[name])
    return written


UNITS = {
    "accuracy": "accuracy (%)",
    "agreement": "agreement (%)",
    "latency": "latency (ns)",
    "energy": "energy per image (pJ)",
    "crossbars": "crossbars used",
    "writes": "crossbar writes",
}


def hypervolume_curve(figure, results: ExploreResults) -> None:
    """The normalised hypervolume of the front found so far, per trial and per simulated point."""
    trials = results.search["trials"]
    ax = figure.subplots()
    volume = [t["hypervolume"] for t in trials]
    ax.step(range(1, len(trials) + 1), volume, where="post", label="against trials")
    ax.step([t["simulated"] for t in trials], volume, where="post", ls="--", label="against simulated points")
    ax.set_xlabel("trials / simulated points")
    ax.set_ylabel("hypervolume (normalised)")
    ax.set_title(f"{results.sweep.name}: {results.search['search']} search", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")


def search_front(figure, results: ExploreResults) -> None:
    """The first objective against each other one: every completed trial coloured by its number,
    the final front (feasible, non-dominated) joined."""
    search = results.search
    objectives = search["objectives"]
    done = [t for t in search["trials"] if t["values"] is not None]
    final = set(search["trials"][-1]["front"]) if search["trials"] else set()
    scale = [100.0 if o in ("accuracy", "agreement") else 1.0 for o in objectives]
    others = list(range(1, len(objectives))) or [0]
    axes = np.atleast_1d(figure.subplots(1, len(others)))
    for ax, j in zip(axes, others, strict=True):
        if len(objectives) == 1:
            xs, ys = [t["trial"] for t in done], [t["values"][0] * scale[0] for t in done]
            ax.set_xlabel("trial")
        else:
            xs = [t["values"][j] * scale[j] for t in done]
            ys = [t["values"][0] * scale[0] for t in done]
            ax.set_xlabel(UNITS[objectives[j]])
        dots = ax.scatter(xs, ys, c=[t["trial"] for t in done], cmap="viridis", s=14, alpha=0.8)
        front = sorted(
            {t["point"]: (x, y) for t, x, y in zip(done, xs, ys, strict=True) if t["point"] in final}.values()
        )
        if front:
            ax.plot(*zip(*front, strict=True), "s-", color="C3", mfc="none", ms=7, lw=1.2, label="front")
            ax.legend(fontsize=7, loc="lower right")
        ax.set_ylabel(UNITS[objectives[0]])
        ax.grid(alpha=0.3)
    figure.colorbar(dots, ax=list(axes), label="trial")
    figure.suptitle(f"{results.sweep.name}: {search['search']} search, {len(search['trials'])} trials", fontsize=9)


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


@dataclass(frozen=True)
class Line:
    """One line of an accuracy-vs-axis plot: the points that share every other swept setting."""

    settings: tuple[tuple[str, Any], ...]
    """(field, value) of every other swept field, in the sweep's axis order."""
    xs: np.ndarray
    means: np.ndarray
    """Mean top-1 accuracy over seeds (%), at `xs`."""
    stds: np.ndarray
    seeds: tuple[np.ndarray, ...]
    """Every seed's accuracy (%) at each of `xs`."""
    colour: int
    """Index of the first other axis's step (the line's colour)."""
    style: int
    """Index of the combination of the remaining other axes' steps (the line's dash and marker)."""

    @property
    def label(self) -> str | None:
        return ", ".join(f"{f}={_fmt(v, f)}" for f, v in self.settings) or None


def accuracy_lines(results: ExploreResults, axis) -> tuple[list[Line], int]:
    """The lines of `accuracy_vs_<axis>`: one per combination of the other swept axes' values
    (nothing averaged), in the sweep's order; and the number of failed points on the axis."""
    sweep = results.sweep
    positions, _ = axis_positions(axis)
    others = [a for a in sweep.axes if a is not axis]
    seeds_of = defaultdict(list)
    for row in results.rows:
        if row["status"] == "ok":
            seeds_of[row["point"]].append(100 * row["accuracy"])
    groups: dict[tuple, list[tuple[float, dict]]] = defaultdict(list)
    failed = 0
    for entry in results.summary:
        if axis.name not in entry["axes"]:
            continue
        if entry["status"] != "ok":
            failed += 1
            continue
        steps = tuple(step_of(a, entry) for a in others)
        groups[steps].append((positions[tuple(entry[f] for f in axis.fields)], entry))
    colours = sorted({steps[:1] for steps in groups})
    styles = sorted({steps[1:] for steps in groups})
    lines = []
    for steps in sorted(groups):
        items = sorted(groups[steps], key=lambda item: item[0])
        settings = tuple((f, items[0][1][f]) for a in others for f in a.fields)
        lines.append(
            Line(
                settings=settings,
                xs=np.array([x for x, _ in items], dtype=float),
                means=np.array([100 * e["accuracy_mean"] for _, e in items]),
                stds=np.array([100 * e["accuracy_std"] for _, e in items]),
                seeds=tuple(np.array(seeds_of[e["point"]]) for _, e in items),
                colour=colours.index(steps[:1]),
                style=styles.index(steps[1:]),
            )
        )
    return lines, failed


def step_of(axis, entry: dict) -> int:
    """Which step of `axis` a summary entry is at (-1: the base device's value, off the axis)."""
    values = tuple(entry[f] for f in axis.fields)
    return axis.values.index(values) if values in axis.values else -1


def accuracy_vs_axis(ax, results: ExploreResults, axis) -> None:
    sweep = results.sweep
    positions, ticks = axis_positions(axis)
    lines, failed = accuracy_lines(results, axis)
    for line in lines:
        colour = f"C{line.colour % 10}"
        ax.errorbar(
            line.xs,
            line.means,
            yerr=line.stds,
            marker=MARKERS[line.style % len(MARKERS)],
            ls=DASHES[line.style % len(DASHES)],
            ms=4,
            capsize=3,
            color=colour,
            label=line.label,
        )
        for x, seeds in zip(line.xs, line.seeds, strict=True):
            if len(seeds) > 1:
                ax.plot([x] * len(seeds), seeds, ".", color=colour, alpha=0.35, ms=3)
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
    if len(lines) > INSIDE_LEGEND:
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    else:
        ax.legend(fontsize=7, loc="best")


def axis_positions(axis) -> tuple[dict[tuple, float], tuple[list, list] | None]:
    """Where each step of `axis` goes on the x axis, and the ticks (None: matplotlib's own).
    Categories are evenly spaced; integers get a tick each, and a lossless ADC (adc_bits = 0) is
    drawn right of the widest one, labelled "lossless"."""
    if not all(isinstance(v[0], int | float) and not isinstance(v[0], bool) for v in axis.values):
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
    energy = np.array([s["energy_per_image_pj"] for s in ok])
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
                [s["energy_per_image_pj"] for s in shown],
                [100 * s["accuracy_mean"] for s in shown],
                yerr=[100 * s["accuracy_std"] for s in shown],
                fmt="o",
                ms=4,
                color=f"C{c}",
                alpha=0.6,
                label=f"{label} (± std over seeds)",
            )
        if front:
            fx = [s["energy_per_image_pj"] for s in front]
            fy = [100 * s["accuracy_mean"] for s in front]
            ax.plot(fx, fy, "s-", color="C3", ms=7, lw=1.5, mfc="none", mew=1.5, label="Pareto front")
            if n == 1:
                for i, (x, y) in enumerate(zip(fx, fy, strict=True)):
                    ax.annotate(str(i + 1), (x, y), textcoords="offset points", xytext=(3, 4), fontsize=7, color="C3")
        ax.axhline(100 * results.float_accuracy, color="0.4", ls="--", lw=1, label="float model")
        if len(energy) and energy.min() > 0 and energy.max() / energy.min() >= 10:
            ax.set_xscale("log")
        ax.set_xlabel("energy per image (pJ)")
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
