"""`cinm-to-spatial`: RAPTOR's channel-wise lowering of convolutions and gemms (M. Miotti, "Channel-Wise Lowering of ONNX-Based Deep Learning Models for ReRAM Architectures", Master's thesis, Politecnico di Milano, 2025, §4).

Every function holding `cinm.compute` ops is rewritten so that all its work happens in
`spat.compute` ops. Activations are kept pixel-major (`[H, W, C]`, one image) and split along the
channels into *tiles* of at most `xbar-size` channels; a tile is one value, never a pixel, so the IR
does not grow with the image size.

A convolution (`cinm.compute { im2col, gemm, expand_shape, transpose }`, padding folded from the
`tensor.pad` before it) with a `(C·KH·KW) × F` constant weight matrix becomes crossbar matrices
`W[k][input tile, output tile]`, one per kernel position `k`. Blocks of all zeros and kernel
positions that never read an image pixel are skipped (weight skipping, `crossbar_weights.py`). The blocks,
ordered by output tile, input tile and kernel position, are cut into `spat.compute`s of at most
`crossbars-per-compute` crossbars; each applies `spat.apply_filters` per input tile (weight index
-1 for the positions it does not hold) and sums them with `spat.vadd`; the last compute of an output
tile adds the partial sums of the others (where Miotti 2025, Listing 4.1, passes them along a chain,
each compute adding the previous one's: here the others read side by side). A gemm (`cinm.op.gemm %x,
%W [plus %b]`) is the same with a 1×1 kernel (Miotti 2025, App. B). With `packing=im2col` the
blocks of each tile pair are stacked and cut into crossbars of `xbar-size` rows instead, applied by
one `apply_filters` in im2col form per compute and tile pair; `packing=sdk` unrolls windows of
adjacent output pixels where that takes fewer crossbar reads (`crossbar_weights.py`).

Each source op kind has one rewrite pattern; the patterns record the lowered form of every value, a
`Lowered` (`spatial_values.py`), in the function's `SpatialState`, and the function's `func.return`
replaces its body by the computes built. Host ops between layers become spatial vector ops appended
to the compute producing each tile: ReLU (`arith.maxsi` with 0) `spat.vrelu`; other
`arith.maxsi`/`addi`/`subi`/`muli` `spat.vmax`/`vadd`/`vsub`/`vmul`; `arith.minsi` and
`arith.shrsi` (requantization) stay arith ops on the tiles; `linalg.pooling_nchw_max`
`spat.maxpool`; `tosa.reduce_sum` over axes 2 and 3 followed by `arith.floordivsi` (or `arith.divsi`
on non-negative values) by H·W `spat.global_avgpool`; `tosa.clamp` (integers) a maximum and a
minimum; `tensor.collapse_shape`/`tensor.reshape` of `[1, C, 1, 1]` to `[1, C]` (flatten) and
`tensor.concat` along the channels only relabel tiles (an element-wise op on operands tiled
differently moves them to regular tiles through crossbars holding the identity matrix).
Host ops on constants only are folded (with the interpreter functions). Splat constants are
materialized in the computes; other constants become function-level constants passed as inputs.
Function inputs are converted to `[H, W, C]` tiles by host glue (`linalg.transpose`,
`tensor.collapse_shape`, `tensor.extract_slice`); results are joined with `spat.concat` and
converted back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import groupby, pairwise

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, tensor, tosa
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.dialects.linalg.ops import FillOp, PoolingNchwMaxOp, TransposeOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from cimxdsl.device import DEFAULT_DEVICE, Device
from cimxdsl.device.chip import ChipConfig
from cimxdsl.device.latency import Latencies
from cimxdsl.dialects import cinm
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.crossbar_ops import FilterGeometry, Im2col
from cimxdsl.dialects.utils import (
    CROSSBARS,
    dense_array,
    dense_attr,
    numpy_dtype,
    precision_of,
    reassociation,
    set_precision,
    shape_of,
    static_slice,
)
from cimxdsl.interpreters import build_interpreter
from cimxdsl.interpreters.prepared import cyclic_collector_paused
from cimxdsl.transforms.common.device_option import ChipOption, pass_device
from cimxdsl.transforms.common.errors import pass_error
from cimxdsl.transforms.common.functions import functions_holding
from cimxdsl.transforms.common.options import ChoicePass
from cimxdsl.transforms.pim.crossbar_weights import (
    Packing,
    WeightBlock,
    im2col_blocks,
    shifted_kernels,
    valid_positions,
    weight_blocks,
    weight_origin,
    window_geometry,
    window_pixels,
)
from cimxdsl.transforms.pim.spatial_values import (
    FLATTENED_USE,
    Constant,
    Flattened,
    Layout,
    Lowered,
    Node,
    NodeRef,
    Padded,
    PartialSum,
    Ref,
    Tiled,
)
from cimxdsl.transforms.pim.value_bounds import NARROW_BITS

ORIGIN = "origin"
"""Discardable attribute naming where a crossbar matrix comes from (kept in the artifacts)."""


def splat_constant(value: int | float, tensor_type: TensorType) -> arith.ConstantOp:
    """`arith.constant dense<value> : tensor_type`."""
    return arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(tensor_type, [value]))


def channel_bounds(channels: int, tile: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + tile, channels)) for lo in range(0, channels, tile)]


def int_values(attr: Attribute) -> tuple[int, ...]:
    if isinstance(attr, DenseArrayBase):
        return tuple(attr.get_values())
    assert isinstance(attr, DenseIntOrFPElementsAttr)
    return tuple(int(v) for v in dense_array(attr).reshape(-1))


# ----------------------------------------------------------------------------------------------
# The state shared by the patterns lowering one function
# ----------------------------------------------------------------------------------------------

_ELEMENTWISE = {
    arith.AddiOp: "add",
    arith.SubiOp: "sub",
    arith.MuliOp: "mul",
    arith.MaxSIOp: "max",
    arith.MinSIOp: "min",
    arith.ShRSIOp: "shr",
}
_COMMUTATIVE = {"add", "mul", "max", "min"}
_SPAT_BINARY = {"add": spat.VAddOp, "sub": spat.VSubOp, "mul": spat.VMulOp, "max": spat.VMaxOp}
_ARITH_BINARY = {"min": arith.MinSIOp, "shr": arith.ShRSIOp}


@dataclass
class SpatialState:
    """What the lowering of one function knows so far: the lowered form of each value, the computes
    being built, and the host ops before (`prologue`) and after (`epilogue`) the computes."""

    function: func.FuncOp
    size: int
    """The crossbars' rows and columns."""
    crossbars_per_compute: int
    packing: Packing = "kernel"
    whole_tiles: bool = False
    array_group: int = 1
    """The most crossbars side by side in one array group: an image's channel tiles are up to this
    many crossbars wide (a matrix's stay one)."""
    latencies: Latencies | None = None
    """The chip's instruction times, for the choices that trade one instruction for another."""
    values: dict[SSAValue, Lowered] = field(default_factory=dict[SSAValue, Lowered])
    nodes: list[Node] = field(default_factory=list[Node])
    prologue: list[Operation] = field(default_factory=list[Operation])
    epilogue: list[Operation] = field(default_factory=list[Operation])
    input_tiles: dict[SSAValue, Tiled] = field(default_factory=dict[SSAValue, Tiled])
    placeholders: dict[NodeRef, SSAValue] = field(default_factory=dict[NodeRef, SSAValue])
    """A value standing for each compute result the epilogue uses, until the computes exist."""
    folder: Interpreter | None = None
    layers: int = 0

    def tile(self, layout: Layout) -> int:
        """The channels of a tile of a value laid out as `layout`."""
        return self.size * (self.array_group if layout.rows is None else 1)

    def known(self, value: SSAValue) -> Lowered | SSAValue:
        """The lowered form of `value`, or `value` itself (a function argument, an unlowered value)."""
        return self.values.get(value, value)

    def tiled(self, value: SSAValue | Lowered, user: Operation) -> Tiled:
        """`value` as tiles: a lowered activation, or host glue slicing a function argument."""
        known = self.known(value) if isinstance(value, SSAValue) else value
        if isinstance(known, Tiled):
            return known
        if isinstance(known, Flattened):
            raise pass_error("cinm-to-spatial", FLATTENED_USE, user)
        if isinstance(known, SSAValue) and isinstance(known.type, TensorType):
            return self.tiles_of_argument(known)
        what = type(known).__name__.lower() if not isinstance(known, SSAValue) else "value"
        raise pass_error("cinm-to-spatial", f"operand {what} cannot be tiled for the crossbars", user)

    def tiles_of_argument(self, value: SSAValue) -> Tiled:
        if value in self.input_tiles:
            return self.input_tiles[value]
        t = value.type
        assert isinstance(t, TensorType)
        shape, element = t.get_shape(), t.element_type
        if len(shape) == 4:
            if shape[0] != 1:
                raise pass_error("cinm-to-spatial", f"only one image (batch 1) is supported, got {t}")
            _, channels, height, width = shape
            init = tensor.EmptyOp([], TensorType(element, (1, height, width, channels)))
            nhwc = TransposeOp(value, init.tensor, DenseArrayBase.from_list(i64, (0, 2, 3, 1)))
            hwc = tensor.CollapseShapeOp.create(
                operands=[nhwc.results[0]],
                result_types=[TensorType(element, (height, width, channels))],
                properties={"reassociation": reassociation([[0, 1], [2], [3]])},
            )
            self.prologue += [init, nhwc, hwc]
            whole, layout = hwc.results[0], Layout(height, width)
        elif len(shape) == 2:
            channels = shape[1]
            whole, layout = value, Layout(rows=shape[0])
        else:
            raise pass_error("cinm-to-spatial", f"function inputs must be NCHW images or matrices, got {t}")
        bounds = channel_bounds(channels, self.tile(layout))
        tiles: list[Ref] = []
        for lo, hi in bounds:
            if (lo, hi) == (0, channels):
                tiles.append(whole)
                continue
            offsets = [0] * (len(layout.tile_shape(0)) - 1) + [lo]
            sizes = list(layout.tile_shape(hi - lo))
            piece = static_slice(whole, offsets, sizes)
            self.prologue.append(piece)
            tiles.append(piece.result)
        self.input_tiles[value] = Tiled(shape, layout, element, tiles, bounds)
        return self.input_tiles[value]

    def host_constant(self, array: np.ndarray, element: Attribute) -> SSAValue:
        op = arith.ConstantOp(dense_attr(np.ascontiguousarray(array), element))
        self.prologue.append(op)
        return op.result

    def weight_constant(
        self, block: np.ndarray, element: Attribute, origin: str, precision: tuple[int, int] | None = None
    ) -> SSAValue:
        """A crossbar's weights (an array group's, over `size` columns), with their layer (`origin`)
        and its precision, if it has its own."""
        op = set_precision(arith.ConstantOp(dense_attr(np.ascontiguousarray(block), element)), precision)
        op.attributes[ORIGIN] = StringAttr(origin)
        if (crossbars := -(-block.shape[1] // self.size)) > 1:
            op.attributes[CROSSBARS] = IntegerAttr(crossbars, i64)
        self.prologue.append(op)
        return op.result

    def new_node(self) -> Node:
        node = Node(len(self.nodes))
        self.nodes.append(node)
        return node

    def node_for(self, refs: Sequence[Ref]) -> Node:
        """The latest compute among the producers of `refs` (dependencies then stay acyclic), or
        a new compute if they all come from the host."""
        producers = [r.node for r in refs if isinstance(r, NodeRef)]
        if not producers:
            return self.new_node()
        return max(producers, key=lambda n: n.index)

    def zero_tile(self, tile_type: TensorType) -> NodeRef:
        node = self.new_node()
        return node.output(node.add(splat_constant(0, tile_type)))


# ----------------------------------------------------------------------------------------------
# Crossbars and element-wise ops on tiles (used by several patterns)
# ----------------------------------------------------------------------------------------------


def lower_filters(
    state: SpatialState,
    name: str,
    image: Tiled,
    matrix: np.ndarray,
    kernel: tuple[int, int],
    geometry: FilterGeometry,
    size: tuple[int, int],
    out_layout: Layout,
    element: Attribute,
    precision: tuple[int, int] | None = None,
    pixels: int = 1,
) -> Tiled:
    """`image` through the crossbar matrices of `matrix`, in computes of at most
    `crossbars-per-compute` crossbars, the last of an output tile adding the others' partial sums; with
    `pixels` > 1, `matrix` and `geometry` are those of windows of that many output pixels (one
    output tile, `shifted_kernels`)."""
    positions = kernel[0] * kernel[1]
    out_bounds = channel_bounds(matrix.shape[1] // pixels, state.tile(out_layout))
    columns = [(pixels * f0, pixels * f1) for f0, f1 in out_bounds]
    assert pixels == 1 or len(out_bounds) == 1
    valid = valid_positions(geometry, size) if image.layout.rows is None else [0]
    blocks = weight_blocks(matrix, positions, valid, image.bounds, columns)
    wide = any(c1 - c0 > state.size for c0, c1 in image.bounds)  # an array group's tile: cut its rows
    if state.packing != "kernel" and (positions > 1 or wide) and image.layout.rows is None:
        blocks = im2col_blocks(blocks, state.size)
    out = Tiled((), out_layout, element, [], out_bounds, nonneg=False)
    partials: dict[int, list[NodeRef]] = {}
    sums: dict[int, NodeRef] = {}
    per = state.crossbars_per_compute // max(-(-(c1 - c0) // state.size) for c0, c1 in columns)
    groups = compute_groups(
        blocks, per, state.whole_tiles, lambda tile, runs: last_run_relief(state.latencies, columns[tile], runs)
    )
    last = {block.output_tile: g for g, group in enumerate(groups) for block in group}
    for g, group in enumerate(groups):
        node = state.new_node()
        for j, by_output in groupby(group, key=lambda b: b.output_tile):
            f0, f1 = out_bounds[j]
            result_type = TensorType(element, out_layout.tile_shape(f1 - f0))
            total = None
            for i, by_input in groupby(by_output, key=lambda b: b.input_tile):
                pieces = list(by_input)
                indices = []
                for block in pieces:
                    origin = weight_origin(name, image.bounds[i], (f0, f1), block, kernel)
                    weight = state.weight_constant(block.matrix, image.element, origin, precision)
                    indices.append(node.add_weight(weight))
                filters = apply_filters(
                    node.use(image.tiles[i]), pieces, indices, positions, result_type, geometry, pixels
                )
                value = node.add(filters)
                total = value if total is None else node.add(spat.VAddOp(total, value))
            assert total is not None
            if last[j] != g:
                partials.setdefault(j, []).append(node.output(total))
                continue
            for partial in partials.pop(j, []):  # the tile's last compute adds the others' partial sums
                total = node.add(spat.VAddOp(node.use(partial), total))
            sums[j] = node.output(total)
    for j in range(len(out_bounds)):
        out.tiles.append(sums[j] if j in sums else state.zero_tile(out.tile_type(j)))
    return out


TILE_EPILOGUE_VECTOR_OPS = 7
"""The vector instructions over a layer's output tile after its last partial sum, as
`last_run_relief` counts them: a bias add, then a requantization's shift, its upper clamp (a fill
and four vector ops: `pim-codegen` has no minimum) and its lower clamp."""


def last_run_relief(latencies: Latencies | None, columns: tuple[int, int], runs: int) -> float:
    """How many fewer crossbar reads (row slices) the last of `runs` computes of an output tile of
    `columns` should take to end with the others: it also receives and adds the others' partial
    sums and runs the element-wise ops after them (`TILE_EPILOGUE_VECTOR_OPS`), in the time of that
    many reads of 8-bit inputs, each with its partial sum's addition (0 without the chip's
    `latencies`). Reads a window's padding skips are not counted apart."""
    if latencies is None or runs < 2:
        return 0.0
    width = columns[1] - columns[0]
    narrow = Latencies(latencies.chip, NARROW_BITS // 8, latencies.obytes)
    read = narrow.mvmul() + latencies.vector(width)
    partial = latencies.transfer(width * latencies.ibytes) + latencies.vector(width)
    epilogue = TILE_EPILOGUE_VECTOR_OPS * latencies.vector(width) + latencies.fill(width)
    return float(((runs - 1) * partial + epilogue) / read)


def compute_groups(
    blocks: list[WeightBlock],
    per: int,
    whole_tiles: bool,
    relief: Callable[[int, int], float] = lambda tile, runs: 0.0,
) -> list[list[WeightBlock]]:
    """`blocks` (ordered by output tile) cut into the crossbars of computes of at most `per` each:
    in runs of `per` (the computes sharing an output tile each making a partial sum of it); with
    `whole_tiles`, in computes of whole output tiles, as few as hold them and as even as the tiles
    allow, so that the computes of a layer share no partial sums but those of a tile wider than a
    compute: such a tile is cut into as few runs, near-equal but the last, which adds the others'
    partial sums, `relief(tile, runs)` blocks shorter (rounded, each run at most `per` and the last
    at least one; `last_run_relief`)."""
    if not whole_tiles:
        return [blocks[start : start + per] for start in range(0, len(blocks), per)]
    groups: list[list[WeightBlock]] = []
    for large, run in groupby(
        (list(t) for _, t in groupby(blocks, key=lambda b: b.output_tile)), key=lambda t: len(t) > per
    ):
        tiles = list(run)
        if large:
            for tile in tiles:
                count = len(tile)
                runs = -(-count // per)
                cut = max(0, min(round(relief(tile[0].output_tile, runs)), runs * per - count, count // runs - 1))
                edges = [(count + cut) * i // runs for i in range(runs)] + [count]
                groups += [tile[a:b] for a, b in pairwise(edges)]
            continue
        fewest = len(pack_tiles(tiles, per))
        limit = max(map(len, tiles))
        while len(pack_tiles(tiles, limit)) > fewest:  # the evenest packing into as few computes
            limit += 1
        groups += pack_tiles(tiles, limit)
    return groups


def pack_tiles(tiles: list[list[WeightBlock]], limit: int) -> list[list[WeightBlock]]:
    """Consecutive `tiles` packed in order into groups of at most `limit` blocks."""
    groups: list[list[WeightBlock]] = []
    for tile in tiles:
        if groups and len(groups[-1]) + len(tile) <= limit:
            groups[-1] += tile
        else:
            groups.append(list(tile))
    return groups


def apply_filters(
    image: SSAValue,
    blocks: list[WeightBlock],
    indices: list[int],
    positions: int,
    result_type: TensorType,
    geometry: FilterGeometry,
    pixels: int = 1,
) -> spat.ApplyFiltersOp:
    """The `apply_filters` of consecutive blocks of one tile pair held at weight `indices`."""
    first = blocks[0]
    if first.positions is not None:
        packing = Im2col(first.positions, first.first_row, pixels)
        return spat.ApplyFiltersOp(image, indices, result_type, geometry, packing)
    per_position = [-1] * positions
    for block, index in zip(blocks, indices, strict=True):
        per_position[block.position] = index
    return spat.ApplyFiltersOp(image, per_position, result_type, geometry)


def retiled(state: SpatialState, value: Tiled) -> Tiled:
    """`value` in regular tiles (`SpatialState.tile`), moved by crossbars holding the identity matrix."""
    channels = value.bounds[-1][1]
    if value.bounds == channel_bounds(channels, state.tile(value.layout)):
        return value
    size = (value.layout.height, value.layout.width)
    identity = np.eye(channels, dtype=np.int64)
    out = lower_filters(
        state, "channel retiling", value, identity, (1, 1), FilterGeometry(), size, value.layout, value.element
    )
    out.logical, out.nonneg = value.logical, value.nonneg
    return out


def apply_elementwise(state: SpatialState, kind: str, operands: list[Lowered | SSAValue], op: Operation) -> Tiled:
    """The element-wise op `kind` on each tile, appended to the compute producing it."""
    if any(isinstance(o, Flattened) for o in operands):
        raise pass_error("cinm-to-spatial", FLATTENED_USE, op)
    operands = [state.tiled(o, op) if isinstance(o, SSAValue) else o for o in operands]  # function inputs
    tiled = [o for o in operands if isinstance(o, Tiled)]
    if not tiled:
        raise pass_error("cinm-to-spatial", "element-wise op on host values only", op)
    shape = tiled[0].logical
    for operand in operands:
        if isinstance(operand, Constant):
            if operand.shape != shape:
                raise pass_error(
                    "cinm-to-spatial",
                    f"constant operand of shape {list(operand.shape)} for a {list(shape)} tensor",
                    op,
                )
        elif not isinstance(operand, Tiled):
            raise pass_error("cinm-to-spatial", "unsupported operand", op)
    tiles = {tuple(o.bounds) for o in operands if isinstance(o, Tiled)}
    if len(tiles) > 1:  # e.g. a concatenation's tiles added to a convolution's
        operands = [retiled(state, o) if isinstance(o, Tiled) else o for o in operands]
    first = next(o for o in operands if isinstance(o, Tiled))
    assert isinstance(first, Tiled)
    for other in operands:
        if isinstance(other, Tiled) and other.layout != first.layout:
            raise pass_error("cinm-to-spatial", "operands are tiled differently", op)
    lhs, rhs = operands
    if kind in _COMMUTATIVE and isinstance(lhs, Constant):
        lhs, rhs = rhs, lhs
    out = Tiled(first.logical, first.layout, first.element, [], list(first.bounds))
    for t in range(len(first.bounds)):
        refs = [o.tiles[t] for o in (lhs, rhs) if isinstance(o, Tiled)]
        node = state.node_for(refs)
        a = tile_operand(state, node, lhs, t, first)
        b = tile_operand(state, node, rhs, t, first, broadcast=kind in _SPAT_BINARY)
        if kind == "max" and isinstance(rhs, Constant) and rhs.splat_value() == 0:
            value = node.add(spat.VReluOp(a))
        elif kind in _SPAT_BINARY:
            value = node.add(_SPAT_BINARY[kind](a, b))
        else:
            value = node.add(_ARITH_BINARY[kind](a, b))
        out.tiles.append(node.output(value))
    out.nonneg = stays_nonnegative(kind, lhs, rhs)
    return out


def tile_operand(
    state: SpatialState, node: Node, operand: object, t: int, like: Tiled, broadcast: bool = False
) -> SSAValue:
    """Tile `t` of `operand`; with `broadcast`, a constant equal at every pixel (a per-channel bias)
    becomes its `[C]` vector, broadcast over the pixels by the spat op (global memory then holds
    and the core loads one pixel of it, not the whole image)."""
    if isinstance(operand, Tiled):
        return node.use(operand.tiles[t])
    assert isinstance(operand, Constant)
    tile_type = like.tile_type(t)
    splat = operand.splat_value()
    if splat is not None:
        return node.add(splat_constant(splat, tile_type))
    lo, hi = like.bounds[t]
    array = like.layout.physical(operand.values())[..., lo:hi]
    pixels = array.reshape(-1, hi - lo)
    if broadcast and len(pixels) > 1 and bool((pixels == pixels[0]).all()):
        array = pixels[0]
    return node.use(state.host_constant(array, tile_type.element_type))


def stays_nonnegative(kind: str, lhs: object, rhs: object) -> bool:
    def nonneg(o: object) -> bool:
        if isinstance(o, Tiled):
            return o.nonneg
        assert isinstance(o, Constant)
        return bool(np.all(o.values() >= 0))

    if kind == "max":
        return nonneg(lhs) or nonneg(rhs)
    if kind in ("add", "mul", "min"):
        return nonneg(lhs) and nonneg(rhs)
    if kind == "shr":
        return nonneg(lhs)
    return False


# ----------------------------------------------------------------------------------------------
# The patterns: one per source op kind, each recording the lowered form of its op's result
# ----------------------------------------------------------------------------------------------


@dataclass
class SpatialPattern(RewritePattern):
    """A pattern lowering ops directly in the body of a function being lowered (`states`); ops
    nested in other ops (a `cinm.compute`'s body) and dead ops are left to the op holding them and
    to the final clean-up."""

    states: dict[Operation, SpatialState]

    def state_of(self, op: Operation) -> SpatialState | None:
        state = self.states.get(op.parent_op())  # pyright: ignore[reportArgumentType]
        if state is None or (op.results and all(not r.uses for r in op.results)):
            return None
        return state


@dataclass
class ConstantToSpatial(SpatialPattern):
    """A constant is known (a splat or an array) until an op needs it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter) -> None:
        if (state := self.state_of(op)) is None:
            return
        attr, t = op.value, op.result.type
        if isinstance(attr, DenseIntOrFPElementsAttr):
            assert isinstance(t, TensorType)
            array = dense_array(attr)
            flat = array.reshape(-1)
            if flat.size and np.all(flat == flat[0]):
                state.values[op.result] = Constant(t.get_shape(), t.element_type, splat=flat[0].item())
            else:
                state.values[op.result] = Constant(t.get_shape(), t.element_type, array=array)
        elif isinstance(attr, IntegerAttr):
            state.values[op.result] = Constant((), t, splat=attr.value.data)
        else:
            raise pass_error("cinm-to-spatial", f"unsupported constant {attr}", op)


@dataclass
class InitToSpatial(SpatialPattern):
    """`tensor.empty` is zeros; `linalg.fill` with a constant scalar a splat."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tensor.EmptyOp | FillOp, rewriter: PatternRewriter) -> None:
        if (state := self.state_of(op)) is None:
            return
        if isinstance(op, tensor.EmptyOp):
            t = op.tensor.type
            state.values[op.tensor] = Constant(t.get_shape(), t.element_type, splat=0)
            return
        fill = state.values.get(op.inputs[0])
        if not isinstance(fill, Constant) or fill.shape != ():
            raise pass_error("cinm-to-spatial", "only fills with a constant scalar are supported", op)
        t = op.res[0].type
        state.values[op.res[0]] = Constant(t.get_shape(), t.element_type, splat=fill.splat)


@dataclass
class PadToSpatial(SpatialPattern):
    """A padding of H and W waits (`Padded`) for the window op that reads it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tensor.PadOp, rewriter: PatternRewriter) -> None:
        if (state := self.state_of(op)) is None:
            return
        if op.low or op.high:
            raise pass_error("cinm-to-spatial", "only static padding is supported", op)
        low, high = op.static_low.get_values(), op.static_high.get_values()
        if len(low) != 4 or any(low[:2]) or any(high[:2]):
            raise pass_error("cinm-to-spatial", "only padding of the H and W axes of an NCHW image is supported", op)
        yielded = op.region.block.last_op.operands[0]
        value = state.known(yielded)
        if not isinstance(value, Constant) or value.shape != ():
            raise pass_error("cinm-to-spatial", "the padding value must be a constant", op)
        state.values[op.result] = Padded(op.source, (low[2], low[3], high[2], high[3]), value.splat)  # pyright: ignore


@dataclass
class ComputeToSpatial(SpatialPattern):
    """A convolution or gemm in a `cinm.compute` as crossbar matrices applied in `spat.compute`s."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cinm.ComputeOp, rewriter: PatternRewriter) -> None:
        if (state := self.state_of(op)) is None:
            return
        if len(op.results) != 1:
            raise pass_error("cinm-to-spatial", "a cinm.compute must have one result", op)
        state.layers += 1
        name = op.results[0].name_hint or f"layer{state.layers}"
        (result,) = op.body.block.last_op.operands  # cinm.yield
        bias = None
        if isinstance(result.owner, cinm.AddOp):
            result, bias = split_add(result.owner, op)
        gemm = find_gemm(op)
        if gemm.bias is not None:
            bias = gemm.bias
        matrix = state.known(gemm.right)
        if not isinstance(matrix, Constant) or gemm.right.owner.parent_op() is op:
            raise pass_error(
                "cinm-to-spatial", "the gemm's weight matrix must be a constant defined outside the compute", gemm
            )
        weights = matrix.values()
        element = result.type.element_type
        pixels = 1
        im2col = gemm.left.owner
        if isinstance(im2col, cinm.Im2colOp):
            if not is_conv_epilogue(result, gemm):
                raise pass_error(
                    "cinm-to-spatial",
                    "unsupported convolution body (expected im2col, gemm, expand_shape, transpose)",
                    op,
                )
            image, geometry = conv_input(state, im2col)
            height, width = image.layout.height, image.layout.width
            out_h, out_w = geometry.output_size(height, width)
            out_layout = Layout(out_h, out_w)
            logical = shape_of(op.results[0])
            if state.packing == "sdk":
                tiles = [c1 - c0 for c0, c1 in image.bounds]
                pixels = window_pixels(
                    geometry, tiles, weights.shape[1], out_w, state.size, state.array_group, state.latencies
                )
                if pixels > 1:
                    weights = shifted_kernels(weights, geometry, pixels)
                    geometry = window_geometry(geometry, pixels)
            kernel = geometry.kernel
        else:
            if result is not gemm.result:
                raise pass_error("cinm-to-spatial", "unsupported gemm body (expected cinm.op.gemm then cinm.yield)", op)
            logical = shape_of(gemm.result)
            if isinstance(flat := state.known(gemm.left), Flattened):
                image = flat.image
                height, width = image.layout.height, image.layout.width
                kernel = (height, width)
                geometry = FilterGeometry(kernel)
                out_layout = Layout(1, 1)
            else:
                image = state.tiled(gemm.left, gemm)
                if image.layout.rows is None and image.layout != Layout(1, 1):
                    raise pass_error(
                        "cinm-to-spatial", "a gemm needs a matrix input (a flattened 1x1 image at most)", gemm
                    )
                geometry, kernel = FilterGeometry(), (1, 1)
                height = width = 1
                out_layout = image.layout if image.layout.rows is not None else Layout(1, 1)
        out = lower_filters(
            state,
            name,
            image,
            weights,
            kernel,
            geometry,
            (height, width),
            out_layout,
            element,
            precision_of(gemm),
            pixels,
        )
        out.logical = logical
        if bias is not None:
            out = apply_elementwise(state, "add", [out, state.known(bias)], op)
        state.values[op.results[0]] = out


def find_gemm(op: cinm.ComputeOp) -> cinm.GemmOp:
    gemms = [o for o in op.body.block.ops if isinstance(o, cinm.GemmOp)]
    if len(gemms) != 1:
        raise pass_error("cinm-to-spatial", "a cinm.compute must hold exactly one cinm.op.gemm", op)
    return gemms[0]


def split_add(add: cinm.AddOp, op: cinm.ComputeOp) -> tuple[SSAValue, SSAValue]:
    for inner, outer in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        if isinstance(outer.owner, Operation) and outer.owner.parent_op() is op:
            continue
        return inner, outer
    raise pass_error("cinm-to-spatial", "the bias of a compute must be defined outside it", op)


def is_conv_epilogue(result: SSAValue, gemm: cinm.GemmOp) -> bool:
    transpose = result.owner
    if not isinstance(transpose, TransposeOp) or tuple(transpose.permutation.get_values()) != (0, 3, 1, 2):
        return False
    expand = transpose.inputs[0].owner
    return isinstance(expand, tensor.ExpandShapeOp) and expand.src is gemm.result


def conv_input(state: SpatialState, im2col: cinm.Im2colOp) -> tuple[Tiled, FilterGeometry]:
    known = state.known(im2col.input)
    pads = (0, 0, 0, 0)
    source = im2col.input
    if isinstance(known, Padded):
        if known.value != 0:
            raise pass_error("cinm-to-spatial", f"a convolution's padding must be zeros, got {known.value}", im2col)
        source, pads = known.source, known.pads
    image = state.tiled(source, im2col)
    if image.layout.rows is not None:
        raise pass_error("cinm-to-spatial", "a convolution needs an NCHW image", im2col)
    kernel, strides, dilations = (tuple(a.get_values()) for a in (im2col.kernel, im2col.strides, im2col.dilations))
    return image, FilterGeometry(kernel, strides, pads, dilations)  # pyright: ignore[reportArgumentType]


@dataclass
class ElementwiseToSpatial(SpatialPattern):
    """`arith.addi`/`subi`/`muli`/`maxsi`/`minsi`/`shrsi` on tiles (ReLU: `maxsi` with 0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: arith.AddiOp | arith.SubiOp | arith.MuliOp | arith.MaxSIOp | arith.MinSIOp | arith.ShRSIOp,
        rewriter: PatternRewriter,
    ) -> None:
        if (state := self.state_of(op)) is None:
            return
        operands = [state.known(v) for v in op.operands]
        state.values[op.result] = apply_elementwise(state, _ELEMENTWISE[type(op)], operands, op)


@dataclass
class MaxPoolToSpatial(SpatialPattern):
    """`linalg.pooling_nchw_max` as `spat.maxpool` on each tile (its padding folded in)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: PoolingNchwMaxOp, rewriter: PatternRewriter) -> None:
        if (state := self.state_of(op)) is None:
            return
        image_value, window = op.inputs
        known = state.known(image_value)
        pads, source = (0, 0, 0, 0), image_value
        if isinstance(known, Padded):
            element = image_value.type.element_type
            lowest = np.iinfo(numpy_dtype(element)).min if isinstance(element, IntegerType) else -np.inf
            if known.value != lowest:
                raise pass_error(
                    "cinm-to-spatial", f"max pooling must pad with the smallest value {lowest}, got {known.value}", op
                )
            source, pads = known.source, known.pads
        image = state.tiled(source, op)
        if image.layout.rows is not None:
            raise pass_error("cinm-to-spatial", "max pooling needs an NCHW image", op)
        kernel = shape_of(window)
        geometry = FilterGeometry(kernel, int_values(op.strides), pads, int_values(op.dilations))  # pyright: ignore
        init = state.known(op.outputs[0])
        if not isinstance(init, Constant) or init.splat_value() is None:
            raise pass_error("cinm-to-spatial", "the max pooling's init must be a constant splat", op)
        out_h, out_w = geometry.output_size(image.layout.height, image.layout.width)
        out = Tiled(shape_of(op.res[0]), Layout(out_h, out_w), image.element, [], list(image.bounds))
        floor = init.splat_value()
        lowest = np.iinfo(numpy_dtype(image.element)).min
        for t, ref in enumerate(image.tiles):
            node = state.node_for([ref])
            value = node.add(spat.MaxPoolOp(node.use(ref), geometry))
            if floor == 0:
                value = node.add(spat.VReluOp(value))
            elif floor != lowest:
                bound = Constant(out.logical, out.element, splat=floor)
                value = node.add(spat.VMaxOp(value, tile_operand(state, node, bound, t, out)))
            out.tiles.append(node.output(value))
        out.nonneg = image.nonneg or floor >= 0  # pyright: ignore[reportOperatorIssue]
        state.values[op.res[0]] = out


@dataclass
class ReduceSumToSpatial(SpatialPattern):
    """`tosa.reduce_sum` over axis 2 or 3 waits (`PartialSum`) for the division of an average."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tosa.ReduceSumOp, rewriter: PatternRewriter) -> None:
        if (state := self.state_of(op)) is None:
            return
        known = state.known(op.input)
        axis = op.axis.value.data
        if axis not in (2, 3):
            raise pass_error(
                "cinm-to-spatial", "tosa.reduce_sum is supported over the axes 2 and 3 (global average pooling)", op
            )
        if isinstance(known, PartialSum):
            state.values[op.output] = PartialSum(known.source, known.axes | {axis})
        else:
            state.values[op.output] = PartialSum(state.tiled(op.input, op), frozenset({axis}))


@dataclass
class AveragePoolToSpatial(SpatialPattern):
    """The division of a sum over H and W by H·W as `spat.global_avgpool` on each tile."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.DivSIOp | arith.FloorDivSIOp, rewriter: PatternRewriter) -> None:
        if (state := self.state_of(op)) is None:
            return
        total, divisor = state.known(op.lhs), state.known(op.rhs)
        if not isinstance(total, PartialSum) or total.axes != {2, 3}:
            raise pass_error(
                "cinm-to-spatial",
                "division is supported only as global average pooling (reduce_sum over axes 2, 3, then divide)",
                op,
            )
        image = total.source
        count = image.layout.height * image.layout.width
        if not isinstance(divisor, Constant) or divisor.splat_value() != count:
            raise pass_error("cinm-to-spatial", f"global average pooling must divide by H·W = {count}", op)
        if isinstance(op, arith.DivSIOp) and not image.nonneg:
            raise pass_error(
                "cinm-to-spatial",
                "arith.divsi truncates, spat.global_avgpool floors: use arith.floordivsi, or divide values known "
                "to be non-negative (after a ReLU)",
                op,
            )
        out = Tiled(shape_of(op.result), Layout(1, 1), image.element, [], list(image.bounds), image.nonneg)
        for ref in image.tiles:
            node = state.node_for([ref])
            out.tiles.append(node.output(node.add(spat.GlobalAvgPoolOp(node.use(ref)))))
        state.values[op.result] = out


@dataclass
class ClampToSpatial(SpatialPattern):
    """`tosa.clamp` on integers: a maximum with the lower bound, a minimum with the upper one."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tosa.ClampOp, rewriter: PatternRewriter) -> None:
        if (state := self.state_of(op)) is None:
            return
        value = state.known(op.input)
        element = op.input.type.element_type
        if not isinstance(element, IntegerType):
            raise pass_error("cinm-to-spatial", "only integer clamps can run on PIM cores", op)
        info = np.iinfo(numpy_dtype(element))
        shape = shape_of(op.input)
        low, high = op.min_val.value.data, op.max_val.value.data
        if low > info.min:
            value = apply_elementwise(state, "max", [value, Constant(shape, element, splat=low)], op)
        if high < info.max:
            value = apply_elementwise(state, "min", [value, Constant(shape, element, splat=high)], op)
        state.values[op.output] = value if isinstance(value, Tiled) else state.tiled(op.input, op)


@dataclass
class ReshapeToSpatial(SpatialPattern):
    """A reshape of a constant, or of an image to `[1, C]` (1×1) or `[1, C·H·W]` (`Flattened`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: tensor.CollapseShapeOp | tensor.ExpandShapeOp | tensor.ReshapeOp, rewriter: PatternRewriter
    ) -> None:
        if (state := self.state_of(op)) is None:
            return
        known = state.known(op.operands[0])
        shape = shape_of(op.result)
        if isinstance(known, Constant):
            array = None if known.array is None else known.array.reshape(shape)
            state.values[op.result] = Constant(shape, known.element, known.splat, array)
            return
        image = state.tiled(op.operands[0], op)
        if image.layout == Layout(1, 1) and (len(shape) == 2 or shape[2:] == (1, 1)) and shape[:2] == image.logical[:2]:
            state.values[op.result] = Tiled(shape, image.layout, image.element, image.tiles, image.bounds, image.nonneg)
        elif image.layout.rows is None and len(image.logical) == 4 and shape == (1, int(np.prod(image.logical[1:]))):
            state.values[op.result] = Flattened(image)
        else:
            raise pass_error(
                "cinm-to-spatial",
                "only flattening an NCHW image to [1, C·H·W] (for a gemm) or [1, C] back is supported",
                op,
            )


@dataclass
class ConcatToSpatial(SpatialPattern):
    """A channel concatenation only joins the tile lists (no data moves)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tensor.ConcatOp, rewriter: PatternRewriter) -> None:
        if (state := self.state_of(op)) is None:
            return
        parts = [state.tiled(v, op) for v in op.inputs]
        first = parts[0]
        if op.dim.value.data != 1 or any(p.layout != first.layout or p.element != first.element for p in parts):
            raise pass_error(
                "cinm-to-spatial", "only concatenating images (or matrices) along the channels (dim 1) is supported", op
            )
        out = Tiled(shape_of(op.result), first.layout, first.element, [], [], all(p.nonneg for p in parts))
        offset = 0
        for part in parts:
            out.tiles += part.tiles
            out.bounds += [(lo + offset, hi + offset) for lo, hi in part.bounds]
            offset += part.bounds[-1][1]
        state.values[op.result] = out


@dataclass
class FoldOnConstants(SpatialPattern):
    """Any other op with results on constants only is folded, computed now with the interpreter
    functions (as xDSL's `constant-fold-interp` does); an op no pattern lowers is an error."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if (state := self.state_of(op)) is None or isinstance(op, func.ReturnOp):
            return
        if op.results and op.results[0] in state.values:
            return  # lowered by its own pattern
        if not op.results or not all(isinstance(state.known(v), Constant) for v in op.operands):
            raise pass_error("cinm-to-spatial", "this op cannot run on PIM cores", op)
        if state.folder is None:
            module = state.function.parent_op()
            while module is not None and not isinstance(module, ModuleOp):
                module = module.parent_op()
            assert isinstance(module, ModuleOp)
            state.folder = build_interpreter(module, Device("ideal"))
        args = []
        for v in op.operands:
            c = state.known(v)
            assert isinstance(c, Constant)
            args.append(c.values() if c.shape else c.splat)
        try:
            results = state.folder.run_op(op, tuple(args))
        except Exception:
            raise pass_error(
                "cinm-to-spatial", "this op cannot run on PIM cores (nor be folded on its constant operands)", op
            ) from None
        for r, value in zip(op.results, results, strict=True):
            t = r.type
            if not isinstance(t, TensorType):
                state.values[r] = Constant((), t, splat=value)
            else:
                state.values[r] = Constant(t.get_shape(), t.element_type, array=np.asarray(value))


@dataclass
class ReturnToSpatial(SpatialPattern):
    """The function's results joined and converted back to their types; the computes built and
    the function's body replaced by the prologue, the computes and the epilogue."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter) -> None:
        if (state := self.state_of(op)) is None:
            return
        results = [function_result(state, i, v) for i, v in enumerate(op.arguments)]
        state.epilogue.append(func.ReturnOp(*results))
        computes = build_computes(state)
        block = state.function.body.block
        for old in reversed(list(block.ops)):
            rewriter.erase(old, safe_erase=False)
        rewriter.insert([*state.prologue, *computes, *state.epilogue], InsertPoint.at_end(block))
        for dead in dead_ops(block):  # e.g. crossbar matrices of a layer whose result is never used
            rewriter.erase(dead)


def function_result(state: SpatialState, index: int, value: SSAValue) -> SSAValue:
    """Result `index` of the function: its tiles joined, back in its logical layout."""
    known = state.known(value)
    if not isinstance(known, Tiled):
        raise pass_error(
            "cinm-to-spatial", f"result {index} of @{state.function.sym_name.data} is not computed by spatial ops"
        )
    tiles = [pending_result(state, ref) if isinstance(ref, NodeRef) else ref for ref in known.tiles]
    layout, element = known.layout, known.element
    channels = known.bounds[-1][1]
    axis = 1 if layout.rows is not None else 2
    if len(tiles) > 1:
        concat = spat.ConcatOp(tiles, axis)
        state.epilogue.append(concat)
        whole = concat.result
    else:
        whole = tiles[0]
    logical = known.logical
    if layout.rows is not None:
        return whole
    if len(logical) == 2:
        flat = tensor.CollapseShapeOp.create(
            operands=[whole],
            result_types=[TensorType(element, logical)],
            properties={"reassociation": reassociation([[0, 1], [2]])},
        )
        state.epilogue.append(flat)
        return flat.results[0]
    nhwc_type = TensorType(element, (1, layout.height, layout.width, channels))
    nhwc = tensor.ExpandShapeOp(whole, [], reassociation([[0, 1], [2], [3]]), nhwc_type.get_shape(), nhwc_type)
    init = tensor.EmptyOp([], TensorType(element, logical))
    nchw = TransposeOp(nhwc.result, init.tensor, DenseArrayBase.from_list(i64, (0, 3, 1, 2)))
    state.epilogue += [nhwc, init, nchw]
    return nchw.results[0]


def pending_result(state: SpatialState, ref: NodeRef) -> SSAValue:
    """A placeholder value standing for `ref` until the compute exists."""
    placeholder = state.placeholders.get(ref)
    if placeholder is None:
        holder = tensor.EmptyOp([], ref.node.results[ref.index].type)
        placeholder = state.placeholders[ref] = holder.tensor
    return placeholder


def build_computes(state: SpatialState) -> list[spat.ComputeOp]:
    """The `spat.compute` of each node with a result in use, placeholders replaced by its results."""
    used = {(ref.node, ref.index) for ref in state.placeholders}
    for node in state.nodes:
        used |= {(ref.node, ref.index) for ref in node.inputs if isinstance(ref, NodeRef)}
    computes: dict[Node, spat.ComputeOp] = {}
    remap: dict[Node, dict[int, int]] = {}
    for node in state.nodes:
        kept = [i for i in range(len(node.results)) if (node, i) in used]
        if not kept:
            continue
        remap[node] = {old: new for new, old in enumerate(kept)}
        results = [node.results[i] for i in kept]
        node.block.add_op(spat.YieldOp(*results))
        for dead in dead_ops(node.block):
            dead.detach()
            dead.erase()
        inputs = []
        for ref in node.inputs:
            if isinstance(ref, NodeRef):
                assert ref.node in computes, "a compute uses a later compute"
                inputs.append(computes[ref.node].outputs[remap[ref.node][ref.index]])
            else:
                inputs.append(ref)
        compute = spat.ComputeOp(node.weights, inputs, [r.type for r in results], Region(node.block))
        computes[node] = compute
    for ref, placeholder in state.placeholders.items():
        placeholder.replace_all_uses_with(computes[ref.node].outputs[remap[ref.node][ref.index]])
    return list(computes.values())


def dead_ops(block: Block) -> Iterator[Operation]:
    """The ops of `block` whose results are unused, users first, each yielded when it is dead: the
    caller erases it before the next one is found."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.ops)):
            if op.results and all(not r.uses for r in op.results):
                yield op
                changed = True


# ----------------------------------------------------------------------------------------------
# The pass
# ----------------------------------------------------------------------------------------------


def crossbar_geometry(device: str, xbar_size: int | None, crossbars_per_compute: int | None) -> tuple[int, int]:
    """(tile size, crossbars per compute) from the options, defaulting to the device's crossbar
    rows (one weight per cell, as `compile_pim` takes them) and crossbars per core."""
    config = pass_device("cinm-to-spatial", device)
    size = xbar_size if xbar_size is not None else config.rows
    per = crossbars_per_compute if crossbars_per_compute is not None else config.crossbars_per_core
    if size < 1 or per < 1:
        raise pass_error("cinm-to-spatial", "xbar-size and crossbars-per-compute must be positive")
    return size, per


@dataclass(frozen=True)
class CinmToSpatialPass(ChipOption, ChoicePass):
    """Lower convolutions and gemms in `cinm.compute` to channel-wise `spat.compute`s of
    `xbar-size` × `xbar-size` crossbar matrices (at most `crossbars-per-compute` each), and the host
    ops between them to spatial vector ops. Defaults come from the `device` preset or TOML file.
    `packing`: `kernel` (a matrix per kernel position), `im2col` (kernel positions × channels
    unrolled into the crossbar rows) or `sdk` (im2col over windows of adjacent output pixels, where
    that takes less time on `chip`: `crossbar_weights.window_pixels`). `whole-tiles`: a compute
    holds whole output-channel tiles where they fit (`compute_groups`), so that no compute waits for
    another's partial sums. `array-group`: an image's output-channel tiles up to that
    many crossbars wide, each row slice of a tile one array group whose crossbars one `mvmul` reads
    side by side (pimsim-nn's array groups; PIMCOMP's AGs span a layer's output channels)."""

    name = "cinm-to-spatial"

    xbar_size: int | None = None
    crossbars_per_compute: int | None = None
    device: str = DEFAULT_DEVICE
    packing: Packing = "kernel"
    whole_tiles: bool = False
    array_group: int = 1
    chip: str = "pimcomp"
    chip_config: ChipConfig | None = field(default=None, init=False, compare=False)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        size, per = crossbar_geometry(self.device, self.xbar_size, self.crossbars_per_compute)
        if not 1 <= self.array_group <= per:
            raise pass_error(
                self.name, f"array-group must be from 1 to crossbars-per-compute ({per}), got {self.array_group}"
            )
        if self.array_group > 1 and self.packing == "kernel":
            raise pass_error(
                self.name,
                "array-group > 1 needs packing im2col or sdk (kernel packing reads a tile's channels as crossbar rows)",
            )
        latencies = Latencies(self.chip_object())
        states = {
            f: SpatialState(f, size, per, self.packing, self.whole_tiles, self.array_group, latencies)
            for f in functions_holding(op, cinm.ComputeOp)
        }
        patterns = [
            ConstantToSpatial(states),
            InitToSpatial(states),
            PadToSpatial(states),
            ComputeToSpatial(states),
            ElementwiseToSpatial(states),
            AveragePoolToSpatial(states),
            MaxPoolToSpatial(states),
            ReduceSumToSpatial(states),
            ClampToSpatial(states),
            ReshapeToSpatial(states),
            ConcatToSpatial(states),
            ReturnToSpatial(states),
            FoldOnConstants(states),
        ]
        applier = GreedyRewritePatternApplier(patterns, dce_enabled=False)
        with cyclic_collector_paused():
            PatternRewriteWalker(applier, apply_recursively=False).rewrite_module(op)
