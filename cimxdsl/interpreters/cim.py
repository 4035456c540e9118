"""Interpreter functions for `cim`: crossbar ops run on the device model and return futures."""

from dataclasses import dataclass

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from cimxdsl.dialects import cim
from cimxdsl.dialects.cinm import placement
from cimxdsl.dialects.utils import precision_of
from cimxdsl.interpreters.runtime import CrossbarRuntime, Future
from cimxdsl.interpreters.values import interpretation_error, numpy_dtype


@register_impls
@dataclass
class CimFunctions(InterpreterFunctions):
    runtime: CrossbarRuntime

    @impl(cim.AcquireDeviceOp)
    def run_acquire_device(self, interpreter: Interpreter, op: cim.AcquireDeviceOp, args: PythonValues):
        self.runtime.begin_layer((op.device_id.name_hint or "layer").removesuffix("_dev"), placement(op))
        return (self.runtime.device,)

    @impl(cim.ReleaseDeviceOp)
    def run_release_device(self, interpreter: Interpreter, op: cim.ReleaseDeviceOp, args: PythonValues):
        self.runtime.end_layer()
        return ()

    @impl(cim.AcquireCrossbarOp)
    def run_acquire_crossbar(self, interpreter: Interpreter, op: cim.AcquireCrossbarOp, args: PythonValues):
        crossbar = self.runtime.acquire()
        if crossbar is None:
            count = self.runtime.device.config.crossbars
            raise interpretation_error(op, f"the program acquires more crossbars than the device has ({count})")
        return (crossbar,)

    @impl(cim.ReleaseCrossbarOp)
    def run_release_crossbar(self, interpreter: Interpreter, op: cim.ReleaseCrossbarOp, args: PythonValues):
        self.runtime.release(args[0])
        return ()

    @impl(cim.GemmOp)
    def run_gemm(self, interpreter: Interpreter, op: cim.GemmOp, args: PythonValues):
        crossbar, inputs, weights = args[0], self.runtime.wait(args[1]), self.runtime.wait(args[2])
        self.runtime.ensure_written(crossbar, weights, precision_of(op))
        return (self.future(op, crossbar, inputs),)

    @impl(cim.GemvOp)
    def run_gemv(self, interpreter: Interpreter, op: cim.GemvOp, args: PythonValues):
        crossbar, matrix, vector = args[0], self.runtime.wait(args[1]), self.runtime.wait(args[2])
        self.runtime.ensure_written(crossbar, matrix.T, precision_of(op))
        return (self.future(op, crossbar, vector),)

    def future(self, op: cim.GemmOp | cim.GemvOp, crossbar: int, inputs) -> Future:
        t = op.result.type
        value = np.empty(t.get_shape(), numpy_dtype(t.element_type))
        self.runtime.product(crossbar, inputs, value)
        return Future(value, crossbar)

    @impl(cim.BarrierOp)
    def run_barrier(self, interpreter: Interpreter, op: cim.BarrierOp, args: PythonValues):
        return (self.runtime.wait(args[0]),)
