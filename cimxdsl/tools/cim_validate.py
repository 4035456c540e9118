"""`cim-validate DIR --input x.npy [--expect y.npy]`: execute a `pim` artifact directory.

Loads and checks the directory (a malformed file is one line naming the file and the instruction),
runs every core's instructions on the instruction-level validator (round-robin, blocking
send/recv), assembles the outputs from global memory and compares them with the expected arrays
(exactly). Exit status 0 when everything ran and matched, 1 on a mismatch, a deadlock, an unmatched
send/recv or a malformed directory.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cimxdsl.backend.artifacts import ArtifactError, read_artifacts
from cimxdsl.backend.validator import ExecutionError, validate_images
from cimxdsl.data_io import InputError, InputSpec, check_inputs
from cimxdsl.tools.cli import add_version_option

TOOL = "cim-validate"


class Failure(Exception):
    """A one-line failure report."""


def load_arrays(paths: Sequence[str], what: str) -> list[np.ndarray]:
    arrays = []
    for path in paths:
        try:
            data = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise Failure(f"cannot read {what} '{path}': {e}") from None
        if isinstance(data, np.lib.npyio.NpzFile):
            arrays.extend(data[name] for name in data.files)
        else:
            arrays.append(data)
    return arrays


def image_inputs(artifacts, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """The inputs checked against the program's (`cimxdsl.data_io`): integers of its shapes, or
    of a batch of N images where the program takes one (streamed: `validate_images`)."""
    shapes = [(None, *t.shape[1:]) if t.shape and t.shape[0] == 1 else tuple(t.shape) for t in artifacts.memory.inputs]
    layouts = zip(artifacts.memory.inputs, shapes, strict=True)
    specs = [InputSpec(str(t.index), shape, np.dtype(np.int64)) for t, shape in layouts]
    try:
        return check_inputs(specs, arrays)[0]
    except InputError as e:
        raise Failure(str(e)) from None


def compare(outputs: list[np.ndarray], expected: list[np.ndarray]) -> list[str]:
    """One line per output that differs from its expected array."""
    if len(expected) != len(outputs):
        return [f"the program has {len(outputs)} outputs, {len(expected)} expected arrays were given"]
    problems = []
    for i, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        if tuple(got.shape) != tuple(want.shape):
            problems.append(f"output {i}: shape {list(got.shape)}, expected {list(want.shape)}")
            continue
        wrong = np.argwhere(got.astype(np.int64) != np.asarray(want).astype(np.int64))
        if len(wrong):
            index = tuple(int(v) for v in wrong[0])
            problems.append(
                f"output {i}: {len(wrong)} of {got.size} elements differ (first at {list(index)}: "
                f"got {got[index]}, expected {want[index]})"
            )
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=TOOL, description=__doc__.splitlines()[0])
    parser.add_argument("directory", help="artifact directory (config.json, core_<id>.json, ...)")
    parser.add_argument("--input", action="append", default=[], help="input array (.npy, or .npz for several)")
    parser.add_argument("--expect", action="append", default=[], help="expected output array (.npy or .npz)")
    parser.add_argument("--output", help="save the outputs to this .npz file")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    add_version_option(parser)
    args = parser.parse_args(argv)
    try:
        artifacts = read_artifacts(args.directory)
        inputs = image_inputs(artifacts, load_arrays(args.input, "input"))
        result = validate_images(artifacts, inputs)
        if args.output:
            np.savez(Path(args.output), *result.outputs)
        problems = compare(result.outputs, load_arrays(args.expect, "expected output")) if args.expect else []
    except (ArtifactError, ExecutionError, Failure) as e:
        print(f"{TOOL}: error: {e}", file=sys.stderr)
        return 1
    if problems:
        for problem in problems:
            print(f"{TOOL}: mismatch: {problem}", file=sys.stderr)
        return 1
    if not args.quiet:
        shapes = ", ".join(str(list(o.shape)) for o in result.outputs)
        verdict = "match" if args.expect else "computed"
        images = f" for {result.images} images, one after another" if result.images > 1 else ""
        print(
            f"{TOOL}: ok: {len(artifacts.cores)} cores executed {result.executed} instructions in {result.steps} "
            f"round-robin steps{images}; outputs {shapes} {verdict}"
        )
        if not args.expect and not args.output:
            for i, output in enumerate(result.outputs):
                print(f"output {i}: {np.array2string(output, threshold=64)}")
    return 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
