"""The `pim` target's performance estimate against pimsim-nn (Qi et al., DATE 2024), the simulator
PIMCOMP-NN's figures come from: compile a model with `--target pim`, run the artifacts in
pimsim-nn with the configuration the compiler writes from the chip (`pimsim_config.json`), in
latency mode (one image) and throughput mode (`--sim-time` ms of images streamed through every
core's program), and print both beside the estimate.

    PIMSIM_NN=path/to/pimsim python benchmarks/pimsim_compare.py [resnet18 light:squeezenet model.onnx ...]
        [--chip pimcomp|pimsim-nn|FILE] [--mapping none|greedy|ga] [--pipeline layer|row]
        [--packing kernel|im2col|sdk] [--array-group N] [--band-slack S|auto] [--share-rows] [--row-weight W] [--size 224] [--sim-time MS]
        [--cores] [--keep DIR]

pimsim-nn is not part of this repository (build it from its public repository); `PIMSIM_NN` names
its binary. `--cores` adds each core's figures: pimsim-nn's finish time (latency mode) and rounds
(throughput mode) against the estimate's end and busy time. pimsim-nn counts the images that left
in the simulated time: n samples in T ms, the first at the latency and then one every period, put
the steady rate between (n − 1) ÷ (T − latency) and n ÷ (T − latency). Two throughput runs, ending
just before and just after the estimate's `--images`-th period, together bound it closely; the
estimate is inside the bounds or not.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cimxdsl.api
from benchmarks.model_zoo import MODELS, mobilenet_v2
from cimxdsl.backend.pimsim_config import CONFIG_FILE, SIM_MODES
from cimxdsl.tools.cim_compile import band_slack
from cimxdsl.transforms.pim.mapping.bands import SLACK

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def load(name: str, size: int) -> onnx.ModelProto:
    """A model of the zoo (`resnet18`, `mobilenetv2`, ...; random weights), a light architecture
    (`light:squeezenet`, random He-scaled weights) or an ONNX file."""
    if name == "mobilenetv2":
        return mobilenet_v2(size=size)
    if name in MODELS:
        return MODELS[name](size=size)
    if name.startswith("light:"):
        from benchmarks.pim_light_models import light_model

        return light_model(name.removeprefix("light:"), size=size)
    return onnx.load(name)


def run_pimsim(binary: str, directory: Path, mode: str, sim_time: float, verbose: bool) -> tuple[str, float]:
    """pimsim-nn's report of the artifacts in `directory` in `mode`, and its wall time."""
    config = json.loads((directory / CONFIG_FILE).read_text())
    config["sim_config"].update(
        sim_mode=SIM_MODES[mode], sim_time=sim_time, report_verbose_level=int(verbose), latency_timeout_ms=600000
    )
    path = directory / f"pimsim_{mode}.json"
    path.write_text(json.dumps(config, indent=1))
    start = time.perf_counter()
    done = subprocess.run(
        ["nice", binary, str(directory), str(path), "--instruction-mode=directory"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"pimsim-nn failed ({mode} mode, exit {done.returncode}): {done.stderr.strip()[-500:]}")
    return done.stdout, time.perf_counter() - start


MARGIN = 0.05
"""How far, in estimated periods, the two throughput runs end before and after the estimate's last sample."""


def rate_bounds(counts: list[float], sim_times: list[float], latency_ms: float) -> tuple[float, float]:
    """The steady rate (images/s after the first) that `counts` samples in `sim_times` ms allow: one
    leaves at the latency and one every period P after it, so n samples in T ms mean
    (n − 1)·P <= T − latency < n·P; the runs' bounds intersected."""
    low, high = 0.0, float("inf")
    for n, t in zip(counts, sim_times, strict=True):
        window = t - latency_ms
        if n >= 1 and window > 0:
            low, high = max(low, (n - 1) / window * 1e3), min(high, n / window * 1e3)
    return low, high


def figure(report: str, label: str) -> float:
    match = re.search(rf"- {label}:\s*([0-9.eE+-]+)", report)
    if match is None:
        raise SystemExit(f"pimsim-nn's report has no '{label}'")
    return float(match.group(1))


def per_core(report: str, label: str) -> dict[int, float]:
    """`Core <id> Information` blocks: the value of `label` per core."""
    pattern = rf"Core (\d+) Information\n(?:.*\n)*?\s*- {label}:\s*([0-9.eE+-]+)"
    return {int(core): float(value) for core, value in re.findall(pattern, report)}


def compile_model(model: onnx.ModelProto, args: argparse.Namespace, out: Path, **options) -> cimxdsl.api.PimModel:
    """`model` through `--target pim` with the options of `compile_options`, its artifacts in `out`."""
    return cimxdsl.api.compile_pim(
        model,
        out_dir=out,
        chip=args.chip,
        mapping=args.mapping,
        pipeline=args.pipeline,
        packing=args.packing,
        array_group=args.array_group,
        band_slack=args.band_slack,
        share_rows=args.share_rows,
        row_weight=args.row_weight,
        **options,
    )


def compare(name: str, args: argparse.Namespace, binary: str, out: Path) -> None:
    model = load(name, args.size)
    start = time.perf_counter()
    compiled = compile_model(model, args, out, cores=args.cores_given)
    compile_s = time.perf_counter() - start
    report = compiled.report()
    p = report["performance"]
    estimate_ms, estimate_tp = p["latency_ns"] / 1e6, p["throughput"]
    if args.sim_time:
        sim_times = [args.sim_time]
    else:  # just before and just after the estimate's last sample: together they bracket the rate closely
        sim_times = [round(estimate_ms + (args.images + m) * 1e3 / estimate_tp, 3) for m in (-MARGIN, MARGIN)]
    latency_report, latency_wall = run_pimsim(binary, out, "latency", sim_times[-1], args.cores)
    latency_ms = figure(latency_report, "latency")
    runs = [(t, *run_pimsim(binary, out, "throughput", t, args.cores)) for t in sim_times]
    counts = [figure(text, "output count") for _, text, _ in runs]
    low, high = rate_bounds(counts, sim_times, latency_ms)
    sim_time, throughput_report = runs[-1][0], runs[-1][1]
    expected = [1 + int((t - estimate_ms) * estimate_tp / 1e3) if t >= estimate_ms else 0 for t in sim_times]
    within = "inside" if low <= estimate_tp < high else "outside"
    print(
        f"{name} on '{p['chip']}', mapping {args.mapping}, pipeline {args.pipeline}, packing {args.packing}, "
        f"array group {args.array_group}: compile {compile_s:.1f} s, "
        f"{report['crossbars_used']} crossbars on {report['cores_used']} cores, {report['instructions']} instructions\n"
        f"  latency:    estimate {estimate_ms:.4g} ms, pimsim-nn {latency_ms:.4g} ms "
        f"({estimate_ms / latency_ms - 1:+.0%}; simulated in {latency_wall:.0f} s)\n"
        f"  throughput: estimate {estimate_tp:.4g} images/s ({within}), pimsim-nn {low:.4g} to {high:.4g} "
        f"samples/s after the first ({', '.join(f'{n:g} samples in {t:g} ms' for n, t in zip(counts, sim_times))}; "
        f"the estimate {', '.join(map(str, expected))}; simulated in "
        f"{', '.join(f'{wall:.0f}' for _, _, wall in runs)} s); "
        f"bottleneck {p['bottleneck']}, throughput bound {p['throughput_bound']:.4g} images/s"
    )
    if args.cores:
        finish = per_core(latency_report, "finish time")
        rounds = per_core(throughput_report, "rounds")
        print("  core: estimate end / pimsim-nn finish (ms), estimate busy (ms) / pimsim-nn ms per round")
        for core in sorted(finish):
            spent = sim_time / rounds[core] if rounds.get(core) else float("nan")
            print(
                f"  {core:3d}: {p['core_end_ns'][core] / 1e6:8.3f} / {finish[core]:8.3f}   "
                f"{p['core_busy_ns'][core] / 1e6:8.3f} / {spent:8.3f}"
            )


def compile_options(description: str) -> argparse.ArgumentParser:
    """A parser of the models and the options of their `--target pim` compile."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("models", nargs="*", default=["resnet18"])
    parser.add_argument("--chip", default="pimcomp")
    parser.add_argument("--mapping", default="greedy", choices=["none", "greedy", "ga"])
    parser.add_argument("--pipeline", default="layer", choices=["layer", "row"])
    parser.add_argument("--packing", default="im2col", choices=["kernel", "im2col", "sdk"])
    parser.add_argument("--array-group", type=int, default=1, help="crossbars side by side in one array group")
    parser.add_argument(
        "--band-slack",
        type=band_slack,
        default=SLACK,
        help="--pipeline row: the list schedule's slack (a number or auto)",
    )
    parser.add_argument(
        "--share-rows", action="store_true", help="--pipeline row: a layer's replicas compute each band together"
    )
    parser.add_argument(
        "--row-weight", type=float, default=0.0, help="--pipeline row: the mapping's weight of the layers of few rows"
    )
    parser.add_argument("--size", type=int, default=224)
    return parser


def main() -> None:
    parser = compile_options(__doc__.splitlines()[0])
    parser.add_argument("--sim-time", type=float, help="ms simulated in throughput mode (default: see --images)")
    parser.add_argument(
        "--images",
        type=float,
        default=5,
        help="with no --sim-time: throughput runs of the latency and this many estimated periods (less, more a margin)",
    )
    parser.add_argument("--cores-given", type=int, help="cores offered to the compiler (default: the chip's)")
    parser.add_argument("--cores", action="store_true", help="per-core figures (pimsim-nn's verbose report)")
    parser.add_argument("--keep", metavar="DIR", help="keep the artifacts in DIR/<model>")
    args = parser.parse_args()
    binary = os.environ.get("PIMSIM_NN")
    if not binary or not Path(binary).is_file():
        raise SystemExit("set PIMSIM_NN to pimsim-nn's binary (built from its public repository)")
    np.random.seed(0)
    for name in args.models:
        if args.keep:
            out = Path(args.keep) / Path(name.replace(":", "_")).stem
            compare(name, args, binary, out)
        else:
            with tempfile.TemporaryDirectory(prefix="cimxdsl-pimsim-") as out:
                compare(name, args, binary, Path(out))


if __name__ == "__main__":
    main()
