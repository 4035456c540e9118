"""How many simulated points the surrogate search needs, with and without a saved predictor, to find
an accuracy/energy front within 1 % of the grid's hypervolume (docs/dse.md, "Surrogate-assisted
search").

The space is `benchmarks.dse_predict`'s (the digits CNN on its first 60 test images; ADC bits ×
ADC range × rows × DAC bits × cell bits, 324 points), and its grid is that benchmark's sweep of the
digits CNN (run it first). The predictor is learnt from the other workloads' sweeps of that
benchmark only, so it has never seen the digits CNN. Hypervolumes are normalised with the grid's
best and worst values (reference point 1.1), the same for every search; a search's trials are
looked up in the grid (the devices are noiseless, so a point's values do not depend on which run
simulated it). Also reported: the same with every accuracy above the float model's counted as the
float model's ("capped"), since a point that beats the float model beats it by the rounding of its
ADC flipping an input or two, which no model of the space can foresee.

    python -m benchmarks.dse_surrogate [--out build/dse_predict] [--trials 30] [--seeds 0 1 2]
        [--methods surrogate+predictor surrogate tpe]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.dse_predict import AXES, COST, DEVICE
from cimxdsl.explore import explore
from cimxdsl.explore.learn import learn
from cimxdsl.explore.pareto import hypervolume_history

HELD_OUT = "digits_cnn"
GOAL = 0.99


def first_reaching(curve: np.ndarray) -> int | None:
    return next((i + 1 for i, v in enumerate(curve) if v >= GOAL), None)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/dse_predict", help="dse_predict's output folder")
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--methods", nargs="+", default=["surrogate+predictor", "surrogate", "tpe"])
    options = parser.parse_args(argv)
    out = Path(options.out)
    results = out / "results"
    grid = json.loads((results / HELD_OUT / "results.json").read_text())
    key = lambda s: tuple(s[f] for f in AXES)  # noqa: E731
    values = {key(s): (-s["accuracy_mean"], s["energy_per_image_pj"]) for s in grid["points"] if s["status"] == "ok"}
    every = np.array(list(values.values()))
    low, high = every.min(axis=0), every.max(axis=0)
    ceiling = -grid["float_accuracy"]

    def capped(v: np.ndarray) -> np.ndarray:
        return np.column_stack([np.maximum(v[:, 0], ceiling), v[:, 1]])

    whole = hypervolume_history(every, low, high)[-1]
    whole_capped = hypervolume_history(capped(every), low, high)[-1]
    print(
        f"grid: {len(every)} points; with accuracy capped at the float model's it holds "
        f"{100 * whole_capped / whole:.2f} % of its hypervolume"
    )
    predictor = out / "predictor-without-digits_cnn.json"
    if not predictor.is_file():
        others = sorted(p for p in results.iterdir() if p.name != HELD_OUT and (p / "results.json").is_file())
        learn(others, "gbm").save(predictor)
    space = {
        "model": "digits",
        "data": "digits",
        "limit": grid["sweep"]["images"],
        "device": DEVICE,
        "axes": AXES,
        "cost": COST,
        "objectives": ["accuracy", "energy"],
    }
    goal = f"{100 * GOAL:.0f} %"
    print(f"\n| search | seed | points to {goal} of the grid's hypervolume | final | capped: points | final |")
    print("|---|---|---|---|---|---|")
    for method in options.methods:
        for seed in options.seeds:
            extra = {"predictor": str(predictor)} if method.endswith("+predictor") else {}
            start = time.perf_counter()
            found = explore({**space, "search": method.split("+")[0], "trials": options.trials, "seed": seed, **extra})
            by_point = {s["point"]: s for s in found.summary}
            order = list(dict.fromkeys(t["point"] for t in found.search["trials"]))
            seen = np.array([values[key(by_point[p])] for p in order if by_point[p]["status"] == "ok"])
            for p in order:  # the grid's values, as simulated here
                s = by_point[p]
                assert values[key(s)] == (-s["accuracy_mean"], s["energy_per_image_pj"]), key(s)
            curve = hypervolume_history(seen, low, high) / whole
            curve_capped = hypervolume_history(capped(seen), low, high) / whole_capped
            print(
                f"| {method} | {seed} | {first_reaching(curve) or 'not reached'} | {100 * curve[-1]:.2f} % | "
                f"{first_reaching(curve_capped) or 'not reached'} | {100 * curve_capped[-1]:.2f} % |"
                f"  <!-- {len(seen)} points simulated, {time.perf_counter() - start:.0f} s -->"
            )


if __name__ == "__main__":
    main()
