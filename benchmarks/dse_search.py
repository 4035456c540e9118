"""How many simulated points a random, TPE, NSGA-II and surrogate-assisted search need to find an
energy/accuracy front within 1 % of the grid's hypervolume, on the bundled digits CNN over ADC bits
× ADC range × rows × DAC bits × cell bits (648 points).

The grid runs through the same engine (`search = "grid"`), so every point is simulated once, and
each search's trials are the grid's points (the devices are noiseless, so a point's values do not
depend on which search simulated it; the script checks that they match the grid's). Hypervolumes
are normalised with the grid's best and worst value of each objective (reference point 1.1), the
same for every search. Each run keeps its study in `--out`, so an interrupted run resumes.

    python benchmarks/dse_search.py [--out build/dse_search] [--trials 130] [--seeds 0 1 2]
        [--jobs 2] [--figure docs/figures/dse_search.png]
"""

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SPACE = {
    "name": "digits: ADC bits x range x rows x DAC bits x cell bits",
    "model": "digits",
    "data": "digits",
    "device": {"preset": "cinnamon", "weight_bits": 8, "input_bits": 8},
    "axes": {
        "adc_bits": {"min": 3, "max": 10},
        "adc_range": ["full", "static_column", "calibrated"],
        "rows": [32, 64, 128],
        "dac_bits": [1, 2, 4],
        "cell_bits": [1, 2, 4],
    },
    "cost": {"adc": "linear", "adc_reference_bits": 8, "dac": "exponential", "dac_reference_bits": 2},
    "objectives": ["accuracy", "energy"],
    "prune": False,
}
METHODS = ("random", "tpe", "nsga2", "surrogate")
GOAL = 0.99
"""A front is within 1 % of the grid's when its hypervolume is at least this fraction of the grid's."""


def run(out: Path, method: str, seed: int, trials: int | None, jobs: int = 1) -> dict:
    """One search (or the grid): its trials' settings, values and simulated counts."""
    import cimxdsl.explore

    spec = {**SPACE, "search": method, "seed": seed}
    if trials is not None:
        spec["trials"] = trials
    if method == "nsga2":
        spec["population"] = 20
    start = time.perf_counter()
    results = cimxdsl.explore(spec, jobs=jobs, study=out / f"{method}-{seed}.db")
    by_point = {p.index: p.values for p in results.points}
    return {
        "method": method,
        "seed": seed,
        "seconds": round(time.perf_counter() - start, 1),
        "trials": [{**t, "settings": by_point[t["point"]], "front": None} for t in results.search["trials"]],
    }


def key(settings: dict) -> str:
    return json.dumps(settings, sort_keys=True)


def analyse(grid: dict, searches: list[dict]) -> dict:
    """Hypervolume curves of every search against the grid's, in the grid's normalisation."""
    from cimxdsl.explore.pareto import REFERENCE, hypervolume, hypervolume_history, non_dominated, normalise

    signs = np.array([-1.0, 1.0])  # maximise accuracy, minimise energy
    table = {key(t["settings"]): t["values"] for t in grid["trials"]}
    values = np.array([np.array(v) * signs for v in table.values() if v is not None])
    low, high = values.min(axis=0), values.max(axis=0)
    front = values[non_dominated(values)]
    grid_volume = hypervolume(normalise(front, low, high), np.full(2, REFERENCE))
    summary = {"grid_points": len(table), "grid_front": len(np.unique(front, axis=0)), "grid_hypervolume": grid_volume}
    curves = []
    for s in searches:
        mismatched = [t for t in s["trials"] if t["values"] != table[key(t["settings"])]]
        assert not mismatched, f"{s['method']} seed {s['seed']}: values differ from the grid's at {mismatched[0]}"
        found = np.array([np.array(t["values"]) * signs if t["values"] else [np.nan] * 2 for t in s["trials"]])
        ratio = hypervolume_history(found, low, high) / grid_volume
        simulated = np.array([t["simulated"] for t in s["trials"]])
        reached = np.flatnonzero(ratio >= GOAL)
        ok = found[~np.isnan(found).any(axis=1)]
        on_grid_front = {tuple(v) for v in front} & {tuple(v) for v in ok[non_dominated(ok)]}
        curves.append(
            {
                "method": s["method"],
                "seed": s["seed"],
                "seconds": s["seconds"],
                "trials": len(s["trials"]),
                "simulated": int(simulated[-1]),
                "final_ratio": float(ratio[-1]),
                "simulated_to_goal": int(simulated[reached[0]]) if len(reached) else None,
                "grid_front_found": len(on_grid_front),
                "curve": [[int(n), float(r)] for n, r in zip(simulated, ratio, strict=True)],
            }
        )
    return {**summary, "searches": curves, "normalisation": {"low": low.tolist(), "high": high.tolist()}}


def plot(report: dict, grid: dict, figure_path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 4.4), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2)
    points = report["grid_points"]
    for c, method in enumerate(METHODS):
        for n, s in enumerate(x for x in report["searches"] if x["method"] == method):
            xs, ys = zip(*s["curve"], strict=True)
            left.step(xs, ys, where="post", color=f"C{c}", alpha=0.8, lw=1.2, label=method if n == 0 else None)
    left.axhline(GOAL, color="0.3", ls="--", lw=1, label="99 % of the grid's hypervolume")
    left.axvline(0.1 * points, color="0.5", ls=":", lw=1, label=f"10 % of the grid ({points // 10} points)")
    left.axvline(0.03 * points, color="0.5", ls="-.", lw=1, label=f"3 % of the grid ({int(0.03 * points)} points)")
    left.set_xlabel("simulated points")
    left.set_ylabel("hypervolume / grid's")
    left.set_ylim(0.8, 1.005)
    left.grid(alpha=0.3)
    left.legend(fontsize=7, loc="lower right")
    left.set_title(f"front quality against simulated points ({points}-point grid)", fontsize=9)
    values = np.array([t["values"] for t in grid["trials"] if t["values"] is not None])
    right.scatter(values[:, 1], 100 * values[:, 0], s=6, color="0.75", label="grid points")
    signed = values * np.array([-1.0, 1.0])
    from cimxdsl.explore.pareto import non_dominated

    front = values[non_dominated(signed)]
    front = front[np.argsort(front[:, 1])]
    right.plot(front[:, 1], 100 * front[:, 0], "s-", color="C3", mfc="none", ms=7, label="grid's front")
    best = next(s for s in report["searches"] if s["method"] == "tpe")
    right.set_xscale("log")
    right.set_xlabel("energy per image (pJ)")
    right.set_ylabel("top-1 accuracy (%)")
    right.set_ylim(80, 100)
    right.grid(alpha=0.3)
    right.legend(fontsize=7, loc="lower right")
    right.set_title(
        f"the grid's front (TPE seed {best['seed']}: {best['grid_front_found']} of its points found)", fontsize=9
    )
    figure.savefig(figure_path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("build/dse_search"))
    parser.add_argument("--trials", type=int, default=130)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--figure", type=Path, default=Path("docs/figures/dse_search.png"))
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    grid = run(options.out, "grid", 0, None, jobs=options.jobs)
    print(f"grid: {len(grid['trials'])} points in {grid['seconds']} s", flush=True)
    with ProcessPoolExecutor(options.jobs) as pool:
        futures = [pool.submit(run, options.out, m, s, options.trials) for s in options.seeds for m in METHODS]
        searches = [f.result() for f in futures]
    report = analyse(grid, searches)
    report["grid_seconds"] = grid["seconds"]
    (options.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    for s in report["searches"]:
        print(
            f"{s['method']:6} seed {s['seed']}: {s['trials']} trials, {s['simulated']} simulated, "
            f"99 % after {s['simulated_to_goal']} simulated points, final {100 * s['final_ratio']:.2f} %, "
            f"{s['grid_front_found']}/{report['grid_front']} grid-front points, {s['seconds']} s"
        )
    plot(report, grid, options.figure)
    print(f"wrote {options.out / 'report.json'} and {options.figure}")


if __name__ == "__main__":
    main()
