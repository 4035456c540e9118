"""Accuracy of the digits models after 1 s, 1 hour, 1 day, 1 month and 1 year of conductance drift,
without and with drift compensation (global and per column): the shape of the curves IBM aihwkit
publishes for phase-change memory (Rasch et al., "Hardware-aware training for large-scale and
diverse deep learning inference workloads using in-memory computing-based accelerators",
Nat. Commun. 14, 2023).

The device: the Cinnamon crossbars (128×128, 2-bit cells and DACs, differential pairs) with int8
weights and inputs, an 8-bit ADC whose per-column spans are calibrated on the training images at
t₀ (and rescaled by the compensation's reference read at t), 2 % programming noise, drift from
t₀ = 1 s with ν's mean and spread per conductance level from the PCM fit of Nandakumar et al.,
ICECS 2019 (`pcm_drift_tables`: 0.049 ± 0.008 on the programmed levels), and 1/f read noise
Q = 0.02 growing with the time since programming. Each point is the mean over `--seeds` devices
(`cim-explore` runs the sweep).

    python benchmarks/drift_accuracy.py [--images 360] [--seeds 3] [--vit] [--input-encoding bipolar]
        [--ablate] [--out docs/figures]

Prints a Markdown table and writes `drift_accuracy.png` and `drift_accuracy.json` to `--out`
(`drift_accuracy_bipolar.*` and so on for another input encoding).
`--ablate` instead measures, after a year and compensated, what each effect costs: the model
with one effect changed at a time (the ADC spans fixed at t₀, one ν spread for every level or
none, no 1/f noise, a lossless ADC).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cimxdsl.device.drift import pcm_drift_tables
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
    "drift_nu_table": list(pcm_drift_tables(2)[0]),
    "drift_nu_std_table": list(pcm_drift_tables(2)[1]),
    "read_noise_1f": 0.02,
}
ABLATIONS = {
    "the model": {},
    "ADC spans fixed at t₀": {"drift_adc_spans": "fixed"},
    "ν = 0.05 ± 0.01 on every level": {
        "drift_nu_table": [],
        "drift_nu_std_table": [],
        "drift_nu": 0.05,
        "drift_nu_std": 0.01,
    },
    "no ν spread": {"drift_nu_std_table": []},
    "no 1/f noise": {"read_noise_1f": 0.0},
    "lossless ADC": {"adc_bits": 0},
}
"""One effect changed at a time, for `--ablate`."""
MODELS = {"digits CNN": "digits", "digits ViT": "digits_vit.onnx"}
"""The bundled CNN and the ViT of examples/train_digits_vit.py (attention's run-time products on
the digital unit, `placement = "host"`)."""


def sweep(name: str, images: int, seeds: int, input_encoding: str = "offset", changes: dict | None = None) -> dict:
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
        "device": {**DEVICE, "input_encoding": input_encoding, **(changes or {})},
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


def ablate(name: str, images: int, seeds: int, input_encoding: str) -> dict:
    """Accuracy after a year, compensated globally and per column, with each of `ABLATIONS`."""
    rows = {}
    for label, changes in ABLATIONS.items():
        spec = sweep(name, images, seeds, input_encoding, changes)
        spec["axes"] = {"drift_time_s": [TIMES["1 year"]], "drift_compensation": ["global", "column"]}
        rows[label] = {s["drift_compensation"]: [s["accuracy_mean"], s["accuracy_std"]] for s in explore(spec).summary}
    return rows


def plot(measured: dict, out: Path) -> None:
    """The curves of `measured`, to `out`.png."""
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
    fig.savefig(out.with_suffix(".png"), dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=360)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--vit", action="store_true", help="the digits ViT too")
    parser.add_argument(
        "--input-encoding", default="offset", help="how signed inputs reach the DACs (offset, or bipolar: signed DACs)"
    )
    parser.add_argument("--ablate", action="store_true", help="what each effect costs after a year, compensated")
    parser.add_argument("--out", type=Path, default=Path("docs/figures"))
    args = parser.parse_args()
    names = ["digits CNN", "digits ViT"] if args.vit else ["digits CNN"]
    if args.ablate:
        for name in names:
            print(f"\n**{name}** after a year (mean ± std over {args.seeds} devices)\n")
            print("| change | global | column |\n|---|---|---|")
            for label, row in ablate(name, args.images, args.seeds, args.input_encoding).items():
                print(
                    f"| {label} | " + " | ".join(f"{m:.3f} ± {s:.3f}" for m, s in (row["global"], row["column"])) + " |"
                )
        return
    measured = {name: measure(name, args.images, args.seeds, args.input_encoding) for name in names}
    for name, data in measured.items():
        print(f"\n**{name}** (float model {data['float_accuracy']:.3f}; mean ± std over {args.seeds} devices)\n")
        print("| compensation | " + " | ".join(TIMES) + " |")
        print("|---|" + "---|" * len(TIMES))
        for compensation, curve in data["curves"].items():
            print(f"| {compensation} | " + " | ".join(f"{m:.3f} ± {s:.3f}" for m, s in curve) + " |")
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / ("drift_accuracy" + ("" if args.input_encoding == "offset" else f"_{args.input_encoding}"))
    stem.with_suffix(".json").write_text(json.dumps(measured, indent=1))
    plot(measured, stem)


if __name__ == "__main__":
    main()
