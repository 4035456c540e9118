"""Interpreter functions for every level of the flow, sharing one crossbar device model.

`run(module, inputs, device=..., entry="main")` interprets a function at any level: cinm ops are
exact, cim and memristor ops (and calls of the `memristor_*` runtime) run on the device, host ops
run in NumPy.
"""

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues
from xdsl.interpreters import builtin as builtin_functions
from xdsl.interpreters import func as func_functions
from xdsl.interpreters import scf as scf_functions
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from cimxdsl.device import Device, DeviceConfig
from cimxdsl.device.threads import check_threads, using_threads
from cimxdsl.interpreters.affine import AffineFunctions
from cimxdsl.interpreters.arith import ArithFunctions
from cimxdsl.interpreters.bufferization import BufferizationFunctions
from cimxdsl.interpreters.cim import CimFunctions
from cimxdsl.interpreters.cinm import CinmFunctions
from cimxdsl.interpreters.lifetimes import ValueReleaser
from cimxdsl.interpreters.linalg import LinalgFunctions
from cimxdsl.interpreters.math import MathFunctions
from cimxdsl.interpreters.memref import MemrefFunctions
from cimxdsl.interpreters.memristor import memristor_functions
from cimxdsl.interpreters.pim import PimFunctions
from cimxdsl.interpreters.prepared import PreparedFunction
from cimxdsl.interpreters.runtime import CrossbarRuntime
from cimxdsl.interpreters.spatial import SpatialFunctions
from cimxdsl.interpreters.tensor import TensorFunctions
from cimxdsl.interpreters.tosa import TosaFunctions
from cimxdsl.interpreters.upstream import UpstreamFunctions
from cimxdsl.interpreters.values import as_type, interpretation_error, op_context


def implementations(module: ModuleOp, runtime: CrossbarRuntime) -> tuple[InterpreterFunctions, ...]:
    """The interpreter functions of every dialect, crossbar ops running on `runtime` (and the
    runtime functions `module` declares, `memristor_functions`). Each op has one implementation
    among them: they register without `override`, which refuses a second one."""
    return (
        func_functions.FuncFunctions(),
        scf_functions.ScfFunctions(),
        builtin_functions.BuiltinFunctions(),
        ArithFunctions(),
        MathFunctions(),
        TensorFunctions(),
        LinalgFunctions(runtime),
        TosaFunctions(),
        BufferizationFunctions(),
        MemrefFunctions(),
        AffineFunctions(),
        CinmFunctions(runtime),
        CimFunctions(runtime),
        memristor_functions(module, runtime),
        SpatialFunctions(),
        PimFunctions(),
        UpstreamFunctions(),
    )


def build_interpreter(
    module: ModuleOp,
    device: Device | CrossbarRuntime,
    listeners: Sequence[Interpreter.Listener] = (),
    release_dead_values: bool = False,
) -> Interpreter:
    """An interpreter for `module` with every implementation registered, running crossbar ops on
    `device` (or on the state of an existing runtime); with `release_dead_values`, values are freed
    after their last use in a block run (`lifetimes`)."""
    interpreter = Interpreter(module, listeners=tuple(listeners))
    if release_dead_values:
        interpreter.listeners = (*interpreter.listeners, ValueReleaser(interpreter))
    runtime = device if isinstance(device, CrossbarRuntime) else CrossbarRuntime(device)
    for functions in implementations(module, runtime):
        interpreter.register_implementations(functions)
    return interpreter


@dataclass
class RunResult:
    outputs: list
    device: Device
    layers: list[dict]
    """Per device acquisition (a layer): its name and the metrics it added."""


def entry_function(module: ModuleOp, entry: str) -> func.FuncOp:
    for op in module.walk():
        if isinstance(op, func.FuncOp) and op.sym_name.data == entry and op.body.blocks:
            return op
    raise ValueError(f"no function '@{entry}' with a body in the module")


def result_names(function: func.FuncOp, fallback: str = "output") -> list[str]:
    """Names of the values a function returns: their name hints, `<fallback>_<i>` where a value
    has none or shares it with another (or the function returns in more than one place)."""
    returns = [op for block in function.body.blocks for op in block.ops if isinstance(op, func.ReturnOp)]
    hints = [v.name_hint for v in returns[0].operands] if len(returns) == 1 else []
    count = len(function.function_type.outputs.data)
    hints = hints or [None] * count
    return [h if h and hints.count(h) == 1 else f"{fallback}_{i}" for i, h in enumerate(hints)]


class Program:
    """`@entry` of `module` prepared to run on `device` (`prepared`): call it on inputs, as many
    times as needed; each call is one run, with its own crossbar allocation and layer records, on
    `device` or the device the call names (programmed weights stay on a device between runs)."""

    def __init__(
        self,
        module: ModuleOp,
        device: Device | DeviceConfig | str = "ideal",
        entry: str = "main",
        listeners: Sequence[Interpreter.Listener] = (),
        layer_products: bool = True,
        threads: int | None = None,
    ):
        self.device = device if isinstance(device, Device) else Device(device)
        self.layer_products = layer_products
        """Whether the tiles of a product run as one (`layer_products`; not with read noise, drawn per tile)."""
        self.threads = check_threads(threads)
        """The threads a run uses (`cimxdsl.device.threads`; None: the process default)."""
        self.entry = entry
        self.function = entry_function(module, entry)
        self.types = self.function.function_type.inputs.data
        self.runtime, self.current = CrossbarRuntime(self.device), CurrentOp()
        self.lock = threading.Lock()
        top = (*listeners, self.current)
        interpreter = build_interpreter(module, self.runtime, top, release_dead_values=True)
        self.prepared = self.reporting_errors(lambda: PreparedFunction(interpreter, self.function, top, self.runtime))

    def __call__(self, inputs: Sequence, device: Device | None = None) -> RunResult:
        """Interpret `@entry(*inputs)`; inputs are converted to the argument types. Calls from
        several threads (a Dask worker's) run one after the other."""
        with self.lock:
            return self._run(inputs, device)

    def _run(self, inputs: Sequence, device: Device | None) -> RunResult:
        if device is not None:
            self.device = self.runtime.device = device
        if len(inputs) != len(self.types):
            raise ValueError(f"'@{self.entry}' takes {len(self.types)} arguments, got {len(inputs)}")
        pairs = enumerate(zip(inputs, self.types, strict=True))
        arguments = [check_argument(self.entry, i, value, t) for i, (value, t) in pairs]
        self.runtime.reset()
        self.current.op = None
        config = self.device.config
        fuse = self.layer_products and not self.device.calibrating and not config.read_noisy
        with using_threads(self.threads):
            outputs = self.reporting_errors(lambda: self.prepared(arguments, fuse))
        self.device.sync()
        # results may be read-only views (of constants, broadcasts, transposes): the caller gets its own arrays
        outputs = [o if not isinstance(o, np.ndarray) or o.flags.writeable else o.copy() for o in outputs]
        return RunResult(outputs, self.device, self.runtime.layers)

    def reporting_errors(self, work):
        try:
            return work()
        except (ValueError, IndexError, ArithmeticError, InterpretationError) as e:
            # The functions' own errors name their op; those of xDSL, NumPy and the device model get it here.
            op = self.current.op
            if op is None or str(e).startswith(op_context(op)):
                raise
            message = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise interpretation_error(op, message) from e


def run(
    module: ModuleOp,
    inputs: Sequence,
    device: Device | DeviceConfig | str = "ideal",
    entry: str = "main",
    listeners: Sequence[Interpreter.Listener] = (),
    threads: int | None = None,
) -> RunResult:
    """Interpret `@entry(*inputs)` once; inputs are converted to the argument types."""
    return Program(module, device, entry, listeners, threads=threads)(inputs)


class CurrentOp(Interpreter.Listener):
    """The op being interpreted: the one a failing run failed in."""

    op: Operation | None = None

    def will_interpret_op(self, op: Operation, args: PythonValues) -> None:
        self.op = op


def check_argument(entry: str, index: int, value, t):
    shape = getattr(t, "get_shape", lambda: ())()
    if tuple(np.shape(value)) != tuple(shape):
        raise ValueError(f"argument {index} of '@{entry}' must have shape {list(shape)}, got {list(np.shape(value))}")
    return as_type(value, t)
