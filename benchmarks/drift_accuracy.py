"""Accuracy of the digits models after 1 s, 1 hour, 1 day, 1 month and 1 year of conductance drift,
without and with drift compensation (global and per column): the shape of the curves IBM aihwkit
publishes for phase-change memory (Rasch et al., "Hardware-aware training for large-scale and
diverse deep learning inference workloads using in-memory computing-based accelerators",
Nat. Commun. 14, 2023).

The device: the Cinnamon crossbars (128×128, 2-bit cells and DACs, differential pairs) with int8
weights and inputs, an 8-bit ADC whose per-column spans are fixed from the calibration images at t₀, 2 % programming
noise, drift ν = 0.05 ± 0.01 per cell from t₀ = 1 s (the order of the PCM fits of Nandakumar et
al., ICECS 2019), and 1/f read noise Q = 0.02 growing with the time since programming. Each point
is the mean over `--seeds` devices (`cim-explore` runs the sweep).

    python benchmarks/drift_accuracy.py [--images 360] [--seeds 3] [--vit] [--input-encoding bipolar]
        [--out docs/figures]

Prints a Markdown table and writes `drift_accuracy.png` and `drift_accuracy.json` to `--out`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cimxdsl.explore import explore

DAY = 86400.0
TIMES = {"1 s": 1.0, "1 hour": 3600.0, "1 day": DAY, "1 month": 30 * DAY, "1 year": 365 * DAY}
COMPENSATIONS = ("none", "global", "column")
DEVICE = {
    "preset": "cinnamon",
    "weight_bits": 8,
    "input_bits": 8,
    "adc_bits": 8,
    "adc_range": "static_column",
    "prog_noise": 0.02,
    "drift_nu": 0.05,
    "drift_nu_std": 0.01,
    "read_noise_1f": 0.02,
}
MODELS = {"digits CNN": "digits", "digits ViT": "digits_vit.onnx"}
"""The bundled CNN and the ViT of examples/train_digits_vit.py (attention's run-time products on
the digital unit, `placement = "host"`)."""


def sweep(name: str, images: int, seeds: int, input_encoding: str = "offset") -> dict:
    examples = Path(__file__).resolve().parents[1] / "examples"
    model = MODELS[name]
    path = model if model == "digits" else str(examples / model)
    return {
        "name": f"{name}: drift",
        "model": path,
        "data": "digits",
        "calibration": str(examples / "digits_train.npz"),
        "limit": images,
        "seeds": seeds,
        "device": {**DEVICE, "input_encoding": input_encoding},
        "axes": {"drift_time_s": list(TIMES.values()), "drift_compensation": list(COMPENSATIONS)},
    }


def measure(name: str, images: int, seeds: int, input_encoding: str = "offset") -> dict:
    results = explore(sweep(name, images, seeds, input_encoding))
    by_point = {(s["drift_time_s"], s["drift_compensation"]): s for s in results.summary}
    return {
        "float_accuracy": results.float_accuracy,
        "curves": {
            c: [[by_point[t, c]["accuracy_mean"], by_point[t, c]["accuracy_std"]] for t in TIMES.values()]
            for c in COMPENSATIONS
        },
    }


def plot(measured: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(measured), figsize=(5.5 * len(measured), 4), squeeze=False)
    for ax, (name, data) in zip(axes[0], measured.items(), strict=True):
        times = list(TIMES.values())
        for compensation, style in zip(COMPENSATIONS, ("o-", "s--", "^:"), strict=True):
            mean, std = zip(*data["curves"][compensation], strict=True)
            ax.errorbar(times, mean, yerr=std, fmt=style, capsize=3, label=f"compensation: {compensation}")
        ax.axhline(data["float_accuracy"], color="gray", linestyle="--", linewidth=1, label="float model")
        ax.set_xscale("log")
        ax.set_xticks(times, list(TIMES))
        ax.set_xlabel("time since programming")
        ax.set_ylabel("top-1 accuracy")
        ax.set_title(name)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "drift_accuracy.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=360)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--vit", action="store_true", help="the digits ViT too")
    parser.add_argument(
        "--input-encoding", default="offset", help="how signed inputs reach the DACs (offset, or bipolar: signed DACs)"
    )
    parser.add_argument("--out", type=Path, default=Path("docs/figures"))
    args = parser.parse_args()
    names = ["digits CNN", "digits ViT"] if args.vit else ["digits CNN"]
    measured = {name: measure(name, args.images, args.seeds, args.input_encoding) for name in names}
    for name, data in measured.items():
        print(f"\n**{name}** (float model {data['float_accuracy']:.3f}; mean ± std over {args.seeds} devices)\n")
        print("| compensation | " + " | ".join(TIMES) + " |")
        print("|---|" + "---|" * len(TIMES))
        for compensation, curve in data["curves"].items():
            print(f"| {compensation} | " + " | ".join(f"{m:.3f} ± {s:.3f}" for m, s in curve) + " |")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "drift_accuracy.json").write_text(json.dumps(measured, indent=1))
    plot(measured, args.out)


if __name__ == "__main__":
    main()
