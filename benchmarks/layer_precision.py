"""Per-layer precision against uniform 8 bits, on both targets.

`pim`: a ResNet-18-shaped model (random weights, 224×224 by default) through the PIM target with
8-bit and with 4-bit weights and inputs in every layer (and 4 bits with the first and last layers
at 8): instructions, array groups (crossbar matrices) and the crossbars their weight slices take,
and the chip's performance estimate (latency per image, pipelined throughput, energy).

`digits`: the demo CNN on `cinnamon` (the memristor flow's bit-sliced device) on its 360 held-out
images, uniform int8 against a mixed-precision configuration and the device's own 4 bits:
accuracy, latency and energy per image (`cimxdsl.explore.precision.evaluate_precision`, the
function a precision search calls).

    python -m benchmarks.layer_precision pim [--size 224] [--width 64] [--chip pimcomp]
    python -m benchmarks.layer_precision digits [--device cinnamon]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.model_zoo import MODELS
from cimxdsl.api import compile_pim
from cimxdsl.backend.artifacts import read_artifacts
from cimxdsl.backend.performance import slices
from cimxdsl.device.chip import load_chip_config
from cimxdsl.explore.precision import evaluate_precision
from cimxdsl.frontend.integer import product_layers

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

DIGITS_CONFIGURATIONS = {
    "uniform int8": {"*": (8, 8)},
    "mixed: conv 6-bit weights, 4-bit inputs; fc 4/4": {"conv*": (6, 4), "fc": (4, 4)},
    "uniform 6/4": {"*": (6, 4)},
    "uniform 4/4 (the device's bits)": {"*": (4, 4)},
}


def pim(args) -> None:
    model = MODELS["resnet18"](size=args.size, width=args.width)
    layers = product_layers(model)
    configurations = {
        "int8": {"*": (8, 8)},
        "4-bit": {"*": (4, 4)},
        "4-bit, first and last layers 8-bit": {"*": (4, 4), layers[0]: (8, 8), layers[-1]: (8, 8)},
    }
    chip = load_chip_config(args.chip)
    calibration = list(np.random.default_rng(0).normal(size=(2, 1, 3, args.size, args.size)).astype(np.float32))
    print(f"ResNet-18-shaped, {args.size}x{args.size}, width {args.width}, chip '{chip.name}' "
          f"({chip.cell_precision}-bit cells, {chip.dac_resolution}-bit DACs), {len(layers)} layers")  # fmt: skip
    print("| configuration | instructions | array groups | crossbars (weight slices) | latency (ms) | throughput (images/s) | energy (µJ) | crossbar energy (µJ) | compile (s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, precision in configurations.items():
        with tempfile.TemporaryDirectory(prefix="cimxdsl-precision-") as out:
            start = time.perf_counter()
            compiled = compile_pim(model, calibration=calibration, out_dir=out, chip=chip, precision=precision)
            seconds = time.perf_counter() - start
            report = compiled.report()
            groups = [group for core in read_artifacts(out).cores for group in core.groups]
        p = report["performance"]
        print(
            f"| {label} | {report['instructions']:,} | {len(groups):,} | {sum(slices(chip, g) for g in groups):,} |"
            f" {p['latency_ns'] / 1e6:.3f} | {p['throughput']:.1f} | {p['energy_pj']['total'] / 1e6:.1f} |"
            f" {p['energy_pj']['crossbar'] / 1e6:.1f} | {seconds:.0f} |"
        )


def digits(args) -> None:
    train, test = np.load(EXAMPLES / "digits_train.npz"), np.load(EXAMPLES / "digits_test.npz")
    print(f"digits CNN on '{args.device}', {len(test['labels'])} held-out images")
    print("| configuration | bits (conv1, conv2, fc: weights/inputs) | accuracy | latency (ns) | energy (pJ) |")
    print("|---|---|---|---|---|")
    for label, precision in DIGITS_CONFIGURATIONS.items():
        r = evaluate_precision(
            EXAMPLES / "digits_cnn.onnx", precision, test["inputs"], test["labels"], device=args.device,
            calibration=train["calibration"], batch_size=60,
        )  # fmt: skip
        bits = ", ".join(f"{layer['weight_bits']}/{layer['input_bits']}" for layer in r["layers"])
        print(f"| {label} | {bits} | {r['accuracy']:.2%} | {r['latency_ns']:.0f} | {r['energy_pj']:,.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["pim", "digits"])
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--chip", default="pimcomp")
    parser.add_argument("--device", default="cinnamon")
    args = parser.parse_args()
    (pim if args.part == "pim" else digits)(args)


if __name__ == "__main__":
    main()
