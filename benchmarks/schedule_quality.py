"""Schedule quality: per layer, the simulated latency of each strategy's schedule divided
by a lower bound on any schedule's latency (writes included: the longest op, the total busy time ÷
crossbars, and the pigeonhole bound of indivisible ops, see `lower_bounds`), for 1, 4, 16 and 64
crossbars on the Cinnamon device (8-bit values). `--layers` also prints every layer's ratios.

    python benchmarks/schedule_quality.py [--model resnet18] [--size 32] [--width 16] [--layers]
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.model_zoo import MODELS
from cimxdsl.api import apply_passes
from cimxdsl.device import Device, preset
from cimxdsl.dialects import cim
from cimxdsl.frontend.onnx_importer import import_onnx
from cimxdsl.interpreters import run
from cimxdsl.transforms.memristor.schedule import ScheduleListPass
from cimxdsl.transforms.memristor.scheduling.critical_path import CrossbarCostModel, makespan_lower_bound_ns

STRATEGIES = ("asap", "alap", "round-robin", "list")


def lower_bounds(module, cost: CrossbarCostModel, crossbars: int) -> list[float]:
    """Per device acquisition (a layer), a lower bound on the latency of any schedule of its cim ops on
    `crossbars` crossbars, writes included (`makespan_lower_bound_ns`: the longest op, the total work ÷
    crossbars with each tile written once, and the pigeonhole bound of indivisible ops). No tile is
    resident before the layer: the simulator skips writing weights a crossbar already holds, but the
    random weights of the model zoo never repeat. A layer's latency counts from its acquisition, when
    the previous layer's crossbars are all done."""
    bounds = []
    for device in [op for op in module.walk() if isinstance(op, cim.AcquireDeviceOp)]:
        ops = [
            use.operation
            for acquire in device.device_id.uses
            if isinstance(acquire.operation, cim.AcquireCrossbarOp)
            for use in acquire.operation.crossbar_id.uses
            if isinstance(use.operation, cim.GemmOp | cim.GemvOp)
        ]
        bounds.append(makespan_lower_bound_ns(ops, cost, crossbars))
    return bounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18", choices=sorted(MODELS))
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--layers", action="store_true", help="print every layer's ratio too")
    args = parser.parse_args()
    config = preset("cinnamon").replace(weight_bits=8, input_bits=8, crossbars=64)
    rows, cols = config.tile_shape
    model = import_onnx(MODELS[args.model](size=args.size, width=args.width, classes=10))
    apply_passes(model, f"linalg-to-cinm,tile{{rows={rows} cols={cols}}}")
    x = np.random.default_rng(0).integers(-8, 8, (1, 3, args.size, args.size)).astype(np.float32)
    cost = CrossbarCostModel(config)
    print(f"{args.model} ({args.size}x{args.size}, width {args.width}) on cinnamon, 8-bit: latency / lower bound")
    print(f"{'crossbars':>9}  " + "  ".join(f"{s:>17}" for s in STRATEGIES))
    for crossbars in (1, 4, 16, 64):
        cells, per_layer = [], []
        for strategy in STRATEGIES:
            module = model.clone()
            apply_passes(module, f"cinm-to-cim{{crossbars={crossbars}}}")
            bounds = lower_bounds(module, cost, crossbars)
            schedule = ScheduleListPass.for_device(config) if strategy == "list" else f"schedule-{strategy}"
            apply_passes(module, schedule)
            layers = run(module, [x], Device(config)).layers
            ratios = [layer["latency_ns"] / bound for layer, bound in zip(layers, bounds, strict=True)]
            cells.append(f"mean {np.mean(ratios):4.2f} max {max(ratios):4.2f}")
            per_layer.append([layer["layer"] for layer in layers])
            per_layer.append(ratios)
        print(f"{crossbars:9}  " + "  ".join(f"{c:>17}" for c in cells))
        if args.layers:
            for i, name in enumerate(per_layer[0]):
                print(f"{name:>9}  " + "  ".join(f"{ratios[i]:17.3f}" for ratios in per_layer[1::2]))


if __name__ == "__main__":
    main()
