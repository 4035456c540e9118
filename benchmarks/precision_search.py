"""The precision search on the digits CNN: the per-layer bits each method chooses within an accuracy
budget on a validation split (the first 120 held-out images), then measured against uniform int8
on the other 240 held-out images, which the search never saw: accuracy, latency and energy per
image, and what the search cost (compiles, images simulated, seconds).

    python -m benchmarks.precision_search [--device cinnamon] [--budget 0.5] [--trials 60]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from cimxdsl.explore.precision import evaluate_precision
from cimxdsl.explore.precision_search import search_precision

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
VALIDATION = 120
"""The held-out images the search sees; the rest measure its choice."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(EXAMPLES / "digits_cnn.onnx"))
    parser.add_argument("--device", default="cinnamon")
    parser.add_argument("--budget", type=float, default=0.5)
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--objective", default="latency")
    args = parser.parse_args()
    train, test = np.load(EXAMPLES / "digits_train.npz"), np.load(EXAMPLES / "digits_test.npz")
    x, labels = test["inputs"], test["labels"]
    common = dict(device=args.device, calibration=train["calibration"])

    def held_out(precision) -> dict:
        return evaluate_precision(args.model, precision, x[VALIDATION:], labels[VALIDATION:], batch_size=120, **common)

    uniform = held_out({"*": (8, 8)})
    print(
        f"{Path(args.model).name} on '{args.device}': search on images 0-{VALIDATION - 1} of the held-out set, "
        f"measured on the other {len(labels) - VALIDATION}; budget {args.budget} points, objective {args.objective}"
    )
    print(
        "| method | bits (weights/inputs per layer) | validation accuracy | held-out accuracy | latency (ns) | "
        "energy (pJ) | compiles | images simulated | search time (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")

    def row(label, r, bits, validation="", cost=("", "", "")) -> None:
        print(
            f"| {label} | {bits} | {validation} | {r['accuracy']:.2%} | {r['latency_ns']:.0f} "
            f"({uniform['latency_ns'] / r['latency_ns']:.2f}×) | {r['energy_pj']:,.0f} "
            f"({uniform['energy_pj'] / r['energy_pj']:.2f}×) | {cost[0]} | {cost[1]} | {cost[2]} |"
        )

    row("uniform int8", uniform, "8/8 everywhere")
    fronts = []
    for method in ("greedy", "nsga2", "tpe"):
        result = search_precision(
            args.model, x[:VALIDATION], labels[:VALIDATION], budget=args.budget, method=method,
            objective=args.objective, trials=args.trials, seed=0, **common,
        )  # fmt: skip
        bits = ", ".join(f"{w}/{a}" for w, a in result.precision.values())
        cost = (result.compiles, f"{result.images:,}", f"{result.seconds:.0f}")
        row(method, held_out(result.precision), bits, f"{result.chosen['accuracy']:.2%}", cost)
        front = ", ".join(
            f"{p['accuracy']:.1%}/{p['latency_ns']:.0f} ns/{p['energy_pj']:,.0f} pJ" for p in result.front
        )
        fronts.append(f"{method}'s Pareto front on the validation split (accuracy/latency/energy): {front}")
    print("\n".join(["", *fronts]))


if __name__ == "__main__":
    main()
