"""The crossbar model side by side with Sandia's CrossSim on the same matrices.

Both simulators compute X·W for random int8 data: W 128×64 with entries in −127..127, in four
2-bit weight slices on differential ("balanced") pairs, subtracted in the array before one signed
ADC per slice; X 16 rows of entries in −127..127; DACs that drive the levels −255..255 (cimxdsl's
8-bit bipolar DAC; CrossSim's 9-bit sign-magnitude DAC over the input range ±255), either in one
pass (full-resolution inputs) or one magnitude bit per pass (bit-serial inputs). Configurations:
ADC 6–10 bits over the full range (CrossSim's MAX) or over a span per weight slice calibrated on 64
other rows (cimxdsl `static_slice`; CrossSim's CALIBRATED range set to the largest ADC input its
profiler records per slice), and programming error and read noise with lossless ADCs. Relative
error = mean|Y − X·W| ÷ mean|X·W| per data set; the ratio is cimxdsl's error over CrossSim's,
pooled over the data sets (and its range over the sets).

CrossSim is no dependency of cimxdsl: this script runs its half in a separate interpreter that
has CrossSim installed, named by an environment variable:

    CROSSSIM_PYTHON=/path/to/venv/bin/python python benchmarks/crosssim_compare.py --out results.json
    CROSSSIM_PATH=/path/to/cross-sim python benchmarks/crosssim_compare.py   # a source checkout

(`CROSSSIM_PATH` is put on that interpreter's PYTHONPATH; the interpreter defaults to this one.)
`--crosssim-results results.json` reuses CrossSim's numbers from an earlier `--out` file, so the
tables can be remade without CrossSim. Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

ROWS, COLS, BATCH, CALIBRATION_ROWS = 128, 64, 16, 64
INPUT_LEVEL = 255  # the largest DAC level of both sides
INPUTS = {"full-resolution": 8, "bit-serial": 1}  # cimxdsl dac_bits
ADC_BITS = range(6, 11)
NOISE = (
    ("programming", "independent", 0.02),
    ("programming", "independent", 0.1),
    ("programming", "proportional", 0.05),
    ("read", "proportional", 0.05),
)


DRAWS = 4  # noise draws per data set (seeds) of a noisy configuration


def cases() -> list[dict]:
    """Every configuration both sides run (plain data: the CrossSim half reads it as JSON)."""
    found = []
    for inputs in INPUTS:
        for subtraction in ("analog", "digital"):
            for adc_range in ("full", "calibrated"):
                for bits in ADC_BITS if subtraction == "analog" else ADC_BITS[::2]:
                    found.append(
                        {
                            "inputs": inputs,
                            "subtraction": subtraction,
                            "adc_bits": bits,
                            "adc_range": adc_range,
                            "noise": None,
                        }
                    )
        for kind, model, sigma in NOISE:
            found.append(
                {
                    "inputs": inputs,
                    "subtraction": "analog",
                    "adc_bits": 0,
                    "adc_range": "full",
                    "noise": [kind, model, sigma],
                }
            )
    for bits, adc_range in ((6, "calibrated"), (7, "calibrated"), (10, "full")):  # CrossSim's ranges as set
        found.append(
            {
                "inputs": "bit-serial",
                "subtraction": "analog",
                "adc_bits": bits,
                "adc_range": adc_range,
                "noise": None,
                "widen": False,
            }
        )
    return found


def case_name(case: dict) -> str:
    where = "" if case["subtraction"] == "analog" else ", digital subtraction"
    if case["noise"]:
        kind, model, sigma = case["noise"]
        return f"{case['inputs']}, {kind} error {model} σ={sigma:g}, lossless ADC{where}"
    unwidened = "" if case.get("widen", True) else ", CrossSim's range not widened"
    return f"{case['inputs']}, ADC {case['adc_bits']} b {case['adc_range']}{where}{unwidened}"


def problems(trials: int, seed: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """`trials` random data sets (W, X, calibration rows)."""
    rng = np.random.default_rng(seed)
    return [
        (
            rng.integers(-127, 128, (ROWS, COLS)),
            rng.integers(-127, 128, (BATCH, ROWS)),
            rng.integers(-127, 128, (CALIBRATION_ROWS, ROWS)),
        )
        for _ in range(trials)
    ]


# ---- cimxdsl's half ---------------------------------------------------------------------------
def cimxdsl_config(
    case: dict, input_encoding: str = "bipolar", static_range: str = "static_slice", clip: str = "zero", seed: int = 0
):
    """The cimxdsl device of `case` (the input encoding, calibrated range and clip of programmed
    conductances as given)."""
    from cimxdsl.device import DeviceConfig

    config = DeviceConfig(
        rows=ROWS,
        cols=4 * COLS,
        weight_bits=8,
        input_bits=8,
        cell_bits=2,
        dac_bits=INPUTS[case["inputs"]],
        adc_bits=case["adc_bits"],
        adc_range=static_range if case["adc_range"] == "calibrated" else "full",
        encoding="differential",
        subtraction=case["subtraction"],
        input_encoding=input_encoding,
        seed=seed,
    )
    if case["noise"]:
        kind, model, sigma = case["noise"]
        if kind == "programming":
            # CrossSim clips a programmed conductance at 0 only (its default `clip_conductance = False`)
            config = config.replace(prog_noise=sigma, prog_noise_model=model, prog_noise_clip=clip)
        else:
            config = config.replace(read_noise=sigma)
    return config


def cimxdsl_product(config, w: np.ndarray, x: np.ndarray, calibration: np.ndarray) -> np.ndarray:
    """x @ w on a fresh cimxdsl device, its static ADC spans (if any) recorded on `calibration`."""
    from cimxdsl.device import Device, calibrate_tile

    device = Device(config, adc_spans=calibrate_tile(config, w, calibration) if config.static_adc else None)
    device.write(0, w)
    return device.mvm(0, x)


# ---- CrossSim's half (numpy and CrossSim only) ------------------------------------------------
def crosssim_parameters(case: dict, calibrated_range: list | None = None):
    """CrossSim's parameters for `case` (its public `CrossSimParameters`). The ADC range: MAX for
    `full`, or `calibrated_range` per slice; either widened to L = 2**(bits-1) - 1 cell steps
    where it holds fewer (cimxdsl's convention, which reads such sums exactly)."""
    from simulator import CrossSimParameters
    from simulator.parameters.core_parameters import BitSlicedCoreStyle, CoreStyle
    from simulator.parameters.xbar_parameters import ADCRangeLimits

    params = CrossSimParameters()
    core = params.core
    core.style, core.bit_sliced.style, core.bit_sliced.num_slices = CoreStyle.BITSLICED, BitSlicedCoreStyle.BALANCED, 4
    core.weight_bits, core.rows_max, core.cols_max = 8, ROWS, ROWS
    core.balanced.subtract_current_in_xbar = case["subtraction"] == "analog"
    core.mapping.weights.percentile = None
    core.mapping.weights.min, core.mapping.weights.max = -127.0, 127.0
    core.mapping.inputs.mvm.min, core.mapping.inputs.mvm.max = -float(INPUT_LEVEL), float(INPUT_LEVEL)
    device = params.xbar.device
    device.cell_bits, device.infinite_on_off_ratio, device.clip_conductance = 0, True, False
    params.xbar.dac.mvm.model = "SignMagnitudeDAC"  # (a new model replaces the parameter object)
    params.xbar.adc.mvm.model = "SignMagnitudeADC"
    dac, adc = params.xbar.dac.mvm, params.xbar.adc.mvm
    dac.bits, dac.signed, dac.input_bitslicing, dac.slice_size = 9, True, case["inputs"] == "bit-serial", 1
    adc.bits, adc.signed = case["adc_bits"], True
    adc.adc_per_ibit = dac.input_bitslicing
    step = 1 / (3 * (2 ** INPUTS[case["inputs"]] - 1))  # one cell level times one DAC level, normalised
    least = (2 ** (case["adc_bits"] - 1) - 1) * step if case.get("widen", True) else 0
    if case["adc_range"] == "full":
        calibrated_range = None if least < ROWS else [[-least, least]] * 4  # MAX spans ROWS
    if calibrated_range is not None:
        widened = [[min(low, -least), max(high, least)] for low, high in calibrated_range]
        adc.adc_range_option, adc.calibrated_range = ADCRangeLimits.CALIBRATED, widened
    else:
        adc.adc_range_option = ADCRangeLimits.MAX
    if case["noise"]:
        kind, model, sigma = case["noise"]
        error = device.programming_error if kind == "programming" else device.read_noise
        error.enable, error.magnitude = True, sigma
        error.model = "NormalIndependentDevice" if model == "independent" else "NormalProportionalDevice"
    params.simulation.disable_fast_balanced = True
    return params


def crosssim_calibration(case: dict, w: np.ndarray, calibration: np.ndarray) -> list:
    """CrossSim's CALIBRATED range per weight slice: ±(the largest |ADC input| its profiler records
    on the calibration rows), with ideal ADCs."""
    from simulator import AnalogCore

    params = crosssim_parameters({**case, "adc_bits": 0, "noise": None})
    params.simulation.analytics.profile_adc_inputs = True
    params.simulation.analytics.ntest = len(calibration)
    core = AnalogCore(w.T.astype(np.float64), params)
    core @ calibration.T.astype(np.float64)
    inputs = core.cores[0][0].adc_inputs
    return [[-float(np.abs(s).max()), float(np.abs(s).max())] for s in inputs]


def crosssim_product(case: dict, w: np.ndarray, x: np.ndarray, calibration: np.ndarray, seed: int) -> np.ndarray:
    from simulator import AnalogCore

    calibrated = (
        crosssim_calibration(case, w, calibration) if case["adc_range"] == "calibrated" and case["adc_bits"] else None
    )
    np.random.seed(seed)  # CrossSim draws its errors from NumPy's global generator
    core = AnalogCore(w.T.astype(np.float64), crosssim_parameters(case, calibrated))
    return np.asarray(core @ x.T.astype(np.float64)).T


def crosssim_side(folder: Path) -> None:
    """Run CrossSim on the data sets and cases `folder` holds; write its products there."""
    data = np.load(folder / "problems.npz")
    todo = json.loads((folder / "cases.json").read_text())
    trials = len(data["w"])
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (calibrated slice ranges that are no powers of two apart)
        for c, case in enumerate(todo):
            draws = DRAWS if case["noise"] else 1
            out[f"case{c}"] = np.stack(
                [
                    [
                        crosssim_product(
                            case, data["w"][t], data["x"][t], data["calibration"][t], 1000 * c + draws * t + d
                        )
                        for d in range(draws)
                    ]
                    for t in range(trials)
                ]
            )
    np.savez(folder / "crosssim.npz", **out)


def run_crosssim(data: list, todo: list[dict]) -> list[list[float]]:
    """CrossSim's relative error per case and data set, from its own interpreter."""
    python = os.environ.get("CROSSSIM_PYTHON", sys.executable)
    env = dict(os.environ)
    if "CROSSSIM_PATH" in os.environ:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.environ["CROSSSIM_PATH"], env.get("PYTHONPATH")]))
    elif "CROSSSIM_PYTHON" not in os.environ:
        sys.exit("crosssim_compare: set CROSSSIM_PYTHON (an interpreter with CrossSim) or CROSSSIM_PATH (its source)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        w, x, calibration = (np.stack(part) for part in zip(*data))
        np.savez(folder / "problems.npz", w=w, x=x, calibration=calibration)
        (folder / "cases.json").write_text(json.dumps(todo))
        subprocess.run([python, __file__, "--crosssim-side", str(folder)], env=env, check=True)
        with np.load(folder / "crosssim.npz") as products:
            return [
                [
                    float(np.mean([relative_error(y, xt @ wt) for y in ys]))
                    for ys, (wt, xt, _) in zip(products[f"case{c}"], data)
                ]
                for c in range(len(todo))
            ]


# ---- the comparison ---------------------------------------------------------------------------
def relative_error(y: np.ndarray, exact: np.ndarray) -> float:
    return float(np.abs(y - exact).mean() / np.abs(exact).mean())


def cimxdsl_errors(data: list, case: dict, **options) -> list[float]:
    """cimxdsl's relative error per data set (the mean over `DRAWS` seeds with noise)."""
    draws = DRAWS if case["noise"] else 1
    return [
        float(
            np.mean(
                [
                    relative_error(
                        cimxdsl_product(cimxdsl_config(case, seed=draws * t + d, **options), w, x, cal), x @ w
                    )
                    for d in range(draws)
                ]
            )
        )
        for t, (w, x, cal) in enumerate(data)
    ]


EXACT = 1e-9
"""A relative error below this is floating-point rounding: the product is exact (cimxdsl's are
integers; CrossSim's are floats)."""


def cell(ours: list[float], theirs: list[float]) -> str:
    """`cimxdsl / CrossSim (ratio)`, the errors averaged and the ratio pooled over the data sets."""
    sides = [f"{np.mean(e):.4f}" if max(e) >= EXACT else "exact" for e in (ours, theirs)]
    ratio = f" ({sum(ours) / sum(theirs):.2f})" if "exact" not in sides else ""
    return " / ".join(sides) + ratio


def grid(results: list[dict], rows: list, columns: dict, match) -> str:
    """A Markdown table: `rows` × `columns` (a title per column), each cell the result for which
    `match(case, row, column)` holds."""
    lines = ["| | " + " | ".join(columns.values()) + " |", "|---" * (len(columns) + 1) + "|"]
    for row in rows:
        cells = []
        for column in columns:
            found = [r for r in results if match(r["case"], row, column)]
            cells.append(cell(found[0]["cimxdsl"], found[0]["crosssim"]) if found else "")
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def report(results: list[dict], before: list[dict]) -> str:
    """The Markdown tables of the comparison (docs/device-model.md)."""
    columns = {(i, r): f"{i}, {r}" for i in INPUTS for r in ("full", "calibrated")}

    def adc(subtraction):
        return lambda case, bits, column: (
            not case["noise"]
            and case.get("widen", True)
            and case["subtraction"] == subtraction
            and (case["inputs"], case["adc_range"], case["adc_bits"]) == (*column, bits)
        )

    noise = [f"{kind} error, {model}, σ = {sigma:g}" for kind, model, sigma in NOISE]

    def noisy(case, row, column):
        return (
            case["noise"] is not None and noise[NOISE.index(tuple(case["noise"]))] == row and case["inputs"] == column
        )

    lossy = [r for r in results if (r["case"]["noise"] or r["case"]["adc_bits"]) and r["case"].get("widen", True)]
    ratios = [a / b for r in lossy for a, b in zip(r["cimxdsl"], r["crosssim"]) if a >= EXACT or b >= EXACT]
    parts = [
        "**ADC bits, pair subtracted before one signed ADC per weight slice** (cimxdsl / CrossSim, ratio)\n",
        grid(results, list(ADC_BITS), columns, adc("analog")),
        "**ADC bits, each array of the pair converted (digital subtraction)**\n",
        grid(results, list(ADC_BITS[::2]), columns, adc("digital")),
        "**Programming error and read noise, lossless ADC**\n",
        grid(results, noise, {i: i for i in INPUTS}, noisy),
        f"Ratio per data set over every configuration not exact on both sides: {min(ratios):.2f}–{max(ratios):.2f}.\n",
        "**CrossSim's MAX and CALIBRATED ranges as set, where they hold fewer than L cell steps**\n",
        "| configuration | cimxdsl / CrossSim (ratio) |",
        "|---|---|",
        *[
            f"| {r['name']} | {cell(r['cimxdsl'], r['crosssim'])} |"
            for r in results
            if not r["case"].get("widen", True)
        ],
        "",
        "**The conventions these replace, against the same CrossSim numbers**\n",
        "| configuration | cimxdsl / CrossSim (ratio) |",
        "|---|---|",
        *[f"| {b['label']} | {cell(b['cimxdsl'], b['crosssim'])} |" for b in before],
    ]
    return "\n".join(parts) + "\n"


BEFORE = (
    ("`offset` inputs", {"input_encoding": "offset"}),
    ("`sign_magnitude` inputs", {"input_encoding": "sign_magnitude"}),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write both sides' errors to this JSON file")
    parser.add_argument("--crosssim-results", type=Path, help="reuse CrossSim's errors from an earlier --out file")
    parser.add_argument("--crosssim-side", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.crosssim_side:
        return crosssim_side(args.crosssim_side)
    data, todo = problems(args.trials, args.seed), cases()
    if args.crosssim_results:
        saved = json.loads(args.crosssim_results.read_text())
        theirs = {row["name"]: row["crosssim"] for row in saved["cases"]}
        crosssim = [theirs[case_name(case)] for case in todo]
    else:
        crosssim = run_crosssim(data, todo)
    results = [
        {"name": case_name(case), "case": case, "cimxdsl": cimxdsl_errors(data, case), "crosssim": theirs}
        for case, theirs in zip(todo, crosssim)
    ]
    # the unsigned DACs, one span per array and the clip at G_max, on the configurations they change
    before = []
    for result in results:
        case = result["case"]
        changes = []
        if (
            case["noise"] is None
            and case["subtraction"] == "analog"
            and case["adc_bits"] in (6, 8)
            and "widen" not in case
        ):
            changes = [(label, options) for label, options in BEFORE]
            if case["adc_range"] == "calibrated":
                changes.append(("`static_array`", {"static_range": "static_array"}))
        elif case["noise"] and case["noise"][1] == "independent":
            changes = [('`prog_noise_clip = "both"`', {"clip": "both"})]
        for label, options in changes:
            ours = cimxdsl_errors(data, case, **options)
            before.append({"label": f"{result['name']}, {label}", "cimxdsl": ours, "crosssim": result["crosssim"]})
    print(report(results, before))
    if args.out:
        out = {"trials": args.trials, "seed": args.seed, "cases": results, "before": before}
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
