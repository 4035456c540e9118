"""Searching the per-layer precision: the weight and input bits of each crossbar product that
minimise latency, energy or their product while the accuracy on a validation split stays within a
budget of the uniform 8-bit configuration's.

Two methods, each compiling every configuration it tries once and simulating the split on it:

- `greedy`, sensitivity-based: from every layer at the widest bits, each step tries lowering one
  layer's weight or input bits to the next width of the bit set, and keeps the move with the
  least accuracy lost per unit of the objective saved among those within the budget, until no
  move saves anything within it (as the layer-wise greedy of bit allocation, e.g. Dong et al.,
  "HAWQ: Hessian AWare Quantization", ICCV 2019, ranked here by measured loss instead of a
  Hessian);
- `nsga2` or `tpe`, global: `cim-explore`'s search (`cimxdsl.explore.search`: Optuna's NSGA-II,
  Deb et al. 2002, or multi-objective TPE, Ozaki et al. 2022) over a sweep whose axes are the
  layers' bits, maximising accuracy and minimising latency and energy, the budget a constraint; a
  number of trials and a time budget bound it, and `jobs` local processes or a Dask `scheduler`
  run its points.

Both return the Pareto front (accuracy, latency, energy) of the configurations evaluated and the
chosen one (the feasible configuration with the smallest objective), which `write_precision`
writes as a precision file (`cim-compile --precision`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cimxdsl.dialects.utils import MAX_PRECISION, PRECISION
from cimxdsl.explore.context import CALIBRATION_EXAMPLES
from cimxdsl.explore.pareto import non_dominated
from cimxdsl.explore.precision import evaluate_precision
from cimxdsl.precision import PrecisionError

METHODS = ("greedy", "nsga2", "tpe")
SEARCH_OBJECTIVES = ("latency", "energy", "product")
DEFAULT_BITS = (8, 6, 4, 3, 2, 1)
DEFAULT_TRIALS = 60

Bits = tuple[int, int]


@dataclass
class PrecisionSearchResult:
    """A search's outcome: the uniform widest configuration (`baseline`), the `chosen` one, the
    Pareto `front` of every configuration evaluated (accuracy up, latency and energy down), and
    its cost (`compiles`, `images` simulated, `seconds`)."""

    method: str
    objective: str
    budget: float
    baseline: dict
    chosen: dict
    front: list[dict]
    evaluated: list[dict] = field(repr=False)
    compiles: int = 0
    images: int = 0
    seconds: float = 0.0

    @property
    def precision(self) -> dict[str, Bits]:
        """The chosen (weight bits, input bits) by layer name."""
        return self.chosen["precision"]


def layer_key(name: str) -> str:
    """A precision-file key matching exactly the layer `name` (glob characters bracketed)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def write_precision(precision: dict[str, Bits], path: str | Path) -> Path:
    """Write `precision` ((weight bits, input bits) by layer name) as a precision TOML file, one
    table per layer (`cimxdsl.precision.read_precision` reads it back)."""
    import json

    lines = []
    for name, (weight, inputs) in precision.items():
        lines += [f"[{json.dumps(layer_key(name))}]", f"weight_bits = {weight}", f"input_bits = {inputs}", ""]
    path = Path(path)
    path.write_text("\n".join(lines))
    return path


def check_options(
    budget: float, method: str, objective: str, bits: Sequence[int], jobs: int = 1, scheduler=None
) -> tuple[int, ...]:
    """The bit set, sorted widest first; one-line errors for a bad budget, method, objective or bits,
    or for processes or a cluster given to the greedy (which runs one point after another)."""
    if isinstance(budget, bool) or not isinstance(budget, int | float) or not budget >= 0:
        raise PrecisionError(f"precision search: the budget must be at least 0 accuracy points, got {budget!r}")
    if method not in METHODS:
        raise PrecisionError(f"precision search: unknown method '{method}' (methods: {', '.join(METHODS)})")
    if objective not in SEARCH_OBJECTIVES:
        raise PrecisionError(
            f"precision search: unknown objective '{objective}' (objectives: {', '.join(SEARCH_OBJECTIVES)})"
        )
    if not bits or any(isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_PRECISION for b in bits):
        raise PrecisionError(f"precision search: bits must be integers from 1 to {MAX_PRECISION}, got {list(bits)}")
    if method == "greedy" and (jobs != 1 or scheduler is not None):
        raise PrecisionError(
            "precision search: the greedy runs one configuration after another; jobs and a scheduler run the "
            "points of nsga2 or tpe"
        )
    return tuple(sorted(set(bits), reverse=True))


def search_precision(
    model,
    inputs: np.ndarray,
    labels: np.ndarray,
    budget: float = 0.5,
    method: str = "greedy",
    objective: str = "latency",
    bits: Sequence[int] = DEFAULT_BITS,
    device: Any = "cinnamon",
    calibration=None,
    trials: int = DEFAULT_TRIALS,
    timeout_s: float | None = None,
    seed: int = 0,
    batch_size: int | None = None,
    jobs: int = 1,
    scheduler=None,
    progress=None,
    **compile_options: Any,
) -> PrecisionSearchResult:
    """Search the per-layer bits of `model` on the validation split (`inputs`, `labels`) for the
    smallest `objective` (latency, energy or their product per image) whose accuracy is at most
    `budget` points (percent) below the uniform configuration at the widest of `bits`. `method`:
    greedy, nsga2 or tpe (`trials` and `timeout_s` bound the last two, `seed` seeds them, `jobs`
    local processes or a Dask `scheduler` run their points). Without `calibration` the first 64
    inputs calibrate the quantization."""
    bits = check_options(budget, method, objective, bits, jobs, scheduler)
    if calibration is None:
        calibration = np.asarray(inputs)[:CALIBRATION_EXAMPLES]
    start = time.perf_counter()
    say = progress or (lambda message: None)
    cache: dict[tuple, dict] = {}
    batch = batch_size or len(inputs)

    def evaluate(precision: dict[str, Bits]) -> dict:
        key = tuple(sorted(precision.items()))
        if key not in cache:
            r = evaluate_precision(
                model, dict(precision), inputs, labels, device=device, calibration=calibration,
                batch_size=batch, **compile_options,
            )  # fmt: skip
            cache[key] = {
                "precision": dict(precision),
                "accuracy": r["accuracy"],
                "latency_ns": r["latency_ns"],
                "energy_pj": r["energy_pj"],
                "layers": [layer["layer"] for layer in r["layers"]],
            }
        return cache[key]

    widest = bits[0]
    first = evaluate({"*": (widest, widest)})
    layers = first["layers"]
    uniform = {name: (widest, widest) for name in layers}
    baseline = cache.pop(tuple(sorted(first["precision"].items())))
    baseline["precision"] = uniform
    cache[tuple(sorted(uniform.items()))] = baseline
    floor = baseline["accuracy"] - budget / 100

    def cost(point: dict) -> float:
        if objective == "latency":
            return point["latency_ns"]
        if objective == "energy":
            return point["energy_pj"]
        return point["latency_ns"] * point["energy_pj"]

    def feasible(point: dict) -> bool:
        return point["accuracy"] >= floor - 1e-12

    say(f"uniform {widest}-bit: accuracy {baseline['accuracy']:.2%}, latency {baseline['latency_ns']:.4g} ns")
    found = []
    if method == "greedy":
        greedy(layers, bits, baseline, evaluate, cost, feasible, say)
    else:
        found = global_search(
            model, inputs, labels, calibration, device, layers, bits, method, objective, floor, trials, timeout_s,
            seed, jobs, scheduler, compile_options.get("mode", "int8"), compile_options.get("placement", "host"),
        )  # fmt: skip
    evaluated = [{k: v for k, v in p.items() if k != "layers"} for p in cache.values()] + found
    candidates = [p for p in evaluated if feasible(p)]
    chosen = min(candidates, key=lambda p: (cost(p), -p["accuracy"], p["energy_pj"], p["latency_ns"]))
    values = np.array([[-p["accuracy"], p["latency_ns"], p["energy_pj"]] for p in evaluated])
    front = [p for p, keep in zip(evaluated, non_dominated(values), strict=True) if keep]
    front.sort(key=lambda p: (p["latency_ns"], p["energy_pj"], -p["accuracy"]))
    n = len(inputs)
    return PrecisionSearchResult(
        method=method,
        objective=objective,
        budget=budget,
        baseline={k: v for k, v in baseline.items() if k != "layers"},
        chosen=chosen,
        front=front,
        evaluated=evaluated,
        compiles=len(cache) + len(found),
        # evaluate_precision runs the first chunk once more; the sweep runs each point once
        images=len(cache) * (n + min(batch, n)) + len(found) * n,
        seconds=time.perf_counter() - start,
    )


def greedy(layers, bits, baseline, evaluate, cost, feasible, say) -> None:
    """Lower one layer's weight or input bits at a time, the move with the least accuracy lost per
    objective saved first, while a move within the budget saves anything. A move narrows one
    setting to the widest lower width of the bit set that saves anything (a width that saves
    nothing, as 3 against 4 input bits through 2-bit DACs, is passed over). When no such move keeps
    the budget, a refinement tries each of them together with one other setting raised back to a
    wider width of the bit set (the narrower input of one layer paid for by wider weights or inputs
    of another, or of the same layer's weights), and goes on from the best pair within the budget
    that still saves anything. A narrowing that saved nothing (as weight bits, whose slices are read
    in parallel, against latency) is not compiled again in later steps; before the search stops,
    every such narrowing is tried once more from where it stands."""
    current = baseline
    barren: set[tuple[str, int, int, int]] = set()
    """(layer, setting, from, to): narrowings that saved nothing when last tried."""
    skipped = rechecked = False

    def narrowings(precision):
        """The narrowings that save anything: (layer, bits after the move, point)."""
        nonlocal skipped
        for name in layers:
            w, a = precision[name]
            for index, steps in enumerate(([(v, a) for v in bits if v < w], [(w, v) for v in bits if v < a])):
                for step in steps:
                    move = (name, index, precision[name][index], step[index])
                    if move in barren:
                        skipped = True
                        continue
                    point = evaluate({**precision, name: step})
                    if cost(current) - cost(point) > 0:
                        yield name, step, point
                        break
                    barren.add(move)

    def ranked(point, label):
        saved = cost(current) - cost(point)
        if saved <= 0 or not feasible(point):
            return None
        return max(current["accuracy"] - point["accuracy"], 0.0) / saved, -saved, label, point

    while True:
        skipped = False
        moves = [
            m
            for name, step, point in narrowings(current["precision"])
            if (m := ranked(point, f"{name} -> {step[0]}/{step[1]}"))
        ]
        if not moves:
            moves = [
                m for pair in pairs(layers, bits, current["precision"], narrowings, evaluate) if (m := ranked(*pair))
            ]
        if not moves and skipped and not rechecked:
            barren.clear()  # once more, every narrowing from where the search stands
            rechecked = True
            continue
        if not moves:
            return
        rechecked = False
        _, _, label, current = min(moves, key=lambda m: m[:2])
        say(f"{label}: accuracy {current['accuracy']:.2%}, cost {cost(current):.4g}")


def pairs(layers, bits, precision, narrowings, evaluate):
    """Each saving narrowing of `precision` with one other setting raised to a wider width of
    `bits`: (point, label)."""
    for name, step, _ in list(narrowings(precision)):
        moved = {**precision, name: step}
        for other in layers:
            for index in range(2):
                if other == name and step[index] != precision[name][index]:
                    continue
                for width in (v for v in bits if v > moved[other][index]):
                    changed = list(moved[other])
                    changed[index] = width
                    label = f"{name} -> {step[0]}/{step[1]} with {other} -> {changed[0]}/{changed[1]}"
                    yield evaluate({**moved, other: tuple(changed)}), label


def global_search(
    model,
    inputs,
    labels,
    calibration,
    device,
    layers,
    bits,
    method,
    objective,
    floor,
    trials,
    timeout_s,
    seed,
    jobs,
    scheduler,
    mode,
    placement="host",
) -> list[dict]:
    """`cim-explore`'s search (`method`: nsga2 or tpe) over a sweep whose axes are the layers' bits
    (`precision.<layer>.<setting>`), maximising accuracy and minimising the objective and the
    other cost, the budget a constraint; the configurations it simulated, per image."""
    import tempfile

    import onnx

    from cimxdsl.device import DeviceConfig
    from cimxdsl.explore import explore
    from cimxdsl.explore.sweep import PRECISION_PREFIX

    axes = {
        f"{PRECISION_PREFIX}{layer_key(name)}.{setting}": (name, setting) for name in layers for setting in PRECISION
    }
    costs = {"latency": ["latency", "energy"], "energy": ["energy", "latency"], "product": ["latency", "energy"]}
    with tempfile.TemporaryDirectory(prefix="cimxdsl-precision-") as folder:
        data = Path(folder) / "validation.npz"
        np.savez(data, inputs=inputs, labels=labels, calibration=calibration)
        if isinstance(model, onnx.ModelProto):
            onnx.save(model, Path(folder) / "model.onnx")
            model = Path(folder) / "model.onnx"
        if isinstance(device, DeviceConfig):
            table = device.to_dict()
        elif Path(str(device)).suffix == ".toml":
            table = {"file": str(Path(device).resolve())}
        else:
            table = {"preset": str(device)}
        sweep = {
            "model": str(Path(model).resolve()), "data": str(data), "device": table, "mode": mode, "placement": placement,
            "axes": {axis: list(bits) for axis in axes}, "search": method, "trials": trials, "seed": seed,
            "objectives": ["accuracy", *costs[objective]], "constraints": [f"accuracy >= {floor!r}"],
            **({"timeout_s": timeout_s} if timeout_s is not None else {}),
        }  # fmt: skip
        rows = explore(sweep, jobs=jobs, scheduler=scheduler, plots=False).rows
    points = []
    for row in rows:
        if row["status"] != "ok":
            continue
        precision = {name: [8, 8] for name in layers}
        for axis, (name, setting) in axes.items():
            precision[name][PRECISION.index(setting)] = row[axis]
        points.append(
            {
                "precision": {name: tuple(b) for name, b in precision.items()},
                "accuracy": row["accuracy"],
                "latency_ns": row["latency_ns"] / len(labels),
                "energy_pj": row["energy_per_image_pj"],
            }
        )
    return points
