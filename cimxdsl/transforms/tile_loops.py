"""The loop form of `tile` (`tile{mode=loop}`): crossbar products tiled into `affine.for` nests.

The IR is shaped as Cinnamon's `cinm-tiling` writes it for tensors: a loop over the output tiles
carries the result tensor (`iter_args`), and an inner loop over the reduction dimension K
accumulates the partial products of one output tile with `plus` (a gemm) or `cinm.op.add` (a
gemv), starting from zeros or from the bias tile; the finished tile is inserted into the result.
Tile sizes are the largest divisors of K and of the outputs that fit the crossbar, so every
iteration has the same static shape. `cinm-unroll-loops` turns the loops back into the unrolled
form that the rest of the memristor flow lowers.
"""

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import affine, arith, tensor
from xdsl.dialects.builtin import DYNAMIC_INDEX, DenseIntOrFPElementsAttr, IndexType, TensorType, UnitAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from cimxdsl.dialects import cinm
from cimxdsl.dialects.utils import dense_attr, element_type, shape_of


def fitting_divisor(size: int, limit: int) -> int:
    """The largest divisor of `size` that is at most `limit`."""
    return max(d for d in range(1, min(size, limit) + 1) if size % d == 0)


def loop(
    builder: Builder, upper: int, step: int, init: SSAValue, body: Callable[[Builder, SSAValue, SSAValue], SSAValue]
) -> SSAValue:
    """`affine.for %i = 0 to upper step step iter_args(%acc = init)`; `body(builder, i, acc)` gives
    the value yielded. Returns the loop's result."""
    block = Block(arg_types=[IndexType(), init.type])
    inner = Builder(InsertPoint.at_end(block))
    inner.insert(affine.YieldOp.get(body(inner, *block.args)))
    for_op = affine.ForOp.from_region([], [], [init], [init.type], 0, upper, Region(block), step)
    builder.insert(for_op)
    return for_op.results[0]


def extract(builder: Builder, source: SSAValue, offsets: Sequence[SSAValue | int], sizes: Sequence[int]) -> SSAValue:
    result_type = TensorType(element_type(source), sizes)
    return builder.insert(tensor.ExtractSliceOp(source, offsets, sizes, [1] * len(sizes), result_type)).result


def insert(builder: Builder, piece: SSAValue, dest: SSAValue, offsets: Sequence[SSAValue | int]) -> SSAValue:
    offsets_static = [o if isinstance(o, int) else DYNAMIC_INDEX for o in offsets]
    dynamic = [o for o in offsets if not isinstance(o, int)]
    op = tensor.InsertSliceOp.get(piece, dest, shape_of(piece), offsets_static, offsets=dynamic)
    return builder.insert(op).result


def zeros(builder: Builder, t: TensorType) -> SSAValue:
    attr: DenseIntOrFPElementsAttr = dense_attr(np.zeros(t.get_shape(), np.float64), t.element_type)
    return builder.insert(arith.ConstantOp(attr, t)).result


def notile(op: Operation) -> Operation:
    op.attributes[cinm.NOTILE] = UnitAttr()
    return op


def loop_gemm(builder: Builder, op: cinm.GemmOp, rows: int, columns: int) -> SSAValue:
    """`op` as loops over rows of the input (one tile: a crossbar takes any number of input rows),
    output columns and K, as Cinnamon nests them."""
    (m, k), n = shape_of(op.left), shape_of(op.right)[1]
    tk, tn = fitting_divisor(k, rows), fitting_divisor(n, columns)
    tile_type = TensorType(element_type(op.result), (m, tn))
    result = builder.insert(tensor.EmptyOp([], op.result.type)).tensor

    def column(b: Builder, j: SSAValue, outer: SSAValue, i: SSAValue) -> SSAValue:
        start = zeros(b, tile_type) if op.bias is None else extract(b, op.bias, [i, j], (m, tn))

        def reduction(b: Builder, kk: SSAValue, inner: SSAValue) -> SSAValue:
            left = extract(b, op.left, [i, kk], (m, tk))
            right = extract(b, op.right, [kk, j], (tk, tn))
            return b.insert(notile(cinm.GemmOp(left, right, inner, tile_type))).result

        return insert(b, loop(b, k, tk, start, reduction), outer, [i, j])

    return loop(builder, m, m, result, lambda b, i, acc: loop(b, n, tn, acc, lambda b2, j, o: column(b2, j, o, i)))


def loop_gemv(builder: Builder, op: cinm.GemvOp, rows: int, columns: int) -> SSAValue:
    """`op` as loops over output rows (the matrix's rows, a crossbar's columns) and K."""
    m, k = shape_of(op.left)
    tk, tm = fitting_divisor(k, rows), fitting_divisor(m, columns)
    tile_type = TensorType(element_type(op.result), (tm,))
    result = builder.insert(tensor.EmptyOp([], op.result.type)).tensor

    def output(b: Builder, i: SSAValue, outer: SSAValue) -> SSAValue:
        def reduction(b: Builder, kk: SSAValue, inner: SSAValue) -> SSAValue:
            matrix = extract(b, op.left, [i, kk], (tm, tk))
            vector = extract(b, op.right, [kk], (tk,))
            partial = b.insert(notile(cinm.GemvOp(matrix, vector, None, tile_type))).result
            return b.insert(cinm.AddOp(inner, partial)).result

        start = zeros(b, tile_type) if op.bias is None else extract(b, op.bias, [i], (tm,))
        return insert(b, loop(b, k, tk, start, reduction), outer, [i])

    return loop(builder, m, tm, result, output)


def tile_in_loops(op: cinm.GemmOp | cinm.GemvOp, rows: int, columns: int) -> None:
    """Replace `op` by its loop nest."""
    builder = Builder(InsertPoint.before(op))
    result = (loop_gemm if isinstance(op, cinm.GemmOp) else loop_gemv)(builder, op, rows, columns)
    op.results[0].replace_all_uses_with(result)
    op.detach()
    op.erase()
