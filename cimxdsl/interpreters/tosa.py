"""NumPy implementations of the `tosa` ops the importer emits (clamp, reciprocal, reductions, pooling)."""

from collections.abc import Callable

import numpy as np
from xdsl.dialects import tosa
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation

from cimxdsl.interpreters.values import elementwise, result_of


def reduction(function: Callable):
    """The implementation of a `tosa.reduce_*` op: `function` along the op's axis, keeping it."""

    def run(functions: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
        return result_of(op, function(args[0], axis=op.axis.value.data, keepdims=True))

    return run


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
        return result_of(op, pool(np.asarray(args[0]), op, np.maximum)[0])

    @impl(tosa.AvgPool2DOp)
    def run_avg_pool(self, interpreter: Interpreter, op: tosa.AvgPool2DOp, args: PythonValues):
        sums, counts = pool(np.asarray(args[0]), op, np.add)
        return result_of(op, sums / counts)
