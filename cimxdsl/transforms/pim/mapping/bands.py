"""Splitting a `spat.compute` into bands: the replicas of a layer work on different output rows,
or on different columns of the same rows.

A band of a compute is an `Area`: rows `[a, b)` of all its results (which must share their row
count), and optionally only columns `[c, d)` of them. Working back from the results, every value of
the body gets the area the band needs of it (a window op needs its kernel's halo of rows and its
input's whole rows; element-wise ops the same area); ops are rebuilt on those areas, a window op
on `spat.extract_rows` of its input with the top and bottom padding that band still meets, and
with left and right pads that crop the input to the band's columns (negative pads). A compute
whose body holds an op without a row-wise form (global average pooling, a concatenation along
rows, ...) has no bands.

Consumers receive only the bands overlapping the area they need, joined with `spat.concat` along
the columns and the rows (and cut with `spat.extract_rows` and `spat.extract_columns` when they
need less).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Literal

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import ArrayAttr, DenseIntOrFPElementsAttr, MemRefType, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from cimxdsl.device.latency import Latencies
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.crossbar_ops import FilterGeometry, WindowOp
from cimxdsl.dialects.utils import dense_array, i64_array, i64_attr, identity_cache, shape_of, shape_of_type, with_shape
from cimxdsl.transforms.pim.mapping.problem import Area, Rows, compute_cost, kept_while_alive, pixels_per_read
from cimxdsl.transforms.pim.value_bounds import Bounds

BAND = "spat.band"
"""The discardable attribute of a band: the end of its rows and its layer's row count."""

_ROWWISE_ARITH = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.MaxSIOp, arith.MinSIOp, arith.ShRSIOp)


def rows_of(value: SSAValue) -> int:
    t = value.type
    assert isinstance(t, TensorType | MemRefType)
    return shape_of_type(t)[0]


@identity_cache
def with_area(t: Attribute, rows: int, columns: int | None) -> Attribute:
    """`t` with `rows` rows and `columns` columns (None: its own)."""
    assert isinstance(t, TensorType)
    shape = shape_of_type(t)
    return with_shape(t, (rows, *shape[1:]) if columns is None else (rows, columns, *shape[2:]))


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


def window_columns(geometry: FilterGeometry, columns: Rows, width: int, pixels: int = 1) -> tuple[int, int]:
    """The left and right pads of a window op computing output columns `columns` from its whole
    input rows `width` wide: negative where they crop the input to the columns' windows; with
    `pixels` output pixels per window (im2col), `columns` are whole windows."""
    (_, kw), (_, sw), (_, pl, _, _), (_, dw) = geometry.kernel, geometry.strides, geometry.pads, geometry.dilations
    first, end = columns[0] // pixels, columns[1] // pixels
    left = pl - first * sw
    return left, (end - first - 1) * sw + (kw - 1) * dw + 1 - width - left


AreaRule = Callable[[Area], list["Area | None"]]
"""The area an op needs of each operand for an area of its result (None: the whole operand)."""


def operand_areas(op: Operation, area: Area) -> list[Area | None] | None:
    """The area `op` needs of each operand to compute area `area` of its result (None: the whole
    operand, e.g. a broadcast vector); None if `op` has no row-wise form."""
    rule = area_rule(op)
    return None if rule is None else rule(area)


@kept_while_alive
def area_rule(op: Operation) -> AreaRule | None:
    """`operand_areas` of `op` as a function of the result's area, read from `op` once (while it
    lives); None if `op` has no row-wise form. A window op reads whole rows (its pads crop them to
    the columns)."""
    if isinstance(op, spat.ApplyFiltersOp | spat.MaxPoolOp | spat.AvgPoolOp):
        if len(shape_of(op.input)) == 2:
            return lambda area: [area]
        geometry, height = op.geometry(), rows_of(op.input)
        return lambda area: [(window_input_rows(geometry, area[0], height)[0], None)]
    if isinstance(op, spat.VectorBinaryOp):
        if op.lhs.type == op.rhs.type:
            return lambda area: [area, area]
        return lambda area: [area, None]
    count = len(op.operands)
    if isinstance(op, (spat.VectorUnaryOp, *_ROWWISE_ARITH)) or (
        isinstance(op, spat.ConcatOp) and op.axis.value.data == len(shape_of(op.result)) - 1
    ):
        return lambda area: [area] * count
    if isinstance(op, arith.ConstantOp) and is_splat(op):
        return lambda area: []
    return None


def is_splat(op: arith.ConstantOp) -> bool:
    if not isinstance(op.value, DenseIntOrFPElementsAttr) or not isinstance(op.result.type, TensorType):
        return False
    values = dense_array(op.value).reshape(-1)
    if values.size == 0:
        return False
    sample = values[:: max(1, values.size // 64)]  # rejects most constants without reading them whole
    return bool((sample == values[0]).all()) and bool((values == values[0]).all())


def needed_areas(compute: spat.ComputeOp, area: Area) -> dict[SSAValue, Area] | None:
    """The area of every value of the body that area `area` of the results needs (None: the
    compute has no bands)."""
    yielded, steps = area_plan(compute)
    needed: dict[SSAValue, Area] = {}
    for value in yielded:
        needed[value] = union(needed.get(value), area)
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


AreaPlan = tuple[tuple[SSAValue, ...], list[tuple[tuple[SSAValue, ...], list[tuple[SSAValue, Area]], AreaRule | None]]]


@kept_while_alive
def area_plan(compute: spat.ComputeOp) -> AreaPlan:
    """What `needed_areas` reads of `compute`: the values it yields, and its ops from last to
    first, each with its results, its operands (and their whole area) and its `area_rule`."""
    block = compute.body.block
    terminator = block.last_op
    assert isinstance(terminator, spat.YieldOp)
    steps = [
        (tuple(op.results), [(v, whole_area(v)) for v in op.operands], area_rule(op))
        for op in reversed(list(block.ops)[:-1])
        if op.results
    ]
    return tuple(terminator.values), steps


def whole_area(value: SSAValue) -> Area:
    t = value.type
    return ((0, shape_of_type(t)[0]) if isinstance(t, TensorType | MemRefType) and shape_of_type(t) else (0, 1)), None


def span(a: Rows | None, b: Rows | None) -> Rows | None:
    """The rows (or columns) both `a` and `b` cover at least; None (all) if either is None."""
    return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))


def union(a: Area | None, b: Area) -> Area:
    if a is None:
        return b
    rows = span(a[0], b[0])
    assert rows is not None
    return rows, span(a[1], b[1])


def columns_of(value: SSAValue, columns: Rows | None) -> Rows:
    """`columns` of an image `value`, None being all of them."""
    return columns if columns is not None else (0, shape_of(value)[1])


def can_split(compute: spat.ComputeOp) -> int:
    """The most bands `compute` can be split into: its results' row count, or 1 when they differ,
    a result is used outside computes or an op has no row-wise form."""
    results = list(compute.outputs)
    counts = {rows_of(r) for r in results}
    if len(counts) != 1 or any(not isinstance(u.operation, spat.ComputeOp) for r in results for u in r.uses):
        return 1
    (count,) = counts
    if count < 2 or needed_areas(compute, ((0, count), None)) is None:
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
    tail = yielded_ops(compute, lambda op: operand_areas(op, ((0, 1), None)) is None)
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
    """Area `area` of a result, computed by a band."""

    area: Area
    value: SSAValue


@dataclass
class BandBuilder:
    """The body of one band, built op by op."""

    block: Block
    local: dict[SSAValue, tuple[SSAValue, Area]] = field(default_factory=dict)
    """Original value -> (its band value, the area of the original it holds)."""

    def area(self, value: SSAValue, wanted: Area) -> SSAValue:
        """Area `wanted` of the original `value` inside the band."""
        source, held = self.local[value]
        return self.cut(source, held, wanted, value)

    def cut(self, source: SSAValue, held: Area, wanted: Area, original: SSAValue) -> SSAValue:
        """Area `wanted` of `original` from `source`, which holds its area `held`."""
        (rows, columns), (held_rows, held_columns) = wanted, held
        if rows != held_rows:
            extract = spat.ExtractRowsOp(source, rows[0] - held_rows[0], rows[1] - rows[0])
            self.block.add_op(extract)
            source = extract.result
        if columns is not None or held_columns is not None:
            columns, held_columns = columns_of(original, columns), columns_of(original, held_columns)
            if columns != held_columns:
                extract = spat.ExtractColumnsOp(source, columns[0] - held_columns[0], columns[1] - columns[0])
                self.block.add_op(extract)
                source = extract.result
        return source


def split_compute(
    compute: spat.ComputeOp, bands: list[Area], pieces: dict[SSAValue, list[Piece]]
) -> list[spat.ComputeOp]:
    """One compute per band (not yet inserted); the bands of each result are added to `pieces`."""
    new = []
    for band in bands:
        needed = needed_areas(compute, band)
        assert needed is not None
        new.append(build_band(compute, band, needed, pieces))
    return new


def build_band(
    compute: spat.ComputeOp, band: Area, needed: dict[SSAValue, Area], pieces: dict[SSAValue, list[Piece]]
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
            area = needed[op.results[0]]
            new = band_op(op, area, builder)
            block.add_op(new)
            builder.local[op.results[0]] = (new.results[0], area)
    results = [builder.area(v, band) for v in terminator.values]
    block.add_op(spat.YieldOp(*results))
    new = spat.ComputeOp(weights, inputs, [r.type for r in results], Region(block))
    new.attributes.update(compute.attributes)
    for old, value in zip(compute.outputs, new.outputs, strict=True):
        pieces.setdefault(old, []).append(Piece(band, value))
    return new


def overlap(a: Rows | None, b: Rows | None) -> bool:
    return a is None or b is None or (a[0] < b[1] and b[0] < a[1])


def receive(
    builder: BandBuilder, operand: SSAValue, wanted: Area, inputs: list[SSAValue], pieces: dict[SSAValue, list[Piece]]
) -> tuple[SSAValue, Area]:
    """The input `operand` as a band input: the bands of it that overlap `wanted`, joined along
    the columns into rows, and those along the rows."""
    available = pieces.get(operand, [Piece(whole_area(operand), operand)])
    # the bands are in row order (a band's parts in column order): those from the first ending below
    # the wanted rows' start to the last starting above their end
    rows = wanted[0]
    first = bisect.bisect_right(available, rows[0], key=lambda p: p.area[0][1])
    last = bisect.bisect_left(available, rows[1], lo=first, key=lambda p: p.area[0][0])
    parts = [p for p in available[first:last] if overlap(p.area[1], wanted[1])]
    joined: list[tuple[SSAValue, Area]] = []
    for rows, run in groupby(sorted(parts, key=lambda p: (p.area[0], p.area[1] or (0, 0))), key=lambda p: p.area[0]):
        row_parts = list(run)
        args = []
        for part in row_parts:
            inputs.append(part.value)
            args.append(builder.block.insert_arg(part.value.type, len(builder.block.args)))
        if len(args) == 1:
            joined.append((args[0], row_parts[0].area))
            continue
        concat = spat.ConcatOp(args, 1)
        builder.block.add_op(concat)
        first, last = row_parts[0].area[1], row_parts[-1].area[1]
        assert first is not None and last is not None
        joined.append((concat.result, (rows, (first[0], last[1]))))
    if len(joined) == 1:
        return joined[0]
    columns = [columns_of(operand, area[1]) for _, area in joined]
    common = (max(c[0] for c in columns), min(c[1] for c in columns))  # the columns every row run holds
    held_columns = None if common == (0, shape_of(operand)[1]) else common
    values = [builder.cut(v, area, (area[0], held_columns), operand) for v, area in joined]
    concat = spat.ConcatOp(values, 0)
    builder.block.add_op(concat)
    return concat.result, ((joined[0][1][0][0], joined[-1][1][0][1]), held_columns)


@identity_cache
def splat_of(t: Attribute, value: Attribute) -> DenseIntOrFPElementsAttr:
    """The splat constant `value` (a splat dense attribute) with type `t`, one per type and value."""
    splat = dense_array(value).reshape(-1)[0].item()  # pyright: ignore[reportArgumentType]
    return DenseIntOrFPElementsAttr.from_list(t, [splat])  # pyright: ignore[reportArgumentType]


def band_op(op: Operation, area: Area, builder: BandBuilder) -> Operation:
    """`op` computing area `area` of its result, on band values."""
    rows, columns = area
    result_type = with_area(op.results[0].type, rows[1] - rows[0], None if columns is None else columns[1] - columns[0])
    if isinstance(op, arith.ConstantOp):
        return arith.ConstantOp.create(
            result_types=[result_type], properties={"value": splat_of(result_type, op.value)}
        )
    wanted = operand_areas(op, area)
    assert wanted is not None
    operands = [
        builder.area(v, w) if w is not None else builder.local.get(v, (v, None))[0]
        for v, w in zip(op.operands, wanted, strict=True)
    ]
    properties = dict(op.properties)
    if isinstance(op, WindowOp) and len(shape_of(op.operands[0])) == 3:
        geometry = op.geometry()
        height, width = shape_of(op.operands[0])[:2]
        _, top, bottom = window_input_rows(geometry, rows, height)
        _, left, _, right = geometry.pads
        if columns is not None:
            left, right = window_columns(geometry, columns, width, pixels_per_read(op))
        properties["pads"] = i64_array((top, left, bottom, right))
    return type(op).create(
        operands=operands, result_types=[result_type], properties=properties, attributes=dict(op.attributes)
    )


def rewire_consumer(compute: spat.ComputeOp, pieces: dict[SSAValue, list[Piece]]) -> spat.ComputeOp:
    """`compute` (not split) reading the bands of its split inputs, joined along the rows."""
    if not any(v in pieces for v in compute.inputs):
        return compute
    needed = {arg: whole_area(arg) for arg in compute.input_args}
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
    computes: list[spat.ComputeOp], bands: list[list[Area]], cores: list[list[int]], core_attr: str, mark: bool = False
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
        for band, core, ((_, end), _) in zip(new, on, rows, strict=True):
            band.attributes[core_attr] = i64_attr(core)
            if mark and len(rows) > 1:
                band.attributes[BAND] = ArrayAttr([i64_attr(end), i64_attr(total)])
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

    times = {i: inputs_ready(i) for i in ready}  # kept up to date: only a core's freeing moves them
    ready_on: dict[int, set[int]] = {}
    for i in ready:
        ready_on.setdefault(cores[i], set()).add(i)
    order = []
    while times:
        earliest = min(times.values())
        i = max((i for i, at in times.items() if at <= earliest + slack), key=lambda i: (level[i], -i))
        del times[i]
        ready_on[cores[i]].discard(i)
        at = start(i)
        for p in producers[i]:
            free[cores[p]] = max(free[cores[p]], at)
        free[cores[i]] = done[i] = at + costs[i]
        order.append(computes[i])
        for core in {cores[i], *(cores[p] for p in producers[i])}:
            for j in ready_on.get(core, ()):
                times[j] = inputs_ready(j)
        for c in consumers[i]:
            waiting[c] -= 1
            if waiting[c] == 0:
                times[c] = inputs_ready(c)
                ready_on.setdefault(cores[c], set()).add(c)
    return order


def band_cost(
    compute: spat.ComputeOp,
    band: Area,
    latencies: Latencies | None = None,
    bounds: dict[SSAValue, Bounds] | None = None,
) -> float:
    """The time of the band `band` of `compute` (the rows its windows need included; `bounds`: as
    for `compute_cost`)."""
    needed = needed_areas(compute, band)
    assert needed is not None
    return compute_cost(compute, lambda value: needed.get(value, ((0, 0), None)), latencies, bounds)


def row_bands(compute: spat.ComputeOp, rows_per_band: int, band: Rows | None = None) -> list[Rows]:
    """The bands of at least `rows_per_band` rows of `compute`'s output rows `band` (default: all):
    the thinnest whose times add up to at most `BAND_OVERHEAD` more than the whole (a window op
    after another one recomputes its halo rows in every band); one band, the whole, when `compute`
    has no bands or none are cheap enough."""
    whole = band or ((0, rows_of(compute.outputs[0])) if compute.outputs else (0, 1))
    if can_split(compute) == 1:
        return [whole]
    limit = (1 + BAND_OVERHEAD) * band_cost(compute, (whole, None))
    size = rows_per_band
    while size < whole[1] - whole[0]:
        bands = sub_bands(whole, size)
        if sum(band_cost(compute, (b, None)) for b in bands) <= limit:
            return bands
        size *= 2
    return [whole]


def column_parts(compute: spat.ComputeOp, parts: int) -> list[Rows | None]:
    """`compute`'s output columns cut into at most `parts` near-equal runs of whole windows (of its
    im2col products' pixels per read); `[None]` (all columns) when its results are not images of
    one width, it has no bands, or it reads an image the host holds: every replica would load the
    image's whole rows from global memory, which serves one access at a time."""
    widths = {shape_of(r)[1] if len(shape_of(r)) == 3 else 0 for r in compute.outputs}
    unit = math.lcm(*(pixels_per_read(op) for op in compute.body.block.ops))
    loaded = any(not isinstance(v.owner, spat.ComputeOp) and len(shape_of(v)) == 3 for v in compute.inputs)
    if parts < 2 or len(widths) != 1 or loaded or can_split(compute) == 1:
        return [None]
    (width,) = widths
    count = min(parts, width // unit)
    if count < 2 or width % unit:
        return [None]
    return [(unit * a, unit * b) for a, b in band_bounds(width // unit, count)]


def dealt_bands(
    compute: spat.ComputeOp, cores: Sequence[int], rows_per_band: int, share_rows: bool = False
) -> tuple[list[Area], list[int]]:
    """The row pipeline's bands of `compute` replicated on `cores` (one replica each), and the core
    of each: its bands (`row_bands`, at least one per replica) dealt to the replicas in turn, so that
    the replicas work down the image side by side. With contiguous blocks of rows instead, the
    first band of a consumer's block would wait for the last band of the producer's block above
    it (its halo row) and every layer would add a whole block's time to the latency. With
    `share_rows`, every band is cut into columns, one part per replica (`column_parts`), so that
    the replicas compute each band together and a consumer waits for a part of a band's time."""
    bands = row_bands(compute, rows_per_band)
    parts = column_parts(compute, len(cores)) if share_rows else [None]
    if len(bands) * len(parts) < len(cores):
        bands = band_bounds(rows_of(compute.outputs[0]), -(-len(cores) // len(parts)))
    areas = [(band, part) for band in bands for part in parts]
    if len(parts) == len(cores):  # each band's parts start one replica further on: near-equal parts even out
        return areas, [cores[(i + j) % len(cores)] for i in range(len(bands)) for j in range(len(parts))]
    return areas, [cores[i % len(cores)] for i in range(len(areas))]
