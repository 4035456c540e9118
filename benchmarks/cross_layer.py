"""Cross-layer scheduling (`schedule-clsa`, after CLSA-CIM: Pelke et al., DATE 2024) against
layer-by-layer schedules, on a ResNet-18-shaped and a VGG-like CNN on the Cinnamon device (8-bit
weights and inputs), with and without weight duplication. Latency and crossbar utilisation (busy
crossbar-time ÷ crossbars × latency) are measured by running the compiled programs in the device
model; every result is checked against the unscheduled program's.

- *weights stationary*: the weights are on their crossbars (a second run of the program on the same
  device); `schedule-clsa` across layers against the same placement layer by layer
  (`cross-layer=false`), as CLSA-CIM compares;
- *cold*: the first run, every weight written when first needed; `schedule-clsa` against the best
  of the layer-by-layer strategies (`asap`, `alap`, `round-robin`, `list`, one device of all the
  crossbars per layer).

The device has a crossbar per weight tile (`×1`), or twice as many with a copy budget of one per
tile (`×2`, `duplicates=` the tile count). Layers are tiled in bands of one output row.

    python benchmarks/cross_layer.py [--size 32] [--width 8] [--models resnet18,vgg19]
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.model_zoo import MODELS
from cimxdsl.api import apply_passes
from cimxdsl.device import Device, DeviceConfig, preset
from cimxdsl.dialects import cim
from cimxdsl.frontend.onnx_importer import import_onnx
from cimxdsl.interpreters import Program
from cimxdsl.transforms.memristor.schedule import ScheduleClsaPass, ScheduleListPass
from cimxdsl.transforms.memristor.scheduling import stored_tile

BASELINES = ("asap", "alap", "round-robin", "list")


def measure(module, config: DeviceConfig, x: np.ndarray, expected: np.ndarray, warm: bool) -> tuple[float, float]:
    """Latency (ns) and utilisation of one run (the second, with `warm`), its result checked."""
    program = Program(module, Device(config))
    if warm:
        program([x])
        program.device.reset_metrics()
    result = program([x])
    np.testing.assert_array_equal(result.outputs[0], expected)
    busy = sum(c["busy_ns"] for c in result.device.report()["crossbars"].values())
    latency = result.device.latency_ns
    return latency, busy / (config.crossbars * latency)


def weight_tiles(tiled, crossbars: int) -> int:
    module = tiled.clone()
    apply_passes(module, f"cinm-to-cim{{crossbars={crossbars} devices=model}}")
    return len({stored_tile(op) for op in module.walk() if isinstance(op, cim.GemmOp | cim.GemvOp)})


def compare(name: str, size: int, width: int) -> list[tuple]:
    base = preset("cinnamon").replace(weight_bits=8, input_bits=8)
    rows, cols = base.tile_shape
    tiled = import_onnx(MODELS[name](size=size, width=width, classes=10))
    apply_passes(tiled, f"linalg-to-cinm,cinm-isolate-compute,tile{{rows={rows} cols={cols} band=1}}")
    x = np.random.default_rng(0).integers(-8, 8, (1, 3, size, size)).astype(np.float32)
    expected = Program(tiled, Device(base))([x]).outputs[0]
    tiles = weight_tiles(tiled, 1 << 20)
    lines = []
    for copies in (0, tiles):
        config = base.replace(crossbars=tiles + copies)
        crossbars = config.crossbars

        def clsa(resident: bool, cross_layer: bool = True):
            module = tiled.clone()
            apply_passes(module, f"cinm-to-cim{{crossbars={crossbars} devices=model}}")
            ScheduleClsaPass.for_device(config, duplicates=copies, resident=resident, cross_layer=cross_layer).apply(
                None,  # pyright: ignore[reportArgumentType]
                module,
            )
            return measure(module, config, x, expected, warm=resident)

        def layer_by_layer(strategy: str):
            module = tiled.clone()
            apply_passes(module, f"cinm-to-cim{{crossbars={crossbars}}}")
            apply_passes(module, ScheduleListPass.for_device(config) if strategy == "list" else f"schedule-{strategy}")
            return measure(module, config, x, expected, warm=False)

        stationary = clsa(True), clsa(True, cross_layer=False)
        cold = {strategy: layer_by_layer(strategy) for strategy in BASELINES}
        best = min(cold, key=lambda strategy: cold[strategy][0])
        lines.append((name, f"x{1 + bool(copies)}", crossbars, "stationary", "layer-by-layer", *stationary))
        lines.append((name, f"x{1 + bool(copies)}", crossbars, "cold", best, clsa(False), cold[best]))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--width", type=int, default=8)
    parser.add_argument("--models", default="resnet18,vgg19")
    args = parser.parse_args()
    print(f"{args.size}x{args.size} images, width {args.width}, cinnamon (8-bit), bands of one output row")
    header = (
        "model",
        "tiles",
        "crossbars",
        "weights",
        "baseline",
        "clsa µs",
        "base µs",
        "speedup",
        "clsa util",
        "base util",
        "util ×",
    )
    print(" | ".join(header))
    for name in args.models.split(","):
        for model, duplication, crossbars, weights, baseline, (clsa_ns, clsa_util), (base_ns, base_util) in compare(
            name, args.size, args.width
        ):
            print(
                f"{model} | {duplication} | {crossbars} | {weights} | {baseline} | {clsa_ns / 1e3:.2f} | "
                f"{base_ns / 1e3:.2f} | {base_ns / clsa_ns:.2f} | {clsa_util:.3f} | {base_util:.3f} | "
                f"{clsa_util / base_util:.2f}"
            )


if __name__ == "__main__":
    main()
