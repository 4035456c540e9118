"""Simulation speed of a tiled crossbar product: a 4096×1024 by 1024×1024 int8 gemm
lowered through `tile, cinm-to-cim, schedule-asap, cim-to-memristor, memristor-to-func` for
128×128 crossbars, interpreted on `ideal` and on `cinnamon` with 8-bit values and an 8-bit ADC.
Times are ratios to `numpy.matmul` of the same matrices in the same process.

    python benchmarks/crossbar_gemm.py [--m 4096] [--k 1024] [--n 1024]
"""

import argparse
import time

import numpy as np

from cimxdsl.api import apply_passes
from cimxdsl.device import Device, preset
from cimxdsl.interpreters import run
from cimxdsl.parsing import parse_module_text


def gemm_program(m: int, k: int, n: int) -> str:
    a, b, c = f"tensor<{m}x{k}xi32>", f"tensor<{k}x{n}xi32>", f"tensor<{m}x{n}xi32>"
    return (
        f"func.func @main(%a: {a}, %b: {b}) -> {c} {{\n"
        f"  %r = cinm.compute -> {c} {{\n"
        f"    %0 = cinm.op.gemm %a, %b : ({a}, {b}) -> {c}\n"
        f"    cinm.yield %0 : {c}\n  }}\n"
        f"  func.return %r : {c}\n}}\n"
    )


def best_time(work, repeats: int = 3, clock=time.perf_counter) -> float:
    """The least time `work` takes over `repeats` runs, on `clock` (wall time by default;
    `time.process_time`: this process's CPU time, which other processes' load does not change)."""
    times = []
    for _ in range(repeats):
        start = clock()
        work()
        times.append(clock() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--k", type=int, default=1024)
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (args.m, args.k)).astype(np.int32)
    b = rng.integers(-128, 128, (args.k, args.n)).astype(np.int32)
    baseline = best_time(lambda: np.matmul(a, b), args.repeats)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    blas = best_time(lambda: np.matmul(a64, b64), args.repeats)
    expected = a @ b
    devices = {
        "ideal": preset("ideal"),
        "cinnamon, 8-bit ADC": preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=8),
    }
    print(
        f"numpy.matmul {args.m}x{args.k} @ {args.k}x{args.n}: "
        f"int32 {baseline * 1e3:.1f} ms, float64 {blas * 1e3:.1f} ms"
    )
    print(f"{'device':24} {'tiles':>5} {'sim ms':>9} {'/int32':>7} {'budget':>7} {'/float64':>8}  equals a@b")
    for name, config in devices.items():
        rows, cols = config.tile_shape
        module = parse_module_text(gemm_program(args.m, args.k, args.n), "<gemm>")
        apply_passes(
            module,
            f"tile{{rows={rows} cols={cols}}},cinm-to-cim{{crossbars=16}},schedule-asap,"
            "cim-to-memristor,memristor-to-func",
        )
        tiles = -(-args.k // rows) * -(-args.n // cols)
        result = {}

        def simulate(module=module, config=config, result=result):
            result["out"] = run(module, [a, b], Device(config.replace(crossbars=16))).outputs[0]

        seconds = best_time(simulate, args.repeats)
        ratio = seconds / baseline
        # The work a bit-sliced simulation cannot avoid: input slices x weight slices x arrays per weight.
        sliced = 1 if config.exact else config.input_slices * config.cells_per_weight * config.arrays_per_crossbar
        budget = 3.0 if config.exact else 1.5 * sliced
        exact = np.array_equal(result["out"], expected)
        print(f"{name:24} {tiles:5} {seconds * 1e3:9.1f} {ratio:7.2f} {budget:7.1f} {seconds / blas:8.1f}  {exact}")


if __name__ == "__main__":
    main()
