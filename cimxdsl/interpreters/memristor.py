"""Interpreter functions for `memristor` and for the `memristor_*` runtime functions (what
`memristor-to-func` declares and calls), both running the device model.

The runtime functions are external functions (`impl_external`): `func.call` enters a declaration
without a body through `Interpreter.call_external`. Their names carry the element types of their
memrefs (`library_call_name`), so `memristor_functions` registers one for each declaration of the
module being run; a write's name also carries its precision (`memristor_write_to_crossbar_w4a4_i32`)."""

from dataclasses import dataclass
from functools import cache

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import (
    ExtFuncImpl,
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    impl_external,
    register_impls,
)
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from cimxdsl.dialects import memristor
from cimxdsl.dialects.memristor import call_precision
from cimxdsl.dialects.utils import precision_of
from cimxdsl.interpreters.runtime import CrossbarRuntime

RUNTIME_PREFIX = "memristor_"

_DEVICE = {
    memristor.WriteToCrossbarOp: CrossbarRuntime.ensure_written,
    memristor.GemmOp: CrossbarRuntime.product,
    memristor.GevmOp: CrossbarRuntime.product,
    memristor.BarrierOp: CrossbarRuntime.barrier,
}
"""What each memristor op does on the device, given its crossbar and its memrefs."""


@cache
def runtime_op(callee: str) -> type[memristor.MemristorOp] | None:
    """The memristor op whose runtime function `callee` is (`library_call_name`: the op's name
    suffixed with element types, as `memristor_gemm_i8_i32`)."""
    for op_type in _DEVICE:
        stem = op_type.name.replace(".", "_")
        if callee == stem or callee.startswith(stem + "_"):
            return op_type
    return None


@register_impls
@dataclass
class MemristorFunctions(InterpreterFunctions):
    runtime: CrossbarRuntime

    def on_device(self, op_type: type[memristor.MemristorOp], args: PythonValues, op: Operation) -> tuple:
        """Run `op_type` on the device; a write at the precision `op` carries (the memristor op, or
        the runtime function's declaration, whose name says it: `call_precision`)."""
        tile, *memrefs = args
        crossbar = self.runtime.physical(tile)
        if op_type is memristor.WriteToCrossbarOp:
            precision = precision_of(op) if isinstance(op, memristor.MemristorOp) else call_precision(op.sym_name.data)
            self.runtime.ensure_written(crossbar, *memrefs, precision)
        else:
            _DEVICE[op_type](self.runtime, crossbar, *memrefs)
        return ()

    @impl(memristor.WriteToCrossbarOp)
    def run_write(self, interpreter: Interpreter, op: memristor.WriteToCrossbarOp, args: PythonValues):
        return self.on_device(type(op), args, op)

    @impl(memristor.GemmOp)
    def run_gemm(self, interpreter: Interpreter, op: memristor.GemmOp, args: PythonValues):
        return self.on_device(type(op), args, op)

    @impl(memristor.GevmOp)
    def run_gevm(self, interpreter: Interpreter, op: memristor.GevmOp, args: PythonValues):
        return self.on_device(type(op), args, op)

    @impl(memristor.BarrierOp)
    def run_barrier(self, interpreter: Interpreter, op: memristor.BarrierOp, args: PythonValues):
        return self.on_device(type(op), args, op)


def runtime_function(callee: str) -> ExtFuncImpl[MemristorFunctions]:
    """The external function `callee`: its memristor op on the device, or an error naming it if
    it is no runtime function."""
    op_type = runtime_op(callee)

    def run(functions: MemristorFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
        if op_type is None:
            raise InterpretationError(f"unknown crossbar runtime function '{callee}'")
        return functions.on_device(op_type, args, op)

    return impl_external(callee)(run)


def runtime_declarations(module: ModuleOp) -> list[str]:
    """The `memristor_*` functions `module` declares (without a body)."""
    return [
        op.sym_name.data
        for op in module.body.block.ops
        if isinstance(op, func.FuncOp) and not op.body.blocks and op.sym_name.data.startswith(RUNTIME_PREFIX)
    ]


def memristor_functions(module: ModuleOp, runtime: CrossbarRuntime) -> MemristorFunctions:
    """`MemristorFunctions` on `runtime`, with the runtime functions `module` declares as external functions."""
    names = runtime_declarations(module)
    if not names:
        return MemristorFunctions(runtime)
    methods = {f"run_{name}": runtime_function(name) for name in names}
    return register_impls(type("MemristorRuntimeFunctions", (MemristorFunctions,), methods))(runtime)
