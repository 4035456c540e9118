"""Compile time per stage of ResNet-18/50- and VGG-19-shaped models (224×224, random weights)
through `-p memristor`, with the number of crossbar tiles and the peak memory (issue 7).

    python benchmarks/compile_time.py [resnet18 resnet50 vgg19] [--size 224] [--width 64] [--mode int8|exact]
"""

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cimxdsl
from benchmarks.model_zoo import MODELS


def peak_memory_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=sorted(MODELS))
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--mode", default="exact", choices=["exact", "int8"])
    parser.add_argument("--device", default="ideal")
    args = parser.parse_args()
    for name in args.models:
        model = MODELS[name](size=args.size, width=args.width)
        calibration = np.random.default_rng(0).normal(size=(2, 3, args.size, args.size)).astype(np.float32)
        start = time.perf_counter()
        compiled = cimxdsl.compile(
            model, device=args.device, mode=args.mode, calibration=calibration if args.mode == "int8" else None
        )
        total = time.perf_counter() - start
        tiles = sum(1 for op in compiled.module("tile").walk() if op.name in ("cinm.op.gemm", "cinm.op.gemv"))
        stages = ", ".join(f"{stage} {seconds:.1f}" for stage, seconds in compiled.compile_seconds.items())
        memory = peak_memory_mib()
        print(f"{name}: {total:.1f} s total ({stages}); {tiles} crossbar tiles; peak memory {memory:.0f} MiB")


if __name__ == "__main__":
    main()
