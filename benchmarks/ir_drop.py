"""IR drop of one crossbar array against its size and wire resistance: the exact nodal solve, the
fast approximation and (when its data is given) CrossSim's parasitic solver, on the same arrays.

Each case is one array of `rows` × 128 2-bit cells at uniformly random levels (0..3, in units of
G_max = level 3) read by 32 bit-serial input vectors (each row on with probability ½), with the
same resistance r (in units of 1 / G_max, CrossSim's normalisation) for every row and column wire
segment and no source or sink resistance. Per case:

- drop: mean |I_exact − I_ideal| / mean |I_ideal|, what the wires take from the column currents;
- fast error: mean |I_fast − I_exact| / mean |I_exact|;
- the CPU seconds each method takes for the array's effective conductances (CrossSim: for its
  32 reads; it solves per input vector).

    python benchmarks/ir_drop.py [--out docs/figures] [--crosssim ir_drop_crosssim.json]

`--crosssim` adds CrossSim's currents on the same cases, from `benchmarks/ir_drop_crosssim.py`
(run where CrossSim is installed). Prints a Markdown table and writes `ir_drop.png` and
`ir_drop.json` to `--out`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from cimxdsl.device.parasitics import Wires, approximate_conductance, exact_conductance

ROWS = (64, 128, 256, 512)
COLS = 128
RESISTANCES = (1e-5, 3e-5, 1e-4, 3e-4)
READS = 32


def case(rows: int, resistance: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, Wires]:
    """The conductances (rows × COLS, in units of G_max), input vectors (READS × rows) and wires
    of one case."""
    rng = np.random.default_rng([seed, rows])
    g = rng.integers(0, 4, (rows, COLS)) / 3
    x = (rng.random((READS, rows)) < 0.5).astype(float)
    return g, x, Wires(resistance, resistance, 0.0, 0.0)


def relative(a: np.ndarray, b: np.ndarray) -> float:
    """mean |a − b| / mean |b|."""
    return float(np.abs(a - b).mean() / np.abs(b).mean())


def measure() -> list[dict]:
    results = []
    for rows in ROWS:
        for r in RESISTANCES:
            g, x, wires = case(rows, r)
            start = time.process_time()
            exact = exact_conductance(g, wires)
            exact_s = time.process_time() - start
            start = time.process_time()
            fast = approximate_conductance(g, wires)
            fast_s = time.process_time() - start
            ideal, y_exact, y_fast = x @ g, x @ exact, x @ fast
            results.append(
                {
                    "rows": rows,
                    "resistance": r,
                    "drop": relative(y_exact, ideal),
                    "fast_error": relative(y_fast, y_exact),
                    "exact_s": exact_s,
                    "fast_s": fast_s,
                    "exact": y_exact.tolist(),
                }
            )
    return results


def plot(results: list[dict], crosssim: dict | None, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for r in RESISTANCES:
        mine = [row for row in results if row["resistance"] == r]
        sizes = [row["rows"] for row in mine]
        (line,) = left.plot(sizes, [row["drop"] for row in mine], "o-", label=f"r = {r:g}")
        right.plot(sizes, [row["fast_error"] for row in mine], "o-", color=line.get_color(), label=f"r = {r:g}")
        if crosssim:
            cs = [crosssim.get(f"{row['rows']}/{r:g}") for row in mine]
            left.plot(
                [s for s, c in zip(sizes, cs, strict=True) if c],
                [c["drop"] for c in cs if c],
                "x",
                color=line.get_color(),
                markersize=9,
            )
    if crosssim:
        left.plot([], [], "kx", label="CrossSim")
    for ax, title in ((left, "IR drop (exact solve)"), (right, "fast approximation vs exact solve")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(ROWS, [str(r) for r in ROWS])
        ax.set_xlabel(f"rows (× {COLS} columns)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, title="wire segment, × 1/G_max", title_fontsize=8)
    left.set_ylabel("mean |I − I_ideal| / mean |I_ideal|")
    right.set_ylabel("mean |I_fast − I_exact| / mean |I_exact|")
    fig.tight_layout()
    fig.savefig(out / "ir_drop.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/figures"))
    parser.add_argument("--crosssim", type=Path, help="CrossSim's currents (benchmarks/ir_drop_crosssim.py)")
    args = parser.parse_args()
    results = measure()
    crosssim = None
    if args.crosssim:
        crosssim = {}
        for key, entry in json.loads(args.crosssim.read_text()).items():
            row = next(r for r in results if f"{r['rows']}/{r['resistance']:g}" == key)
            if entry.get("currents") is not None:
                g, x, _ = case(row["rows"], row["resistance"])
                currents = np.asarray(entry["currents"])
                crosssim[key] = {
                    "drop": relative(currents, x @ g),
                    "vs_exact": relative(currents, np.asarray(row["exact"])),
                    "seconds": entry["seconds"],
                }
            else:
                crosssim[key] = None
    print(
        "| rows | r (1/G_max) | drop (exact) | fast vs exact | exact CPU s | fast CPU s |"
        + (" CrossSim vs exact | CrossSim CPU s |" if crosssim else "")
    )
    print("|---|---|---|---|---|---|" + ("---|---|" if crosssim else ""))
    for row in results:
        line = (
            f"| {row['rows']} | {row['resistance']:g} | {row['drop']:.4f} | {row['fast_error']:.2e} | "
            f"{row['exact_s']:.3f} | {row['fast_s']:.4f} |"
        )
        if crosssim:
            cs = crosssim.get(f"{row['rows']}/{row['resistance']:g}")
            line += f" {cs['vs_exact']:.1e} | {cs['seconds']:.3f} |" if cs else " did not converge | |"
        print(line)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ir_drop.json").write_text(
        json.dumps(
            {"results": [{k: v for k, v in r.items() if k != "exact"} for r in results], "crosssim": crosssim}, indent=1
        )
    )
    plot(results, crosssim, args.out)


if __name__ == "__main__":
    main()
