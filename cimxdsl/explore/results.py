"""Results of a sweep: rows per (point, seed), a summary per point, the Pareto front, CSV and JSON.

`results.csv` and the `rows` of `results.json` hold one row per (point, seed index) and depend only
on the sweep (not on how or where it ran); timing goes to the JSON's `run` section only.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cimxdsl.device import COMPONENTS
from cimxdsl.explore.pareto import non_dominated
from cimxdsl.explore.points import Point
from cimxdsl.explore.rows import COUNTS, METRICS
from cimxdsl.explore.sweep import MAXIMISED, OBJECTIVES, Constraint, Sweep

FORMAT_VERSION = 1
IDENTITY = ("point", "seed_index", "device_seed", "program")


@dataclass
class ExploreResults:
    """What `explore` returns: the sweep, its points, one row per (point, seed) and a summary."""

    sweep: Sweep
    points: list[Point]
    rows: list[dict]
    float_accuracy: float
    images: int
    run: dict = field(default_factory=dict)
    """How it ran: execution mode, workers, wall-clock seconds (not part of the results proper)."""
    search: dict | None = None
    """A search's history (`cimxdsl.explore.search`): per trial its point, status, objective
    values, the simulated points so far, the front so far and its hypervolume."""

    def __post_init__(self) -> None:
        self.summary = summarize(self.points, self.rows)
        front = set(pareto_front(self.summary, self.sweep.objectives, self.sweep.constraints))
        for entry in self.summary:
            entry["pareto"] = entry["point"] in front
        for row in self.rows:
            row["pareto"] = row["point"] in front

    # ---- views ----------------------------------------------------------------------------------
    @property
    def columns(self) -> list[str]:
        return [*IDENTITY, *self.sweep.swept_fields, "status", "error", *METRICS, "pareto"]

    @property
    def pareto(self) -> list[dict]:
        """Summaries of the points on the Pareto front of the sweep's objectives (by default energy
        per image and accuracy) that meet its constraints, cheapest first."""
        front = [s for s in self.summary if s["pareto"]]
        return sorted(front, key=lambda s: s["energy_per_image_pj"])

    @property
    def failed(self) -> list[dict]:
        return [s for s in self.summary if s["status"] == "error"]

    @property
    def pruned(self) -> list[dict]:
        """Points a search stopped after their first chunks (they could not reach the front)."""
        return [s for s in self.summary if s["status"] == "pruned"]

    def csv(self) -> str:
        out = io.StringIO()
        writer = csv.DictWriter(out, self.columns, lineterminator="\n")
        writer.writeheader()
        for row in self.rows:
            writer.writerow({k: csv_value(row.get(k)) for k in self.columns})
        return out.getvalue()

    def to_dict(self) -> dict:
        sweep = self.sweep
        return {
            "format": "cimxdsl-explore-results",
            "version": FORMAT_VERSION,
            "sweep": {
                "name": sweep.name,
                "model": str(sweep.model),
                "data": str(sweep.data),
                "images": self.images,
                "mode": sweep.mode,
                "strategy": sweep.strategy,
                "grid": sweep.grid,
                "seeds": sweep.seeds,
                "seed": sweep.seed,
                "base_device": sweep.base.to_dict(),
                "axes": [
                    {
                        "name": a.name,
                        "fields": list(a.fields),
                        "values": [list(v) for v in a.values],
                        **({"range": vars(a.range)} if a.range is not None else {}),
                    }
                    for a in sweep.axes
                ],
                "search": sweep.search,
                "cost": vars(sweep.cost),
            },
            "float_accuracy": self.float_accuracy,
            "objectives": list(self.sweep.objectives),
            "constraints": [str(c) for c in self.sweep.constraints],
            "programs": len({p.program for p in self.points}),
            "columns": self.columns,
            "rows": [clean(row) for row in self.rows],
            "points": [clean(entry) for entry in self.summary],
            "pareto": [entry["point"] for entry in self.pareto],
            "run": self.run,
            **({"search": self.search} if self.search is not None else {}),
        }

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """Write results.csv and results.json; returns their paths (plots: `cimxdsl.explore.write`)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = {"csv": out / "results.csv", "json": out / "results.json"}
        written["csv"].write_text(self.csv())
        written["json"].write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        return written

    def table(self) -> str:
        """A plain-text summary: one line per point, its columns named and in the units of results.csv
        (accuracy and agreement as fractions, ± the standard deviation over seeds)."""
        head = ["point", "settings", "accuracy", "agreement", "energy_per_image_pj", "latency_ns", "pareto"]
        lines = [head]
        for s in self.summary:
            if s["status"] != "ok":
                why = s["error"] if s["status"] == "pruned" else "error: " + s["error"]
                lines.append([str(s["point"]), s["label"], why, "", "", "", ""])
                continue
            spread = f" ± {s['accuracy_std']:.4f}" if s["runs"] > 1 else ""
            lines.append(
                [
                    str(s["point"]),
                    s["label"],
                    f"{s['accuracy_mean']:.4f}{spread}",
                    f"{s['agreement_mean']:.4f}",
                    f"{s['energy_per_image_pj']:.5g}",
                    f"{s['latency_ns']:.5g}",
                    "*" if s["pareto"] else "",
                ]
            )
        fitted = [line for line in lines if not line[2].startswith(("error: ", "pruned: "))]
        widths = [max(len(line[i]) for line in fitted) for i in range(len(head))]
        return "\n".join(
            "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines
        )


# ---- summaries -------------------------------------------------------------------------------------
def summarize(points: list[Point], rows: list[dict]) -> list[dict]:
    """Per point: accuracy and agreement mean/std/min/max over its seeds (population std), and the
    mean of the costs (which do not depend on the seed)."""
    by_point: dict[int, list[dict]] = {p.index: [] for p in points}
    for row in rows:
        by_point[row["point"]].append(row)
    summary = []
    for point in points:
        ok = [r for r in by_point[point.index] if r["status"] == "ok"]
        entry: dict[str, Any] = {
            "point": point.index,
            "label": point.label,
            "axes": list(point.axes),
            "program": point.program,
            **point.values,
            "runs": len(ok),
        }
        if not ok:
            errors = [r["error"] for r in by_point[point.index]]
            pruned = any(r["status"] == "pruned" for r in by_point[point.index])
            entry.update(status="pruned" if pruned else "error", error=errors[0] if errors else "no result")
            summary.append(entry)
            continue
        entry.update(status="ok", error="")
        for metric in ("accuracy", "agreement"):
            values = np.array([r[metric] for r in ok])
            entry.update(
                {
                    f"{metric}_mean": float(values.mean()),
                    f"{metric}_std": float(values.std()),
                    f"{metric}_min": float(values.min()),
                    f"{metric}_max": float(values.max()),
                }
            )
        for metric in ("latency_ns", "energy_pj", "energy_per_image_pj", *(f"energy_{c}_pj" for c in COMPONENTS)):
            entry[metric] = float(np.mean([r[metric] for r in ok]))
        for count in (*COUNTS, "crossbars_used"):
            entry[count] = int(ok[0][count])
        summary.append(entry)
    return summary


def pareto_front(
    summary: list[dict],
    objectives: tuple[str, ...] = ("accuracy", "energy"),
    constraints: tuple[Constraint, ...] = (),
) -> list[int]:
    """Points that meet every constraint and that no other such point beats on `objectives`
    (names of `OBJECTIVES`: accuracy maximised, the costs minimised), ordered by the objectives
    to minimise first; of points with equal values, the first."""
    ok = [s for s in summary if s["status"] == "ok" and meets(s, constraints)]
    if not ok:
        return []
    values = objective_matrix(ok, objectives)
    _, first = np.unique(values, axis=0, return_index=True)
    kept = np.zeros(len(ok), bool)
    kept[first] = True
    front = np.flatnonzero(non_dominated(values) & kept)
    order = sorted(objectives, key=lambda o: o in MAXIMISED)
    keys = objective_matrix([ok[i] for i in front], tuple(order))
    ranked = sorted(range(len(front)), key=lambda i: (*keys[i], ok[front[i]]["point"]))
    return [ok[front[i]]["point"] for i in ranked]


def objective_matrix(entries: list[dict], objectives: tuple[str, ...]) -> np.ndarray:
    """[entries, objectives]: each summary entry's objective values, negated where maximised."""
    signs = np.array([-1.0 if o in MAXIMISED else 1.0 for o in objectives])
    return (
        np.array([[e[OBJECTIVES[o]] for o in objectives] for e in entries], dtype=float).reshape(
            len(entries), len(objectives)
        )
        * signs
    )


def meets(entry: dict, constraints: tuple[Constraint, ...]) -> bool:
    return all(c.violation(entry[OBJECTIVES[c.metric]]) <= 0 for c in constraints)


def csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return value


def clean(entry: dict) -> dict:
    return {k: (float(v) if isinstance(v, np.floating) else v) for k, v in entry.items()}
