"""Interpreter functions for `cinm`: exact NumPy results (this level is device-agnostic). A compute
placed on the host (`cimxdsl.placement = "host"`) is a layer of the digital unit: with a runtime,
its gemms are counted there."""

from dataclasses import dataclass

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
from cimxdsl.dialects.cinm import ElementwiseKind, ReduceMethod, ScanMethod, SimilarityMetric
from cimxdsl.dialects.utils import dense_array, precision_of
from cimxdsl.interpreters.numeric import divide, erf, im2col, round_half_away
from cimxdsl.interpreters.runtime import CrossbarRuntime
from cimxdsl.interpreters.values import as_type, elementwise, interpretation_error, numpy_dtype


def cosine(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    return (left @ right.T) / np.outer(np.linalg.norm(left, axis=1), np.linalg.norm(right, axis=1))


_UNARY = {
    ElementwiseKind.EXP: np.exp,
    ElementwiseKind.LOG: np.log,
    ElementwiseKind.ABS: np.abs,
    ElementwiseKind.CEIL: np.ceil,
    ElementwiseKind.FLOOR: np.floor,
    ElementwiseKind.NEGF: np.negative,
    ElementwiseKind.RECIPROCAL: np.reciprocal,
    ElementwiseKind.ROUND: round_half_away,
    ElementwiseKind.SQRT: np.sqrt,
    ElementwiseKind.RSQRT: lambda x: 1 / np.sqrt(x),
    ElementwiseKind.SQUARE: np.square,
    ElementwiseKind.TANH: np.tanh,
    ElementwiseKind.ERF: erf,
}


def unsigned(reduce):
    """`reduce` on integers read as unsigned (two's complement bits), cast back to their type."""

    def run(x, axis):
        x = np.asarray(x)
        return reduce(x.view(x.dtype.str.replace("i", "u")), axis=axis).astype(x.dtype)

    return run


_REDUCE = {
    ReduceMethod.ADD: np.sum,
    ReduceMethod.MUL: np.prod,
    ReduceMethod.MAX: np.max,
    ReduceMethod.MIN: np.min,
    ReduceMethod.MAXNUMF: np.fmax.reduce,
    ReduceMethod.MINNUMF: np.fmin.reduce,
    ReduceMethod.MAXSI: np.max,
    ReduceMethod.MINSI: np.min,
    ReduceMethod.MAXUI: unsigned(np.max),
    ReduceMethod.MINUI: unsigned(np.min),
}
_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": divide}
"""The binary kinds of `cinm.op.elementwise` (the functions of `cinm.op.add`, … below)."""
_SCAN = {ScanMethod.ADD: np.cumsum, ScanMethod.MUL: np.cumprod}
_SIMILARITY = {SimilarityMetric.DOT: lambda left, right: left @ right.T, SimilarityMetric.COS: cosine}


def channel_scale(op: cinm.QuantizeOp | cinm.DequantizeOp, rank: int) -> np.ndarray:
    """The op's scales, shaped to broadcast along its axis."""
    scale = dense_array(op.scale).astype(np.float64)
    if scale.size == 1:
        return scale.reshape(())
    shape = [1] * rank
    shape[op.axis.value.data] = scale.size
    return scale.reshape(shape)


def product(functions: "CinmFunctions", interpreter: Interpreter, op: cinm.GemmOp | cinm.GemvOp, args: PythonValues):
    """`left · right (+ bias)` of a gemm or gemv, in the result's element type; the buffer form adds
    it into its `out` memref instead."""
    dtype = numpy_dtype(op.target.type.element_type)
    result = np.matmul(args[0].astype(dtype), args[1].astype(dtype))
    if functions.runtime is not None and cinm.on_host(op):  # a product placed on the digital unit
        functions.runtime.digital_product(np.shape(args[0]), np.shape(args[1]), precision_of(op))
    if op.bias is not None:
        result = result + args[2]
    if op.out is None:
        return (result,)
    args[-1][...] += result
    return ()


@register_impls
@dataclass
class CinmFunctions(InterpreterFunctions):
    runtime: CrossbarRuntime | None = None
    """Where products placed on the host are counted (none: they are not)."""

    run_add = impl(cinm.AddOp)(elementwise(_BINARY["add"]))
    run_sub = impl(cinm.SubOp)(elementwise(_BINARY["sub"]))
    run_mul = impl(cinm.MulOp)(elementwise(_BINARY["mul"]))
    run_div = impl(cinm.DivOp)(elementwise(_BINARY["div"]))
    run_adds = impl(cinm.AddsOp)(elementwise(_BINARY["add"]))
    run_subs = impl(cinm.SubsOp)(elementwise(_BINARY["sub"]))
    run_muls = impl(cinm.MulsOp)(elementwise(_BINARY["mul"]))
    run_divs = impl(cinm.DivsOp)(elementwise(_BINARY["div"]))

    @impl(cinm.ComputeOp)
    def run_compute(self, interpreter: Interpreter, op: cinm.ComputeOp, args: PythonValues):
        if self.runtime is None or cinm.placement(op) != "host":
            return interpreter.run_ssacfg_region(op.body, (), "cinm.compute")
        self.runtime.begin_layer(cinm.layer_name(op), "host")
        results = interpreter.run_ssacfg_region(op.body, (), "cinm.compute")
        self.runtime.end_layer()
        return results

    @impl(cinm.ComputeBlockOp)
    def run_compute_block(self, interpreter: Interpreter, op: cinm.ComputeBlockOp, args: PythonValues):
        return interpreter.run_ssacfg_region(op.body, args, "cinm.compute_block")

    @impl(cinm.MergePartialOp)
    def run_merge_partial(self, interpreter: Interpreter, op: cinm.MergePartialOp, args: PythonValues):
        raise interpretation_error(op, "has no semantics (Cinnamon declares it without operands or results)")

    @impl_terminator(cinm.YieldOp)
    def run_yield(self, interpreter: Interpreter, op: cinm.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()

    run_gemm = impl(cinm.GemmOp)(product)
    run_gemv = impl(cinm.GemvOp)(product)

    @impl(cinm.ElementwiseBufferOp)
    def run_elementwise_buffer(self, interpreter: Interpreter, op: cinm.ElementwiseBufferOp, args: PythonValues):
        kind = op.kind.data
        function = _BINARY[kind] if kind in _BINARY else _UNARY[cinm.UNARY_SPELLINGS[kind]]
        args[-1][...] = function(*args[:-1])
        return ()

    @impl(cinm.ElementWiseOp)
    def run_element_wise(self, interpreter: Interpreter, op: cinm.ElementWiseOp, args: PythonValues):
        return (as_type(_UNARY[op.method.data](args[0]), op.result.type),)

    @impl(cinm.ReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: cinm.ReduceOp, args: PythonValues):
        axes = tuple(op.dimensions.get_values())
        return (as_type(_REDUCE[op.method.data](args[0], axis=axes), op.result.type),)

    @impl(cinm.ScanOp)
    def run_scan(self, interpreter: Interpreter, op: cinm.ScanOp, args: PythonValues):
        return (as_type(_SCAN[op.method.data](args[0], axis=-1), op.result.type),)

    @impl(cinm.TopKOp)
    def run_top_k(self, interpreter: Interpreter, op: cinm.TopKOp, args: PythonValues):
        flat, k = np.ravel(args[0]), args[1]
        if not 0 <= k <= flat.size:
            raise interpretation_error(op, f"k = {k} is not in 0..{flat.size} (the input's elements)")
        indices = np.argsort(-flat, kind="stable")[:k]
        return flat[indices], indices.astype(np.int64)

    @impl(cinm.SimSearchOp)
    def run_sim_search(self, interpreter: Interpreter, op: cinm.SimSearchOp, args: PythonValues):
        left, right = (np.atleast_2d(a).astype(np.float64) for a in args)
        flat = _SIMILARITY[op.metric.data](left, right).ravel()
        indices = np.argsort(-flat, kind="stable")[: op.k.value.data]
        return as_type(flat[indices], op.result_values.type), indices.astype(np.int64)

    @impl(cinm.Im2colOp)
    def run_im2col(self, interpreter: Interpreter, op: cinm.Im2colOp, args: PythonValues):
        return (im2col(args[0], *(a.get_values() for a in (op.kernel, op.strides, op.dilations))),)

    @impl(cinm.QuantizeOp)
    def run_quantize(self, interpreter: Interpreter, op: cinm.QuantizeOp, args: PythonValues):
        low, high = op.code_range()
        scaled = np.rint(args[0] / channel_scale(op, args[0].ndim))
        return (as_type(np.clip(scaled, low, high), op.result.type),)

    @impl(cinm.DequantizeOp)
    def run_dequantize(self, interpreter: Interpreter, op: cinm.DequantizeOp, args: PythonValues):
        return (as_type(args[0] * channel_scale(op, args[0].ndim), op.result.type),)

    @impl(cinm.TransposeOp)
    def run_transpose(self, interpreter: Interpreter, op: cinm.TransposeOp, args: PythonValues):
        permutation = [int(p) for p in args[1]]
        if sorted(permutation) != list(range(np.ndim(args[0]))):
            raise interpretation_error(op, f"{permutation} is not a permutation of the {np.ndim(args[0])} dimensions")
        return (np.ascontiguousarray(np.transpose(args[0], permutation)),)

    @impl(cinm.PopCountOp)
    def run_pop_count(self, interpreter: Interpreter, op: cinm.PopCountOp, args: PythonValues):
        return (int(np.count_nonzero(args[0])),)
