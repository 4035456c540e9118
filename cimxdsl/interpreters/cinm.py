"""Interpreter functions for `cinm`: exact NumPy results (this level is device-agnostic)."""

import numpy as np
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)

from cimxdsl.dialects import cinm
from cimxdsl.dialects.utils import dense_array
from cimxdsl.interpreters.host import im2col
from cimxdsl.interpreters.values import as_type, numpy_dtype, register_family

_BINARY = {
    cinm.AddOp: np.add,
    cinm.SubOp: np.subtract,
    cinm.MulOp: np.multiply,
    cinm.AddsOp: np.add,
    cinm.SubsOp: np.subtract,
    cinm.MulsOp: np.multiply,
}
_UNARY = {
    "exp": np.exp,
    "log": np.log,
    "abs": np.abs,
    "ceil": np.ceil,
    "floor": np.floor,
    "negf": np.negative,
    "reciprocal": np.reciprocal,
    "round": np.round,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "square": np.square,
    "tanh": np.tanh,
}
_REDUCE = {"add": np.sum, "mul": np.prod, "max": np.max, "min": np.min}


def divide(a, b, dtype: np.dtype):
    return np.trunc(np.true_divide(a, b)) if np.issubdtype(dtype, np.integer) else np.true_divide(a, b)


def channel_scale(op: cinm.QuantizeOp | cinm.DequantizeOp, rank: int) -> np.ndarray:
    """The op's scales, shaped to broadcast along its axis."""
    scale = dense_array(op.scale).astype(np.float64)
    if scale.size == 1:
        return scale.reshape(())
    shape = [1] * rank
    shape[op.axis.value.data] = scale.size
    return scale.reshape(shape)


class CinmFunctions(InterpreterFunctions):
    @impl(cinm.ComputeOp)
    def run_compute(self, interpreter: Interpreter, op: cinm.ComputeOp, args: PythonValues):
        return interpreter.run_ssacfg_region(op.body, (), "cinm.compute")

    @impl_terminator(cinm.YieldOp)
    def run_yield(self, interpreter: Interpreter, op: cinm.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()

    @impl(cinm.GemmOp)
    def run_gemm(self, interpreter: Interpreter, op: cinm.GemmOp, args: PythonValues):
        dtype = numpy_dtype(op.result.type.element_type)
        result = np.matmul(args[0].astype(dtype), args[1].astype(dtype))
        return (result + args[2] if op.bias is not None else result,)

    @impl(cinm.GemvOp)
    def run_gemv(self, interpreter: Interpreter, op: cinm.GemvOp, args: PythonValues):
        dtype = numpy_dtype(op.result.type.element_type)
        return (np.matmul(args[0].astype(dtype), args[1].astype(dtype)),)

    def run_binary(self, interpreter: Interpreter, op, args: PythonValues):
        return (as_type(_BINARY[type(op)](args[0], args[1]), op.result.type),)

    def run_divide(self, interpreter: Interpreter, op, args: PythonValues):
        return (as_type(divide(args[0], args[1], args[0].dtype), op.result.type),)

    @impl(cinm.ElementWiseOp)
    def run_element_wise(self, interpreter: Interpreter, op: cinm.ElementWiseOp, args: PythonValues):
        return (as_type(_UNARY[op.method.data.value](args[0]), op.result.type),)

    @impl(cinm.ReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: cinm.ReduceOp, args: PythonValues):
        axes = tuple(op.dimensions.get_values())
        return (as_type(_REDUCE[op.method.data.value](args[0], axis=axes), op.result.type),)

    @impl(cinm.ScanOp)
    def run_scan(self, interpreter: Interpreter, op: cinm.ScanOp, args: PythonValues):
        scan = np.cumsum if op.method.data.value == "add" else np.cumprod
        return (as_type(scan(args[0], axis=-1), op.result.type),)

    @impl(cinm.TopKOp)
    def run_top_k(self, interpreter: Interpreter, op: cinm.TopKOp, args: PythonValues):
        flat = np.ravel(args[0])
        indices = np.argsort(-flat, kind="stable")[: args[1]]
        return flat[indices], indices.astype(np.int64)

    @impl(cinm.SimSearchOp)
    def run_sim_search(self, interpreter: Interpreter, op: cinm.SimSearchOp, args: PythonValues):
        left, right = (np.atleast_2d(a).astype(np.float64) for a in args)
        scores = left @ right.T
        if op.metric.data.value == "cos":
            scores /= np.outer(np.linalg.norm(left, axis=1), np.linalg.norm(right, axis=1))
        flat = scores.ravel()
        indices = np.argsort(-flat, kind="stable")[: op.k.value.data]
        return as_type(flat[indices], op.result_values.type), indices.astype(np.int64)

    @impl(cinm.Im2colOp)
    def run_im2col(self, interpreter: Interpreter, op: cinm.Im2colOp, args: PythonValues):
        return (im2col(args[0], *(a.get_values() for a in (op.kernel, op.strides, op.dilations))),)

    @impl(cinm.QuantizeOp)
    def run_quantize(self, interpreter: Interpreter, op: cinm.QuantizeOp, args: PythonValues):
        bits = op.bits.value.data
        low, high = (-(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1) if op.signed.value else (0, 2**bits - 1)
        scaled = np.rint(args[0] / channel_scale(op, args[0].ndim))
        return (as_type(np.clip(scaled, low, high), op.result.type),)

    @impl(cinm.DequantizeOp)
    def run_dequantize(self, interpreter: Interpreter, op: cinm.DequantizeOp, args: PythonValues):
        return (as_type(args[0] * channel_scale(op, args[0].ndim), op.result.type),)

    @impl(cinm.TransposeOp)
    def run_transpose(self, interpreter: Interpreter, op: cinm.TransposeOp, args: PythonValues):
        return (np.ascontiguousarray(np.transpose(args[0], [int(p) for p in args[1]])),)

    @impl(cinm.PopCountOp)
    def run_pop_count(self, interpreter: Interpreter, op: cinm.PopCountOp, args: PythonValues):
        return (int(np.count_nonzero(args[0])),)


register_family(CinmFunctions, _BINARY, CinmFunctions.run_binary)
register_family(CinmFunctions, (cinm.DivOp, cinm.DivsOp), CinmFunctions.run_divide)
register_impls(CinmFunctions)
