"""NumPy implementations of the named `linalg` ops, on tensors (a result) and on memrefs (written
into the destination); they replace xDSL's loops over the iteration space."""

from collections.abc import Callable

import numpy as np
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
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation

from cimxdsl.interpreters.numeric import conv2d_nchw_fchw, conv2d_ngchw_gfchw
from cimxdsl.interpreters.values import result_of


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


@register_impls
class LinalgFunctions(InterpreterFunctions):
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
