"""NumPy implementations of the upstream ops that run on the host (arith, tensor, linalg,
bufferization, memref). They replace xDSL's stock versions, which are pure-Python loops or missing; the
ops cimxdsl adds to these dialects (`dialects/upstream.py`) run in `upstream.py`.

Tensors and memrefs are NumPy arrays; a memref made from a tensor (`bufferization.to_buffer`) is the
same array, so writes through the memref are seen through the tensor.
"""

import math as pymath
import weakref
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import arith, bufferization, math, memref, tensor, tosa
from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS, CMPI_COMPARISON_OPERATIONS
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.dialects.linalg.ops import (
    AddOp,
    BroadcastOp,
    Conv2DNchwFchwOp,
    Conv2DNgchwGfchwOp,
    FillOp,
    MatmulOp,
    MaxOp,
    MinOp,
    MulOp,
    PoolingNchwMaxOp,
    SelectOp,
    SubOp,
    TransposeOp,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Operation

from cimxdsl.interpreters.values import as_type, constant_value, elementwise, interpretation_error, numpy_dtype

IM2COL_BLOCK_BYTES = 1 << 19  # output rows im2col fills at once (about an L2 cache)


def divide(a, b):
    """`a / b`, truncated towards zero for integers (as `arith.divsi`)."""
    quotient = np.true_divide(a, b)
    return np.trunc(quotient) if np.issubdtype(np.result_type(a), np.integer) else quotient


ERF_SERIES = np.array([(-1) ** n / (pymath.factorial(n) * (2 * n + 1)) for n in range(40)]) * 2 / pymath.sqrt(pymath.pi)
"""erf(x) = x · Σ ERF_SERIES[n] · x²ⁿ (the Maclaurin series of the error function)."""
ERF_BANDS = (0.5, 1.0, 2.0)
"""Bounds of |x| below which the series is cut after as many terms as that bound needs; from the
last on, the continued fraction of erfc."""
ERF_ONE = 6.0
"""|x| from which erf(x) = ±1 in float64 (erfc(6) ≈ 2e-17); each branch runs only on its elements."""
ERF_BLOCK = 1 << 15
"""Elements the series evaluates at once (its terms then stay in cache)."""


def series_terms(bound: float) -> int:
    """The terms of the erf series after which the next is below 1e-20 for |x| < `bound`."""
    n = 1
    while bound ** (2 * n) / (pymath.factorial(n) * (2 * n + 1)) > 1e-20:
        n += 1
    return n


def erf(x):
    """The Gauss error function, vectorised in float64 (NumPy has none): the Maclaurin series for
    |x| < 2, and for |x| ≥ 2 erfc(x) = e^(-x²)/√π · 1/(x + (1/2)/(x + (2/2)/(x + (3/2)/(x + …))))
    cut after 40 terms (Abramowitz & Stegun, Handbook of Mathematical Functions, 1964, 7.1.5 and
    7.1.14). Within 1e-14 of `math.erf`; the result keeps a float input's dtype."""
    x = np.asarray(x)
    magnitude = np.abs(x.astype(np.float64)).ravel()
    result = np.ones_like(magnitude)  # erf(|x|) is 1.0 in float64 from |x| = ERF_ONE on; NaN stays in band 0
    band = sum((magnitude >= edge).view(np.int8) for edge in (*ERF_BANDS, ERF_ONE))
    for b, bound in enumerate(ERF_BANDS + (None,)):
        where = np.flatnonzero(band == b)
        if where.size:
            part = magnitude[where]
            result[where] = erf_series(part, series_terms(bound)) if bound else erf_fraction(part)
    result = np.copysign(result.reshape(x.shape), x)
    return result.astype(np.result_type(x, np.float32) if x.dtype.kind == "f" else np.float64)


def erf_series(magnitude: np.ndarray, terms: int) -> np.ndarray:
    """The first `terms` terms of the erf series, by Horner's rule in place, a block at a time."""
    result = np.empty_like(magnitude)
    for start in range(0, magnitude.size, ERF_BLOCK):
        part = magnitude[start : start + ERF_BLOCK]
        square, acc = part * part, result[start : start + ERF_BLOCK]
        np.multiply(square, ERF_SERIES[terms - 1], out=acc)
        for c in ERF_SERIES[terms - 2 : 0 : -1]:
            acc += c
            acc *= square
        acc += ERF_SERIES[0]
        acc *= part
    return result


def erf_fraction(magnitude: np.ndarray) -> np.ndarray:
    """erf from the continued fraction of erfc (see `erf`)."""
    fraction = magnitude.copy()
    for k in range(40, 0, -1):
        np.divide(k / 2, fraction, out=fraction)
        fraction += magnitude
    return 1 - np.exp(-magnitude * magnitude) / (pymath.sqrt(pymath.pi) * fraction)


def identity(x):
    return x


def compare(predicate: str):
    """The NumPy comparison of an `arith.cmpi` predicate (`CMPI_COMPARISON_OPERATIONS`)."""
    function = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal}
    function |= {"gt": np.greater, "ge": np.greater_equal}
    if predicate.startswith("u"):  # sign-extended to 64 bits, values of one width keep their unsigned order
        return lambda a, b: function[predicate[1:]](np.asarray(a).astype(np.uint64), np.asarray(b).astype(np.uint64))
    return function[predicate.removeprefix("s")]


def compare_floats(predicate: str):
    """The NumPy comparison of an `arith.cmpf` predicate: ordered ones are false, unordered ones
    true, when an operand is NaN."""
    if predicate in ("false", "true"):
        return lambda a, b: np.full(np.broadcast_shapes(np.shape(a), np.shape(b)), predicate == "true")
    if predicate in ("ord", "uno"):
        return lambda a, b: (np.isnan(a) | np.isnan(b)) == (predicate == "uno")
    function = compare(predicate[1:])

    def run(a, b):
        unordered = np.isnan(a) | np.isnan(b)
        return np.where(unordered, predicate[0] == "u", function(a, b))

    return run


def reduction(function: Callable):
    """The implementation of a `tosa.reduce_*` op: `function` along the op's axis, keeping it."""

    def run(functions: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
        return result_of(op, function(args[0], axis=op.axis.value.data, keepdims=True))

    return run


def linalg_elementwise(function: Callable):
    """The implementation of a named linalg op whose result is `function` of its `ins`."""

    def run(functions: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
        return result_of(op, function(*args[: len(op.inputs)]), args[-1])

    return run


def linalg_convolution(product: Callable):
    """The implementation of a linalg convolution: `init` plus `product(x, w, strides, dilations)`
    in the accumulator's type."""

    def run(functions: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
        x, w, init = args
        strides, dilations = op.strides.get_values(), op.dilations.get_values()
        return result_of(op, init + product(x.astype(init.dtype), w.astype(init.dtype), strides, dilations))

    return run


def result_of(op: Operation, value, out=None) -> tuple:
    """`value` as the runtime value of `op`'s single result; an op without results (a linalg op on
    memrefs) writes it into `out`, its destination buffer, instead."""
    if not op.results:
        out[...] = value
        return ()
    return (as_type(value, op.results[0].type),)


_STATIC_SLICES: weakref.WeakKeyDictionary[Operation, tuple] = weakref.WeakKeyDictionary()
"""Per slice op: its static offset/size/stride attributes and their values (read once, not per run)."""


def slice_parameters(op: tensor.ExtractSliceOp | tensor.InsertSliceOp, args: PythonValues, first: int):
    """Static offsets/sizes/strides with the dynamic ones taken from the operands after `first`."""
    attributes = (op.static_offsets, op.static_sizes, op.static_strides)
    found = _STATIC_SLICES.get(op)
    if found is None or any(a is not b for a, b in zip(found[0], attributes, strict=True)):
        values = tuple(tuple(a.get_values()) for a in attributes)
        found = _STATIC_SLICES[op] = (attributes, values, any(DYNAMIC_INDEX in v for v in values))
    if not found[2]:
        return found[1]
    dynamic = iter(args[first:])
    return [[next(dynamic) if v == DYNAMIC_INDEX else v for v in static] for static in found[1]]


def checked_slices(op: Operation, offsets, sizes, strides, shape: Sequence[int]) -> tuple[slice, ...]:
    """`slices`, after checking that the slice lies inside `shape` (NumPy would wrap a negative
    offset and clip an overlong slice silently)."""
    for o, s, st, size in zip(offsets, sizes, strides, shape, strict=False):
        if s > 0 and not (0 <= o and o + (s - 1) * st < size):
            raise interpretation_error(
                op, f"slice at offsets {list(offsets)} of sizes {list(sizes)} (strides {list(strides)}) "
                f"is out of range for shape {list(shape)}"
            )
    return slices(offsets, sizes, strides, len(shape))


def slices(offsets, sizes, strides, rank: int) -> tuple[slice, ...]:
    assert len(offsets) == rank, "rank-reducing slices are not supported"
    return tuple(slice(o, o + s * st, st) for o, s, st in zip(offsets, sizes, strides, strict=True))


def im2col(x: np.ndarray, kernel, strides, dilations) -> np.ndarray:
    """Rows `(n, oy, ox)` of input windows in column order `(c, ky, kx)` (see `cinm.op.im2col`).

    With many channels, each kernel offset's channel vectors are copied from an NHWC copy of `x`,
    block by block of output rows so that a block's columns stay in cache while the kernel offsets
    fill them; with few channels, the windows are copied whole."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    n, c, h, w = x.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    if c < kh * kw:
        extent = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
        windows = np.lib.stride_tricks.sliding_window_view(x, extent, axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
        return np.ascontiguousarray(windows.transpose(0, 2, 3, 1, 4, 5)).reshape(n * oh * ow, c * kh * kw)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    cols = np.empty((n, oh, ow, c, kh, kw), x.dtype)
    block = max(1, IM2COL_BLOCK_BYTES // (ow * c * kh * kw * x.itemsize))
    for image in range(n):
        for top in range(0, oh, block):
            rows = min(block, oh - top)
            for ky in range(kh):
                y = ky * dh + sh * top
                for kx in range(kw):
                    x0 = kx * dw
                    source = nhwc[image, y : y + sh * (rows - 1) + 1 : sh, x0 : x0 + sw * (ow - 1) + 1 : sw]
                    cols[image, top : top + rows, :, :, ky, kx] = source
    return cols.reshape(n * oh * ow, c * kh * kw)


def pad(x: np.ndarray, widths: list[tuple[int, int]], value) -> np.ndarray:
    """`x` padded by `widths` (low, high per axis) with `value`, in `x`'s order of axes in memory
    (an NHWC array seen as NCHW stays NHWC in memory, as the `im2col` after it reads it)."""
    order = sorted(range(x.ndim), key=lambda a: -x.strides[a])  # outermost axis first
    shape = [n + low + high for n, (low, high) in zip(x.shape, widths, strict=True)]
    result = np.empty([shape[a] for a in order], x.dtype).transpose(np.argsort(order))
    result.fill(value)
    result[tuple(slice(low, low + n) for n, (low, _) in zip(x.shape, widths, strict=True))] = x
    return result


def pool(x: np.ndarray, op, combine) -> tuple[np.ndarray, np.ndarray]:
    """`combine` (np.maximum or np.add) over every pooling window of an NHWC input, one kernel
    offset at a time, padding ignored (maxima keep the dtype, sums are float64); and, per output
    pixel, how many window elements are real (not padding), shaped to broadcast over the result."""
    top, bottom, left, right = op.pad.get_values()
    (kh, kw), (sh, sw) = op.kernel.get_values(), op.stride.get_values()
    widths = [(0, 0), (top, bottom), (left, right), (0, 0)]
    if combine is np.maximum:
        lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        padded = np.pad(x, widths, constant_values=lowest)
    else:
        padded = np.pad(x.astype(np.float64), widths)
    oh, ow = (padded.shape[1] - kh) // sh + 1, (padded.shape[2] - kw) // sw + 1
    result = None
    for ky in range(kh):
        for kx in range(kw):
            window = padded[:, ky : ky + sh * (oh - 1) + 1 : sh, kx : kx + sw * (ow - 1) + 1 : sw]
            result = window.copy() if result is None else combine(result, window, out=result)
    inside = np.pad(np.ones(x.shape[1:3]), widths[1:3])
    counts = np.lib.stride_tricks.sliding_window_view(inside, (kh, kw))[::sh, ::sw].sum(axis=(-2, -1))
    return result, counts[None, :, :, None]


def conv2d_nchw_fchw(x: np.ndarray, w: np.ndarray, strides, dilations) -> np.ndarray:
    """A convolution of NCHW images with FCHW weights, as one matrix product of the patches."""
    f, _, kh, kw = w.shape
    cols = im2col(x, (kh, kw), strides, dilations)
    n = x.shape[0]
    oh = (x.shape[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    return (cols @ w.reshape(f, -1).T).reshape(n, oh, -1, f).transpose(0, 3, 1, 2)


def conv2d_ngchw_gfchw(x: np.ndarray, w: np.ndarray, strides, dilations) -> np.ndarray:
    """A grouped convolution (NGCHW images, GFCHW weights), as one batched product of each group's patches."""
    n, g, c, h, width = x.shape
    _, f, _, kh, kw = w.shape
    cols = im2col(x.reshape(n, g * c, h, width), (kh, kw), strides, dilations)
    per_group = np.matmul(cols.reshape(len(cols), g, -1).transpose(1, 0, 2), w.reshape(g, f, -1).transpose(0, 2, 1))
    oh = (h - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    return per_group.reshape(g, n, oh, -1, f).transpose(1, 0, 4, 2, 3)


@register_impls
class HostFunctions(InterpreterFunctions):
    """NumPy implementations of upstream ops (the element-wise ones share one implementation)."""

    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues):
        return (constant_value(op),)

    run_addi = impl(arith.AddiOp)(elementwise(np.add))
    run_addf = impl(arith.AddfOp)(elementwise(np.add))
    run_subi = impl(arith.SubiOp)(elementwise(np.subtract))
    run_subf = impl(arith.SubfOp)(elementwise(np.subtract))
    run_muli = impl(arith.MuliOp)(elementwise(np.multiply))
    run_mulf = impl(arith.MulfOp)(elementwise(np.multiply))
    run_divf = impl(arith.DivfOp)(elementwise(np.true_divide))
    run_divsi = impl(arith.DivSIOp)(elementwise(divide))
    run_floordivsi = impl(arith.FloorDivSIOp)(elementwise(np.floor_divide))
    run_remsi = impl(arith.RemSIOp)(elementwise(np.fmod))
    run_maxsi = impl(arith.MaxSIOp)(elementwise(np.maximum))
    run_minsi = impl(arith.MinSIOp)(elementwise(np.minimum))
    run_maximumf = impl(arith.MaximumfOp)(elementwise(np.maximum))
    run_minimumf = impl(arith.MinimumfOp)(elementwise(np.minimum))
    run_andi = impl(arith.AndIOp)(elementwise(np.bitwise_and))
    run_ori = impl(arith.OrIOp)(elementwise(np.bitwise_or))
    run_xori = impl(arith.XOrIOp)(elementwise(np.bitwise_xor))
    run_shli = impl(arith.ShLIOp)(elementwise(np.left_shift))
    run_shrsi = impl(arith.ShRSIOp)(elementwise(np.right_shift))
    run_negf = impl(arith.NegfOp)(elementwise(np.negative))
    run_extsi = impl(arith.ExtSIOp)(elementwise(identity))
    run_trunci = impl(arith.TruncIOp)(elementwise(identity))
    run_sitofp = impl(arith.SIToFPOp)(elementwise(identity))
    run_uitofp = impl(arith.UIToFPOp)(elementwise(identity))
    run_extui = impl(arith.ExtUIOp)(elementwise(identity))
    run_fptosi = impl(arith.FPToSIOp)(elementwise(identity))
    run_extf = impl(arith.ExtFOp)(elementwise(identity))
    run_truncf = impl(arith.TruncFOp)(elementwise(identity))
    run_index_cast = impl(arith.IndexCastOp)(elementwise(identity))
    run_powf = impl(math.PowFOp)(elementwise(np.power))
    run_exp = impl(math.ExpOp)(elementwise(np.exp))
    run_tanh = impl(math.TanhOp)(elementwise(np.tanh))
    run_sqrt = impl(math.SqrtOp)(elementwise(np.sqrt))
    run_erf = impl(math.ErfOp)(elementwise(erf))
    run_roundeven = impl(math.RoundEvenOp)(elementwise(np.rint))
    run_absf = impl(math.AbsFOp)(elementwise(np.abs))

    @impl(arith.SelectOp)
    def run_select(self, interpreter: Interpreter, op: arith.SelectOp, args: PythonValues):
        return result_of(op, np.where(args[0], args[1], args[2]))

    @impl(arith.CmpfOp)
    def run_cmpf(self, interpreter: Interpreter, op: arith.CmpfOp, args: PythonValues):
        return result_of(op, compare_floats(CMPF_COMPARISON_OPERATIONS[op.predicate.value.data])(*args))

    @impl(arith.CmpiOp)
    def run_cmpi(self, interpreter: Interpreter, op: arith.CmpiOp, args: PythonValues):
        return result_of(op, compare(CMPI_COMPARISON_OPERATIONS[op.predicate.value.data])(*args))

    # tensors -------------------------------------------------------------------------------------
    @impl(tensor.EmptyOp)
    def run_empty(self, interpreter: Interpreter, op: tensor.EmptyOp, args: PythonValues):
        t = op.tensor.type  # zeros, as a read-only view that costs nothing: tensors are not written
        return (np.broadcast_to(np.zeros((), numpy_dtype(t.element_type)), t.get_shape()),)

    @impl(tensor.ExtractSliceOp)
    def run_extract_slice(self, interpreter: Interpreter, op: tensor.ExtractSliceOp, args: PythonValues):
        source = args[0]
        index = checked_slices(op, *slice_parameters(op, args, 1), np.shape(source))
        return (source[index].reshape(op.result.type.get_shape()),)  # a view: tensors are not written

    @impl(tensor.InsertSliceOp)
    def run_insert_slice(self, interpreter: Interpreter, op: tensor.InsertSliceOp, args: PythonValues):
        source, dest = args[0], args[1].copy()
        index = checked_slices(op, *slice_parameters(op, args, 2), dest.shape)
        dest[index] = np.reshape(source, dest[index].shape)
        return (dest,)

    @impl(tensor.ExtractOp)
    def run_extract(self, interpreter: Interpreter, op: tensor.ExtractOp, args: PythonValues):
        index = tuple(args[1:])
        if not all(0 <= i < size for i, size in zip(index, np.shape(args[0]), strict=True)):
            raise interpretation_error(op, f"index {list(index)} is out of range for {op.tensor.type}")
        return (args[0][index].item(),)

    @impl(tensor.CollapseShapeOp)
    def run_collapse(self, interpreter: Interpreter, op: tensor.CollapseShapeOp, args: PythonValues):
        return (np.reshape(args[0], op.result.type.get_shape()),)

    @impl(tensor.ExpandShapeOp)
    def run_expand(self, interpreter: Interpreter, op: tensor.ExpandShapeOp, args: PythonValues):
        return (np.reshape(args[0], op.result.type.get_shape()),)

    @impl(tensor.ReshapeOp)
    def run_reshape(self, interpreter: Interpreter, op: tensor.ReshapeOp, args: PythonValues):
        return (np.reshape(args[0], op.result.type.get_shape()),)

    @impl(tensor.PadOp)
    def run_pad(self, interpreter: Interpreter, op: tensor.PadOp, args: PythonValues):
        padding = interpreter.run_ssacfg_region(op.region, (0,) * len(op.static_low), "tensor.pad")[0]
        widths = list(zip(op.static_low.get_values(), op.static_high.get_values(), strict=True))
        return (pad(np.asarray(args[0]), widths, padding),)

    @impl_terminator(tensor.YieldOp)
    def run_tensor_yield(self, interpreter: Interpreter, op: tensor.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()

    @impl(tensor.ConcatOp)
    def run_concat(self, interpreter: Interpreter, op: tensor.ConcatOp, args: PythonValues):
        return (np.concatenate(args, axis=op.dim.value.data),)

    @impl(tensor.CastOp)
    def run_tensor_cast(self, interpreter: Interpreter, op: tensor.CastOp, args: PythonValues):
        return (args[0],)

    # linalg --------------------------------------------------------------------------------------
    @impl(MatmulOp)
    def run_matmul(self, interpreter: Interpreter, op: MatmulOp, args: PythonValues):
        a, b, c = args
        return result_of(op, c + np.matmul(a.astype(c.dtype), b.astype(c.dtype)))

    run_conv = impl(Conv2DNchwFchwOp)(linalg_convolution(conv2d_nchw_fchw))
    run_grouped_conv = impl(Conv2DNgchwGfchwOp)(linalg_convolution(conv2d_ngchw_gfchw))

    @impl(BroadcastOp)
    def run_broadcast(self, interpreter: Interpreter, op: BroadcastOp, args: PythonValues):
        source, init = args
        expanded = np.expand_dims(source, tuple(op.dimensions.get_values()))
        # a read-only view on tensors (they are not written); written into the destination on memrefs
        return result_of(op, np.broadcast_to(expanded, np.shape(init)), init)

    @impl(PoolingNchwMaxOp)
    def run_pooling_max(self, interpreter: Interpreter, op: PoolingNchwMaxOp, args: PythonValues):
        image, window, init = args
        (sh, sw), (dh, dw) = op.strides.get_values(), op.dilations.get_values()
        kh, kw = np.shape(window)
        extent = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
        windows = np.lib.stride_tricks.sliding_window_view(image, extent, axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
        return result_of(op, np.maximum(init, windows.max(axis=(-2, -1))))

    @impl(TransposeOp)
    def run_transpose(self, interpreter: Interpreter, op: TransposeOp, args: PythonValues):
        # a view on tensors, as `run_extract_slice`'s; written into the destination on memrefs
        return result_of(op, np.transpose(args[0], op.permutation.get_values()), args[1])

    run_add = impl(AddOp)(linalg_elementwise(np.add))
    run_sub = impl(SubOp)(linalg_elementwise(np.subtract))
    run_mul = impl(MulOp)(linalg_elementwise(np.multiply))
    run_max = impl(MaxOp)(linalg_elementwise(np.maximum))
    run_min = impl(MinOp)(linalg_elementwise(np.minimum))
    run_linalg_select = impl(SelectOp)(linalg_elementwise(np.where))

    @impl(FillOp)
    def run_fill(self, interpreter: Interpreter, op: FillOp, args: PythonValues):
        return result_of(op, np.full(np.shape(args[1]), args[0]), args[1])

    # tosa ---------------------------------------------------------------------------------------
    @impl(tosa.ClampOp)
    def run_clamp(self, interpreter: Interpreter, op: tosa.ClampOp, args: PythonValues):
        return result_of(op, np.clip(args[0], op.min_val.value.data, op.max_val.value.data))

    run_reciprocal = impl(tosa.ReciprocalOp)(elementwise(np.reciprocal))
    run_reduce_sum = impl(tosa.ReduceSumOp)(reduction(np.sum))
    run_reduce_max = impl(tosa.ReduceMaxOp)(reduction(np.max))
    run_reduce_min = impl(tosa.ReduceMinOp)(reduction(np.min))
    run_reduce_product = impl(tosa.ReduceProductOp)(reduction(np.prod))

    @impl(tosa.MaxPool2DOp)
    def run_max_pool(self, interpreter: Interpreter, op: tosa.MaxPool2DOp, args: PythonValues):
        return result_of(op, pool(np.asarray(args[0]), op, np.maximum)[0])

    @impl(tosa.AvgPool2DOp)
    def run_avg_pool(self, interpreter: Interpreter, op: tosa.AvgPool2DOp, args: PythonValues):
        sums, counts = pool(np.asarray(args[0]), op, np.add)
        return result_of(op, sums / counts)

    # buffers -------------------------------------------------------------------------------------
    @impl(bufferization.AllocTensorOp)
    def run_alloc_tensor(self, interpreter: Interpreter, op: bufferization.AllocTensorOp, args: PythonValues):
        t = op.tensor.type
        return (np.zeros(t.get_shape(), numpy_dtype(t.element_type)),)

    @impl(bufferization.ToBufferOp)
    def run_to_buffer(self, interpreter: Interpreter, op: bufferization.ToBufferOp, args: PythonValues):
        return (args[0],)

    @impl(bufferization.ToTensorOp)
    def run_to_tensor(self, interpreter: Interpreter, op: bufferization.ToTensorOp, args: PythonValues):
        return (args[0],)

    @impl(memref.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: memref.AllocOp, args: PythonValues):
        t = op.memref.type
        return (np.zeros(t.get_shape(), numpy_dtype(t.element_type)),)

    @impl(memref.LoadOp)
    def run_load(self, interpreter: Interpreter, op: memref.LoadOp, args: PythonValues):
        return (args[0][tuple(args[1:])].item(),)

    @impl(memref.StoreOp)
    def run_store(self, interpreter: Interpreter, op: memref.StoreOp, args: PythonValues):
        args[1][tuple(args[2:])] = args[0]
        return ()

    @impl(memref.DeallocOp)
    def run_dealloc(self, interpreter: Interpreter, op: memref.DeallocOp, args: PythonValues):
        return ()
