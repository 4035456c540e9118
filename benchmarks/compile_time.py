"""Compile time per stage of ResNet-18/50-, VGG-19- and MobileNetV2-shaped models (224×224, random
weights) and of onnx's light architectures (`light:shufflenet`, …, or `light` for all of them, as
shipped: `--size`/`--width` do not apply) through `-p memristor` (with the number of crossbar tiles)
or `-p pim` (with the crossbars, cores and instructions), and the peak memory. Run one
model per process for its own peak.

    python benchmarks/compile_time.py [resnet18 resnet50 vgg19 mobilenetv2 light:NAME light]
        [--size 224] [--width 64] [--mode int8|exact]
    python benchmarks/compile_time.py resnet18 --target pim [--cores N] [--chip pimcomp]
        [--packing kernel|im2col|sdk] [--array-group N] [--mapping none|greedy|ga] [--pipeline layer|row]
        [--band-slack S] [--share-rows] [--row-weight W] [--crossbars-per-core N] [--calibration-images N]

With `--target pim` it also prints the performance estimate on the chip (latency per image,
pipelined throughput, bottleneck, energy) and the estimate's own time; without `--cores` the
compiler takes the chip's cores when the model fits them.
"""

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cimxdsl
import cimxdsl.api
from benchmarks.model_zoo import MODELS
from cimxdsl.flow.pim import DEFAULT_PACKING
from cimxdsl.transforms.pim.mapping.bands import SLACK

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
"""onnx's light architectures: the model zoo's graphs with their weights replaced by constants."""


def model_named(name: str, size: int, width: int) -> onnx.ModelProto:
    if name.startswith("light:"):
        return onnx.load(str(LIGHT / f"light_{name.removeprefix('light:')}.onnx"))
    if name == "mobilenetv2":
        return MODELS[name](size=size, width=width // 2)  # its stem has half ResNet's channels
    return MODELS[name](size=size, width=width)


def peak_memory_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=sorted(MODELS))
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--mode", default="exact", choices=["exact", "int8"])
    parser.add_argument("--device", default="ideal")
    parser.add_argument("--target", default="memristor", choices=["memristor", "pim"])
    parser.add_argument("--cores", type=int, help="PIM cores offered (default: the chip's if the model fits)")
    parser.add_argument("--crossbars-per-core", type=int, help="PIM crossbars per core (default: the chip's)")
    parser.add_argument("--chip", default="pimcomp", help="PIM chip preset or file of the performance estimate")
    parser.add_argument("--packing", default=DEFAULT_PACKING, choices=["kernel", "im2col", "sdk"])
    parser.add_argument("--array-group", type=int, default=1, help="crossbars one mvmul reads side by side")
    parser.add_argument("--mapping", default="none", choices=["none", "greedy", "ga"])
    parser.add_argument("--pipeline", default="layer", choices=["layer", "row"], help="the PIM pipeline")
    parser.add_argument("--band-slack", type=float, default=SLACK, help="the row pipeline's list-schedule slack")
    parser.add_argument("--share-rows", action="store_true", help="replicas compute each band together")
    parser.add_argument("--row-weight", type=float, default=0.0, help="the mapping's weight of layers of few rows")
    parser.add_argument("--calibration-images", type=int, default=2, help="random images the import calibrates on")
    args = parser.parse_args()
    names = [n for name in args.models for n in (sorted(light_names()) if name == "light" else [name])]
    for name in names:
        model = model_named(name, args.size, args.width)
        weights = {init.name for init in model.graph.initializer}
        image = next(i for i in model.graph.input if i.name not in weights)  # light models list weights too
        shape = [d.dim_value or 1 for d in image.type.tensor_type.shape.dim]
        calibration = np.random.default_rng(0).normal(size=(args.calibration_images, *shape[1:]))
        calibration = calibration.astype(np.float32)
        if args.target == "pim":
            compile_pim(name, model, calibration, args)
            continue
        start, cpu = time.perf_counter(), time.process_time()
        compiled = cimxdsl.compile(
            model, device=args.device, mode=args.mode, calibration=calibration if args.mode == "int8" else None
        )
        total, cpu = time.perf_counter() - start, time.process_time() - cpu
        products = ("cinm.op.gemm", "cinm.op.gemv", "cim.op.gemm", "cim.op.gemv")  # a kept stage: no rebuild
        tiles = sum(1 for op in compiled.module("schedule").walk() if op.name in products)
        stages = ", ".join(f"{stage} {seconds:.1f}" for stage, seconds in compiled.compile_seconds.items())
        memory = peak_memory_mib()
        print(
            f"{name}: {total:.1f} s total, {cpu:.1f} s CPU ({stages}); {tiles} crossbar tiles;"
            f" peak memory {memory:.0f} MiB"
        )


def light_names() -> list[str]:
    return [f"light:{p.stem.removeprefix('light_')}" for p in LIGHT.glob("light_*.onnx")]


def compile_pim(name: str, model, calibration: np.ndarray, args) -> None:
    with tempfile.TemporaryDirectory(prefix="cimxdsl-bench-") as out:
        start, cpu = time.perf_counter(), time.process_time()
        report = cimxdsl.api.compile_pim(
            model,
            args.device,
            calibration,
            cores=args.cores,
            crossbars_per_core=args.crossbars_per_core,
            out_dir=out,
            packing=args.packing,
            array_group=args.array_group,
            mapping=args.mapping,
            pipeline=args.pipeline,
            band_slack=args.band_slack,
            share_rows=args.share_rows,
            row_weight=args.row_weight,
            chip=args.chip,
        ).report()
        total, cpu = time.perf_counter() - start, time.process_time() - cpu
    stages = ", ".join(
        f"{stage} {seconds:.1f}" for stage, seconds in report["compile_time_s"].items() if stage != "total"
    )
    p = report["performance"]
    print(
        f"{name} (pim, {args.packing} packing, {args.pipeline} pipeline{', share-rows' if args.share_rows else ''}):"
        f" {total:.1f} s total, {cpu:.1f} s CPU ({stages});"
        f" {report['crossbars_used']} crossbars ({report['cell_utilization']:.1%} of their cells used) on"
        f" {report['cores_used']} cores, {report['instructions']} instructions, busiest core"
        f" {max(report['instructions_per_core'])}; peak memory {peak_memory_mib():.0f} MiB\n"
        f"  estimate on chip '{p['chip']}' ({p['estimate_s']:.2f} s): latency {p['latency_ns'] / 1e6:.4g} ms per image,"
        f" pipelined throughput {p['throughput']:.4g} images/s, bottleneck {p['bottleneck']},"
        f" energy {p['energy_pj']['total'] / 1e6:.4g} uJ per image"
    )
    if report["mapping"] != "none":
        print(f"  mapping: {report['mapping']}")


if __name__ == "__main__":
    main()
