"""The loop form of `tile` (`tile{mode=loop}`): crossbar products tiled into `affine.for` nests.

The IR is shaped as Cinnamon's `cinm-tiling` writes it for tensors: a loop over the output tiles
carries the result tensor (`iter_args`), and an inner loop over the reduction dimension K
accumulates the partial products of one output tile with `plus` (a gemm) or `cinm.op.add` (a
gemv), starting from zeros or from the bias tile; the finished tile is inserted into the result.
A `cinm.op.reduce` over one dimension becomes a loop of window reductions into a tensor of
partial results, reduced once more at the end. Tile sizes are those of a `cinm.tile_sizes` array
on the op or its compute (Cinnamon's later form: `[M, N, K]` for a gemm, `[M, K]` for a gemv, `[C]`
for a reduce), else the largest divisors of K and of the outputs that fit the crossbar, so every
iteration has the same static shape. `cinm-unroll-loops` turns the loops back into the unrolled
form that the rest of the memristor flow lowers.
"""

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import affine, arith, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from cimxdsl.dialects import cinm
from cimxdsl.dialects.utils import carry_precision, dense_attr, element_type, shape_of
from cimxdsl.transforms.common.errors import pass_error

TILE_SIZES = "cinm.tile_sizes"


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


def insert(
    builder: Builder,
    piece: SSAValue,
    dest: SSAValue,
    offsets: Sequence[SSAValue | int],
    sizes: Sequence[int] | None = None,
) -> SSAValue:
    """`piece` into `dest` at `offsets`; `sizes` (default: `piece`'s shape) may add unit dimensions."""
    offsets_static = [o if isinstance(o, int) else DYNAMIC_INDEX for o in offsets]
    dynamic = [o for o in offsets if not isinstance(o, int)]
    op = tensor.InsertSliceOp.get(piece, dest, sizes or shape_of(piece), offsets_static, offsets=dynamic)
    return builder.insert(op).result


def zeros(builder: Builder, t: TensorType) -> SSAValue:
    attr: DenseIntOrFPElementsAttr = dense_attr(np.zeros(t.get_shape(), np.float64), t.element_type)
    return builder.insert(arith.ConstantOp(attr, t)).result


def notile(op: Operation, source: Operation | None = None) -> Operation:
    """`op` marked for the tiler to leave alone, with the precision of `source`, whose piece it is."""
    op.attributes[cinm.NOTILE] = UnitAttr()
    if source is not None:
        carry_precision(source, op)
    return op


def given_tile_sizes(op: Operation) -> Attribute | None:
    """The `cinm.tile_sizes` of `op`, else of its compute, if any."""
    return next((o.attributes[TILE_SIZES] for o in (op, op.parent_op()) if o and TILE_SIZES in o.attributes), None)


def tile_sizes(op: Operation, dims: Sequence[int], default: Sequence[int], limits: Sequence[int | None]) -> list[int]:
    """The tile sizes of `op` along `dims`: its (or its compute's) `cinm.tile_sizes`, else `default`.
    Each must divide its dimension and stay within its limit (a crossbar's rows or columns)."""
    sizes = given_tile_sizes(op)
    if sizes is None:
        return list(default)
    values = list(sizes.get_values()) if isinstance(sizes, DenseArrayBase) else []
    if len(values) != len(dims):
        raise pass_error("tile", f"'{TILE_SIZES}' must be an array of {len(dims)} integers, got {sizes}", op)
    for size, dim, limit in zip(values, dims, limits, strict=True):
        if size <= 0 or dim % size or (limit is not None and size > limit):
            bound = "" if limit is None else f" and be at most {limit}"
            raise pass_error("tile", f"'{TILE_SIZES}' {values}: {size} must divide {dim}{bound}", op)
    return values


def loop_gemm(builder: Builder, op: cinm.GemmOp, rows: int, columns: int) -> SSAValue:
    """`op` as loops over rows of the input (by default one tile: a crossbar takes any number of
    input rows), output columns and K, as Cinnamon nests them."""
    (m, k), n = shape_of(op.left), shape_of(op.right)[1]
    default = (m, fitting_divisor(n, columns), fitting_divisor(k, rows))
    tm, tn, tk = tile_sizes(op, (m, n, k), default, (None, columns, rows))
    tile_type = TensorType(element_type(op.result), (tm, tn))
    result = builder.insert(tensor.EmptyOp([], op.result.type)).tensor

    def column(b: Builder, j: SSAValue, outer: SSAValue, i: SSAValue) -> SSAValue:
        start = zeros(b, tile_type) if op.bias is None else extract(b, op.bias, [i, j], (tm, tn))

        def reduction(b: Builder, kk: SSAValue, inner: SSAValue) -> SSAValue:
            left = extract(b, op.left, [i, kk], (tm, tk))
            right = extract(b, op.right, [kk, j], (tk, tn))
            return b.insert(notile(cinm.GemmOp(left, right, inner, tile_type), op)).result

        return insert(b, loop(b, k, tk, start, reduction), outer, [i, j])

    return loop(builder, m, tm, result, lambda b, i, acc: loop(b, n, tn, acc, lambda b2, j, o: column(b2, j, o, i)))


def loop_gemv(builder: Builder, op: cinm.GemvOp, rows: int, columns: int) -> SSAValue:
    """`op` as loops over output rows (the matrix's rows, a crossbar's columns) and K."""
    m, k = shape_of(op.left)
    tm, tk = tile_sizes(op, (m, k), (fitting_divisor(m, columns), fitting_divisor(k, rows)), (columns, rows))
    tile_type = TensorType(element_type(op.result), (tm,))
    result = builder.insert(tensor.EmptyOp([], op.result.type)).tensor

    def output(b: Builder, i: SSAValue, outer: SSAValue) -> SSAValue:
        def reduction(b: Builder, kk: SSAValue, inner: SSAValue) -> SSAValue:
            matrix = extract(b, op.left, [i, kk], (tm, tk))
            vector = extract(b, op.right, [kk], (tk,))
            partial = b.insert(notile(cinm.GemvOp(matrix, vector, None, tile_type), op)).result
            return b.insert(cinm.AddOp(inner, partial)).result

        start = zeros(b, tile_type) if op.bias is None else extract(b, op.bias, [i], (tm,))
        return insert(b, loop(b, k, tk, start, reduction), outer, [i])

    return loop(builder, m, tm, result, output)


def loop_reduce(builder: Builder, op: cinm.ReduceOp, rows: int, columns: int) -> SSAValue | None:
    """`op` over one dimension as a loop of window reductions (windows of a crossbar's rows by
    default) inserted into a tensor of partial results, then reduced along that dimension; None
    when it reduces several dimensions or fits one window."""
    shape = shape_of(op.input)
    dimensions = op.dimensions.get_values()
    if len(dimensions) != 1:
        return None
    axis = dimensions[0] % len(shape)
    (window,) = tile_sizes(op, (shape[axis],), (fitting_divisor(shape[axis], rows),), (None,))
    if window == shape[axis]:
        return None
    count = shape[axis] // window
    zeros = [0] * len(shape)

    def at_axis(value, others: Sequence) -> list:
        """`others` with `value` on the reduced axis."""
        return [value if d == axis else other for d, other in enumerate(others)]

    partials = TensorType(element_type(op.input), at_axis(count, shape))
    step = builder.insert(arith.ConstantOp(IntegerAttr(window, IndexType()))).result

    def part(b: Builder, p: SSAValue, acc: SSAValue) -> SSAValue:
        start = b.insert(arith.MuliOp(p, step)).result
        piece = extract(b, op.input, at_axis(start, zeros), at_axis(window, shape))
        partial = b.insert(notile(cinm.ReduceOp(piece, op.method, op.dimensions, op.result.type))).result
        if not isinstance(op.result.type, TensorType):
            return b.insert(tensor.InsertOp(partial, acc, [p])).result
        return insert(b, partial, acc, at_axis(p, zeros), at_axis(1, shape))

    collected = loop(builder, count, 1, builder.insert(tensor.EmptyOp([], partials)).tensor, part)
    return builder.insert(notile(cinm.ReduceOp(collected, op.method, op.dimensions, op.result.type))).result


def tile_in_loops(op: cinm.GemmOp | cinm.GemvOp | cinm.ReduceOp, rows: int, columns: int) -> None:
    """Replace `op` by its loop nest (a reduce that needs none stays)."""
    builder = Builder(InsertPoint.before(op))
    tiler = {cinm.GemmOp: loop_gemm, cinm.GemvOp: loop_gemv, cinm.ReduceOp: loop_reduce}[type(op)]
    result = tiler(builder, op, rows, columns)
    if result is None:
        return
    op.results[0].replace_all_uses_with(result)
    op.detach()
    op.erase()
