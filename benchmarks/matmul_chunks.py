"""Cost of the fixed row chunks of `cimxdsl.device.threads.matmul` on one thread: a float32 product
of M×K rows by a K×N matrix as one `numpy.matmul` and as chunks of `MATMUL_ROWS` rows (what an
exact-mode product computes on one thread, so that its result does not depend on the thread count).

    python benchmarks/matmul_chunks.py [--repeats 5]
"""

import argparse

import numpy as np

from benchmarks.crossbar_gemm import best_time
from cimxdsl.device.threads import MATMUL_ROWS, matmul, using_threads

SHAPES = [(4096, 288, 64), (50176, 147, 64), (12544, 1152, 128), (3136, 4608, 512)]
"""(M, K, N): im2col products of small and ResNet-sized convolutions."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'M×K×N':>18}  one call (ms)  chunks of {MATMUL_ROWS} (ms)  ratio")
    with using_threads(1):
        for m, k, n in SHAPES:
            x, w = rng.normal(size=(m, k)).astype(np.float32), rng.normal(size=(k, n)).astype(np.float32)
            whole = best_time(lambda x=x, w=w: np.matmul(x, w), args.repeats)
            chunked = best_time(lambda x=x, w=w: matmul(x, w), args.repeats)
            print(f"{f'{m}×{k}×{n}':>18}  {whole * 1e3:12.2f}  {chunked * 1e3:20.2f}  {chunked / whole:5.2f}")


if __name__ == "__main__":
    main()
