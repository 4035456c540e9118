"""The scheduling framework of the cim level: Cinnamon's `applyScheduling` with its four hooks.

A *strategy* puts the nodes of a dependency graph into time steps and gives each a compute resource.
`apply_scheduling` then rewrites the IR step by step: all dispatches of a step (moved, in schedule
order, right after the last op it emitted; the very first dispatched op stays where it is), then the
barriers of the ops whose barrier step it is. Four hooks make it generic (as in the Cinnamon compiler's
`include/cinm-mlir/Utils/Scheduling/Scheduling.h`; F. Reißmann, "An MLIR-based compiler flow for memristive-crossbar accelerators", Bachelor's thesis, TU Dresden, 2024, §3.4):

- operation filter     `(op) -> bool`                     which ops are nodes of the graph
- strategy             `(graph) -> Schedule[R]`           steps and resources
- operation scheduler  `(op, resource) -> None`           binds an op to its resource
- barrier inserter     `(builder, op) -> Operation|None`  waits for an op's result at the builder's point

As in Cinnamon, every scheduled cim op gets a `cim.barrier` in its barrier step and the barrier's
tensor replaces every other use of the future, later cim ops included (cim ops take tensors as well
as futures), so afterwards each future has exactly one use: its barrier.

For the cim dialect, `prepare_for_scheduling` turns each device's crossbars into the resource list
`[saved, new1, new2, ...]` as Cinnamon does, and `CimSchedulePass` is the base of the schedule passes.

Where this differs from Cinnamon, on purpose:

- The dependency graph has one node per operation (Cinnamon appends a node per use, so a result used
  by two cim ops is scheduled twice).
- A cim op also depends on the cim ops it reaches backwards through host ops of its block (e.g. a
  barrier result that host ops turn into its input), and host ops with side effects count as
  ordered; Cinnamon only sees futures used directly, and its output breaks dominance otherwise.
- After the moves the block is re-sorted stably (`restore_dominance`) so host ops that make operands
  of moved cim ops, or use barrier results, never break dominance.
- A device's analysis and re-sort cover only its span (its first to its last cim op), not the whole
  block, so scheduling a model takes time linear in its size (same IR as analysing the whole block).
- Roots are taken in program order (Cinnamon keeps them in a pointer-keyed hash set), and cim ops
  whose futures escape no other way (unused ones) are roots too, so every cim op gets scheduled.
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import ClassVar, Generic, TypeVar

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects.builtin import BoolAttr, MemRefType, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import PassFailedException

from cimxdsl.dialects.cim import (
    AcquireCrossbarOp,
    AcquireDeviceOp,
    BarrierOp,
    CimMatrixOp,
    ReleaseCrossbarOp,
    ReleaseDeviceOp,
    barrier_type,
)
from cimxdsl.transforms.common.errors import pass_error

R = TypeVar("R")


def side_effect_free(op: Operation) -> bool:
    """`is_side_effect_free`; also TOSA's operators (pure functions of their tensor operands in the
    TOSA specification), its variables excepted, and `linalg` ops on tensors only (their effects
    are on buffer operands), which xDSL does not mark so."""
    if is_side_effect_free(op):
        return True
    if op.dialect_name() == "tosa":
        return "variable" not in op.name and not op.regions
    return op.dialect_name() == "linalg" and all(isinstance(v.type, TensorType) for v in op.operands)


# ---- dependency graph ---------------------------------------------------------------------------
@dataclass(eq=False)
class DependencyNode:
    """One operation to schedule, with the nodes it waits for and the nodes that wait for it."""

    operation: Operation
    dependencies: list[DependencyNode] = field(default_factory=list["DependencyNode"])
    dependents: list[DependencyNode] = field(default_factory=list["DependencyNode"])

    def __repr__(self) -> str:
        return f"DependencyNode({self.operation.name})"


class DependencyGraph:
    """Nodes in Cinnamon's breadth-first order from the roots (strategies walk them in this order)."""

    def __init__(self, nodes: Sequence[DependencyNode] = ()):
        self.nodes: list[DependencyNode] = list(nodes)
        self._by_operation = {node.operation: node for node in self.nodes}

    def __iter__(self) -> Iterator[DependencyNode]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def node(self, operation: Operation) -> DependencyNode:
        return self._by_operation[operation]

    def add(self, operation: Operation) -> DependencyNode:
        node = DependencyNode(operation)
        self.nodes.append(node)
        self._by_operation[operation] = node
        return node

    @staticmethod
    def link(dependency: DependencyNode, dependent: DependencyNode) -> None:
        if dependency not in dependent.dependencies:
            dependent.dependencies.append(dependency)
            dependency.dependents.append(dependent)

    def topological_order(self) -> list[DependencyNode]:
        """Dependencies before dependents; among ready nodes, list order (stable)."""
        waiting = {node: len(node.dependencies) for node in self.nodes}
        position = {node: i for i, node in enumerate(self.nodes)}
        ready = [position[node] for node in self.nodes if not node.dependencies]
        heapq.heapify(ready)
        order: list[DependencyNode] = []
        while ready:
            node = self.nodes[heapq.heappop(ready)]
            order.append(node)
            for dependent in node.dependents:
                waiting[dependent] -= 1
                if not waiting[dependent]:
                    heapq.heappush(ready, position[dependent])
        if len(order) != len(self.nodes):
            raise ValueError("the dependency graph has a cycle")
        return order

    @staticmethod
    def build(
        roots: Iterable[SSAValue], operation_filter: Callable[[Operation], bool], first: Operation | None = None
    ) -> DependencyGraph:
        """Breadth-first from the ops defining `roots`, one node per op (unlike Cinnamon).

        `first`, if given, is an op no later than the first op of its block that `operation_filter`
        accepts: the host ops of that block are then analysed from `first` on, up to the last node,
        instead of all of them (the same graph for a block in dominance order, in time proportional
        to the span of the nodes rather than to the block)."""
        return _build_graph(roots, operation_filter, first)[0]


def _build_graph(
    roots: Iterable[SSAValue], operation_filter: Callable[[Operation], bool], first: Operation | None
) -> tuple[DependencyGraph, _BlockSources]:
    graph = DependencyGraph()
    sources = _BlockSources(operation_filter, first)
    queue: deque[DependencyNode] = deque()
    for value in roots:
        if isinstance(value.owner, Operation) and value.owner not in graph._by_operation:
            queue.append(graph.add(value.owner))
    while queue:
        node = queue.popleft()
        for operation in sources.dependencies(node.operation):
            dependency = graph._by_operation.get(operation)
            if dependency is None:
                dependency = graph.add(operation)
                queue.append(dependency)
            DependencyGraph.link(dependency, node)
    return graph, sources


def _ancestor_in(block: Block, operation: Operation) -> Operation | None:
    """The op of `block` that is or contains `operation`, or None."""
    current: Operation | None = operation
    while current is not None and current.parent is not block:
        current = current.parent_op()
    return current


def _definers_in_block(operation: Operation, block: Block) -> list[Operation]:
    """Ops of `block` (other than `operation`) defining values `operation` or its nested ops use."""
    definers: dict[Operation, None] = {}
    for inner in operation.walk():
        for operand in inner.operands:
            if isinstance(operand.owner, Operation):
                definer = _ancestor_in(block, operand.owner)
                if definer is not None and definer is not operation:
                    definers[definer] = None
    return list(definers)


class _BlockAnalysis:
    """The host ops of one block, analysed in program order from `start` (the first op by default) as
    far as asked: each op's position (counted from `start`) and the filtered ops it reaches."""

    def __init__(self, block: Block, operation_filter: Callable[[Operation], bool], start: Operation | None):
        self.block = block
        self.operation_filter = operation_filter
        self.position: dict[Operation, int] = {}
        self.reaches: dict[Operation, frozenset[Operation]] = {}
        self._next = start if start is not None else block.first_op
        self._previous_effect: frozenset[Operation] = frozenset()

    def advance(self, until: Operation | None = None) -> None:
        """Analyse the next ops until `until` is analysed (or the block ends)."""
        block, position, reaches = self.block, self.position, self.reaches
        while self._next is not None and (until is None or until not in position):
            op = self._next
            self._next = op.next_op
            position[op] = len(position)
            if self.operation_filter(op):
                reaches[op] = frozenset((op,))
                continue
            found = set[Operation]()
            for definer in _definers_in_block(op, block):
                found |= reaches.get(definer, frozenset())
            if not side_effect_free(op):
                found |= self._previous_effect
            reaches[op] = frozenset(found)
            if not side_effect_free(op):
                self._previous_effect = reaches[op]


class _BlockSources:
    """For ops of a block: the filtered ops they depend on through host ops.

    A host op depends on the filtered ops defining its operands, on whatever the host ops defining its
    operands depend on, and, if it has side effects, on what the previous host op with side effects
    depends on (so effects keep their order).

    No host op before the first filtered op of a block depends on any, so with `first` (an op no later
    than that) the analysis of `first`'s block starts there and goes only as far as the ops asked
    about; other blocks are analysed whole."""

    def __init__(self, operation_filter: Callable[[Operation], bool], first: Operation | None = None):
        self.operation_filter = operation_filter
        self.first = first
        self._blocks: dict[Block, _BlockAnalysis] = {}

    def analysis(self, block: Block) -> _BlockAnalysis:
        analysis = self._blocks.get(block)
        if analysis is None:
            start = self.first if self.first is not None and self.first.parent is block else None
            analysis = self._blocks[block] = _BlockAnalysis(block, self.operation_filter, start)
            if start is None:
                analysis.advance()
        return analysis

    def dependencies(self, operation: Operation) -> list[Operation]:
        """Filtered ops `operation` waits for, operand by operand (indirect ones in program order)."""
        block = operation.parent_block()
        position: dict[Operation, int] = {}
        reaches: dict[Operation, frozenset[Operation]] = {}
        if block is not None:
            analysis = self.analysis(block)
            analysis.advance(operation)
            position, reaches = analysis.position, analysis.reaches
        found: dict[Operation, None] = {}
        for operand in operation.operands:
            definer = operand.owner
            if not isinstance(definer, Operation):
                continue
            if self.operation_filter(definer):
                found[definer] = None
            elif definer in reaches:
                found.update(dict.fromkeys(sorted(reaches[definer], key=position.__getitem__)))
        found.pop(operation, None)
        return list(found)


# ---- schedules, strategies and hooks ------------------------------------------------------------
@dataclass
class ScheduledOperation(Generic[R]):
    """An op dispatched on `resource` in step `dispatch_time`, waited for in step `barrier_time`."""

    operation: Operation
    resource: R
    dispatch_time: int
    barrier_time: int


Schedule = list[ScheduledOperation[R]]


class SchedulingStrategy(ABC, Generic[R]):
    """Puts every node of a graph into a step on one of `resources` (a strategy = a subclass)."""

    def __init__(self, resources: Sequence[R]):
        if not resources:
            raise ValueError("a scheduling strategy needs at least one resource")
        self.resources = list(resources)

    @abstractmethod
    def schedule(self, graph: DependencyGraph) -> Schedule[R]: ...


@dataclass(frozen=True)
class SchedulingHooks(Generic[R]):
    """Cinnamon's `SchedulingHooks`: what to schedule, how, on what, and how to wait for it."""

    operation_filter: Callable[[Operation], bool]
    strategy: Callable[[DependencyGraph], Schedule[R]]
    operation_scheduler: Callable[[Operation, R], None]
    barrier_inserter: Callable[[Builder, Operation], Operation | None]


def check_schedule(graph: DependencyGraph, schedule: Schedule[R]) -> None:
    """Raise ValueError unless every node is scheduled once, barriers no earlier than dispatches,
    and every op is dispatched after the barriers of its dependencies."""
    entries = {entry.operation: entry for entry in schedule}
    if len(entries) != len(schedule) or set(entries) != {node.operation for node in graph}:
        raise ValueError("the schedule must contain every node of the graph exactly once")
    for node in graph:
        entry = entries[node.operation]
        if entry.barrier_time < entry.dispatch_time:
            raise ValueError(f"'{node.operation.name}' has its barrier before its dispatch")
        for dependency in node.dependencies:
            if entries[dependency.operation].barrier_time >= entry.dispatch_time:
                raise ValueError(f"'{node.operation.name}' is dispatched before its dependency finished")


def apply_scheduling(
    roots: Iterable[SSAValue],
    hooks: SchedulingHooks[R],
    keep_after: Sequence[Operation] = (),
    first: Operation | None = None,
) -> list[Operation]:
    """Build the graph from `roots`, ask the strategy for a schedule and emit it (Cinnamon's loop).

    Returns the emitted dispatches and barriers in order. Afterwards the block is re-sorted stably
    (`restore_dominance`); `keep_after` are ops that must stay after all of them (e.g. releases).

    `first` (see `DependencyGraph.build`) also confines the re-sort to the ops between the first and
    the last node in program order, where alone a block in dominance order can go out of order (the
    same result as re-sorting the whole block, which is done instead when that cannot be shown)."""
    graph, sources = _build_graph(roots, hooks.operation_filter, first)
    span = _Span.of(graph, sources) if first is not None else None
    schedule = list(hooks.strategy(graph))
    check_schedule(graph, schedule)
    emitted: list[Operation] = []
    last: Operation | None = None
    dispatches: dict[int, Schedule[R]] = defaultdict(list)  # by time, in schedule order
    barriers: dict[int, Schedule[R]] = defaultdict(list)
    for entry in schedule:
        dispatches[entry.dispatch_time].append(entry)
        barriers[entry.barrier_time].append(entry)
    for time in sorted(dispatches.keys() | barriers.keys()):
        for entry in dispatches.get(time, ()):
            if last is not None:
                _move_after(entry.operation, last)
            last = entry.operation
            emitted.append(last)
            hooks.operation_scheduler(entry.operation, entry.resource)
        for entry in barriers.get(time, ()):
            assert last is not None
            barrier = hooks.barrier_inserter(Builder(InsertPoint.after(last)), entry.operation)
            if barrier is not None:
                last = barrier
                emitted.append(barrier)
    if emitted and (block := emitted[0].parent_block()) is not None:
        if span is None or not span.restore_dominance(block, emitted, keep_after):
            restore_dominance(block, emitted, keep_after)
    return emitted


def _move_after(operation: Operation, anchor: Operation) -> None:
    block = anchor.parent_block()
    assert block is not None and operation.parent_block() is block
    block.detach_op(operation)
    block.insert_op_after(operation, anchor)


@dataclass
class _Span:
    """The ops of a block from the first to the last node of a graph (program order, before the
    schedule is emitted), given by their neighbours outside, and what the nodes used then.

    Emitting a schedule moves only nodes, and only between those neighbours, and inserts the
    barriers there. So if the block was in dominance order before, an op can come before one it must
    follow only if both are in the span: nodes (and barriers) use values defined before them or in
    the span, host ops after the span using results of nodes or barriers still follow them, and the
    other ordering edges (chain, side effects) run forward. Re-sorting the span alone (stably) then
    gives the same block as re-sorting all of it. What the operation scheduler and the barrier
    inserter add is checked: a value defined after the span, or an op to keep after the chain
    that is before the span, makes `restore_dominance` return False (re-sort the whole block)."""

    before: Operation | None
    after: Operation | None
    definers: dict[Operation, frozenset[Operation]]

    @staticmethod
    def of(graph: DependencyGraph, sources: _BlockSources) -> _Span | None:
        if not graph.nodes:
            return None
        block = graph.nodes[0].operation.parent
        if not isinstance(block, Block) or block not in sources._blocks:
            return None
        position = sources._blocks[block].position
        if any(node.operation not in position for node in graph):
            return None
        ordered = sorted((node.operation for node in graph), key=position.__getitem__)
        definers = {op: frozenset(_definers_in_block(op, block)) for op in ordered}
        return _Span(ordered[0].prev_op, ordered[-1].next_op, definers)

    def restore_dominance(self, block: Block, chain: Sequence[Operation], keep_after: Sequence[Operation]) -> bool:
        """`restore_dominance(block, chain, keep_after)` for a block that was in dominance order
        before the schedule was emitted, re-sorting only the span; False (and nothing changed) if
        that is not enough."""
        if (self.before is not None and self.before.parent is not block) or (
            self.after is not None and self.after.parent is not block
        ):
            return False
        ops: list[Operation] = []
        op = self.before.next_op if self.before is not None else block.first_op
        while op is not self.after:
            if op is None:
                return False
            ops.append(op)
            op = op.next_op
        inside = set(ops)
        if any(op not in inside for op in chain):
            return False
        # values the scheduler or the barriers use that are defined outside the span: before it?
        earlier = set[Operation]()
        for op in chain:
            old = self.definers.get(op, frozenset())
            earlier.update(d for d in _definers_in_block(op, block) if d not in inside and d not in old)
        # ops to keep after the chain that are outside the span: after it?
        later = {op for op in keep_after if op.parent is block and op not in inside}
        if not _all_found(earlier, self.before, backwards=True) or not _all_found(later, self.after):
            return False
        order = _stable_order(ops, block, chain, keep_after)
        if order != ops:
            for op in order:
                block.detach_op(op)
                if self.after is None:
                    block.add_op(op)
                else:
                    block.insert_op_before(op, self.after)
        return True


def _all_found(wanted: set[Operation], start: Operation | None, backwards: bool = False) -> bool:
    """Whether all of `wanted` are among `start` and the ops after it (before it if `backwards`)."""
    wanted = set(wanted)
    op = start
    while wanted and op is not None:
        wanted.discard(op)
        op = op.prev_op if backwards else op.next_op
    return not wanted


def restore_dominance(block: Block, chain: Sequence[Operation], keep_after: Sequence[Operation] = ()) -> None:
    """Re-sort `block` so every op comes after the ops defining what it (or its regions) uses.

    The sort is stable: an op moves only if it must, and the ops of `chain` (the emitted schedule),
    as well as the other ops with side effects, keep their relative order; `keep_after` stay after
    the end of `chain`. Among ops that are free to go, the one that came first goes first, so host
    ops making a moved op's operands are hoisted before it and users of barrier results sink below
    them. A block that is already in order is left untouched."""
    ops = list(block.ops)
    order = _stable_order(ops, block, chain, keep_after)
    if order != ops:
        for op in order:
            block.detach_op(op)
            block.add_op(op)


def _stable_order(
    ops: list[Operation], block: Block, chain: Sequence[Operation], keep_after: Sequence[Operation]
) -> list[Operation]:
    """`restore_dominance`'s order of `ops`, consecutive ops of `block` that ops before them do not
    wait for (edges from ops before them are taken as met, ops after them are not looked at)."""
    position = {op: i for i, op in enumerate(ops)}
    successors: dict[Operation, list[Operation]] = {op: [] for op in ops}
    waiting = dict.fromkeys(ops, 0)

    def edge(before: Operation, after: Operation) -> None:
        successors[before].append(after)
        waiting[after] += 1

    for op in ops:
        for definer in _definers_in_block(op, block):
            if definer in position:
                edge(definer, op)
    for before, after in pairwise(chain):
        edge(before, after)
    in_chain = set(chain)
    effects = [op for op in ops if op not in in_chain and not side_effect_free(op)]
    for before, after in pairwise(effects):
        edge(before, after)
    if chain:
        for op in keep_after:
            if op.parent is block and op not in in_chain and op in position:
                edge(chain[-1], op)

    ready = [position[op] for op in ops if not waiting[op]]
    heapq.heapify(ready)
    order: list[Operation] = []
    while ready:
        op = ops[heapq.heappop(ready)]
        order.append(op)
        for successor in successors[op]:
            waiting[successor] -= 1
            if not waiting[successor]:
                heapq.heappush(ready, position[successor])
    if len(order) != len(ops):
        stuck = next(op for op in ops if waiting[op])
        raise ValueError(f"cannot order the block: '{stuck.name}' waits for an op that waits for it")
    return order


# ---- the cim hooks ------------------------------------------------------------------------------
def schedule_cim_op_on_crossbar(operation: Operation, crossbar: SSAValue) -> None:
    """Operation scheduler: run the cim op on `crossbar` (replaces its operand 0 only)."""
    operation.operands[0] = crossbar


def insert_barrier_for_cim_op_result(builder: Builder, operation: Operation) -> Operation:
    """Barrier inserter: a `cim.barrier` on the op's future; every other use of the future (host
    ops and later cim ops alike, as in Cinnamon) now takes the barrier's value, a memref when the
    op's last operand is one (as Cinnamon decides), else a tensor."""
    future = operation.results[0]
    kind = MemRefType if isinstance(operation.operands[-1].type, MemRefType) else TensorType
    barrier = builder.insert(BarrierOp.create(operands=[future], result_types=[barrier_type(future.type, kind)]))
    future.replace_uses_with_if(barrier.result, lambda use: use.operation is not barrier)
    return barrier


# ---- crossbar preparation -----------------------------------------------------------------------
@dataclass
class PreparedDevice:
    """A device ready to schedule: its crossbars `[saved, new1, new2, ...]`, the futures to start
    the graph from, its cim ops and the release ops that must follow the schedule."""

    device: AcquireDeviceOp
    crossbars: list[SSAValue]
    roots: list[SSAValue]
    cim_ops: list[CimMatrixOp]
    releases: list[Operation]


def _users(value: SSAValue) -> list[Operation]:
    return list(dict.fromkeys(use.operation for use in value.uses))


def _in_program_order(ops: Iterable[Operation], block: Block, start: Operation | None = None) -> list[Operation]:
    """`ops` (in `block`, nested or not) in the order of `block.walk()`. With `start` (an op of
    `block` no later than any of them) only the ops from `start` to the last of them are looked at."""
    ops = list(dict.fromkeys(ops))
    if start is not None and start.parent is block:
        tops = {op: _ancestor_in(block, op) for op in ops}
        wanted = set(tops.values())
        if None not in wanted:
            nested = {top for op, top in tops.items() if op is not top}
            position: dict[Operation, int] = {}
            current: Operation | None = start
            while wanted and current is not None:
                if current in wanted:
                    wanted.discard(current)
                    for inner in current.walk() if current in nested else (current,):
                        position[inner] = len(position)
                current = current.next_op
            if not wanted:
                return sorted(ops, key=position.__getitem__)
    position = {op: i for i, op in enumerate(block.walk())}
    return sorted(ops, key=position.__getitem__)


def describe(operation: Operation) -> str:
    """`'cim.op.gemm'` or `'cim.op.gemm' (%f0)`: how error messages name an op."""
    names = [f"%{r.name_hint}" for r in operation.results if r.name_hint]
    return f"'{operation.name}'" + (f" ({', '.join(names)})" if names else "")


def check_schedulable(module: ModuleOp, pass_name: str) -> list[AcquireDeviceOp]:
    """The devices to schedule, in program order; PassFailedException for IR the passes cannot handle."""

    def fail(message: str) -> PassFailedException:
        return pass_error(pass_name, message)

    devices: list[AcquireDeviceOp] = []
    for op in module.walk():
        if isinstance(op, CimMatrixOp):
            crossbar = op.crossbar_id.owner
            if not isinstance(crossbar, AcquireCrossbarOp) or not isinstance(crossbar.device_id.owner, AcquireDeviceOp):
                raise fail(
                    f"cannot schedule {describe(op)}: its crossbar does not come from a 'cim.acquire_crossbar' "
                    "of a 'cim.acquire_device'"
                )
        if isinstance(op, AcquireDeviceOp) and not op.is_fully_scheduled.value.data:
            devices.append(op)
    positions: dict[Block, dict[Operation, int]] = {}
    for device in devices:
        block = device.parent_block()
        if block is None:
            raise fail(f"{describe(device)} is not inside a block")
        if block not in positions:
            positions[block] = {op: i for i, op in enumerate(block.ops)}
        position = positions[block]
        releases = [user for user in _users(device.device_id) if isinstance(user, ReleaseDeviceOp)]
        if len(releases) != 1 or releases[0].parent is not block:
            raise fail(f"{describe(device)} needs exactly one 'cim.release_device' in its block")
        for user in _users(device.device_id):
            if not isinstance(user, AcquireCrossbarOp | ReleaseDeviceOp) or user.parent is not block:
                raise fail(
                    f"{describe(device)} is used by {describe(user)}; only 'cim.acquire_crossbar' and "
                    "'cim.release_device' in the same block may use a device being scheduled"
                )
        crossbar_users = [
            user
            for crossbar in _users(device.device_id)
            if isinstance(crossbar, AcquireCrossbarOp)
            for user in _users(crossbar.crossbar_id)
        ]
        for user in crossbar_users:
            if not isinstance(user, CimMatrixOp | ReleaseCrossbarOp) or user.parent is not block:
                raise fail(
                    f"{describe(user)} uses a crossbar of a device being scheduled; only cim ops in the "
                    "device's block (as their crossbar) and 'cim.release_crossbar' may"
                )
        last_cim_op = max((position[op] for op in crossbar_users if isinstance(op, CimMatrixOp)), default=-1)
        for user in crossbar_users:
            if isinstance(user, ReleaseCrossbarOp) and position[user] < last_cim_op:
                raise fail(
                    f"{describe(user)} of {describe(device)} comes before some of its cim ops; crossbars "
                    "are released after all cim ops of their device"
                )
            if isinstance(user, CimMatrixOp):
                if position[user] > position[releases[0]]:
                    raise fail(f"{describe(user)} comes after the 'cim.release_device' of its device")
                for consumer in _users(user.result):
                    if not isinstance(consumer, CimMatrixOp | BarrierOp):
                        raise fail(
                            f"{describe(consumer)} uses the future of {describe(user)}; only cim ops and "
                            "'cim.barrier' may use a future"
                        )
    return devices


def prepare_for_scheduling(device: AcquireDeviceOp) -> PreparedDevice:
    """Cinnamon's `prepareForScheduling` (its `Scheduling.h`), deterministic.

    1. Keep the first `cim.acquire_crossbar` of the device in program order (Cinnamon keeps the last
       one of MLIR's use list, which lists users newest first: the same op); redirect the others' uses
       to it and erase them and their releases.
    2. Erase every barrier of the device's cim ops and forward the futures. The futures of barriers
       with users other than the device's cim ops are the roots, in program order of the barriers;
       then, in program order, cim ops whose future is unused or used by another device's cim op.
    3. Create `cim.acquire_crossbar`s right after the device (each new one before the previous new
       ones) and their releases before `cim.release_device` until `availableCrossbarCount` exist,
       or as many as the device has cim ops if that is fewer: every strategy places an op on the
       first of the crossbars nothing distinguishes, so more would stay unused (and
       `cim-to-memristor` drops unused ones); a depthwise convolution's thousand one-tile devices
       would otherwise carry 16 acquires and releases each.
    """
    block = device.parent_block()
    assert block is not None
    release_device = next(u for u in _users(device.device_id) if isinstance(u, ReleaseDeviceOp))
    acquires = _in_program_order(
        (u for u in _users(device.device_id) if isinstance(u, AcquireCrossbarOp)), block, start=device
    )
    if acquires:
        saved = acquires[0]
    else:
        saved = AcquireCrossbarOp(device.device_id)
        Rewriter.insert_op(saved, InsertPoint.after(device))
        Rewriter.insert_op(ReleaseCrossbarOp(saved), InsertPoint.before(release_device))
    assert isinstance(saved, AcquireCrossbarOp)
    for other in acquires[1:]:
        assert isinstance(other, AcquireCrossbarOp)
        for user in _users(other.crossbar_id):
            if isinstance(user, ReleaseCrossbarOp):
                Rewriter.erase_op(user)
        other.crossbar_id.replace_all_uses_with(saved.crossbar_id)
        Rewriter.erase_op(other)

    cim_ops = _in_program_order((op for op in _users(saved.crossbar_id) if isinstance(op, CimMatrixOp)), block, device)
    on_device = set[Operation](cim_ops)
    barriers = _in_program_order(
        (user for op in cim_ops for user in _users(op.result) if isinstance(user, BarrierOp)), block, device
    )
    roots: dict[SSAValue, None] = {}
    for barrier in barriers:
        assert isinstance(barrier, BarrierOp)
        if any(user not in on_device for user in _users(barrier.result)):
            roots[barrier.value] = None
        barrier.result.replace_all_uses_with(barrier.value)
        Rewriter.erase_op(barrier)
    for op in cim_ops:
        users = _users(op.result)
        if not users or any(user not in on_device for user in users):
            roots[op.result] = None

    crossbars: list[SSAValue] = [saved.crossbar_id]
    count = min(device.available_crossbar_count.value.data, max(1, len(cim_ops)))
    while len(crossbars) < count:
        acquire = AcquireCrossbarOp(device.device_id)
        Rewriter.insert_op(acquire, InsertPoint.after(device))
        Rewriter.insert_op(ReleaseCrossbarOp(acquire), InsertPoint.before(release_device))
        crossbars.append(acquire.crossbar_id)
    releases = [user for value in crossbars for user in _users(value) if isinstance(user, ReleaseCrossbarOp)]
    return PreparedDevice(device, crossbars, list(roots), cim_ops, [*releases, release_device])


def schedule_device(
    device: AcquireDeviceOp, make_strategy: Callable[[Sequence[SSAValue]], SchedulingStrategy[SSAValue]]
) -> list[Operation]:
    """Prepare `device`, schedule its cim ops with the strategy `make_strategy` builds for its
    crossbars, and mark it fully scheduled. Returns the emitted dispatches and barriers in order."""
    prepared = prepare_for_scheduling(device)
    on_device = frozenset[Operation](prepared.cim_ops)
    hooks = SchedulingHooks[SSAValue](
        operation_filter=on_device.__contains__,
        strategy=make_strategy(prepared.crossbars).schedule,
        operation_scheduler=schedule_cim_op_on_crossbar,
        barrier_inserter=insert_barrier_for_cim_op_result,
    )
    first = prepared.cim_ops[0] if prepared.cim_ops else None
    emitted = apply_scheduling(prepared.roots, hooks, keep_after=prepared.releases, first=first)
    device.properties["isFullyScheduled"] = BoolAttr.from_bool(True)
    return emitted


@dataclass(frozen=True)
class CimSchedulePass(ModulePass):
    """Base of the `schedule-*` passes: schedules the cim ops of every device not yet fully scheduled
    on its `availableCrossbarCount` crossbars; a subclass only says which strategy to use, as its
    `scheduler` class or (for a strategy with options) its own `make_strategy`."""

    scheduler: ClassVar[type[SchedulingStrategy[SSAValue]]]

    def make_strategy(self, crossbars: Sequence[SSAValue]) -> SchedulingStrategy[SSAValue]:
        """The strategy for one device, given its crossbars `[saved, new1, new2, ...]`."""
        return self.scheduler(crossbars)

    def check_options(self) -> None:
        """Raise PassFailedException for bad options (called before the IR changes)."""

    def check_device(self, device: AcquireDeviceOp) -> None:
        """Raise PassFailedException if this pass cannot schedule `device` (before the IR changes)."""

    def schedule(self, device: AcquireDeviceOp) -> None:
        """Schedule one device (ValueError if it cannot be); a subclass may do more around it."""
        schedule_device(device, self.make_strategy)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.check_options()
        devices = check_schedulable(op, self.name)
        for device in devices:
            self.check_device(device)
        for device in devices:
            try:
                self.schedule(device)
            except ValueError as err:
                raise pass_error(self.name, f"cannot schedule {describe(device)}: {err}") from err
