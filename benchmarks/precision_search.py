"""The precision search on the digits CNN: the per-layer bits each method chooses within an accuracy
budget on a validation split (the first 120 held-out images), then measured against uniform int8
on the other 240 held-out images, which the search never saw: accuracy, latency and energy per
image, and what the search cost (compiles, images simulated, seconds). Latency and energy per image
are given twice: over the run (the first writes of the weights shared by its 240 images, the
search's objective) and with the weights resident (a second run of the same images on the
programmed crossbars: inference alone, as accelerator papers count it; attention's products placed
on crossbars still write their run-time operands there).

    python -m benchmarks.precision_search [--model examples/digits_cnn.onnx] [--device cinnamon] [--budget 0.5]
        [--trials 60] [--methods greedy nsga2 tpe] [--placement host|crossbar|auto] [--bits 8 6 4 3 2 1]
        [--uniform 2/2 ...] [--search-batch 24] [--precision FILE.toml ...] [--baseline MODEL]

`--placement` places attention's products of two run-time tensors (a transformer's); `--uniform`
measures more uniform configurations beside int8 (the narrowest: the ceiling of any search);
`--search-batch` compiles the search's programs for that many images, run in chunks (a smaller
program compiles faster: the digits ViT's at 24 images); `--precision` measures given precision
files (a model trained for its precision, `examples/qat_digits_vit.py`), and `--baseline` takes
the uniform int8 row, which the ratios divide, from another model (the one trained in float).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import cimxdsl
from cimxdsl.explore.precision import evaluate_precision
from cimxdsl.explore.precision_search import DEFAULT_BITS, search_precision

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
    parser.add_argument("--methods", nargs="*", default=["greedy", "nsga2", "tpe"])
    parser.add_argument("--placement", default="host")
    parser.add_argument("--bits", nargs="+", type=int, default=list(DEFAULT_BITS))
    parser.add_argument(
        "--search-batch", type=int, default=None, help="images per compiled program in the search (default: the split)"
    )
    parser.add_argument("--uniform", nargs="*", default=[], help="more uniform configurations, as W/A")
    parser.add_argument("--precision", nargs="*", default=[], help="precision files to measure")
    parser.add_argument("--baseline", help="the model of the uniform int8 row (default: --model)")
    args = parser.parse_args()
    train, test = np.load(EXAMPLES / "digits_train.npz"), np.load(EXAMPLES / "digits_test.npz")
    x, labels = test["inputs"], test["labels"]
    common = dict(device=args.device, calibration=train["calibration"], placement=args.placement)

    def held_out(precision, model=args.model) -> dict:
        result = evaluate_precision(model, precision, x[VALIDATION:], labels[VALIDATION:], batch_size=120, **common)
        compiled = cimxdsl.compile(model, batch=len(labels) - VALIDATION, precision=precision, **common)
        for _ in range(2):  # the second run finds the weights written
            compiled(x[VALIDATION:])
        resident = compiled.report()
        # the constant weights are written; products of two run-time tensors placed on crossbars
        # write their right operand (attention's Kᵀ, V) for every image still
        runtime = sum(layer["cells_written"] for layer in resident["layers"] if layer.get("placement") == "crossbar")
        images = len(labels) - VALIDATION
        resident = {
            "latency_ns": resident["latency_ns"] / images,
            "energy_pj": resident["total"]["energy_pj"]["total"] / images,
            # weight cells the second run wrote again: the crossbars cannot hold every weight tile
            # beside the run-time operands
            "rewritten": resident["total"]["cells_written"] - runtime,
        }
        return {**result, "resident": resident}

    uniform = held_out({"*": (8, 8)}, args.baseline or args.model)
    print(
        f"{Path(args.model).name} on '{args.device}': search on images 0-{VALIDATION - 1} of the held-out set, "
        f"measured on the other {len(labels) - VALIDATION}; budget {args.budget} points, objective {args.objective}, "
        f"placement {args.placement}"
    )
    print(
        "| method | bits (weights/inputs per layer) | validation accuracy | held-out accuracy | latency (ns) | "
        "energy (pJ) | latency, weights resident (ns) | energy, weights resident (pJ) | compiles | "
        "images simulated | search time (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")

    def ratio(r, base, key) -> str:
        return f"{r[key]:,.0f} ({base[key] / r[key]:.2f}×)"

    marked = []

    def row(label, r, bits, validation="", cost=("", "", "")) -> None:
        figures = [ratio(r, uniform, "latency_ns"), ratio(r, uniform, "energy_pj")]
        mark = " †" if r["resident"]["rewritten"] else ""
        marked.append(mark)
        figures += [ratio(r["resident"], uniform["resident"], key) + mark for key in ("latency_ns", "energy_pj")]
        cells = [label, bits, validation, f"{r['accuracy']:.2%}", *figures, *map(str, cost)]
        print("| " + " | ".join(cells) + " |")

    row(f"uniform int8{f' ({Path(args.baseline).name})' if args.baseline else ''}", uniform, "8/8 everywhere")
    for path in args.precision:
        r = held_out(path)
        row(Path(path).name, r, ", ".join(f"{layer['weight_bits']}/{layer['input_bits']}" for layer in r["layers"]))
    for bits in args.uniform:
        w, a = map(int, bits.split("/"))
        r = held_out({"*": (w, a)})
        row(f"uniform {w}/{a}", r, f"{w}/{a} everywhere")
    fronts = []
    for method in args.methods:
        result = search_precision(
            args.model, x[:VALIDATION], labels[:VALIDATION], budget=args.budget, method=method,
            objective=args.objective, bits=args.bits, trials=args.trials, seed=0, batch_size=args.search_batch,
            progress=lambda message: print(message, file=sys.stderr, flush=True), **common,
        )  # fmt: skip
        bits = ", ".join(f"{w}/{a}" for w, a in result.precision.values())
        cost = (result.compiles, f"{result.images:,}", f"{result.seconds:.0f}")
        row(method, held_out(result.precision), bits, f"{result.chosen['accuracy']:.2%}", cost)
        front = ", ".join(
            f"{p['accuracy']:.1%}/{p['latency_ns']:.0f} ns/{p['energy_pj']:,.0f} pJ" for p in result.front
        )
        fronts.append(f"{method}'s Pareto front on the validation split (accuracy/latency/energy): {front}")
    if any(marked):
        print(
            "\n† the second run wrote weight cells again: the device's crossbars do not hold every weight tile "
            "beside the run-time operands written on them"
        )
    print("\n".join(["", *fronts]))


if __name__ == "__main__":
    main()
