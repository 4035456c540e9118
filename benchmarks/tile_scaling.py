"""Compile time of the memristor flow against the number of crossbar tiles, pass by pass, on MLIR
programs of the Cinnamon benchmarks' shape: two independent gemms sharing their
activation (`2mm_par`) and a matrix-vector product, scaled so that `tile` makes N tiles.

    python benchmarks/tile_scaling.py [--tiles 1000 4000 16000] [--kind 2mm|mv] [--crossbars 16]

Prints, per size, the CPU time of every pass and per tile (linear growth keeps the per-tile time
flat), the wall time next to it (the machine may be shared), and the peak memory so far. As
`cimxdsl.compile` does, the heap is frozen for the cyclic garbage collector after every pass.
"""

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.passes import PassPipeline

from cimxdsl.api import stages_frozen
from cimxdsl.parsing import parse_module_text
from cimxdsl.transforms import get_all_passes

TILE = 128
PRODUCTS = {"memristor_gemm_i32", "memristor_gevm_i32"}


def program(kind: str, tiles: int) -> str:
    """A program whose products `tile` splits into about `tiles` 128×128 tiles."""
    if kind == "mv":
        side = max(1, round(tiles**0.5))
        m = k = side * TILE
        a, v, r = f"tensor<{m}x{k}xi32>", f"tensor<{k}xi32>", f"tensor<{m}xi32>"
        return f"""func.func @main(%a: {a}, %v: {v}) -> {r} {{
  %r = cinm.compute -> {r} {{
    %p = cinm.op.gemv %a, %v : {a}, {v} -> {r}
    cinm.yield %p : {r}
  }}
  func.return %r : {r}
}}"""
    side = max(1, round((tiles / 2) ** 0.5))
    k = n = side * TILE
    x, w, r = f"tensor<8x{k}xi32>", f"tensor<{k}x{n}xi32>", f"tensor<8x{n}xi32>"
    return f"""func.func @main(%x: {x}, %w1: {w}, %w2: {w}) -> ({r}, {r}) {{
  %r1 = cinm.op.gemm %x, %w1 : {x}, {w} -> {r}
  %r2 = cinm.op.gemm %x, %w2 : {x}, {w} -> {r}
  func.return %r1, %r2 : {r}, {r}
}}"""


PASSES = [
    "cinm-isolate-compute",
    "tile{rows=128 cols=128}",
    "cinm-to-cim{crossbars=CROSSBARS}",
    "schedule-list{device=ideal}",
    "cim-to-memristor",
    "memristor-to-func",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiles", type=int, nargs="*", default=[1000, 4000, 16000])
    parser.add_argument("--kind", default="2mm", choices=["2mm", "mv"])
    parser.add_argument("--crossbars", type=int, default=16)
    args = parser.parse_args()
    registry = get_all_passes()
    for tiles in args.tiles:
        module = parse_module_text(program(args.kind, tiles), "<bench>")
        times = []
        wall = time.perf_counter()
        with stages_frozen() as freeze:
            for spec in PASSES:
                spec = spec.replace("CROSSBARS", str(args.crossbars))
                pipeline = PassPipeline.parse_spec(registry, spec)
                start = time.process_time()
                pipeline.apply(Context(), module)
                times.append((spec.split("{")[0], time.process_time() - start))
                freeze()
        wall = time.perf_counter() - wall
        made = sum(1 for op in module.walk() if isinstance(op, func.CallOp) and op.callee.string_value() in PRODUCTS)
        total = sum(t for _, t in times)
        detail = ", ".join(f"{name} {t:.2f}" for name, t in times)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        print(
            f"{tiles:>7} tiles asked ({made} products): {total:7.2f} s CPU, {1e3 * total / tiles:.2f} ms/tile "
            f"({detail}); wall {wall:.1f} s; peak {peak:.2f} GiB",
            flush=True,
        )
        del module


if __name__ == "__main__":
    main()
