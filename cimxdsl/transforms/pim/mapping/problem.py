"""The mapping problem of the PIM flow: how many replicas each `spat.compute` gets (each on its own
core, working on its own band of output rows) and which core runs each replica, under the chip's
crossbar budget, so that the busiest core (the pipeline's bottleneck stage) has as little work as
possible (PIMCOMP's high-throughput mode: X. Sun et al., "PIMCOMP: A Universal Compilation
Framework for Crossbar-based PIM DNN Accelerators", DAC 2023)."""

from __future__ import annotations

import functools
import heapq
import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, TensorType
from xdsl.ir import Operation, SSAValue

from cimxdsl.device.chip import PRESETS
from cimxdsl.device.latency import Latencies
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.crossbar_ops import FilterGeometry, Im2col
from cimxdsl.dialects.utils import num_elements, shape_of, shape_of_type
from cimxdsl.transforms.pim.value_bounds import INT8, NARROW_BITS, UNBOUNDED, Bounds, within

T = TypeVar("T")


Rows = tuple[int, int]
"""Rows `[start, end)` of a value (also columns `[start, end)`)."""
Area = tuple[Rows, "Rows | None"]
"""Rows `[start, end)` of a value and its columns `[start, end)` (None: all of them)."""


def compute_cost(
    compute: spat.ComputeOp,
    areas: Callable[[SSAValue], Area] | None = None,
    latencies: Latencies | None = None,
    bounds: dict[SSAValue, Bounds] | None = None,
) -> float:
    """The time of a compute in ns: the instructions `pim-codegen` emits for it, each at the
    performance model's latency (`latencies`, default the `pimcomp` chip's): per output pixel one
    `mvmul` per crossbar whose inputs are not all padding (`crossbar_reads`) and a `vvadd` per
    partial sum (im2col: the patch gathered by `lmv`),
    vector ops over their elements, pooling per window position, and the transfers of its inputs
    and results. `areas`: the rows `[start, end)` and columns (None: all) of each value a band
    computes or reads (all by default).
    With the `bounds` of the compute's values (`compute_value_bounds`), a crossbar input that fits
    `NARROW_BITS` is read as `pim-codegen` reads it: narrowed once, then gathered and multiplied as
    8-bit elements; without, every input is read at the model's width."""
    model = latencies or Latencies(PRESETS["pimcomp"])
    narrow = Latencies(model.chip, NARROW_BITS // 8, model.obytes)
    timed, narrowing = latency_table(model), latency_table(Latencies(model.chip, model.ibytes, narrow.ibytes))
    plan = cost_plan(compute)

    def area(value: SSAValue) -> Area:
        return areas(value) if areas is not None else ((0, plan.rows[value]), None)

    def elements(value: SSAValue) -> int:
        (start, end), columns = area(value)
        count = (end - start) * plan.row_elements[value]
        return count if columns is None else count * (columns[1] - columns[0]) // plan.widths[value]

    cost = sum(timed("transfer", elements(v) * model.ibytes) for v in plan.moved)
    for kind, factor, op, result, channels in plan.terms:
        n = elements(result)
        if kind == "filters":
            assert isinstance(op, spat.ApplyFiltersOp)
            pixels = n // channels
            products = crossbar_reads(op, *area(result), plan.crossbar_rows)
            reads = timed
            if bounds is not None and model.ibytes > narrow.ibytes and within(bounds.get(op.input, UNBOUNDED), INT8):
                reads = latency_table(narrow)
                cost += narrowing("vector", elements(op.input))
            cost += products * reads("mvmul") + max(products - pixels, 0) * timed("vector", channels)
            if factor:
                cost += pixels * timed("move", factor)
        elif kind == "pool":
            cost += (n // channels) * factor * timed("vector", channels)
        elif kind == "global pool":
            cost += channels * timed("vector", elements(op.operands[0]) // channels, False, True)
        elif kind == "min":  # 0 - max(0 - a, 0 - b)
            cost += timed("fill", n) + 4 * timed("vector", n)
        elif kind == "binary":
            cost += timed("vector", n)
        elif kind == "unary":
            cost += timed("vector", n, False)
        elif kind in ("move", "fill"):
            cost += timed(kind, n)
    return cost


_TABLES: dict[Latencies, dict[tuple, float]] = {}


def latency_table(model: Latencies) -> Callable[..., float]:
    """`model`'s latency of one instruction (a `Latencies` method and its arguments) as a float,
    each computed once: the mapping asks for the same few again and again."""
    known = _TABLES.setdefault(model, {})

    def timed(instruction: str, *args) -> float:
        key = (instruction, *args)
        value = known.get(key)
        if value is None:
            value = known[key] = float(getattr(model, instruction)(*args))
        return value

    return timed


def cost_kind(op: Operation) -> tuple[str, int]:
    """How `compute_cost` times `op`, and its factor: the patch an im2col product gathers per pixel
    (0: none), a pooling's window size."""
    kind = kind_of(type(op))
    if kind == "filters":
        assert isinstance(op, spat.ApplyFiltersOp)
        patch = op.packing() is not None and num_elements(shape_of(op.input)[-1:]) * math.prod(op.geometry().kernel)
        return kind, int(patch)
    if kind == "pool":
        assert isinstance(op, spat.MaxPoolOp | spat.AvgPoolOp)
        return kind, math.prod(op.geometry().kernel)
    return kind, 0


_KINDS: tuple[tuple[str, tuple[type[Operation], ...]], ...] = (
    ("filters", (spat.ApplyFiltersOp,)),
    ("pool", (spat.MaxPoolOp, spat.AvgPoolOp)),
    ("global pool", (spat.GlobalAvgPoolOp,)),
    ("min", (arith.MinSIOp,)),
    ("binary", (spat.VectorBinaryOp, arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.MaxSIOp)),
    ("unary", (spat.VectorUnaryOp, arith.ShRSIOp, arith.ShLIOp)),
    ("move", (spat.ConcatOp,)),
    ("fill", (arith.ConstantOp,)),
)


@functools.cache
def kind_of(op_type: type[Operation]) -> str:
    """`cost_kind`'s kind of an op type ("": not timed), looked up once per type."""
    return next((kind for kind, types in _KINDS if issubclass(op_type, types)), "")


def kept_while_alive(function: Callable[..., T]) -> Callable[..., T]:
    """`function(op, *args)` computed once per op and arguments and kept while the op lives: what
    the mapping reads of an op's IR, which is not changed once built."""
    table: weakref.WeakKeyDictionary[Operation, dict[tuple, T]] = weakref.WeakKeyDictionary()

    @functools.wraps(function)
    def kept(op: Operation, *args) -> T:
        known = table.setdefault(op, {})
        if args not in known:
            known[args] = function(op, *args)
        return known[args]

    return kept


@dataclass(frozen=True)
class CostPlan:
    """What `compute_cost` reads of a compute, read from its body once: the values it moves (its
    inputs and results), its ops with a result (`cost_kind`'s kind and factor, op, result, channels), every
    value's rows, elements per row and columns (images), and its weights' crossbar rows."""

    moved: tuple[SSAValue, ...]
    terms: tuple[tuple[str, int, Operation, SSAValue, int], ...]
    rows: dict[SSAValue, int]
    row_elements: dict[SSAValue, int]
    widths: dict[SSAValue, int]
    crossbar_rows: tuple[int, ...]


@kept_while_alive
def cost_plan(compute: spat.ComputeOp) -> CostPlan:
    """`compute`'s `CostPlan`."""
    block = compute.body.block
    moved = (*compute.input_args, *block.last_op.operands)  # pyright: ignore[reportOptionalMemberAccess]
    ops = [op for op in block.ops if op.results]
    values = dict.fromkeys([*moved, *(v for op in ops for v in (*op.results, *op.operands))])
    shapes = {v: shape_of_type(v.type) for v in values if isinstance(v.type, TensorType | MemRefType)}
    return CostPlan(
        moved,
        tuple((*cost_kind(op), op, op.results[0], product_channels(op, shapes[op.results[0]])) for op in ops),
        {v: s[0] for v, s in shapes.items()},
        {v: num_elements(s[1:]) for v, s in shapes.items()},
        {v: s[1] for v, s in shapes.items() if len(s) == 3},
        tuple(shape_of(w)[0] for w in compute.weights),
    )


def product_channels(op: Operation, shape: Sequence[int]) -> int:
    """The channels `op` writes at once: a crossbar read's for an `apply_filters` (p pixels' with p
    pixels per read), else its result's."""
    return op.products_shape(shape)[-1] if isinstance(op, spat.ApplyFiltersOp) else shape[-1]


def crossbar_reads(op: spat.ApplyFiltersOp, rows: Rows, columns: Rows | None, crossbar_rows: Sequence[int]) -> int:
    """The `mvmul`s of output rows `rows` and columns `columns` (None: all) of `op` (its weights'
    crossbars have `crossbar_rows` rows each): one per output window and crossbar whose inputs are
    not all padding, which `pim-codegen` skips."""
    reads = reads_per_window(op, tuple(crossbar_rows))[rows[0] : rows[1]]
    if columns is not None:
        pixels = pixels_per_read(op)
        reads = reads[:, columns[0] // pixels : columns[1] // pixels]
    return int(reads.sum())


def pixels_per_read(op: Operation) -> int:
    """The output pixels one window of `op` computes: an im2col product's pixels per read, else 1."""
    packing = op.packing() if isinstance(op, spat.ApplyFiltersOp) else None
    return packing.pixels if packing is not None else 1


@kept_while_alive
def reads_per_window(op: spat.ApplyFiltersOp, crossbar_rows: tuple[int, ...]) -> np.ndarray:
    """`crossbar_reads` of each output row and window (pixel, or im2col window of pixels) of `op`."""
    return window_reads(
        op.weight_index_list(),
        shape_of(op.input),
        op.products_shape(shape_of(op.results[0])),
        op.geometry(),
        op.packing(),
        crossbar_rows,
    )


@functools.lru_cache(maxsize=4096)
def window_reads(
    indices: tuple[int, ...],
    in_shape: tuple[int, ...],
    out_shape: tuple[int, ...],
    geometry: FilterGeometry,
    packing: Im2col | None,
    crossbar_rows: tuple[int, ...],
) -> np.ndarray:
    """`reads_per_window` of an apply_filters of these weights, shapes and geometry: one table for
    every band of a layer that reads and writes the same shapes."""
    if len(in_shape) != 3:
        count = num_elements(out_shape[1:-1]) * sum(1 for i in indices if i >= 0)
        return np.full((out_shape[0], 1), count, np.int64)
    height, width, channels = in_shape
    if packing is None:  # one crossbar per kernel position
        positions = [k for k, i in enumerate(indices) if i >= 0]
        covers = np.eye(len(positions), dtype=bool)
    else:  # a crossbar covers the kernel positions whose channels meet its patch rows
        positions = list(packing.positions)
        ends = packing.offset + np.cumsum([crossbar_rows[i] for i in indices])
        starts = ends - [crossbar_rows[i] for i in indices]
        first = np.arange(len(positions)) * channels
        covers = (first[None, :] < ends[:, None]) & (starts[:, None] < first[None, :] + channels)
    kernel_w = geometry.kernel[1]
    ky, kx = np.divmod(np.array(positions, np.int64), kernel_w)
    oy, ox = np.arange(out_shape[0]), np.arange(out_shape[1])
    iy = oy[:, None] * geometry.strides[0] - geometry.pads[0] + ky[None, :] * geometry.dilations[0]
    ix = ox[:, None] * geometry.strides[1] - geometry.pads[1] + kx[None, :] * geometry.dilations[1]
    inside = ((iy >= 0) & (iy < height))[:, None, :] & ((ix >= 0) & (ix < width))[None, :, :]
    per_position = inside.reshape(-1, len(positions)).astype(np.int64) @ covers.T.astype(np.int64)
    reads = np.count_nonzero(per_position.reshape(out_shape[0], out_shape[1], -1), axis=2)
    reads.flags.writeable = False  # shared by every op of the same shapes
    return reads


@dataclass(frozen=True)
class MappingProblem:
    """Per compute: its cost (ns), its crossbars and the most replicas it can have (its output rows, 1
    when it cannot be split); the chip: `cores` of `per_core` crossbars."""

    costs: tuple[int, ...]
    crossbars: tuple[int, ...]
    max_replicas: tuple[int, ...]
    cores: int
    per_core: int
    replica_cost: Callable[[int, int], float] | None = None
    """The work of the busiest of `r` replicas of compute `i` (default: its cost ÷ r); replicas
    recompute the rows their windows share."""

    def cost(self, i: int, replicas: int) -> float:
        if self.replica_cost is not None:
            return self.replica_cost(i, replicas)
        return self.costs[i] / replicas

    def fits(self, replicas: list[int]) -> bool:
        return sum(w * r for w, r in zip(self.crossbars, replicas, strict=True)) <= self.cores * self.per_core


@dataclass
class Mapping:
    """Replicas per compute, the core of each replica, the busiest core's load and notes."""

    replicas: list[int]
    cores: list[list[int]]
    bottleneck: float
    notes: list[str] = field(default_factory=list)


def place(problem: MappingProblem, replicas: list[int]) -> Mapping | None:
    """Replicas onto cores in program order, each core a run of consecutive computes (a pipeline
    stage: a core holding an early and a late layer could start the next image only after the
    late layer of this one), the least stage time whose runs fit the cores — below the largest
    replica's where the cores allow, which then takes a core alone: the replicas spread over every
    core rather than filling each up to the busiest one's load (fewer consecutive layers a core runs
    one after another). None when the replicas do not fit so."""
    replicas = [int(r) for r in replicas]
    if not problem.fits(replicas):
        return None
    items = [(problem.cost(i, r), i) for i, r in enumerate(replicas) for _ in range(r)]
    loads = [load for load, _ in items]
    low, high = min(loads, default=0.0), sum(loads)
    best = stages_in_order(problem, items, high)
    if best is None:
        return None
    for _ in range(40):  # bisect the stage time down to 0.1 % of the largest item
        if high - low <= 1e-3 * low:
            break
        middle = (low + high) / 2
        cut = stages_in_order(problem, items, middle)
        if cut is None:
            low = middle
        else:
            best, high = cut, middle
    return best


def stages_in_order(problem: MappingProblem, items: list[tuple[float, int]], stage: float) -> Mapping | None:
    """`items` (load, compute) placed in program order: each onto the fullest core that still has
    room for it within `stage`, holds no replica of its compute and was last given the previous or
    the same compute (so a core's computes follow one another), else onto a new core; None when
    that takes too many cores."""
    cores: list[list[int]] = [[] for _ in problem.crossbars]
    loads: list[float] = []
    room: list[int] = []
    last: dict[int, list[int]] = {}  # the cores last given each compute
    for load, i in items:
        # (in core order: of equally loaded cores the first)
        candidates = sorted([*last.get(i - 1, ()), *last.get(i, ())])
        fitting = [
            c for c in candidates if loads[c] + load <= stage and room[c] >= problem.crossbars[i] and c not in cores[i]
        ]
        if fitting:
            core = max(fitting, key=lambda c: loads[c])
            if core not in last.setdefault(i, []):
                last[i - 1].remove(core)
                last[i].append(core)
        else:
            if len(loads) == problem.cores:
                return None
            core = len(loads)
            loads.append(0.0)
            room.append(problem.per_core)
            last.setdefault(i, []).append(core)
        loads[core] += load
        room[core] -= problem.crossbars[i]
        cores[i].append(core)
    return Mapping([len(c) for c in cores], cores, max(loads, default=0.0))


def place_balanced(problem: MappingProblem, replicas: list[int]) -> Mapping | None:
    """Replicas onto cores, largest load first onto the least loaded core with room that holds no
    other replica of the same compute (LPT); None when they do not fit."""
    loads = [0.0] * problem.cores
    room = [problem.per_core] * problem.cores
    cores: list[list[int]] = [[] for _ in replicas]
    heap = [(0.0, c) for c in range(problem.cores)]
    items = sorted(((problem.cost(i, r), i) for i, r in enumerate(replicas) for _ in range(r)), reverse=True)
    for load, i in items:
        skipped = []
        while heap and (room[heap[0][1]] < problem.crossbars[i] or heap[0][1] in cores[i]):
            skipped.append(heapq.heappop(heap))
        if not heap:
            return None
        _, core = heapq.heappop(heap)
        loads[core] += load
        room[core] -= problem.crossbars[i]
        cores[i].append(core)
        for entry in [*skipped, (loads[core], core)]:
            heapq.heappush(heap, entry)
    return Mapping(list(replicas), cores, max(loads, default=0.0))


def unreplicated(problem: MappingProblem) -> Mapping:
    """One replica per compute, placed (the program must fit the chip)."""
    ones = [1] * len(problem.costs)
    mapping = place(problem, ones) or place_balanced(problem, ones)
    if mapping is None:
        need = sum(problem.crossbars)
        raise ValueError(
            f"the program's computes ({need} crossbars) cannot be placed on {problem.cores} cores of "
            f"{problem.per_core} crossbars (at least {math.ceil(need / problem.per_core)} cores)"
        )
    return mapping
