"""`cim-run`: interpret a function of IR at any level of the flow on a crossbar device model."""

import argparse
import bisect
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import FileLineColLoc, IndexType, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import InterpretationError
from xdsl.utils.lexer import Span

from cimxdsl.data_io import InputSpec, function_inputs, gather_inputs, read_input_files
from cimxdsl.device import DEFAULT_DEVICE, Device, DeviceConfigError
from cimxdsl.dialects.upmem import names_platform
from cimxdsl.interpreters import entry_function, result_names, run
from cimxdsl.interpreters.values import numpy_dtype
from cimxdsl.parsing import parse_located_module
from cimxdsl.report import format_report
from cimxdsl.tools.cli import UserError, add_backend_options, add_version_option, check_positive, run_reporting_errors
from cimxdsl.transforms.common.device_record import device_mismatch, recorded_device


def load_module(path: str) -> ModuleOp:
    """Parse and verify an MLIR file; errors name the file, line and column. Each op's location is
    where it starts in the file, as MLIR's parser sets it, so that run-time errors name it too."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise UserError(f"cannot read '{path}': {e.strerror}") from None
    module, spans = parse_located_module(text, path)
    set_locations(text, path, spans)
    return module


def set_locations(text: str, path: str, spans: dict[Operation, Span]) -> None:
    """Set each op's location to `path:line:col` of where it starts in `text` (one pass over the lines)."""
    line_starts = [0, *(match.end() for match in re.finditer("\n", text))]
    file = StringAttr(path)
    for op, span in spans.items():
        line = bisect.bisect_right(line_starts, span.start)
        op.location = FileLineColLoc(file, IntAttr(line), IntAttr(span.start - line_starts[line - 1] + 1))


def argument_names(module: ModuleOp, entry: str) -> list[str]:
    return [spec.name for spec in function_inputs(module, entry)]


def load_inputs(module: ModuleOp, entry: str, given: Sequence[str], randomize: bool, seed: int, bits: int) -> list:
    """The arguments of `@entry`: `--input NAME=FILE` arrays, checked against their types
    (`cimxdsl.data_io`), else random with `randomize`."""
    specs = function_inputs(module, entry)
    function = entry_function(module, entry)
    types = zip(function.function_type.inputs.data, function.body.block.args, strict=True)
    arguments = dict(zip((s.name for s in specs), types, strict=True))
    values = read_input_files(given, specs, bare=False)
    rng = np.random.default_rng(seed)

    def random(spec: InputSpec):
        t, argument = arguments[spec.name]
        return random_value(rng, t, bits, non_negative=becomes_index(argument))

    def missing(name: str) -> str:
        return f"no value for argument '{name}' of '@{entry}' (give --input {name}=file.npy or --random-inputs)"

    return gather_inputs(specs, values, random if randomize else None, missing=missing)[0]


_TO_INDEX = (tensor.ExtractOp, arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)
"""Ops through which an argument's integers reach an index (an element read, casts)."""


def becomes_index(value: SSAValue) -> bool:
    """Whether `value` is an index, or its integers become one through `_TO_INDEX` ops (token ids
    read from a tensor and cast to `index`, as an embedding lookup does)."""
    pending, seen = [value], set()
    while pending:
        current = pending.pop()
        if isinstance(getattr(current.type, "element_type", current.type), IndexType):
            return True
        for use in current.uses:
            if isinstance(use.operation, _TO_INDEX) and use.operation not in seen:
                seen.add(use.operation)
                pending += use.operation.results
    return False


def random_value(rng: np.random.Generator, t, bits: int, non_negative: bool = False):
    """Random integers of `bits` signed bits (int8, or less if the device takes less; only the
    non-negative ones for integers that become indices), or standard normal floats."""
    shape = getattr(t, "get_shape", lambda: ())()
    dtype = numpy_dtype(getattr(t, "element_type", t))
    if np.issubdtype(dtype, np.integer):
        bits = min(bits, np.iinfo(dtype).bits)
        low = 0 if non_negative else -(2 ** (bits - 1))
        return rng.integers(low, 2 ** (bits - 1), shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def save_results(path: str, names: list[str], inputs: list, outputs: list, output_names: list[str]) -> None:
    """An `.npz` of the results, by the names of the values the function returns (`result_<i>`
    where a value has none), and of the inputs they came from (`input_<argument>`)."""
    inputs_by_name = {f"input_{name}": np.asarray(value) for name, value in zip(names, inputs, strict=True)}
    output_names = [f"result_{i}" if name in inputs_by_name else name for i, name in enumerate(output_names)]
    arrays = {name: np.asarray(value) for name, value in zip(output_names, outputs, strict=True)}
    arrays.update(inputs_by_name)
    try:
        with open(path, "wb") as file:
            np.savez(file, **arrays)
    except OSError as e:
        raise UserError(f"cannot write '{path}': {e.strerror}") from None


def run_device(
    module: ModuleOp, given: str | None, backend: str = "numpy", array_device: str | None = None
) -> tuple[Device, str | None]:
    """The device to run `module` on: `given`, else the one recorded on the module
    (`device_record`), else `DEFAULT_DEVICE`, its products on `backend`'s `array_device`; and how
    a given device differs from the recorded one."""
    try:
        recorded = recorded_device(module)
        config = given if given is not None else recorded or DEFAULT_DEVICE
        device = Device(config, backend=backend, array_device=array_device)
    except (DeviceConfigError, OSError) as e:
        raise UserError(str(e)) from None
    return device, device_mismatch(module, device.config)


def main(args: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="cim-run", description=__doc__)
    parser.add_argument("file", help="an MLIR file at any level of the flow")
    parser.add_argument(
        "--device",
        help="a device preset or a TOML file (default: the device the IR was lowered for, recorded as the module "
        f"attribute cimxdsl.device, else {DEFAULT_DEVICE})",
    )
    parser.add_argument("--entry", default="main", help="the function to run (default: main)")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    parser.add_argument(
        "--random-inputs",
        action="store_true",
        help="random int8 (or float) values for arguments not given; integers that become indices are drawn in 0..127",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of --random-inputs")
    parser.add_argument("--threads", type=int, metavar="N", help="threads of the simulation (default: every core)")
    add_backend_options(parser)
    parser.add_argument("--report", action="store_true", help="print the device metrics")
    parser.add_argument("--report-json", metavar="FILE", help="write the device metrics as JSON")
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE.npz",
        help="write the results (by the names of the returned values, else result_0, …) and the inputs (input_NAME)",
    )
    add_version_option(parser)
    options = parser.parse_args(args)

    def body() -> None:
        check_positive(options, "threads")
        module = load_module(options.file)
        device, mismatch = run_device(module, options.device, options.backend, options.array_device)
        bits = min(8, device.config.weight_bits, device.config.input_bits)
        inputs = load_inputs(module, options.entry, options.input, options.random_inputs, options.seed, bits)
        try:
            result = run(module, inputs, device, options.entry, threads=options.threads)
        except InterpretationError as e:  # one line naming the failing op and its place
            raise UserError(f"{mismatch}: {str(e).splitlines()[0]}" if mismatch else str(e).splitlines()[0]) from None
        if mismatch:
            print(f"note: {mismatch}", file=sys.stderr)
        if names_platform(module):
            print(
                "note: the program names UPMEM platforms (#upmem.platform): kept as opaque attributes, "
                f"not used; it runs on the crossbar device '{device.config.name}'"
            )
        output_names = result_names(entry_function(module, options.entry), "result")
        with np.printoptions(threshold=64, edgeitems=3, linewidth=100):
            for i, (name, output) in enumerate(zip(output_names, result.outputs, strict=True)):
                print(f"result {i if name == f'result_{i}' else name}: {output!r}")
        if options.output:
            save_results(options.output, argument_names(module, options.entry), inputs, result.outputs, output_names)
        report = result.device.report()
        if options.report:
            print(format_report(report))
        if options.report_json:
            Path(options.report_json).write_text(json.dumps(report, indent=2))

    run_reporting_errors("cim-run", body)


if __name__ == "__main__":
    main(sys.argv[1:])
