"""Interpreter functions for `memristor` and for calls of the `memristor_*` runtime functions
(what `memristor-to-func` emits), both running the device model."""

from dataclasses import dataclass
from functools import cache

from xdsl.dialects import func
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from cimxdsl.dialects import memristor
from cimxdsl.interpreters.runtime import CrossbarRuntime
from cimxdsl.interpreters.values import interpretation_error

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

    def on_device(self, op_type: type[memristor.MemristorOp], args: PythonValues) -> tuple:
        tile, *memrefs = args
        _DEVICE[op_type](self.runtime, self.runtime.physical(tile), *memrefs)
        return ()

    @impl(memristor.WriteToCrossbarOp)
    def run_write(self, interpreter: Interpreter, op: memristor.WriteToCrossbarOp, args: PythonValues):
        return self.on_device(type(op), args)

    @impl(memristor.GemmOp)
    def run_gemm(self, interpreter: Interpreter, op: memristor.GemmOp, args: PythonValues):
        return self.on_device(type(op), args)

    @impl(memristor.GevmOp)
    def run_gevm(self, interpreter: Interpreter, op: memristor.GevmOp, args: PythonValues):
        return self.on_device(type(op), args)

    @impl(memristor.BarrierOp)
    def run_barrier(self, interpreter: Interpreter, op: memristor.BarrierOp, args: PythonValues):
        return self.on_device(type(op), args)

    @impl(func.CallOp)
    def run_call(self, interpreter: Interpreter, op: func.CallOp, args: PythonValues):
        """Calls of the runtime functions the memristor ops lower to run like the ops; other calls
        run as usual."""
        callee = op.callee.string_value()
        if not callee.startswith(RUNTIME_PREFIX):
            return interpreter.call_op(op.callee, args)
        op_type = runtime_op(callee)
        if op_type is None:
            raise interpretation_error(op, f"unknown crossbar runtime function '{callee}'")
        return self.on_device(op_type, args)
