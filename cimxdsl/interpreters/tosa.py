"""NumPy implementations of the `tosa` ops the importer emits (clamp, reciprocal, reductions, pooling)."""

from collections.abc import Callable

import numpy as np
from xdsl.dialects import tosa
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation

from cimxdsl.device.backend import numpy_dtype_of
from cimxdsl.interpreters.values import applied, common_backend, elementwise, result_of


def reduction(function: Callable):
    """The implementation of a `tosa.reduce_*` op: `function` along the op's axis, keeping it."""

    def run(functions: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
        return result_of(op, function(args[0], axis=op.axis.value.data, keepdims=True))

    return run


def pool(x, op, combine) -> tuple:
    """`combine` (np.maximum or np.add) over every pooling window of an NHWC input, one kernel
    offset at a time, padding ignored (maxima keep the dtype; sums are in the dtype of float inputs,
    as onnxruntime adds them, and in float64 for integers, exactly); and, per output
    pixel, how many window elements are real (not padding), shaped to broadcast over the result.
    Each offset combines the outputs whose window has a real element there with those elements, a
    strided view of `x` (no padded copy). On `x`'s array backend; NumPy results are laid out in memory as `x`."""
    top, bottom, left, right = op.pad.get_values()
    (kh, kw), (sh, sw) = op.kernel.get_values(), op.stride.get_values()
    n, h, w, c = x.shape
    oh, ow = (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1
    backend = common_backend((x,))
    xp, dtype = backend.xp, numpy_dtype_of(x)
    if combine is np.maximum:
        start = -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
    else:
        dtype, start = dtype if dtype.kind == "f" else np.dtype(np.float64), 0.0
        x = xp.astype(x, backend.dtype(dtype), copy=False)
    if backend.is_numpy:  # (laid out as `x`: an NCHW image seen as NHWC stays NCHW in memory)
        result = np.full_like(x, start, dtype, shape=(n, oh, ow, c))
    else:
        result = backend.full((n, oh, ow, c), start, dtype)
    for ky in range(kh):
        (y0, y1), rows = real_outputs(ky, top, sh, oh, h)
        for kx in range(kw):
            (x0, x1), columns = real_outputs(kx, left, sw, ow, w)
            if y0 < y1 and x0 < x1:
                target = result[:, y0:y1, x0:x1, :]
                if backend.is_numpy:
                    combine(target, x[:, rows, columns, :], out=target)
                else:  # (no `out=` in the array API)
                    result[:, y0:y1, x0:x1, :] = applied(combine, (target, x[:, rows, columns, :]))
    counts = np.outer(real_counts(kh, top, sh, oh, h), real_counts(kw, left, sw, ow, w)).astype(dtype)
    return result, counts[None, :, :, None]


def real_outputs(k: int, low: int, stride: int, outputs: int, size: int) -> tuple[tuple[int, int], slice]:
    """Along one axis, the outputs [o0, o1) whose window's offset `k` falls inside the input (not
    in the padding), and the input elements they read there."""
    first = max(0, -(-(low - k) // stride))
    last = min(outputs, (size - 1 + low - k) // stride + 1)
    start = first * stride + k - low
    return (first, last), slice(start, start + (last - first - 1) * stride + 1 if last > first else start, stride)


def real_counts(k: int, low: int, stride: int, outputs: int, size: int) -> np.ndarray:
    """Along one axis, how many of each output's window elements are inside the input."""
    positions = np.arange(outputs)[:, None] * stride + np.arange(k)[None, :] - low
    return ((positions >= 0) & (positions < size)).sum(axis=1).astype(np.float64)


def pooled(op: tosa.MaxPool2DOp | tosa.AvgPool2DOp, x: np.ndarray) -> np.ndarray:
    """A max or average pooling of the NHWC `x` (before conversion to the result's type)."""
    if isinstance(op, tosa.MaxPool2DOp):
        return pool(x, op, np.maximum)[0]
    sums, counts = pool(x, op, np.add)
    return applied(np.true_divide, (sums, counts))


@register_impls
class TosaFunctions(InterpreterFunctions):
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
        return result_of(op, pooled(op, np.asarray(args[0])))

    @impl(tosa.AvgPool2DOp)
    def run_avg_pool(self, interpreter: Interpreter, op: tosa.AvgPool2DOp, args: PythonValues):
        return result_of(op, pooled(op, np.asarray(args[0])))
