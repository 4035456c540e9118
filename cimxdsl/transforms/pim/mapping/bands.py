"""Splitting a `spat.compute` into row bands: the replicas of a layer work on different output rows.

A band `[a, b)` of a compute computes rows `a ..< b` of all its results (which must share their row
count). Working back from the results, every value of the body gets the rows the band needs of it
(a window op needs its kernel's halo; element-wise ops the same rows); ops are rebuilt on those
rows, a window op on `spat.extract_rows` of its input with the top and bottom padding that band
still meets. A compute whose body holds an op without a row-wise form (global average pooling, a
concatenation along rows, ...) has no bands.

Consumers receive only the bands overlapping the rows they need, joined with `spat.concat` along
the rows (and cut with `spat.extract_rows` when they need fewer).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import ArrayAttr, DenseIntOrFPElementsAttr, IntegerAttr, MemRefType, TensorType, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from cimxdsl.device.latency import Latencies
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.crossbar_ops import FilterGeometry, WindowOp
from cimxdsl.dialects.utils import dense_array, i64_array, shape_of
from cimxdsl.transforms.pim.mapping.problem import compute_cost, kept_while_alive
from cimxdsl.transforms.pim.value_bounds import Bounds

Rows = tuple[int, int]
"""Rows `[start, end)` of a value."""
BAND = "spat.band"
"""The discardable attribute of a band: the end of its rows and its layer's row count."""

_ROWWISE_ARITH = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.MaxSIOp, arith.MinSIOp, arith.ShRSIOp)


def rows_of(value: SSAValue) -> int:
    t = value.type
    assert isinstance(t, TensorType | MemRefType)
    return t.get_shape()[0]


@functools.cache
def with_rows(t: Attribute, rows: int) -> Attribute:
    """`t` with `rows` rows (attributes are immutable: one per type and row count)."""
    assert isinstance(t, TensorType)
    return TensorType(t.element_type, (rows, *t.get_shape()[1:]))


def band_bounds(rows: int, bands: int) -> list[Rows]:
    """`rows` cut into `bands` bands of near-equal size."""
    edges = [rows * i // bands for i in range(bands + 1)]
    return [(edges[i], edges[i + 1]) for i in range(bands)]


def window_input_rows(geometry: FilterGeometry, rows: Rows, height: int) -> tuple[Rows, int, int]:
    """The input rows a window op reads for output rows `rows`, and the top and bottom padding the
    band still meets."""
    (kh, _), (sh, _), (pt, _, _, _), (dh, _) = geometry.kernel, geometry.strides, geometry.pads, geometry.dilations
    first = rows[0] * sh - pt
    last = (rows[1] - 1) * sh - pt + (kh - 1) * dh
    return (max(first, 0), min(last, height - 1) + 1), max(-first, 0), max(last - (height - 1), 0)


RowRule = Callable[[Rows], list["Rows | None"]]
"""The rows an op needs of each operand for rows of its result (None: the whole operand)."""


def operand_rows(op: Operation, rows: Rows) -> list[Rows | None] | None:
    """The rows `op` needs of each operand to compute rows `rows` of its result (None: the whole
    operand, e.g. a broadcast vector); None if `op` has no row-wise form."""
    rule = row_rule(op)
    return None if rule is None else rule(rows)


def row_rule(op: Operation) -> RowRule | None:
    """`operand_rows` of `op` as a function of the result's rows, read from `op` once; None if
    `op` has no row-wise form."""
    if isinstance(op, spat.ApplyFiltersOp | spat.MaxPoolOp | spat.AvgPoolOp):
        if len(shape_of(op.input)) == 2:
            return lambda rows: [rows]
        geometry, height = op.geometry(), rows_of(op.input)
        return lambda rows: [window_input_rows(geometry, rows, height)[0]]
    if isinstance(op, spat.VectorBinaryOp):
        if op.lhs.type == op.rhs.type:
            return lambda rows: [rows, rows]
        return lambda rows: [rows, None]
    count = len(op.operands)
    if isinstance(op, (spat.VectorUnaryOp, *_ROWWISE_ARITH)) or (
        isinstance(op, spat.ConcatOp) and op.axis.value.data == len(shape_of(op.result)) - 1
    ):
        return lambda rows: [rows] * count
    if isinstance(op, arith.ConstantOp) and is_splat(op):
        return lambda rows: []
    return None


def is_splat(op: arith.ConstantOp) -> bool:
    if not isinstance(op.value, DenseIntOrFPElementsAttr) or not isinstance(op.result.type, TensorType):
        return False
    values = dense_array(op.value).reshape(-1)
    if values.size == 0:
        return False
    sample = values[:: max(1, values.size // 64)]  # rejects most constants without reading them whole
    return bool((sample == values[0]).all()) and bool((values == values[0]).all())


def needed_rows(compute: spat.ComputeOp, rows: Rows) -> dict[SSAValue, Rows] | None:
    """The rows of every value of the body that rows `rows` of the results need (None: the
    compute has no bands)."""
    yielded, steps = row_plan(compute)
    needed: dict[SSAValue, Rows] = {}
    for value in yielded:
        needed[value] = union(needed.get(value), rows)
    for results, operands, rule in steps:
        wanted = needed.get(results[0]) if len(results) == 1 else None
        if wanted is None:
            if any(r in needed for r in results):
                return None
            continue
        if rule is None:
            return None
        for (operand, full), part in zip(operands, rule(wanted), strict=True):
            needed[operand] = union(needed.get(operand), part if part is not None else full)
    return needed


RowPlan = tuple[tuple[SSAValue, ...], list[tuple[tuple[SSAValue, ...], list[tuple[SSAValue, Rows]], RowRule | None]]]


@kept_while_alive
def row_plan(compute: spat.ComputeOp) -> RowPlan:
    """What `needed_rows` reads of `compute`: the values it yields, and its ops from last to
    first, each with its results, its operands (and their whole rows) and its `row_rule`."""
    block = compute.body.block
    terminator = block.last_op
    assert isinstance(terminator, spat.YieldOp)
    steps = [
        (tuple(op.results), [(v, whole_rows(v)) for v in op.operands], row_rule(op))
        for op in reversed(list(block.ops)[:-1])
        if op.results
    ]
    return tuple(terminator.values), steps


def whole_rows(value: SSAValue) -> Rows:
    t = value.type
    return (0, t.get_shape()[0]) if isinstance(t, TensorType | MemRefType) and t.get_shape() else (0, 1)


def union(a: Rows | None, b: Rows) -> Rows:
    return b if a is None else (min(a[0], b[0]), max(a[1], b[1]))


def can_split(compute: spat.ComputeOp) -> int:
    """The most bands `compute` can be split into: its results' row count, or 1 when they differ,
    a result is used outside computes or an op has no row-wise form."""
    results = list(compute.outputs)
    counts = {rows_of(r) for r in results}
    if len(counts) != 1 or any(not isinstance(u.operation, spat.ComputeOp) for r in results for u in r.uses):
        return 1
    (count,) = counts
    if count < 2 or needed_rows(compute, (0, count)) is None:
        return 1
    return count


def peeled(computes: list[spat.ComputeOp], rows_per_band: int) -> list[spat.ComputeOp]:
    """The computes the row pipeline's mapping places: each with a global pooling after its last
    convolution set apart (`peel_tail`), and a pooling that makes its bands thicker set apart
    (`peel_pooling`)."""
    return [part for c in computes for tail in peel_tail(c) for part in peel_pooling(tail, rows_per_band)]


def peel_tail(compute: spat.ComputeOp) -> list[spat.ComputeOp]:
    """`compute`, or (when its only ops without a row-wise form are global reductions of values it
    yields, e.g. a global average pooling fused after a last convolution) two computes: the body
    without those ops, which can be cut into bands, yielding their operands, and those ops on the
    whole image after it. Both keep `compute`'s attributes (its core) and replace it in its block."""
    tail = yielded_ops(compute, lambda op: operand_rows(op, (0, 1)) is None)
    parts = split_tail(compute, tail) if tail and can_split(compute) == 1 else None
    return replaced(compute, parts, parts is not None and can_split(parts[0]) > 1)


def peel_pooling(compute: spat.ComputeOp, rows_per_band: int) -> list[spat.ComputeOp]:
    """`compute`, or (when a pooling whose result it yields makes its row-pipeline bands thicker:
    a band of pooled rows recomputes the rows of the layer before that its neighbours' windows
    share, e.g. a stem convolution with its max pooling) two computes: the body without the
    pooling, yielding its operand, cut into the thinner bands `row_bands` finds for it, and the
    pooling after it. Both keep `compute`'s attributes and replace it in its block."""
    tail = yielded_ops(compute, lambda op: isinstance(op, spat.PoolOp))
    parts = split_tail(compute, tail) if tail else None
    thinner = parts is not None and len(row_bands(parts[0], rows_per_band)) > len(row_bands(compute, rows_per_band))
    return replaced(compute, parts, thinner)


def yielded_ops(compute: spat.ComputeOp, chosen) -> list[Operation]:
    """The ops of `compute`'s body that `chosen` accepts whose results only its yield reads."""
    terminator = compute.body.block.last_op
    assert isinstance(terminator, spat.YieldOp)
    return [
        op
        for op in list(compute.body.block.ops)[:-1]
        if op.results and chosen(op) and all(u.operation is terminator for r in op.results for u in r.uses)
    ]


def split_tail(compute: spat.ComputeOp, tail: list[Operation]) -> tuple[spat.ComputeOp, spat.ComputeOp, list] | None:
    """`compute` as two computes, not yet in its block — its body without the ops `tail`, yielding
    what it yields apart from theirs and their operands, and `tail` on those operands — with the
    value that stands for each of `compute`'s results; None where a tail op reads another one or
    an argument of the body."""
    block = compute.body.block
    terminator = block.last_op
    assert isinstance(terminator, spat.YieldOp)
    kept = [v for v in terminator.values if v.owner not in tail]
    moved = list(dict.fromkeys(v for op in tail for v in op.operands))
    if any(v.owner in tail or not isinstance(v.owner, Operation) for v in moved):
        return None
    head_block = Block(arg_types=[a.type for a in block.args])
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, head_block.args, strict=True))
    for op in list(block.ops)[:-1]:
        if op not in tail:
            head_block.add_op(op.clone(value_mapper=mapping))
    head_block.add_op(spat.YieldOp(*(mapping[v] for v in (*kept, *moved))))
    head = spat.ComputeOp(
        list(compute.weights), list(compute.inputs), [v.type for v in (*kept, *moved)], Region(head_block)
    )
    tail_block = Block(arg_types=[v.type for v in moved])
    mapping = dict(zip(moved, tail_block.args, strict=True))
    for op in tail:
        tail_block.add_op(op.clone(value_mapper=mapping))
    tail_values = [v for v in terminator.values if v.owner in tail]
    tail_block.add_op(spat.YieldOp(*(mapping[v] for v in tail_values)))
    rest = spat.ComputeOp([], head.outputs[len(kept) :], [v.type for v in tail_values], Region(tail_block))
    new = {v: r for v, r in zip(kept, head.outputs, strict=False)} | dict(zip(tail_values, rest.outputs, strict=True))
    return head, rest, [new[v] for v in terminator.values]


def replaced(compute: spat.ComputeOp, parts: tuple | None, take: bool) -> list[spat.ComputeOp]:
    """`compute` replaced in its block by the two computes of `split_tail` (`parts`, with its
    attributes) if `take`, else `compute` (the parts erased)."""
    if parts is None:
        return [compute]
    head, rest, outputs = parts
    if not take:
        rest.erase(safe_erase=False)
        head.erase(safe_erase=False)
        return [compute]
    for new in (head, rest):
        new.attributes.update(compute.attributes)
    compute.parent_block().insert_ops_before([head, rest], compute)  # pyright: ignore[reportOptionalMemberAccess]
    for old, value in zip(compute.outputs, outputs, strict=True):
        old.replace_all_uses_with(value)
    compute.detach()
    compute.erase(safe_erase=False)
    return [head, rest]


@dataclass
class Piece:
    """Rows `rows` of a result, computed by a band."""

    rows: Rows
    value: SSAValue


@dataclass
class BandBuilder:
    """The body of one band, built op by op."""

    block: Block
    local: dict[SSAValue, tuple[SSAValue, Rows]] = field(default_factory=dict)
    """Original value -> (its band value, the rows of the original it holds)."""

    def rows(self, value: SSAValue, wanted: Rows) -> SSAValue:
        """Rows `wanted` of the original `value` inside the band."""
        source, held = self.local[value]
        if held == wanted:
            return source
        cut = spat.ExtractRowsOp(source, wanted[0] - held[0], wanted[1] - wanted[0])
        self.block.add_op(cut)
        return cut.result


def split_compute(
    compute: spat.ComputeOp, bands: list[Rows], pieces: dict[SSAValue, list[Piece]]
) -> list[spat.ComputeOp]:
    """One compute per band (not yet inserted); the bands of each result are added to `pieces`."""
    new = []
    for band in bands:
        needed = needed_rows(compute, band)
        assert needed is not None
        new.append(build_band(compute, band, needed, pieces))
    return new


def build_band(
    compute: spat.ComputeOp, band: Rows, needed: dict[SSAValue, Rows], pieces: dict[SSAValue, list[Piece]]
) -> spat.ComputeOp:
    weights = list(compute.weights)
    block = Block(arg_types=[w.type for w in weights])
    builder = BandBuilder(block)
    inputs: list[SSAValue] = []
    for arg, operand in zip(compute.input_args, compute.inputs, strict=True):
        if arg in needed:
            builder.local[arg] = receive(builder, operand, needed[arg], inputs, pieces)
    terminator = compute.body.block.last_op
    assert isinstance(terminator, spat.YieldOp)
    for op in list(compute.body.block.ops)[:-1]:
        if op.results and op.results[0] in needed:
            rows = needed[op.results[0]]
            new = band_op(op, rows, builder)
            block.add_op(new)
            builder.local[op.results[0]] = (new.results[0], rows)
    results = [builder.rows(v, band) for v in terminator.values]
    block.add_op(spat.YieldOp(*results))
    new = spat.ComputeOp(weights, inputs, [r.type for r in results], Region(block))
    new.attributes.update(compute.attributes)
    for old, value in zip(compute.outputs, new.outputs, strict=True):
        pieces.setdefault(old, []).append(Piece(band, value))
    return new


def receive(
    builder: BandBuilder, operand: SSAValue, wanted: Rows, inputs: list[SSAValue], pieces: dict[SSAValue, list[Piece]]
) -> tuple[SSAValue, Rows]:
    """The input `operand` as a band input: the bands of it that overlap `wanted`, joined."""
    available = pieces.get(operand, [Piece((0, rows_of(operand)), operand)])
    parts = [p for p in available if p.rows[0] < wanted[1] and wanted[0] < p.rows[1]]
    args = []
    for part in parts:
        inputs.append(part.value)
        args.append(builder.block.insert_arg(part.value.type, len(builder.block.args)))
    held = (parts[0].rows[0], parts[-1].rows[1])
    if len(args) == 1:
        return args[0], held
    concat = spat.ConcatOp(args, 0)
    builder.block.add_op(concat)
    return concat.result, held


@functools.cache
def splat_of(t: Attribute, value: Attribute) -> DenseIntOrFPElementsAttr:
    """The splat constant `value` (a splat dense attribute) with type `t`, one per type and value."""
    splat = dense_array(value).reshape(-1)[0].item()  # pyright: ignore[reportArgumentType]
    return DenseIntOrFPElementsAttr.from_list(t, [splat])  # pyright: ignore[reportArgumentType]


def band_op(op: Operation, rows: Rows, builder: BandBuilder) -> Operation:
    """`op` computing rows `rows` of its result, on band values."""
    result_type = with_rows(op.results[0].type, rows[1] - rows[0])
    if isinstance(op, arith.ConstantOp):
        return arith.ConstantOp(splat_of(result_type, op.value))
    wanted = operand_rows(op, rows)
    assert wanted is not None
    operands = [
        builder.rows(v, w) if w is not None else builder.local.get(v, (v, None))[0]
        for v, w in zip(op.operands, wanted, strict=True)
    ]
    properties = dict(op.properties)
    if isinstance(op, WindowOp) and len(shape_of(op.operands[0])) == 3:
        geometry = op.geometry()
        _, top, bottom = window_input_rows(geometry, rows, rows_of(op.operands[0]))
        _, left, _, right = geometry.pads
        properties["pads"] = i64_array((top, left, bottom, right))
    return type(op).create(
        operands=operands, result_types=[result_type], properties=properties, attributes=dict(op.attributes)
    )


def rewire_consumer(compute: spat.ComputeOp, pieces: dict[SSAValue, list[Piece]]) -> spat.ComputeOp:
    """`compute` (not split) reading the bands of its split inputs, joined along the rows."""
    if not any(v in pieces for v in compute.inputs):
        return compute
    needed = {arg: (0, rows_of(arg)) for arg in compute.input_args}
    block = Block(arg_types=[w.type for w in compute.weights])
    builder = BandBuilder(block)
    inputs: list[SSAValue] = []
    mapping: dict[SSAValue, SSAValue] = dict(zip(compute.weight_args, block.args, strict=True))
    for arg, operand in zip(compute.input_args, compute.inputs, strict=True):
        mapping[arg], _ = receive(builder, operand, needed[arg], inputs, pieces)
    for op in compute.body.block.ops:
        block.add_op(op.clone(value_mapper=mapping))
    new = spat.ComputeOp(list(compute.weights), inputs, [r.type for r in compute.outputs], Region(block))
    new.attributes.update(compute.attributes)
    return new


Pipeline = Literal["layer", "row"]
"""How consecutive layers overlap: `layer`, a layer starts when its producers have finished the
image; `row`, a layer's band starts as soon as the rows its windows need have arrived."""
DEFAULT_ROWS_PER_BAND = 1
"""The fewest output rows per band of the `row` pipeline (`row_bands` widens a compute's bands
while they cost more than `BAND_OVERHEAD` beyond the whole)."""
BAND_OVERHEAD = 0.05
"""The most a compute's bands may cost beyond the whole compute: thinner bands overlap layers more
but repeat their per-band instructions (and the halo rows of a window op after another one)."""


def sub_bands(band: Rows, rows_per_band: int) -> list[Rows]:
    """`band` cut into bands of at most `rows_per_band` rows."""
    count = -(-(band[1] - band[0]) // rows_per_band)
    return [(band[0] + a, band[0] + b) for a, b in band_bounds(band[1] - band[0], count)]


def split_into_bands(
    computes: list[spat.ComputeOp], bands: list[list[Rows]], cores: list[list[int]], core_attr: str, mark: bool = False
) -> list[spat.ComputeOp]:
    """Every compute split into its `bands` (one: not split, its consumers rewired to the bands of
    its inputs), band `j` on core `cores[i][j]` (the `core_attr` attribute; with `mark`, bands get
    the `BAND` attribute `wavefront_order` reads); the old computes are replaced. The computes in
    program order."""
    pieces: dict[SSAValue, list[Piece]] = {}
    old: list[spat.ComputeOp] = []
    result: list[spat.ComputeOp] = []
    for compute, rows, on in zip(computes, bands, cores, strict=True):
        new = split_compute(compute, rows, pieces) if len(rows) > 1 else [rewire_consumer(compute, pieces)]
        total = rows_of(compute.outputs[0]) if compute.outputs else 1
        for band, core, (_, end) in zip(new, on, rows, strict=True):
            band.attributes[core_attr] = IntegerAttr(core, i64)
            if mark and len(rows) > 1:
                band.attributes[BAND] = ArrayAttr([IntegerAttr(end, i64), IntegerAttr(total, i64)])
        if new[0] is not compute:
            compute.parent_block().insert_ops_before(new, compute)  # pyright: ignore[reportOptionalMemberAccess]
            if len(rows) == 1:
                for a, b in zip(compute.outputs, new[0].outputs, strict=True):
                    a.replace_all_uses_with(b)
            old.append(compute)
        result += new
    for compute in reversed(old):
        compute.detach()
        compute.erase(safe_erase=False)
    return result


SLACK = 0.5
"""How much later than the earliest (in median band times) a band may start and still be placed
first in `wavefront_order` because it lies deeper in the graph (a consumer): the default."""


def wavefront_order(computes: list[spat.ComputeOp], cores: list[int], slack: float = SLACK) -> list[spat.ComputeOp]:
    """The computes (on `cores`) in a dependency order that runs each band as early as its inputs
    and its core allow: list scheduling on the computes' times (`compute_cost`): of the computes
    whose inputs exist (and whose core is free) within `slack` median band times of the earliest,
    the deepest (the longest chain of computes leading to it) next, so that consumers go before
    their producers move on, and of those the first in program order (a layer's top rows first).
    A compute receives its inputs at its place in the order, so it starts when its core and the
    cores sending to it (each past what it was given before) are free, and those cores wait for
    the transfer: a producer that ran ahead onto its next band would hold every consumer of its
    last one. (Chosen by that start instead, a consumer of several producers' cores could wait for
    ever: each band given to one of them starts before it and moves its start on.)"""
    index = {c: i for i, c in enumerate(computes)}
    producers = [sorted({index[v.owner] for v in c.inputs if v.owner in index}) for c in computes]
    consumers: list[list[int]] = [[] for _ in computes]
    for i, ps in enumerate(producers):
        for p in ps:
            consumers[p].append(i)
    waiting = [len(ps) for ps in producers]
    free: dict[int, float] = dict.fromkeys(cores, 0.0)
    ready = {i for i, n in enumerate(waiting) if n == 0}
    level = [0] * len(computes)  # the longest chain of computes leading to each
    for i, ps in enumerate(producers):
        level[i] = 1 + max((level[p] for p in ps), default=0)
    costs = [compute_cost(c) for c in computes]
    slack *= float(np.median(costs)) if costs else 0.0

    done = [0.0] * len(computes)

    def inputs_ready(i: int) -> float:
        return max([free[cores[i]], *(done[p] for p in producers[i])])

    def start(i: int) -> float:
        return max([free[cores[i]], *(free[cores[p]] for p in producers[i])])

    order = []
    while ready:
        times = {i: inputs_ready(i) for i in ready}
        earliest = min(times.values())
        i = max((i for i, at in times.items() if at <= earliest + slack), key=lambda i: (level[i], -i))
        ready.remove(i)
        at = start(i)
        for p in producers[i]:
            free[cores[p]] = max(free[cores[p]], at)
        free[cores[i]] = done[i] = at + costs[i]
        order.append(computes[i])
        for c in consumers[i]:
            waiting[c] -= 1
            if waiting[c] == 0:
                ready.add(c)
    return order


def band_cost(
    compute: spat.ComputeOp,
    band: Rows,
    latencies: Latencies | None = None,
    bounds: dict[SSAValue, Bounds] | None = None,
) -> float:
    """The time of the band `band` of `compute` (the rows its windows need included; `bounds`: as
    for `compute_cost`)."""
    needed = needed_rows(compute, band)
    assert needed is not None
    return compute_cost(compute, lambda value: needed.get(value, (0, 0)), latencies, bounds)


def row_bands(compute: spat.ComputeOp, rows_per_band: int, band: Rows | None = None) -> list[Rows]:
    """The bands of at least `rows_per_band` rows of `compute`'s output rows `band` (default: all):
    the thinnest whose times add up to at most `BAND_OVERHEAD` more than the whole (a window op
    after another one recomputes its halo rows in every band); one band, the whole, when `compute`
    has no bands or none are cheap enough."""
    whole = band or ((0, rows_of(compute.outputs[0])) if compute.outputs else (0, 1))
    if can_split(compute) == 1:
        return [whole]
    limit = (1 + BAND_OVERHEAD) * band_cost(compute, whole)
    size = rows_per_band
    while size < whole[1] - whole[0]:
        bands = sub_bands(whole, size)
        if sum(band_cost(compute, b) for b in bands) <= limit:
            return bands
        size *= 2
    return [whole]


def dealt_bands(compute: spat.ComputeOp, cores: Sequence[int], rows_per_band: int) -> tuple[list[Rows], list[int]]:
    """The row pipeline's bands of `compute` replicated on `cores` (one replica each), and the core
    of each: its bands (`row_bands`, at least one per replica) dealt to the replicas in turn, so that
    the replicas work down the image side by side. With contiguous blocks of rows instead, the
    first band of a consumer's block would wait for the last band of the producer's block above
    it (its halo row) and every layer would add a whole block's time to the latency."""
    bands = row_bands(compute, rows_per_band)
    if len(bands) < len(cores):
        bands = band_bounds(rows_of(compute.outputs[0]), len(cores))
    return bands, [cores[i % len(cores)] for i in range(len(bands))]
