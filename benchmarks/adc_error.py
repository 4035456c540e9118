"""Relative error of the crossbar model vs ADC bits, for the configuration of
docs/device-model.md: 128×64 int8 weights in four 2-bit cell slices on a differential pair
subtracted before a signed ADC, 16 int8 input rows, full-resolution (8-bit DAC, one pass) and
bit-serial (1-bit DAC) inputs, ADC 4–12 bits, random uniform int8 matrices (`--trials` of them).

Relative error = ‖Y − X·W‖_F / ‖X·W‖_F over all trials. The static ranges are calibrated on 64
other random input rows per matrix. Prints Markdown tables.

    python benchmarks/adc_error.py [--trials 10] [--seed 0]
"""

import argparse

import numpy as np

from cimxdsl.device import Device, DeviceConfig, calibrate_tile

BITS = range(4, 13)
BASE = DeviceConfig(
    rows=128, cols=256, weight_bits=8, input_bits=8, cell_bits=2, encoding="differential", subtraction="analog"
)
INPUTS = {"full-resolution": 8, "bit-serial": 1}


def relative_error(config: DeviceConfig, problems) -> float:
    """‖Y − X·W‖ / ‖X·W‖ of the device over the problems (W, X, calibration rows)."""
    error = signal = 0.0
    for w, x, calibration in problems:
        device = Device(config, adc_spans=calibrate_tile(config, w, calibration) if config.static_adc else None)
        device.write(0, w)
        exact = x @ w
        error += float(np.sum((device.mvm(0, x) - exact) ** 2.0))
        signal += float(np.sum(exact**2.0))
    return (error / signal) ** 0.5


def table(title: str, columns: dict[str, DeviceConfig], problems) -> str:
    lines = [f"{title}\n", "| ADC bits | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for bits in BITS:
        cells = [f"{relative_error(c.replace(adc_bits=bits), problems):.4f}" for c in columns.values()]
        lines.append(f"| {bits} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    problems = [
        (rng.integers(-128, 128, (128, 64)), rng.integers(-128, 128, (16, 128)), rng.integers(-128, 128, (64, 128)))
        for _ in range(args.trials)
    ]
    for name, dac in INPUTS.items():
        base = BASE.replace(dac_bits=dac)
        encodings = {
            f"{encoding}, full": base.replace(input_encoding=encoding)
            for encoding in ("offset", "twos_complement", "sign_magnitude", "bipolar")
        }
        print(table(f"**{name} inputs, by input encoding (`adc_range = \"full\"`)**", encodings, problems))
        ranges = {
            adc_range: base.replace(adc_range=adc_range)
            for adc_range in ("full_pow2", "full", "static_array", "static_slice", "static_column", "calibrated")
        }
        print(table(f"**{name} inputs, by ADC range (`input_encoding = \"offset\"`)**", ranges, problems))


if __name__ == "__main__":
    main()
