"""The figures of binary and ternary networks on binary cells (docs/dse.md):

1. From the results of `examples/sweep_digits_{bnn,tnn}.toml` (`cim-explore … -o DIR`): per weight
   mapping and cell variability, the smallest ADC whose mean accuracy stays within 1 point of the
   lossless ADC's, and the bits the device model guarantees lossless (`lossless_adc_bits`).
2. The digits BNN and TNN on ISAAC's crossbars in binary mode (1-bit cells, on/off ratio 10,
   bipolar 1-bit DACs, static per-column ADC spans) at each mapping's smallest ADC, against the
   int8 CNN of the same task on ISAAC with 8-bit weights and inputs (2-bit cells, its 9-bit ADC):
   accuracy on the 360 test images, crossbars, cells, ADC conversions, energy and latency per image.

    python benchmarks/bnn_figures.py --bnn out/bnn/results.json --tnn out/tnn/results.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import cimxdsl
from cimxdsl.device import DeviceConfig, load_device_config

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ADC_REFERENCE_BITS = 8
WITHIN = 0.01
"""Accuracy within 1 point of the lossless ADC's."""


def smallest_adc(results: dict) -> list[dict]:
    """Per (mapping, variability): the fewest ADC bits within `WITHIN` of the lossless point."""
    groups: dict[tuple, dict[int, float]] = {}
    for p in results["points"]:
        key = (p["encoding"], p["subtraction"], tuple(p["prog_noise_table"]), p["reference_noise"])
        groups.setdefault(key, {})[p["adc_bits"]] = p["accuracy_mean"]
    rows = []
    for (encoding, subtraction, table, _), accuracy in groups.items():
        lossless = accuracy[0]
        enough = [b for b in sorted(accuracy) if b and accuracy[b] >= lossless - WITHIN]
        rows.append(
            {
                "mapping": mapping_name(encoding, subtraction),
                "sigma": table[1],
                "lossless_accuracy": lossless,
                "smallest_adc_bits": enough[0] if enough else None,
                "accuracy": accuracy[enough[0]] if enough else None,
            }
        )
    return rows


def mapping_name(encoding: str, subtraction: str) -> str:
    if encoding == "reference":
        return "reference column"
    return f"differential pair ({subtraction} subtraction)"


def binary_device(results: dict, encoding: str, subtraction: str, adc_bits: int) -> DeviceConfig:
    """The sweep's base device with a mapping and an ADC."""
    base = DeviceConfig.from_dict(results["sweep"]["base_device"])
    return costed(base.replace(encoding=encoding, subtraction=subtraction, adc_bits=adc_bits, name="isaac-binary"))


def costed(config: DeviceConfig) -> DeviceConfig:
    """The sweeps' ADC cost: ISAAC's 8-bit figure scaled linearly with the bits."""
    return config.replace(adc_pj=config.adc_pj * (config.adc_bits or config.lossless_adc_bits) / ADC_REFERENCE_BITS)


def run(model: Path, device: DeviceConfig, images: np.ndarray, labels: np.ndarray) -> dict:
    """Accuracy over `images` and the costs of one image."""
    calibration = EXAMPLES / "digits_train.npz"
    compiled = cimxdsl.compile(model, device=device, calibration=calibration)
    compiled(images[:1])
    written = compiled.report()["total"]  # the first image's: it writes every tile once
    compiled(images[1:2])
    last = compiled.report()  # the second image's: weights resident
    # the accuracy in one batch, as the sweeps run it (one row at a time, a 1-bit read's sums with
    # HRS currents round some ADC ties otherwise: within a point)
    batch = cimxdsl.compile(model, device=device, calibration=calibration, batch=len(images))
    predictions = batch(images).reshape(len(images), -1).argmax(axis=1)
    return {
        "accuracy": float((predictions == labels).mean()),
        "crossbars": written["writes"],
        "cells": written["cells_written"],
        "adc_conversions": last["total"]["adc_conversions"],
        "energy_pj": last["total"]["energy_pj"]["total"],
        "latency_ns": last["latency_ns"],
        "lossless_adc_bits": device.lossless_adc_bits,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bnn", type=Path, required=True, help="results.json of sweep_digits_bnn.toml")
    parser.add_argument("--tnn", type=Path, required=True, help="results.json of sweep_digits_tnn.toml")
    parser.add_argument("--images", type=int, default=360)
    args = parser.parse_args()
    with np.load(EXAMPLES / "digits_test.npz") as data:
        images, labels = data["inputs"][: args.images], data["labels"][: args.images]

    print("Smallest ADC within 1 point of the lossless ADC (mean over seeds):\n")
    print("| network | mapping | σ (LRS, HRS) | lossless | smallest ADC | its accuracy |")
    print("|---|---|---|---|---|---|")
    best: dict[tuple[str, str], int] = {}
    sweeps = {}
    for network, path in (("BNN", args.bnn), ("TNN", args.tnn)):
        results = sweeps[network] = json.loads(path.read_text())
        for row in smallest_adc(results):
            bits = row["smallest_adc_bits"]
            found = f"{bits} | {100 * row['accuracy']:.2f}" if bits else "— | —"
            print(f"| {network} | {row['mapping']} | {row['sigma']} | {100 * row['lossless_accuracy']:.2f} | {found} |")
            if row["sigma"] == 0 and bits:
                best[(network, row["mapping"])] = bits

    print("\nAgainst the int8 CNN (ISAAC crossbars; crossbars and cells written once, then the costs of one image):\n")
    print("| model | mapping | ADC bits | accuracy | crossbars | cells | ADC conversions | energy | latency |")
    print("|---|---|---|---|---|---|---|---|---|")
    int8 = costed(load_device_config("isaac").replace(weight_bits=8, input_bits=8, name="isaac-int8"))
    rows = [("int8 CNN", "offset, 2-bit cells", EXAMPLES / "digits_cnn.onnx", int8)]
    for network, model in (("BNN", "digits_bnn.onnx"), ("TNN", "digits_tnn.onnx")):
        for point in sweeps[network]["points"]:
            name = mapping_name(point["encoding"], point["subtraction"])
            if (network, name) in best and point["adc_bits"] == best[(network, name)] and point["reference_noise"] == 0:
                device = binary_device(sweeps[network], point["encoding"], point["subtraction"], point["adc_bits"])
                rows.append((network, name, EXAMPLES / model, device))
    for label, mapping, model, device in rows:
        r = run(model, device, images, labels)
        print(
            f"| {label} | {mapping} | {device.adc_bits} | {100 * r['accuracy']:.2f} | {r['crossbars']} | "
            f"{r['cells']} | {r['adc_conversions']} | {r['energy_pj'] / 1000:.2f} nJ | "
            f"{r['latency_ns'] / 1000:.1f} µs |"
        )


if __name__ == "__main__":
    main()
