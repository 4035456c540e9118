"""What the latency of one image waits on in a `--target pim` program: the performance estimate's
critical path (`cimxdsl.backend.performance.critical_path`), from the core that ends last back
through every blocking transfer where a core waited for its peer. Printed per layer: the time the
path spends on the cores holding it and when the path enters and leaves them; with `--cores`,
each core's layers, busy time and end.

    python benchmarks/pim_critical_path.py [resnet18 light:squeezenet model.onnx ...]
        [--chip pimcomp|pimsim-nn|FILE] [--mapping none|greedy|ga] [--pipeline layer|row]
        [--packing kernel|im2col|sdk] [--array-group N] [--band-slack S] [--share-rows] [--row-weight W] [--size 224] [--cores]

A core holding several layers is named by all of them (`conv11,conv19`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.pimsim_compare import compile_model, compile_options, load
from cimxdsl.backend import read_artifacts
from cimxdsl.backend.performance import critical_path, estimate
from cimxdsl.device.chip import load_chip_config


def layers_of(core) -> str:
    """The layers whose crossbars `core` holds (`-`: none, a core of vector work)."""
    return ",".join(sorted({group.origin.split(":")[0] for group in core.groups})) or "-"


def report(name: str, args: argparse.Namespace) -> None:
    chip = load_chip_config(args.chip)
    with tempfile.TemporaryDirectory(prefix="cimxdsl-path-") as out:
        compile_model(load(name, args.size), args, Path(out))
        artifacts = read_artifacts(Path(out))
    p = estimate(artifacts, chip)
    label = {core.core_id: layers_of(core) for core in artifacts.cores}
    print(f"{name} on '{chip.name}' ({args.pipeline} pipeline, {args.packing}, array group {args.array_group}):")
    print(f"  latency {p.latency_ns / 1e6:.2f} ms; on the critical path, per layer (ms): time, entered, left")
    on_path: dict[str, list[float]] = {}
    for core, start, end in critical_path(artifacts, chip):
        spent = on_path.setdefault(label[core], [0.0, start, end])
        spent[0] += end - start
        spent[2] = end
    for layers, (spent, entered, left) in on_path.items():
        print(f"  {layers:30s} {spent / 1e6:7.2f} {entered / 1e6:8.2f} {left / 1e6:8.2f}")
    if args.cores:
        print("  core: layers, busy (ms), end (ms)")
        for core, busy, end in zip(artifacts.cores, p.core_busy_ns, p.core_end_ns, strict=True):
            print(f"  {core.core_id:4d} {label[core.core_id]:30s} {busy / 1e6:7.2f} {end / 1e6:8.2f}")


def main() -> None:
    parser = compile_options(__doc__.splitlines()[0])
    parser.add_argument("--cores", action="store_true", help="each core's layers, busy time and end")
    args = parser.parse_args()
    np.random.seed(0)
    for name in args.models:
        report(name, args)


if __name__ == "__main__":
    main()
