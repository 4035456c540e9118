"""Interpreter functions for `memristor` and for calls of the `memristor_*` runtime functions
(what `memristor-to-func` emits), both running the device model."""

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from cimxdsl.dialects import memristor
from cimxdsl.interpreters.runtime import CrossbarRuntime

RUNTIME_PREFIX = "memristor_"


@register_impls
@dataclass
class MemristorFunctions(InterpreterFunctions):
    runtime: CrossbarRuntime

    def write_to_crossbar(self, tile: int, weights: np.ndarray) -> None:
        self.runtime.ensure_written(self.runtime.physical(tile), weights)

    def product(self, tile: int, inputs: np.ndarray, result: np.ndarray) -> None:
        self.runtime.product(self.runtime.physical(tile), inputs, result)

    def barrier(self, tile: int) -> None:
        self.runtime.device.barrier(self.runtime.physical(tile))

    @impl(memristor.WriteToCrossbarOp)
    def run_write(self, interpreter: Interpreter, op: memristor.WriteToCrossbarOp, args: PythonValues):
        self.write_to_crossbar(*args)
        return ()

    @impl(memristor.GemmOp)
    def run_gemm(self, interpreter: Interpreter, op: memristor.GemmOp, args: PythonValues):
        self.product(*args)
        return ()

    @impl(memristor.GevmOp)
    def run_gevm(self, interpreter: Interpreter, op: memristor.GevmOp, args: PythonValues):
        self.product(*args)
        return ()

    @impl(memristor.BarrierOp)
    def run_barrier(self, interpreter: Interpreter, op: memristor.BarrierOp, args: PythonValues):
        self.barrier(*args)
        return ()

    @impl(func.CallOp)
    def run_call(self, interpreter: Interpreter, op: func.CallOp, args: PythonValues):
        """Calls of `memristor_*` declarations run the device; other calls run as usual."""
        callee = op.callee.string_value()
        if not callee.startswith(RUNTIME_PREFIX):
            return interpreter.call_op(op.callee, args)
        function = callee.removeprefix(RUNTIME_PREFIX)
        if function.startswith("write_to_crossbar"):
            self.write_to_crossbar(*args)
        elif function.startswith(("gemm", "gevm")):
            self.product(*args)
        elif function == "barrier":
            self.barrier(*args)
        else:
            raise ValueError(f"unknown crossbar runtime function '{callee}'")
        return ()
