"""Layer-level products: the crossbar tiles of one matrix product run as one product.

The tiling splits a product X·W into tiles that partition W: tile t multiplies the columns
[k0, k1) of X by its block W[k0:k1, n0:n1], the partial products of a column block are added, and
the blocks are inserted side by side into the result. The prepared function recognises this shape
(one source X, constant tile weights, `alloc_tensor` outputs, a sum per block, `insert_slice`s that
cover the result) and replaces it with one product at the op that finished the result: on an exact
device X·W in one BLAS call, on a bit-sliced one the tiles the tile products found on their
crossbars in one stacked sliced product (`sliced_product`: each tile through the DACs and ADCs as
on its own). The crossbar ops stay where they were: writes and barriers run as before, and each
tile product is counted on its crossbar (`Device.defer_mvm`) without computing it, so metrics and
timeline are those of the tiles. Read noise, drawn per tile MVM, keeps the tile-by-tile path."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from xdsl.dialects import arith, bufferization, func, tensor
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import Operation

from cimxdsl.device.backend import NUMPY
from cimxdsl.device.config import DeviceConfig
from cimxdsl.device.crossbar import Tile, TileStack, exact_matmul, sliced_product, stack_tiles
from cimxdsl.dialects import memristor
from cimxdsl.interpreters.memristor import runtime_op
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
    op = step.op
    if isinstance(op, name):
        return True
    return isinstance(op, func.CallOp) and runtime_op(op.callee.string_value()) is name


class Graph:
    """Producers and users of the slots of a prepared body."""

    def __init__(self, steps: Sequence, constants: dict[int, object]):
        self.steps, self.constants = steps, constants
        self.producer = {slot: i for i, step in enumerate(steps) for slot in step.results}
        self.users: dict[int, set[int]] = {}
        for i, step in enumerate(steps):
            for slot in (*step.operands, *(s for _, s in step.captured)):
                self.users.setdefault(slot, set()).add(i)

    def made_by(self, slot: int, kind) -> Operation | None:
        i = self.producer.get(slot)
        return self.steps[i].op if i is not None and isinstance(self.steps[i].op, kind) else None

    def root(self, slot: int) -> tuple[int, list[int]]:
        """The slot whose array `slot` views (through `VIEWS`), and the steps of those views."""
        chain = []
        while self.made_by(slot, VIEWS):
            chain.append(self.producer[slot])
            slot = self.steps[self.producer[slot]].operands[0]
        return slot, chain

    def columns(self, slot: int) -> tuple[int, int, int, int] | None:
        """(X's slot, k0, k1, X's width) of a value that is the columns [k0, k1) of a 2-D X (all its rows)."""
        op = self.made_by(slot, tensor.ExtractSliceOp)
        if op is None:
            return None
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
        if device_call(step, memristor.WriteToCrossbarOp):
            weights, _ = graph.root(step.operands[1])
            if step.operands[0] in constants and weights in constants:
                written[constants[step.operands[0]]] = constants[weights]
        elif device_call(step, memristor.GemmOp) and step.operands[0] in constants:
            inputs, in_chain = graph.root(step.operands[1])
            output, out_chain = graph.root(step.operands[2])
            columns = graph.columns(inputs)
            weights = written.get(constants[step.operands[0]])
            if columns is None or weights is None or not graph.made_by(output, bufferization.AllocTensorOp):
                continue
            source, k0, k1, width = columns
            if weights.shape[0] != k1 - k0:
                continue
            feeds = (*in_chain, *out_chain, graph.producer[output], graph.producer[inputs])
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
        if isinstance(step.op, _SUMS) and all(s in partial for s in step.operands):
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
        if len({t.weights.shape[1] for t in block.tiles}) == 1 and partition(spans, block.tiles[0].width):
            block.tiles.sort(key=lambda t: t.columns)
            found.append(block)
    return found


def partition(spans: list[tuple[int, int]], width: int) -> bool:
    """Whether the sorted `spans` cover [0, width) edge to edge."""
    return spans[0][0] == 0 and spans[-1][1] == width and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


@dataclass
class Layer:
    """A recognised product X·W: the step that finishes its result and the steps it replaces."""

    source: int
    weights: np.ndarray
    result: int
    at: int
    removed: set[int]
    counted: list[TileProduct]
    grid: list[list[int]]
    """The steps of the tile products by K-block and column block (a bit-sliced device stacks
    their tiles: `sliced_product`)."""


def layers(graph: Graph) -> list[Layer]:
    """Every product the tiles of which can run as one (module docstring)."""
    tiles = tile_products(graph)
    found = blocks(graph, tiles)
    by_slot = {block.slot: block for block in found}
    chained: set[int] = set()
    result = []
    for i, step in enumerate(graph.steps):
        if isinstance(step.op, tensor.EmptyOp) and len(step.op.results[0].type.get_shape()) == 2:
            parts, slot, inserts = insert_chain(graph, step.results[0], by_slot)
            width = step.op.results[0].type.get_shape()[1]
            if len(parts) < 1 or len({b.tiles[0].source for _, b in parts}) != 1:
                continue
            if not partition(sorted((n0, n0 + b.tiles[0].weights.shape[1]) for n0, b in parts), width):
                continue
            parts.sort(key=lambda part: part[0])
            weights = np.hstack([np.vstack([t.weights for t in b.tiles]) for _, b in parts])
            blocks_ = [b for _, b in parts]
            chained.update(b.slot for b in blocks_)
            result.append(layer(graph, blocks_, weights, slot, [i, *inserts]))
    for block in found:
        if block.slot not in chained and block.sums:
            weights = np.vstack([t.weights for t in block.tiles])
            result.append(layer(graph, [block], weights, block.slot, []))
    return [each for each in result if each is not None]


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


def layer(graph: Graph, blocks_: list[Block], weights: np.ndarray, result: int, chain: list[int]) -> Layer | None:
    """The `Layer` of `blocks_` finished at `result`, if the steps it removes feed nothing else."""
    tiles = [t for b in blocks_ for t in b.tiles]
    at = graph.producer[result]
    removed = {*chain, *(i for b in blocks_ for i in b.sums), *(i for t in tiles for i in t.feeds)} - {at}
    counted = {t.step for t in tiles}
    allowed = removed | counted | {at}
    for i in removed:
        if not all(graph.only_used_by(s, allowed) for s in graph.steps[i].results):
            return None
    if len({tuple(t.columns for t in b.tiles) for b in blocks_}) != 1:
        return None  # (the tiling splits every column block alike)
    grid = [list(steps) for steps in zip(*([t.step for t in b.tiles] for b in blocks_))]
    return Layer(tiles[0].source, read_only(weights), result, at, removed, tiles, grid)


def fuse_layer_products(steps: list, constants: dict[int, object], runtime: CrossbarRuntime) -> list | None:
    """`steps` with every recognised product run as one (module docstring), or None if there is
    none. `constants`: the values of the constant slots; `runtime`: the device state the crossbar
    ops run on."""
    graph = Graph(steps, constants)
    found = layers(graph)
    if not found:
        return None
    removed = {i for each in found for i in each.removed}
    replaced = {each.at: each for each in found}
    counted = {t.step: (t, tiles) for each in found for tiles in [Tiles(each.grid)] for t in each.counted}
    fused, deferred = [], []
    for i, step in enumerate(steps):
        if i in removed:
            deferred.extend(step.released)  # (its values die no later than the product)
            continue
        if i in counted:
            tile, tiles = counted[i]
            implementation = count_columns(*tile.columns, tiles, i, runtime)
            step = replace(step, implementation=implementation, operands=(step.operands[0], tile.source))
        elif i in replaced:
            each = replaced[i]
            tiles = counted[each.counted[0].step][1]
            step = replace(
                step,
                implementation=whole_product(each.weights, step.op.results[0].type, tiles),
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
    fused = [replace(step, released=tuple(s for s in step.released if s not in sources)) for step in fused]
    for slot, i in last.items():
        fused[i] = replace(fused[i], released=(*fused[i].released, slot))
    return fused


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


def count_columns(k0: int, k1: int, tiles: Tiles, step: int, runtime: CrossbarRuntime):
    """The implementation of a tile product that only counts it (its input is X[:, k0:k1]) and
    records the tile it found on its crossbar."""

    def run(interpreter, op, args) -> tuple:
        crossbar = runtime.physical(args[0])
        tiles.config = runtime.device.config_of(crossbar)
        tiles.backend = runtime.device.backend
        tiles.found[step] = runtime.device.defer_mvm(crossbar, args[1][:, k0:k1])
        return ()

    return run


def whole_product(weights: np.ndarray, result_type, tiles: Tiles):
    """The implementation of a layer's product X·W as one product, of the result's type: exact, or
    sliced on the tiles the tile products found."""

    def run(interpreter, op, args) -> tuple:
        config = tiles.config
        if config.exact:
            return (as_type(exact_matmul(args[0], weights, backend=tiles.backend), result_type),)
        product = sliced_product(args[0], tiles.stack(config), config)
        return (as_type(product, result_type),)

    return run
