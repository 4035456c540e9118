"""The slice-work bound of a bit-sliced simulation: the time its slice products alone take at
NumPy's float32 GEMM rate, one per (input plane, weight read) as a plain bit-sliced model computes
them — every input plane's digits (B × K per K-block of a stacked product) times the conductances of
all its weight reads (K × N·arrays·cells) — on one thread, in the row chunks that run fastest
(best of 256, 1024 and 4096 rows), with nothing else: no ADC, no shift-and-add, no host step.

`recorded_products(compiled, *inputs)` runs a compiled model once and returns the shapes of its
sliced products; `bound_seconds(shapes)` times them.
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cimxdsl.device import crossbar
from cimxdsl.device.threads import using_threads
from cimxdsl.interpreters import layer_products

CHUNK_ROWS = (256, 1024, 4096)


def recorded_products(compiled, *inputs) -> list[tuple[int, int, int, int]]:
    """(K-blocks, plane rows, K, columns) of every sliced product of one call of `compiled`."""
    shapes = []
    original = crossbar.sliced_product

    def recording(x, stack, config, rng=None):
        planes = len(crossbar.input_planes(x, config).planes)
        blocks, k, columns = stack.reads.shape
        shapes.append((blocks, planes * x.shape[0], k, columns))
        return original(x, stack, config, rng)

    crossbar.sliced_product = layer_products.sliced_product = recording
    try:
        compiled(*inputs)
    finally:
        crossbar.sliced_product = layer_products.sliced_product = original
    return shapes


def bound_seconds(shapes: list[tuple[int, int, int, int]], repeats: int = 3) -> float:
    """The CPU time of the slice products of `shapes` on one thread, best of `repeats`."""
    rng = np.random.default_rng(0)
    total = 0.0
    with using_threads(1):
        for blocks, rows, k, columns in shapes:
            g = rng.integers(0, 4, (k, columns)).astype(np.float32)
            best = np.inf
            for chunk in sorted({min(c, rows) for c in CHUNK_ROWS}):
                digits = rng.integers(0, 4, (chunk, k)).astype(np.float32)
                out = np.empty((chunk, columns), np.float32)
                for _ in range(repeats):
                    start = time.process_time()
                    for _ in range(blocks):
                        for first in range(0, rows, chunk):
                            size = min(chunk, rows - first)
                            np.matmul(digits[:size], g, out=out[:size])
                    best = min(best, time.process_time() - start)
            total += best
    return total
