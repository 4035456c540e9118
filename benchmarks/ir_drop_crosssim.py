"""CrossSim's parasitic-resistance solver on the cases of `benchmarks/ir_drop.py`, for the
comparison there (run with a Python that has CrossSim, github.com/sandialabs/cross-sim, importable;
CrossSim is not a dependency of cimxdsl).

CrossSim's non-interleaved array with the current sourced from the input line
(`NoninterleavedInputSourceArray`) has the topology of `cimxdsl.device.parasitics`: its matrix is
our K×C conductances transposed (outputs × inputs) in units of G_max, each input line starts with
a segment from its driver, each output line ends with a segment into its ADC, and its `Rp_row` /
`Rp_col` normalised by the device's minimum resistance are our row and column wire resistances.
Its iterative solver (`iterative_solve`) runs with its default tolerance, iteration limit and
relaxation factor, which it lowers until it converges; a case it cannot converge on is recorded as
such.

    python benchmarks/ir_drop_crosssim.py --out ir_drop_crosssim.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from simulator import CrossSimParameters
from simulator.backend import ComputeBackend
from simulator.circuits.array.NonInterleaved_InputSource import NoninterleavedInputSourceArray

from benchmarks.ir_drop import RESISTANCES, ROWS, case


def crosssim_currents(g: np.ndarray, x: np.ndarray, resistance: float) -> np.ndarray:
    """The column currents CrossSim computes for each input vector of `x` on conductances `g`."""
    params = CrossSimParameters()
    parasitics = params.xbar.array.parasitics
    parasitics.enable = True
    parasitics.Rp_row = parasitics.Rp_col = resistance * params.xbar.device.Rmin
    array = NoninterleavedInputSourceArray(params)
    array.hide_convergence_msg = True
    return np.stack([array.iterative_solve(g.T.copy(), vector) for vector in x])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("ir_drop_crosssim.json"))
    args = parser.parse_args()
    ComputeBackend(use_gpu=False)
    results = {}
    for rows in ROWS:
        for r in RESISTANCES:
            g, x, _ = case(rows, r)
            start = time.process_time()
            try:
                currents = crosssim_currents(g, x, r).tolist()
            except ValueError as err:  # "failed to converge"
                print(f"{rows} rows, r = {r:g}: {err}")
                currents = None
            results[f"{rows}/{r:g}"] = {"currents": currents, "seconds": time.process_time() - start}
            print(f"{rows} rows, r = {r:g}: {results[f'{rows}/{r:g}']['seconds']:.2f} s")
    args.out.write_text(json.dumps(results))


if __name__ == "__main__":
    main()
