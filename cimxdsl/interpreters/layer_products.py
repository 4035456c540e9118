"""Layer-level products: the crossbar tiles of one matrix product run as one product.

The tiling splits a product X·W into tiles that partition W: tile t multiplies the columns
[k0, k1) of X by its block W[k0:k1, n0:n1], the partial products of a column block are added, and
the blocks are inserted side by side into the result. The prepared function recognises this shape
(one source X, constant tile weights, `alloc_tensor` outputs, a sum per block, `insert_slice`s that
cover the result) and replaces it with one product at the op that finished the result: on an exact
device X·W in one BLAS call, on a bit-sliced one the tiles the tile products found on their
crossbars in one stacked sliced product (`sliced_product`: each tile through the DACs and ADCs as
on its own). A grouped layer (a product per group on consecutive column slices of one X, joined by
a concat) runs as one batched product of its groups on an exact device, a group at a time on a
bit-sliced one. The crossbar ops stay in their order: each tile product is counted on its crossbar
(`Device.defer_mvm`) without computing it, and each run of writes, counted products and barriers
is one step that books them at once (`Device.book`) or, where the device cannot, one at a time, so
metrics and timeline are those of the tiles. Read noise, drawn per tile MVM, keeps the
tile-by-tile path."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

import numpy as np
from xdsl.dialects import arith, bufferization, func, tensor
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import Operation

from cimxdsl.device.backend import NUMPY, on_backend, to_host
from cimxdsl.device.config import DeviceConfig
from cimxdsl.device.crossbar import Tile, TileStack, exact_matmul, inputs_fit, sliced_product, stack_tiles
from cimxdsl.device.device import BARRIER, MVM, WRITE, Bookings
from cimxdsl.dialects import memristor
from cimxdsl.dialects.memristor import call_precision
from cimxdsl.dialects.utils import precision_of
from cimxdsl.interpreters.host_steps import RESHAPES, pad_parameters, static_tensor
from cimxdsl.interpreters.memristor import runtime_op
from cimxdsl.interpreters.patches import Patches, channelwise_product, column_order, im2col_geometry, integer_bound
from cimxdsl.interpreters.runtime import CrossbarRuntime
from cimxdsl.interpreters.values import VIEWS, as_type, read_only

_SUMS = (arith.AddfOp, arith.AddiOp)


@dataclass(frozen=True)
class TileProduct:
    """A tile product of a layer: its step, X's slot and columns, its weights, its output's slot."""

    step: int
    source: int
    columns: tuple[int, int]
    width: int
    """X's columns."""
    weights: np.ndarray
    output: int
    feeds: tuple[int, ...]
    """The host steps that make its input and output (slice of X, views, `alloc_tensor`)."""


def device_call(step, name: type) -> bool:
    """Whether `step` runs memristor op `name` (as the op or as a call of its runtime function)."""
    return device_op(step.op) is name


def device_op(op: Operation) -> type | None:
    """The memristor op `op` runs (as the op or as a call of its runtime function), or None."""
    if isinstance(op, func.CallOp):
        return runtime_op(op.callee.string_value())
    return type(op) if isinstance(op, memristor.MemristorOp) else None


def is_a(op: Operation, kind) -> bool:
    """`isinstance(op, kind)`, found once per op type and `kind` (an op's `isinstance` runs `abc`'s
    check: this runs once per op of a large body in each of several passes)."""
    key = (type(op), kind)
    found = _IS_A.get(key)
    if found is None:
        found = _IS_A[key] = isinstance(op, kind)
    return found


_IS_A: dict[tuple[type, object], bool] = {}


def device_ops(ops: Sequence[Operation]) -> list[type | None]:
    """`device_op` of each of `ops`, read once per op type and per callee (calls share their callee
    attribute; keyed by `id` while `ops` hold them, as hashing attributes runs Python code)."""
    kinds: dict[int, type | None] = {}  # by the `id` of a call's callee, or of another op's type
    found = []
    for op in ops:
        key = id(op.callee) if is_a(op, func.CallOp) else id(type(op))
        if key not in kinds:
            kinds[key] = device_op(op)
        found.append(kinds[key])
    return found


class Graph:
    """Producers and users of the slots of a prepared body."""

    def __init__(self, steps: Sequence, constants: dict[int, object]):
        self.steps, self.constants = steps, constants
        self.device = device_ops([step.op for step in steps])
        """The memristor op each step runs, or None (`device_op`)."""
        self._columns: dict[int, tuple[int, int, int, int] | None] = {}
        self.producer = {slot: i for i, step in enumerate(steps) for slot in step.results}
        self.users: dict[int, set[int]] = {}
        for i, step in enumerate(steps):
            for slot in (*step.operands, *(s for _, s in step.captured)):
                self.users.setdefault(slot, set()).add(i)

    def made_by(self, slot: int, kind) -> Operation | None:
        i = self.producer.get(slot)
        return self.steps[i].op if i is not None and is_a(self.steps[i].op, kind) else None

    def root(self, slot: int) -> tuple[int, list[int]]:
        """The slot whose array `slot` views (through `VIEWS`), and the steps of those views."""
        chain = []
        while self.made_by(slot, VIEWS):
            chain.append(self.producer[slot])
            slot = self.steps[self.producer[slot]].operands[0]
        return slot, chain

    def columns(self, slot: int) -> tuple[int, int, int, int] | None:
        """(X's slot, k0, k1, X's width) of a value that is the columns [k0, k1) of a 2-D X (all its
        rows), or a whole 2-D X itself; read once per slot (the tiles of a K-block share their input)."""
        if slot not in self._columns:
            self._columns[slot] = self._read_columns(slot)
        return self._columns[slot]

    def _read_columns(self, slot: int) -> tuple[int, int, int, int] | None:
        op = self.made_by(slot, tensor.ExtractSliceOp)
        if op is None:
            i = self.producer.get(slot)
            shape = (
                static_tensor(self.steps[i].op.results[0].type)
                if i is not None and len(self.steps[i].op.results) == 1
                else None
            )
            return None if shape is None or len(shape) != 2 else (slot, 0, shape[1], shape[1])
        offsets, sizes, strides = (a.get_values() for a in (op.static_offsets, op.static_sizes, op.static_strides))
        shape = op.source.type.get_shape()
        if len(shape) != 2 or DYNAMIC_INDEX in (*offsets, *sizes, *strides) or set(strides) != {1}:
            return None
        if offsets[0] != 0 or sizes[0] != shape[0]:
            return None
        return self.steps[self.producer[slot]].operands[0], offsets[1], offsets[1] + sizes[1], shape[1]

    def only_used_by(self, slot: int, steps: set[int]) -> bool:
        return self.users.get(slot, set()) <= steps


def tile_products(graph: Graph) -> dict[int, TileProduct]:
    """The tile products whose inputs are columns of one X and whose weights are constants, by
    output slot."""
    written: dict[object, np.ndarray] = {}
    tiles: dict[int, TileProduct] = {}
    constants = graph.constants
    for i, step in enumerate(graph.steps):
        kind = graph.device[i]
        if kind is memristor.WriteToCrossbarOp:
            weights, _ = graph.root(step.operands[1])
            if step.operands[0] in constants and weights in constants:
                written[constants[step.operands[0]]] = constants[weights]
        elif kind is memristor.GemmOp and step.operands[0] in constants:
            inputs, in_chain = graph.root(step.operands[1])
            output, out_chain = graph.root(step.operands[2])
            columns = graph.columns(inputs)
            weights = written.get(constants[step.operands[0]])
            if columns is None or weights is None or not graph.made_by(output, bufferization.AllocTensorOp):
                continue
            source, k0, k1, width = columns
            if weights.shape[0] != k1 - k0:
                continue
            feeds = (*in_chain, *out_chain, graph.producer[output])
            if inputs != source:  # (the slice of X)
                feeds += (graph.producer[inputs],)
            tiles[output] = TileProduct(i, source, (k0, k1), width, weights, output, feeds)
    return tiles


@dataclass
class Block:
    """The sum of the tile products of one column block: its slot, tiles and the steps adding them."""

    slot: int
    tiles: list[TileProduct]
    sums: list[int]


def blocks(graph: Graph, tiles: dict[int, TileProduct]) -> list[Block]:
    """Sums of tile products over all of X's columns (in step order of their last sum)."""
    partial = {slot: Block(slot, [tile], []) for slot, tile in tiles.items()}
    for i, step in enumerate(graph.steps):
        if is_a(step.op, _SUMS) and all(s in partial for s in step.operands):
            a, b = (partial[s] for s in step.operands)
            if a is b:
                continue
            partial[step.results[0]] = Block(step.results[0], a.tiles + b.tiles, [*a.sums, *b.sums, i])
    used = {s for block in partial.values() for i in block.sums for s in graph.steps[i].operands}
    found = []
    for slot, block in partial.items():
        if slot in used or len({t.source for t in block.tiles}) != 1:
            continue
        spans = sorted(t.columns for t in block.tiles)
        if len({t.weights.shape[1] for t in block.tiles}) == 1 and partition(spans, spans[0][0], spans[-1][1]):
            block.tiles.sort(key=lambda t: t.columns)
            found.append(block)
    return found


def partition(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether the sorted `spans` cover [start, end) edge to edge."""
    return spans[0][0] == start and spans[-1][1] == end and all(a[1] == b[0] for a, b in pairwise(spans))


def span(block: Block) -> tuple[int, int]:
    """The columns [k0, k1) of X a block's tiles read."""
    return block.tiles[0].columns[0], block.tiles[-1].columns[1]


@dataclass
class Layer:
    """A recognised product: X·W, or the G products X[:, a0 + g·d : a0 + (g+1)·d]·W[g] of a
    grouped layer side by side; the step that finishes its result and the steps it replaces."""

    source: int
    weights: np.ndarray
    """(G, d, f): each group's weights."""
    start: int
    """a0: the first column of X the products read."""
    result: int
    at: int
    removed: set[int]
    counted: list[TileProduct]
    grids: list[list[list[int]]]
    """Per group, the steps of its tile products by K-block and column block (a bit-sliced device
    stacks their tiles: `sliced_product`)."""
    order: np.ndarray | None = None
    """With X's columns read in (ky, kx, c) order (`patches`): X' = X[:, order]."""
    before: int | None = None
    """For a product of one tile, whose result is the output buffer it writes (made before the
    tile product, at `at`): the step before which the product runs (the first that reads it)."""


@dataclass
class Part:
    """The blocks of one product X[:, k0:k1]·W side by side in column order, and the slot of the
    result, finished by the steps `chain` (an empty tensor and the inserts; none for one block)."""

    blocks: list[Block]
    slot: int
    chain: list[int]

    @property
    def span(self) -> tuple[int, int]:
        return span(self.blocks[0])

    @property
    def weights(self) -> np.ndarray:
        return joined([list(row) for row in zip(*([t.weights for t in b.tiles] for b in self.blocks))])


def layers(graph: Graph) -> list[Layer]:
    """Every product the tiles of which can run as one (module docstring)."""
    tiles = tile_products(graph)
    found = blocks(graph, tiles)
    by_slot = {block.slot: block for block in found}
    parts = {block.slot: Part([block], block.slot, []) for block in found}
    for i, step in enumerate(graph.steps):
        if is_a(step.op, tensor.EmptyOp) and len(step.op.results[0].type.get_shape()) == 2:
            inserted, slot, inserts = insert_chain(graph, step.results[0], by_slot)
            width = step.op.results[0].type.get_shape()[1]
            if len(inserted) < 1 or len({(b.tiles[0].source, span(b)) for _, b in inserted}) != 1:
                continue
            if not partition(sorted((n0, n0 + b.tiles[0].weights.shape[1]) for n0, b in inserted), 0, width):
                continue
            inserted.sort(key=lambda part: part[0])
            for _, b in inserted:
                parts.pop(b.slot, None)
            parts[slot] = Part([b for _, b in inserted], slot, [i, *inserts])
    result = []
    for i, step in enumerate(graph.steps):
        if not is_a(step.op, tensor.ConcatOp) or step.op.dim.value.data != 1:
            continue
        groups = [parts.get(slot) for slot in step.operands]
        if len(groups) < 2 or None in groups or len(step.op.result.type.get_shape()) != 2:
            continue
        shapes = {(p.span[1] - p.span[0], sum(b.tiles[0].weights.shape[1] for b in p.blocks)) for p in groups}
        sources = {p.blocks[0].tiles[0].source for p in groups}
        if len(shapes) != 1 or len(sources) != 1 or not partition([p.span for p in groups], *bounds(groups)):
            continue
        for p in groups:
            del parts[p.slot]
        chain = [j for p in groups for j in p.chain]
        result.append(layer(graph, groups, step.results[0], chain))
    for p in parts.values():
        result.append(layer(graph, [p], p.slot, p.chain))
    return [each for each in result if each is not None]


def bounds(parts: list[Part]) -> tuple[int, int]:
    return parts[0].span[0], parts[-1].span[1]


def insert_chain(graph: Graph, slot: int, by_slot: dict[int, Block]) -> tuple[list, int, list[int]]:
    """The blocks inserted one after the other into the empty tensor `slot` as whole column
    ranges ((n0, block) each), the last insert's slot and the inserts' steps."""
    parts, inserts = [], []
    while len(graph.users.get(slot, ())) == 1:
        (i,) = graph.users[slot]
        op = graph.steps[i].op
        if not isinstance(op, tensor.InsertSliceOp) or graph.steps[i].operands[1] != slot:
            break
        block = by_slot.get(graph.steps[i].operands[0])
        offsets, sizes, strides = (a.get_values() for a in (op.static_offsets, op.static_sizes, op.static_strides))
        rows = op.dest.type.get_shape()[0]
        if block is None or DYNAMIC_INDEX in (*offsets, *sizes) or set(strides) != {1}:
            break
        if offsets[0] != 0 or sizes[0] != rows or sizes[1] != block.tiles[0].weights.shape[1]:
            break
        parts.append((offsets[1], block))
        inserts.append(i)
        slot = graph.steps[i].results[0]
    return parts, slot, inserts


def layer(graph: Graph, parts: list[Part], result: int, chain: list[int]) -> Layer | None:
    """The `Layer` of `parts` (one per group) finished at `result`, if the steps it removes feed
    nothing else."""
    blocks_ = [b for p in parts for b in p.blocks]
    tiles = [t for b in blocks_ for t in b.tiles]
    at = graph.producer[result]
    removed = {*chain, *(i for b in blocks_ for i in b.sums), *(i for t in tiles for i in t.feeds)} - {at}
    counted = {t.step for t in tiles}
    allowed = removed | counted | {at}
    for i in removed:
        if not all(graph.only_used_by(s, allowed) for s in graph.steps[i].results):
            return None
    grids = []
    for p in parts:
        if len({tuple(t.columns for t in b.tiles) for b in p.blocks}) != 1:
            return None  # (the tiling splits every column block alike)
        grids.append([list(steps) for steps in zip(*([t.step for t in b.tiles] for b in p.blocks))])
    weights = parts[0].weights[None] if len(parts) == 1 else np.stack([p.weights for p in parts])
    found = Layer(tiles[0].source, read_only(weights), parts[0].span[0], result, at, removed, tiles, grids)
    if len(tiles) == 1 and not chain:  # (its buffer, made before the tile product)
        readers = graph.users.get(result, set()) - allowed
        if not readers or min(readers) < tiles[0].step:
            return None
        found.before = min(readers)
        found.removed.add(at)
    return found


def joined(grid: list[list[np.ndarray]]) -> np.ndarray:
    """The matrix of the tiles `grid[a][b]` (K-block a, column block b): a view of the array they
    are views of where they tile a region of it (a layer's tiles of one constant matrix), else a copy."""
    first = grid[0][0]
    heights, widths = [row[0].shape[0] for row in grid], [t.shape[1] for t in grid[0]]
    start, strides, owner = address(first), first.strides, root(first)
    top = 0
    for row, height in zip(grid, heights, strict=True):
        left = 0
        for tile, width in zip(row, widths, strict=True):
            at = start + top * strides[0] + left * strides[1]
            if (tile.shape, tile.strides, address(tile)) != ((height, width), strides, at) or root(tile) is not owner:
                return np.hstack([np.vstack(column) for column in zip(*grid)])
            left += width
        top += height
    shape = (sum(heights), sum(widths))
    return np.lib.stride_tricks.as_strided(first, shape, strides, writeable=False)


def address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def root(array: np.ndarray):
    """The object that owns the memory of `array` (at the end of its chain of bases)."""
    while isinstance(array, np.ndarray) and array.base is not None:
        array = array.base
    return array


def patch_steps(graph: Graph, found: list[Layer], exact: bool) -> dict[int, tuple[Patches, list[int], int]]:
    """The im2col copies whose one user is a collapse to the patch matrix X, by step: the step
    that computes X instead (`patches.Patches`), the steps it runs with the copy's (the collapse,
    the copy's empty tensor if it feeds nothing else, and the pad of the image before the copy if
    it feeds nothing else: `pad_of`) and the slot of the image it reads. On an `exact` device, a
    layer whose one source is X, read by nothing else, over all its columns as one product or one
    group per channel, reads X in (ky, kx, c) order (its `order` set)."""
    by_source: dict[int, list[Layer]] = {}
    for each in found:
        by_source.setdefault(each.source, []).append(each)
    patched = {}
    for i, step in enumerate(graph.steps):
        geometry = im2col_geometry(step.op)
        users = graph.users.get(step.results[0], set()) if geometry is not None else set()
        if len(users) != 1 or not isinstance(graph.steps[min(users)].op, tensor.CollapseShapeOp):
            continue
        collapse = min(users)
        x = graph.steps[collapse].results[0]
        channels = step.op.results[0].type.get_shape()[3]
        width = channels * geometry.positions
        readers = by_source.get(x, [])
        reordered = windows = False
        if exact and geometry.positions > 1 and len(readers) == 1:
            each = readers[0]
            count, depth, _ = each.weights.shape
            whole = each.start == 0 and count * depth == width and (count == 1 or depth == geometry.positions)
            if whole and graph.only_used_by(x, each.removed | {each.at} | {t.step for t in each.counted}):
                each.order = column_order(channels, geometry.positions)
                reordered, windows = True, count > 1  # (a depthwise layer reads the image's views)
        joined = [collapse]
        if graph.made_by(step.operands[1], tensor.EmptyOp) and graph.only_used_by(step.operands[1], {i}):
            joined.append(graph.producer[step.operands[1]])
        image, padding = step.operands[0], None
        found = pad_of(graph, image, i)
        if found is not None:
            padding, pad_steps = found
            joined += pad_steps
            image = graph.steps[pad_steps[0]].operands[0]
        patched[i] = (Patches(geometry, reordered, windows, padding), joined, image)
    return patched


def pad_of(graph: Graph, image: int, step: int) -> tuple[tuple, list[int]] | None:
    """((top, bottom), (left, right), value) of the pad that makes the NCHW `image` if it pads
    only H and W with a constant and only `step` reads its result (aside from reshapes into values
    nothing reads), with the steps the patches step then runs too (the pad's, then those reshapes');
    else None."""
    op = graph.made_by(image, tensor.PadOp)
    if op is None:
        return None
    dead = [
        j
        for j in graph.users.get(image, ())
        if is_a(graph.steps[j].op, RESHAPES) and not any(graph.users.get(r) for r in graph.steps[j].results)
    ]
    if not graph.only_used_by(image, {step, *dead}):
        return None
    captured = dict(graph.steps[graph.producer[image]].captured)
    found = pad_parameters(op, lambda v: graph.constants.get(captured.get(v, -1)))
    if found is None or len(found[0]) != 4:
        return None
    widths, value = found
    if any(w for pair in widths[:2] for w in pair) or min(w for pair in widths for w in pair) < 0:
        return None
    return (widths[2], widths[3], value), [graph.producer[image], *dead]


def fuse_layer_products(steps: list, constants: dict[int, object], runtime: CrossbarRuntime) -> list | None:
    """`steps` with every recognised product run as one (module docstring), or None if there is
    none. `constants`: the values of the constant slots; `runtime`: the device state the crossbar
    ops run on."""
    graph = Graph(steps, constants)
    found = layers(graph)
    if not found:
        return None
    patched = patch_steps(graph, found, runtime.device.config.exact)
    removed = {i for each in found for i in each.removed}
    merged = {j: i for i, (_, joined_steps, _) in patched.items() for j in joined_steps}
    tiles_of = {id(each): [Tiles(grid) for grid in each.grids] for each in found}
    replaced = {each.at: each for each in found if each.before is None}
    ahead: dict[int, list[Layer]] = {}  # products of one tile, by the step they run before
    for each in found:
        if each.before is not None:
            ahead.setdefault(each.before, []).append(each)
    by_step = {t.step: (t, each) for each in found for t in each.counted}
    counted = {
        i: (*by_step[i], tiles) for groups in tiles_of.values() for tiles in groups for row in tiles.grid for i in row
    }
    inverses = {id(each): None if each.order is None else np.argsort(each.order) for each in found}
    fused, deferred = [], []
    for i, step in enumerate(steps):
        for each in ahead.get(i, ()):  # (a product of one tile, before its first reader)
            at = steps[each.at]
            implementation = whole_product(each, at.op.results[0].type, tiles_of[id(each)])
            fused.append(replace(at, operands=(each.source,), released=tuple(deferred), implementation=implementation))
            deferred = []
        if i in removed:
            deferred.extend(step.released)  # (its values die no later than the product)
            continue
        if i in merged:  # (run by the patches' step)
            continue
        if i in patched:
            patches, joined_steps, image = patched[i]
            collapse = steps[joined_steps[0]]
            released = dict.fromkeys([*step.released, *(s for j in joined_steps for s in steps[j].released)])
            step = replace(
                step,
                operands=(image,),
                results=collapse.results,
                released=tuple(s for s in released if s not in collapse.results),
                implementation=patches,
            )
        elif i in counted:
            tile, each, tiles = counted[i]
            implementation = count_columns(*tile.columns, tiles, i, runtime, inverses[id(each)])
            step = replace(step, implementation=implementation, operands=(step.operands[0], tile.source))
        elif i in replaced:
            each, groups = replaced[i], tiles_of[id(replaced[i])]
            step = replace(
                step,
                implementation=whole_product(each, step.op.results[0].type, groups),
                operands=(each.source,),
                released=(*step.released, *deferred),
            )
            deferred = []
        fused.append(step)
    sources = {each.source for each in found}
    last = {}  # a source is released after the last step that reads it now
    for i, step in enumerate(fused):
        for slot in step.operands:
            if slot in sources:
                last[slot] = i
    fused = [
        replace(step, released=tuple(s for s in step.released if s not in sources))
        if not sources.isdisjoint(step.released)
        else step
        for step in fused
    ]
    for slot, i in last.items():
        fused[i] = replace(fused[i], released=(*fused[i].released, slot))
    return booked_in_bulk(fused, constants, {i: tiles for i, (_, _, tiles) in counted.items()}, graph, runtime)


def booked_in_bulk(fused: list, constants: dict[int, object], counting: dict, graph: Graph, runtime) -> list:
    """`fused` with each run of consecutive crossbar operations on constant tiles (writes of
    constant weights, the counted tile products, barriers) as one step that books them at once
    (`Device.book`), or runs them one by one where the device cannot. `counting`: the `Tiles` of
    each counted tile product, by its step in `graph`'s steps."""
    index = {id(step.op): i for i, step in enumerate(graph.steps)}
    result, run = [], []
    for step in fused:
        i = index[id(step.op)]
        kind = crossbar_operation(step, constants, graph.device[i], i in counting)
        if kind is not None:
            run.append((kind, step))
            continue
        result.extend(collapsed(run, constants, counting, index, runtime))
        run = []
        result.append(step)
    result.extend(collapsed(run, constants, counting, index, runtime))
    return result


def crossbar_operation(step, constants: dict[int, object], kind: type | None, counted: bool) -> int | None:
    """The `Bookings` kind of a step that runs memristor op `kind` (`device_op`) if it can be
    booked in bulk, or None."""
    if counted:
        return MVM
    if kind not in (memristor.WriteToCrossbarOp, memristor.BarrierOp):
        return None
    if not all(slot in constants for slot in step.operands):
        return None
    return WRITE if kind is memristor.WriteToCrossbarOp else BARRIER


def collapsed(run: list, constants: dict[int, object], counting: dict, index: dict, runtime) -> list:
    """The steps of `run` ((kind, step) each) as one step that books them (`booked_in_bulk`)."""
    if len(run) < 2:
        return [step for _, step in run]
    sources = list(dict.fromkeys(step.operands[1] for kind, step in run if kind == MVM))
    weights = [constants[step.operands[1]] if kind == WRITE else None for kind, step in run]
    precisions = [write_precision(step.op) if kind == WRITE else None for kind, step in run]
    ops = Bookings([k for k, _ in run], [int(constants[step.operands[0]]) for _, step in run], weights, precisions)
    mvms = np.array([j for j, (kind, _) in enumerate(run) if kind == MVM], np.int64)
    reads = np.array([sources.index(run[j][1].operands[1]) for j in mvms.tolist()], np.int64)
    fed = [(j, counting[index[id(step.op)]], index[id(step.op)]) for j, (kind, step) in enumerate(run) if kind == MVM]
    kept = {id(tiles): (j, tiles) for j, tiles, _ in fed}
    recorded = [j for j, w in enumerate(weights) if w is not None and (precisions[j] or w.dtype.kind == "f")]
    precision = (precisions[recorded[-1]] or ("float", "float")) if recorded else None  # (`ensure_written`)
    where = [tuple((s not in sources, constants.get(s, s)) for s in step.operands) for _, step in run]

    steps = [step for _, step in run]
    found = [(tiles, i, j) for j, tiles, i in fed]
    booked = BookedRun(ops, steps, sources, where, mvms, reads, list(kept.values()), found, precision, runtime)
    released = tuple(slot for step in steps for slot in step.released)
    return [replace(steps[0], operands=tuple(sources), results=(), released=released, implementation=booked)]


@dataclass
class BookedRun:
    """The implementation of a run of crossbar operations booked at once (`booked_in_bulk`): its
    `ops`, the `steps` they were, the slots of the inputs its MVMs read (its operands), and where
    each step's operands come from ((True, a constant) or (False, an operand's slot))."""

    ops: Bookings
    steps: list
    sources: list[int]
    where: list[tuple]
    mvms: np.ndarray
    reads: np.ndarray
    """Per MVM, the operand it reads."""
    tiles: list[tuple[int, Tiles]]
    """The `Tiles` the MVMs feed, each with one of its MVMs."""
    found: list[tuple[Tiles, int, int]]
    """Per MVM, the `Tiles` it feeds, its step there and its operation in `ops`."""
    precision: tuple | None
    """The precision the run's last write records for the layer, if any."""
    runtime: CrossbarRuntime
    on_backend = True
    """Its MVMs' inputs may be held on another array backend (`prepared.Step.on_backend`)."""

    def __post_init__(self):
        self.report = [j for j, _ in self.tiles]
        self.batches: tuple[tuple[int, ...] | None, np.ndarray] = (None, np.zeros(0, np.int64))
        """The rows of the operands last read (None: none yet), and the MVMs' batches they gave."""

    def __call__(self, interpreter, op, args) -> tuple:
        rows = tuple([a.shape[0] for a in args])
        if rows != self.batches[0]:
            batches = np.zeros(len(self.steps), np.int64)
            batches[self.mvms] = np.array(rows, np.int64)[self.reads]
            self.batches = (rows, batches)
        device = self.runtime.device
        configs = device.book(self.ops, self.batches[1], self.report, args)
        if configs is None:  # one by one
            for step, operands in zip(self.steps, self.where, strict=True):
                values = tuple(value if constant else args[self.sources.index(value)] for constant, value in operands)
                if step.implementation is None:
                    interpreter.run_op(step.op, values)
                else:
                    step.implementation(interpreter, step.op, values)
            return ()
        for (_, tiles), config in zip(self.tiles, configs, strict=True):
            tiles.config, tiles.backend = config, device.backend
        read = self.ops.booked.last_read
        if read is not None:  # (the tiles the sliced products read)
            for tiles, step, j in self.found:
                tiles.found[step] = (read[j], None)
        if self.precision is not None:
            self.runtime.note_precision(self.precision)
        return ()


def write_precision(op) -> tuple[int, int] | None:
    """The precision a write carries (the memristor op's, or its runtime function's name's)."""
    if isinstance(op, memristor.MemristorOp):
        return precision_of(op)
    return call_precision(op.callee.string_value())


class Tiles:
    """The tiles a run's tile products of one layer found on their crossbars, with their static
    ADC spans, and their `TileStack` (kept while the same tiles come back)."""

    def __init__(self, grid: list[list[int]]):
        self.grid = grid
        self.config: DeviceConfig | None = None
        """The device as the layer's tiles were written for (their precision)."""
        self.found: dict[int, tuple[Tile, np.ndarray | None]] = {}
        self.kept: dict[object, tuple[list, TileStack]] = {}
        """Per array backend: the tiles and spans last stacked, and their stack (on its device)."""
        self.backend = NUMPY
        """The array backend of the device the tiles were found on (`cimxdsl.device.backend`)."""
        self._fits: tuple | None = None

    def fitting(self, x: np.ndarray, config: DeviceConfig) -> bool:
        """Whether the operand `x` of the tile products fits `config`'s inputs as a whole
        (`inputs_fit`), found once per operand."""
        seen = self._fits
        if seen is None or seen[0]() is not x or seen[1] is not config:
            fits = config.input_encoding != "sign_magnitude" and inputs_fit(x, config)  # (whose costs need the slices)
            seen = self._fits = (weakref.ref(x), config, fits)
        return seen[2]

    def stack(self, config: DeviceConfig) -> TileStack:
        found = [self.found[i] for row in self.grid for i in row]
        self.found = {}
        kept = self.kept.get(self.backend)
        if kept is None or any(a is not b for a, b in zip(kept[0], (x for pair in found for x in pair))):
            width = len(self.grid[0])
            rows = [found[a : a + width] for a in range(0, len(found), width)]
            spans = [[s for _, s in row] for row in rows] if config.static_adc else None
            stack = stack_tiles([[t for t, _ in row] for row in rows], spans, config, self.backend)
            kept = self.kept[self.backend] = ([x for pair in found for x in pair], stack)
        return kept[1]


def count_columns(
    k0: int, k1: int, tiles: Tiles, step: int, runtime: CrossbarRuntime, inverse: np.ndarray | None = None
):
    """The implementation of a tile product that only counts it (its input is X[:, k0:k1]) and
    records the tile it found on its crossbar. `inverse`: X's columns in the operand it is given,
    where that holds them in another order (`patches`)."""
    columns = slice(k0, k1) if inverse is None else inverse[k0:k1]

    def run(interpreter, op, args) -> tuple:
        crossbar = runtime.physical(args[0])
        config = tiles.config = runtime.device.config_of(crossbar)
        tiles.backend = runtime.device.backend
        x = args[1]
        if on_backend(x) is None:
            x = np.asarray(x)  # (`Windows` gathered: run one by one, a depthwise layer's tiles read X')
        if tiles.fitting(x, config):  # (no copy of the columns for a check of each tile)
            tiles.found[step] = runtime.device.defer_mvm(crossbar, x, checked=True)
        else:
            x = to_host(x)
            tiles.found[step] = runtime.device.defer_mvm(crossbar, x[:, columns])
        return ()

    run.on_backend = True
    return run


def whole_product(each: Layer, result_type, groups: list[Tiles]):
    """The implementation of a layer's product as one product, of the result's type: exact (a
    grouped layer's groups as one batched product), or sliced on the tiles the tile products found
    (a group at a time)."""
    weights, start, order = each.weights, each.start, each.order
    count, depth, _ = weights.shape
    if order is not None:  # X read in (ky, kx, c) order (`patches`): the weight rows in that order
        inverse = np.argsort(order)
        reordered = read_only(np.ascontiguousarray(weights[0][order])) if count == 1 else weights

    def run(interpreter, op, args) -> tuple:
        x = args[0]
        config = groups[0].config
        if not config.exact and not groups[0].backend.is_numpy:  # (its values stay there)
            return (as_type(sliced_on_backend(x, each, groups), result_type),)
        x = to_host(x)
        if order is not None:
            if config.exact and count == 1:
                return (as_type(exact_matmul(x, reordered, backend=groups[0].backend), result_type),)
            if config.exact:
                return (as_type(channelwise_product(x, reordered), result_type),)
            x = np.asarray(x)[:, inverse]  # (X in (c, ky, kx) order, as the tiles hold their rows)
        if config.exact:
            backend = groups[0].backend
            if count == 1:
                return (as_type(exact_matmul(x[:, start : start + depth], weights[0], backend=backend), result_type),)
            if backend.is_numpy:
                return (as_type(grouped_matmul(x[:, start : start + count * depth], weights), result_type),)
            columns = [x[:, start + g * depth : start + (g + 1) * depth] for g in range(count)]
            parts = [exact_matmul(part, w, backend=backend) for part, w in zip(columns, weights, strict=True)]
            return (as_type(np.hstack(parts), result_type),)
        products = [
            sliced_product(x[:, start + g * depth : start + (g + 1) * depth], tiles.stack(config), config)
            for g, tiles in enumerate(groups)
        ]
        return (as_type(products[0] if count == 1 else np.hstack(products), result_type),)

    run.on_backend = run.fresh = True  # (a new array each call: the host steps after it may write into it)
    return run


def sliced_on_backend(x, each: Layer, groups: list[Tiles]):
    """A bit-sliced layer's product on the array backend of its tiles, with rows `x` moved there
    and the result kept there."""
    backend, (count, depth, _) = groups[0].backend, each.weights.shape
    xp, config, x = backend.xp, groups[0].config, backend.moved(x)
    if each.order is not None:  # (X in (c, ky, kx) order, as the tiles hold their rows)
        x = xp.take(x, backend.asarray(np.argsort(each.order)), axis=1)
    start = each.start
    products = [
        sliced_product(x[:, start + g * depth : start + (g + 1) * depth], tiles.stack(config), config, kept=True)
        for g, tiles in enumerate(groups)
    ]
    return products[0] if count == 1 else xp.concat(products, axis=1)


FEW_GROUPS = 16
"""The most groups `grouped_matmul` multiplies one at a time (a call each costs less than the
batched product's pass over strided groups; many small groups, as a depthwise layer's, are the
other way round)."""


def grouped_matmul(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The G products x[:, g·d:(g+1)·d]·weights[g] side by side (M × G·f), exactly as
    `exact_matmul` computes each: a product per group on its columns of x into its columns of the
    result for `FEW_GROUPS` or fewer, else one batched product over the (G, M, d) stack of x's
    groups."""
    count, depth, width = weights.shape
    rows = x.shape[0]
    integer = x.dtype.kind != "f" and weights.dtype.kind != "f"
    if not integer:
        kind = np.result_type(x, weights)
    else:
        exact_in_float = integer_bound(x, weights, depth) < 2**53  # (float64 BLAS while every partial sum is exact)
        kind = np.dtype(np.float64 if exact_in_float else np.int64)
        x, weights = x.astype(kind), weights.astype(kind)
    if count > FEW_GROUPS:
        products = np.matmul(x.reshape(rows, count, depth).transpose(1, 0, 2), weights).transpose(1, 0, 2)
    else:
        products = np.empty((rows, count, width), kind)
        for g in range(count):
            np.matmul(x[:, g * depth : (g + 1) * depth], weights[g], out=products[:, g])
    products = products.reshape(rows, count * width)
    return products.astype(np.int64, copy=False) if integer else products
