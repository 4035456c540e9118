"""Simulation speed: a ResNet-18-shaped model (224×224, random weights) compiled through
`-p memristor` and run on the crossbar model, as a ratio to onnxruntime's float run of the same model
in the same process, at batch 1 and 16:

- `ideal`: exact mode (float weights, lossless crossbars); target ≤ 3× onnxruntime;
- `cinnamon` with 8-bit weights and inputs and an 8-bit ADC: int8, bit-sliced; target ≤ 1.5 × input
  slices × cells per weight × arrays per weight × onnxruntime (the work a sliced simulation cannot avoid);
- `--devices cinnamon-8bit-noisy cinnamon-8bit-noisy-f32`: the same with programming noise (σ 5 %),
  its analog sums in float64 (the default) and in float32 (`analog_dtype`).

For a bit-sliced device it also prints the time on one thread (CPU time) against the slice-work
bound (`benchmarks/slice_bound.py`: the time of the slice products alone at NumPy's float32 GEMM
rate; target ≤ 1.2×), and that time with the NumPy passes instead of the compiled pass
(`kernels.numpy_passes`). It prints the crossbar writes of an inference after the first (weights left on the device by
the previous one are not written again) against the minimum: every weight tile the program writes,
less the crossbars that can keep one resident; the time on one thread against all cores
(`threads`), the speed-up; and the time with every tile product on its own (`layer_products`
off: a layer's tiles are otherwise one product, stacked on a bit-sliced device).

With `--light NAME…` (`--light all`: the nine) it measures instead onnx's light architectures
(random weights) on `ideal` at batch 1, in CPU time (both sides in this process, best of
`--repeat`; onnxruntime on one thread; target ≤ 3× onnxruntime), and the first call: what a one-image `cim-compile` pays
after compiling (preparing the program and its first run, every tile written), against a steady
call (target ≤ 3×).

    python benchmarks/simulation_speed.py [--size 224] [--width 64] [--batch 1 16] [--repeat 3]
    python benchmarks/simulation_speed.py --light squeezenet bvlc_alexnet resnet50
    python benchmarks/simulation_speed.py --light all
"""

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cimxdsl
from benchmarks.crossbar_gemm import best_time
from benchmarks.model_zoo import MODELS
from benchmarks.slice_bound import bound_seconds, recorded_products
from cimxdsl.device import kernels, preset
from cimxdsl.device.threads import cores
from cimxdsl.frontend.onnx_importer import with_batch

CINNAMON_8BIT = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=8)
DEVICES = {
    "ideal": (preset("ideal"), "exact"),
    "cinnamon-8bit": (CINNAMON_8BIT, "int8"),
    # with programming noise (σ 5 %): one product per plane, float64 or float32 sums (`analog_dtype`)
    "cinnamon-8bit-noisy": (CINNAMON_8BIT.replace(prog_noise=0.05, seed=1), "int8"),
    "cinnamon-8bit-noisy-f32": (CINNAMON_8BIT.replace(prog_noise=0.05, seed=1, analog_dtype="float32"), "int8"),
}
DEFAULT_DEVICES = ["ideal", "cinnamon-8bit"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--devices", nargs="+", default=DEFAULT_DEVICES, choices=sorted(DEVICES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--light", nargs="+", metavar="NAME", help="light architectures instead (ideal, batch 1)")
    args = parser.parse_args()
    if args.light:
        light_ratios(args.light, args.repeat)
        return
    model = MODELS["resnet18"](size=args.size, width=args.width)
    rng = np.random.default_rng(0)
    calibration = rng.normal(size=(4, 3, args.size, args.size)).astype(np.float32)
    print(f"resnet18 ({args.size}x{args.size}, width {args.width}): simulation time / onnxruntime (float)")
    passes = "one compiled pass (Numba)" if kernels.one_pass() else "NumPy passes (no Numba)"
    print(f"a bit-sliced product's ADC and shift-and-add: {passes}")
    print(
        f"{'device':>14} {'batch':>5} {'onnxruntime':>12} {'crossbars':>10} {'ratio':>7} {'target':>7}  max rel error"
        f"  writes (least)  1 thread  speed-up ({cores()} cores)  tile by tile  slice-work bound  1 thread / bound"
        "  1 thread, NumPy passes"
    )
    for name in args.devices:
        config, mode = DEVICES[name]
        budget = (
            3.0 if config.exact else 1.5 * config.input_slices * config.cells_per_weight * config.arrays_per_crossbar
        )
        for batch in args.batch:
            compiled = cimxdsl.compile(model, device=config, mode=mode, calibration=calibration, batch=batch)
            x = rng.normal(size=(batch, 3, args.size, args.size)).astype(np.float32)
            session = onnxruntime.InferenceSession(
                with_batch(model, batch).SerializeToString(), providers=["CPUExecutionProvider"]
            )
            reference = session.run(None, {"x": x})[0]
            compiled(x)  # warm-up: the weights that fit stay resident
            ort = best_time(lambda: session.run(None, {"x": x}), args.repeat)
            ours = best_time(lambda: compiled(x), args.repeat)
            compiled.threads = 1
            alone = best_time(lambda: compiled(x), args.repeat, time.process_time)
            with kernels.numpy_passes():
                passes = np.nan if config.exact else best_time(lambda: compiled(x), args.repeat, time.process_time)
            bound = np.nan if config.exact else bound_seconds(recorded_products(compiled, x), args.repeat)
            compiled.threads = None
            program = compiled.program()
            program.layer_products = False
            tile_by_tile = best_time(lambda: compiled(x), 1)
            program.layer_products = True
            error = np.abs(compiled(x) - reference).max() / np.abs(reference).max()
            writes = compiled.last_run.device.report(per_crossbar=False)["total"]["writes"]
            tiles = compiled.mlir().count("call @memristor_write_to_crossbar")
            least = max(0, tiles - compiled.options["crossbars"])
            ratio = ours / ort
            print(
                f"{name:>14} {batch:5} {ort:11.3f}s {ours:9.3f}s {ratio:6.1f}x {budget:6.0f}x"
                f" {error:14.1e} {f'{writes} ({least})':>14} {alone:8.3f}s {alone / ours:8.2f}x {tile_by_tile:12.3f}s"
                f" {bound:16.3f}s {alone / bound:15.2f}x {passes:22.3f}s"
            )


def light_ratios(names: list[str], repeat: int) -> None:
    from benchmarks.pim_light_models import NAMES, light_model

    print(
        f"{'model':>14} {'onnxruntime':>12} {'ideal':>9} {'ratio':>7} {'1 thread':>9} {'ratio':>7}  max rel error"
        f"  {'first call':>10} {'first/steady':>12}"
    )
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = options.inter_op_num_threads = 1  # (CPU time: its threads would add theirs)
    for name in NAMES if names == ["all"] else names:
        model = light_model(name)
        compiled = cimxdsl.compile(model, device="ideal", mode="exact", batch=1)
        initializers = {i.name for i in model.graph.initializer}
        source = next(i for i in model.graph.input if i.name not in initializers)
        shape = [d.dim_value for d in source.type.tensor_type.shape.dim]
        x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
        session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        reference = session.run(None, {source.name: x})[0]
        compiled.module("func")
        first = first_call_time(compiled, x, min(repeat, 2))
        ort = best_time(lambda: session.run(None, {source.name: x}), repeat, time.process_time)
        ours = best_time(lambda: compiled(x), repeat, time.process_time)
        compiled.threads = 1
        alone = best_time(lambda: compiled(x), repeat, time.process_time)
        compiled.threads = None
        error = np.abs(compiled(x) - reference).max() / np.abs(reference).max()
        print(
            f"{name:>14} {ort:11.4f}s {ours:8.4f}s {ours / ort:6.1f}x {alone:8.4f}s {alone / ort:6.1f}x {error:14.1e}"
            f"  {first:9.3f}s {first / ours:11.1f}x",
            flush=True,
        )


def first_call_time(compiled, x: np.ndarray, repeats: int) -> float:
    """The least CPU time of a first call over `repeats`: the program prepared anew and run on a
    fresh device. The previous program is dropped, and the garbage it and earlier work left is
    collected, before the clock starts (a first call has neither)."""
    times = []
    for _ in range(repeats):
        compiled.programs.clear()
        compiled.resident = None
        gc.collect()
        start = time.process_time()
        compiled(x)
        times.append(time.process_time() - start)
    return min(times)


if __name__ == "__main__":
    main()
