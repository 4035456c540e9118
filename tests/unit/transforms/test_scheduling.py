"""The cim scheduling framework and its strategies: graph, Cinnamon's orders, valid IR for any
placement of host ops, the same results before and after, and the list scheduler's cost model."""

import functools
import itertools
import random

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith, func, tensor
from xdsl.dialects import get_all_dialects as upstream_dialects
from xdsl.dialects import test as test_dialect
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, Region
from xdsl.parser import Parser
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import PassFailedException

import cimxdsl
from cimxdsl.api import apply_passes
from cimxdsl.device import preset
from cimxdsl.dialects import get_all_dialects
from cimxdsl.dialects.cim import (
    AcquireCrossbarOp,
    AcquireDeviceOp,
    BarrierOp,
    CimMatrixOp,
    GemmOp,
    GemvOp,
    ReleaseCrossbarOp,
    ReleaseDeviceOp,
)
from cimxdsl.interpreters import run
from cimxdsl.transforms import get_all_passes
from cimxdsl.transforms.common import device_option
from cimxdsl.transforms.memristor.schedule import ScheduleListPass
from cimxdsl.transforms.memristor.scheduling import (
    AlapScheduler,
    AsapScheduler,
    CriticalPathScheduler,
    CrossbarCostModel,
    DependencyGraph,
    RoundRobinScheduler,
    Schedule,
    ScheduledOperation,
    SchedulingStrategy,
    StoredTile,
    crossbar_work,
    prepare_for_scheduling,
    restore_dominance,
    schedule_device,
    schedule_makespan_ns,
)
from cimxdsl.transforms.memristor.scheduling.critical_path import makespan_lower_bound_ns
from tests.unit.frontend.models import small_cnn
from tests.unit.helpers import matmul_program

PASSES = ("schedule-asap", "schedule-alap", "schedule-list", "schedule-round-robin")
T = "tensor<4x4xi32>"
F = "!cim.future<4x4xi32>"


# ---- helpers ------------------------------------------------------------------------------------
def context() -> Context:
    ctx = Context()
    for name, factory in {**upstream_dialects(), **get_all_dialects()}.items():
        ctx.register_dialect(name, factory)
    return ctx


def parse(text: str) -> ModuleOp:
    module = Parser(context(), text).parse_module()
    module.verify()
    return module


@functools.cache
def _parsed_once(text: str) -> ModuleOp:
    return parse(text)


def parse_copy(text: str) -> ModuleOp:
    """`parse(text)`, parsed once however many tests parse the same random program: a clone of it
    (parsing took most of the time of the tests on random programs)."""
    return _parsed_once(text).clone()


def apply(module: ModuleOp, spec: str) -> ModuleOp:
    PassPipeline.parse_spec(get_all_passes(), spec).apply(context(), module)
    module.verify()
    return module


def ops_of(module: ModuleOp, kind: type[Operation]) -> list:
    return [op for op in module.walk() if isinstance(op, kind)]


def named(module: ModuleOp, name: str) -> Operation:
    return next(op for op in module.walk() if op.results and op.results[0].name_hint == name)


def assert_dominance(module: ModuleOp) -> None:
    """Every operand is defined earlier in its block or in an enclosing one (xDSL does not check)."""

    def check(region: Region, visible: set) -> None:
        for block in region.blocks:
            seen = visible | set(block.args)
            for op in block.ops:
                for operand in op.operands:
                    assert operand in seen, f"'{op.name}' uses {operand.name_hint or operand} before its definition"
                for inner in op.regions:
                    check(inner, seen)
                seen |= set(op.results)

    check(module.body, set())


def main_block_ops(module: ModuleOp) -> list[Operation]:
    return list(next(op for op in ops_of(module, func.FuncOp) if op.sym_name.data == "main").body.block.ops)


def assert_scheduled(module: ModuleOp, cim_op_count: int) -> None:
    """Each device: fully scheduled, availableCrossbarCount crossbars released after every op; each cim
    op: one use, its barrier; no crossbar twice between barriers."""
    assert len(ops_of(module, CimMatrixOp)) == cim_op_count
    for device in ops_of(module, AcquireDeviceOp):
        assert device.is_fully_scheduled.value.data
        acquires = [use.operation for use in device.device_id.uses if isinstance(use.operation, AcquireCrossbarOp)]
        assert len(acquires) == device.available_crossbar_count.value.data
        crossbars = {a.crossbar_id for a in acquires}
        block = device.parent_block()
        order = {op: i for i, op in enumerate(block.ops)}
        cim_ops = [use.operation for x in crossbars for use in x.uses if isinstance(use.operation, CimMatrixOp)]
        releases = [use.operation for x in crossbars for use in x.uses if isinstance(use.operation, ReleaseCrossbarOp)]
        assert len(releases) == len(crossbars)
        assert all(order[r] > order[op] for r in releases for op in cim_ops)
        for op in cim_ops:
            (use,) = op.result.uses
            assert isinstance(use.operation, BarrierOp)
        busy, after_barrier = set(), False
        for op in block.ops:
            if isinstance(op, BarrierOp):
                after_barrier = True
            elif isinstance(op, CimMatrixOp) and op.crossbar_id in crossbars:
                if after_barrier:
                    busy, after_barrier = set(), False
                assert op.crossbar_id not in busy, "a crossbar runs two ops of one step"
                busy.add(op.crossbar_id)


def evaluate(module: ModuleOp, arguments: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Run `@main` of the test programs below in NumPy: the results and what `@sink` received.

    `@source` returns a different tensor at each call, so reordering calls changes the results."""
    main = next(op for op in ops_of(module, func.FuncOp) if op.sym_name.data == "main")
    env = dict(zip(main.body.block.args, arguments, strict=True))
    sunk: list[np.ndarray] = []
    sourced = itertools.count(1)
    for op in main.body.block.ops:
        values = [env[operand] for operand in op.operands]
        match op:
            case GemmOp():
                env[op.result] = values[1] @ values[2]
            case BarrierOp():
                env[op.result] = values[0]
            case arith.AddiOp():
                env[op.result] = values[0] + values[1]
            case tensor.ExtractSliceOp():
                offsets, sizes = op.static_offsets.get_values(), op.static_sizes.get_values()
                env[op.result] = values[0][tuple(slice(o, o + s) for o, s in zip(offsets, sizes, strict=True))]
            case func.CallOp() if op.callee.root_reference.data == "sink":
                sunk.append(values[0])
            case func.CallOp():
                env[op.results[0]] = np.full((4, 4), next(sourced), np.int64)
            case func.ReturnOp():
                return values, sunk
            case _:
                for result in op.results:
                    env[result] = op
    raise AssertionError("no return")


def random_program(seed: int, ops: int = 14, devices: int = 1, effects: bool = True) -> str:
    """A `@main` with `devices` devices of random cim DAGs: futures used directly and through barriers,
    host ops (sums, slices) between them and reading barrier results, calls with side effects, several
    acquired crossbars, ops without barrier, dead ops, and partial sums feeding later gemms."""
    rng = random.Random(seed)
    names = itertools.count()
    lines: list[str] = []
    tensors, weights, returned = ["%a"], ["%w0", "%w1", "%w2"], []

    def emit(line: str, prefix: str) -> str:
        name = f"%{prefix}{next(names)}"
        lines.append(f"{name} = {line}")
        return name

    for _ in range(devices):
        count = rng.randint(1, 4)
        device = emit(f"cim.acquire_device {{availableCrossbarCount = {count} : i32}} -> !cim.deviceId", "dev")
        crossbars = [
            emit(f"cim.acquire_crossbar {device} : !cim.deviceId -> !cim.crossbarId", "x")
            for _ in range(rng.randint(1, 3))
        ]
        futures: list[str] = []
        pending: list[str] = []
        for _ in range(ops):
            roll = rng.random()
            if roll < 0.25:
                tensors.append(emit(f"arith.addi {rng.choice(tensors)}, {rng.choice(tensors)} : {T}", "h"))
            elif roll < 0.4:
                row = rng.choice([0, 4, 8, 12])
                piece = emit(f"tensor.extract_slice %big[{row}, 0] [4, 4] [1, 1] : tensor<16x4xi32> to {T}", "s")
                weights.append(piece)
                tensors.append(piece)
            elif effects and roll < 0.5:
                lines.append(f"func.call @sink({rng.choice(tensors)}) : ({T}) -> ()")
            elif effects and roll < 0.6:
                tensors.append(emit(f"func.call @source() : () -> {T}", "c"))
            lhs = rng.choice(futures) if futures and rng.random() < 0.5 else rng.choice(tensors)
            rhs = rng.choice(weights) if rng.random() < 0.8 or not futures else rng.choice(futures)
            types = ", ".join(F if v in futures else T for v in (lhs, rhs))
            future = emit(f"cim.op.gemm {rng.choice(crossbars)}, {lhs}, {rhs} : !cim.crossbarId, {types} -> {F}", "f")
            futures.append(future)
            if rng.random() < 0.6:
                pending.append(future)
            for waiting in [p for p in pending if rng.random() < 0.4]:
                pending.remove(waiting)
                tensors.append(emit(f"cim.barrier {waiting} : {F} -> {T}", "t"))
                returned.append(tensors[-1])
        for waiting in pending:
            tensors.append(emit(f"cim.barrier {waiting} : {F} -> {T}", "t"))
            returned.append(tensors[-1])
        lines += [f"cim.release_crossbar {x} : !cim.crossbarId" for x in crossbars]
        lines.append(f"cim.release_device {device} : !cim.deviceId")
    returned = returned or ["%a"]
    result_types = ", ".join([T] * len(returned))
    lines.append(f"func.return {', '.join(returned)} : {result_types}")
    body = "\n    ".join(lines)
    return (
        f"func.func private @sink({T})\n"
        f"func.func private @source() -> {T}\n"
        f"func.func @main(%a: {T}, %w0: {T}, %w1: {T}, %w2: {T}, %big: tensor<16x4xi32>) -> ({result_types}) {{\n"
        f"    {body}\n}}\n"
    )


def random_arguments(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-2, 3, (4, 4)) for _ in range(4)] + [rng.integers(-2, 3, (16, 4))]


def prepared_graph(module: ModuleOp):
    """Prepare the (first) device and build its graph, without scheduling."""
    device = ops_of(module, AcquireDeviceOp)[0]
    prepared = prepare_for_scheduling(device)
    graph = DependencyGraph.build(prepared.roots, frozenset(prepared.cim_ops).__contains__)
    return prepared, graph


# ---- the passes on random programs ----------------------------------------------------------------
@pytest.mark.parametrize("spec", PASSES)
@pytest.mark.parametrize("seed", range(25))
def test_random_programs_stay_valid_and_compute_the_same(spec: str, seed: int):
    text = random_program(seed, devices=1 + seed % 2)
    arguments = random_arguments(seed)
    expected, expected_sunk = evaluate(parse_copy(text), arguments)
    module = parse_copy(text)
    count = len(ops_of(module, CimMatrixOp))
    apply(module, spec)
    assert_dominance(module)
    assert_scheduled(module, count)
    results, sunk = evaluate(module, arguments)
    assert all(np.array_equal(r, e) for r, e in zip(results, expected, strict=True))
    assert all(np.array_equal(s, e) for s, e in zip(sunk, expected_sunk, strict=True))
    assert len(sunk) == len(expected_sunk)


@pytest.mark.parametrize("strategy", [AsapScheduler, AlapScheduler, RoundRobinScheduler])
def test_host_ops_move_around_the_schedule_not_through_it(strategy: type[SchedulingStrategy]):
    """After the dominance fix-up the dispatches and barriers are still in the order emitted."""
    for seed in range(25):
        module = parse_copy(random_program(seed))
        for device in ops_of(module, AcquireDeviceOp):
            emitted = schedule_device(device, strategy)
            chain = set(emitted)
            assert [op for op in device.parent_block().ops if op in chain] == emitted
        assert_dominance(module)


def test_random_programs_really_move_ops():
    """The random programs are not trivially in order after scheduling (else the above proves little)."""
    moved = 0
    for seed in range(25):
        module = parse_copy(random_program(seed))
        before = [op.name for op in main_block_ops(module) if not isinstance(op, BarrierOp)]
        apply(module, "schedule-asap")
        after = [op.name for op in main_block_ops(module) if not isinstance(op, BarrierOp)]
        moved += before != after
    assert moved > 10


def test_scheduling_twice_changes_nothing():
    module = apply(parse(random_program(3)), "schedule-asap")
    text = str(module)
    assert str(apply(module, "schedule-list")) == text


# ---- dependency graph -----------------------------------------------------------------------------
SHARED = f"""
func.func @main(%a: {T}, %b: {T}, %c: {T}) -> ({T}, {T}) {{
  %dev = cim.acquire_device {{availableCrossbarCount = 2 : i32}} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %s = cim.op.gemm %x, %a, %b : !cim.crossbarId, {T}, {T} -> {F}
  %u = cim.op.gemm %x, %s, %b : !cim.crossbarId, {F}, {T} -> {F}
  %v = cim.op.gemm %x, %s, %c : !cim.crossbarId, {F}, {T} -> {F}
  %tu = cim.barrier %u : {F} -> {T}
  %tv = cim.barrier %v : {F} -> {T}
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %tu, %tv : {T}, {T}
}}
"""


def test_graph_has_one_node_per_cim_op():
    module = parse(SHARED)
    _, graph = prepared_graph(module)
    assert [node.operation.result.name_hint for node in graph] == ["u", "v", "s"]
    shared = graph.node(named(module, "s"))
    assert [d.operation.result.name_hint for d in shared.dependents] == ["u", "v"]
    assert all(graph.node(named(module, n)).dependencies == [shared] for n in ("u", "v"))


def test_shared_result_gets_one_barrier():
    module = apply(parse(SHARED), "schedule-asap")
    shared = named(module, "s")
    (use,) = shared.result.uses
    barrier = use.operation
    assert isinstance(barrier, BarrierOp)
    assert {u.operation.result.name_hint for u in barrier.result.uses} == {"u", "v"}


def test_dependency_through_host_ops_and_side_effects():
    module = parse(
        f"""
        func.func private @sink({T})
        func.func private @source() -> {T}
        func.func @main(%a: {T}, %b: {T}) -> ({T}, {T}, {T}) {{
          %dev = cim.acquire_device {{availableCrossbarCount = 4 : i32}} -> !cim.deviceId
          %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
          %p = cim.op.gemm %x, %a, %b : !cim.crossbarId, {T}, {T} -> {F}
          %tp = cim.barrier %p : {F} -> {T}
          %h = arith.addi %tp, %a : {T}
          %q = cim.op.gemm %x, %h, %b : !cim.crossbarId, {T}, {T} -> {F}
          func.call @sink(%tp) : ({T}) -> ()
          %c = func.call @source() : () -> {T}
          %r = cim.op.gemm %x, %c, %b : !cim.crossbarId, {T}, {T} -> {F}
          %free = cim.op.gemm %x, %a, %a : !cim.crossbarId, {T}, {T} -> {F}
          %tq = cim.barrier %q : {F} -> {T}
          %tr = cim.barrier %r : {F} -> {T}
          %tf = cim.barrier %free : {F} -> {T}
          cim.release_crossbar %x : !cim.crossbarId
          cim.release_device %dev : !cim.deviceId
          return %tq, %tr, %tf : {T}, {T}, {T}
        }}
        """
    )
    _, graph = prepared_graph(module)
    p = graph.node(named(module, "p"))
    assert graph.node(named(module, "q")).dependencies == [p]  # through arith.addi
    assert graph.node(named(module, "r")).dependencies == [p]  # @source is called after @sink(%tp)
    assert graph.node(named(module, "free")).dependencies == []


def test_unused_and_unbarriered_ops_are_scheduled_too():
    module = parse(
        f"""
        func.func @main(%a: {T}) {{
          %dev = cim.acquire_device {{availableCrossbarCount = 2 : i32}} -> !cim.deviceId
          %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
          %dead = cim.op.gemm %x, %a, %a : !cim.crossbarId, {T}, {T} -> {F}
          %p = cim.op.gemm %x, %a, %a : !cim.crossbarId, {T}, {T} -> {F}
          %q = cim.op.gemm %x, %p, %a : !cim.crossbarId, {F}, {T} -> {F}
          %tq = cim.barrier %q : {F} -> {T}
          cim.release_crossbar %x : !cim.crossbarId
          cim.release_device %dev : !cim.deviceId
          return
        }}
        """
    )
    apply(module, "schedule-asap")
    assert_scheduled(module, 3)


# ---- strategies on abstract graphs ----------------------------------------------------------------
def abstract_graph(edges: list[tuple[int, int]], size: int) -> tuple[DependencyGraph, list[Operation]]:
    ops = [test_dialect.TestOp() for _ in range(size)]
    graph = DependencyGraph()
    nodes = [graph.add(op) for op in ops]
    for dependency, dependent in edges:
        DependencyGraph.link(nodes[dependency], nodes[dependent])
    return graph, ops


def table(schedule: Schedule, ops: list[Operation]) -> list[tuple[int, str, int, int]]:
    return [(ops.index(e.operation), e.resource, e.dispatch_time, e.barrier_time) for e in schedule]


def test_asap_is_first_fit_from_resource_zero_every_step():
    graph, ops = abstract_graph([], 5)
    assert table(AsapScheduler("ab").schedule(graph), ops) == [
        (0, "a", 0, 0),
        (1, "b", 0, 0),
        (2, "a", 1, 1),
        (3, "b", 1, 1),
        (4, "a", 2, 2),
    ]


def test_alap_mirrors_asap():
    # 0 -> 1 -> 2 and 3 -> 2 (graph order 0, 1, 2, 3)
    graph, ops = abstract_graph([(0, 1), (1, 2), (3, 2)], 4)
    assert sorted(table(AsapScheduler("ab").schedule(graph), ops)) == [
        (0, "a", 0, 0),
        (1, "a", 1, 1),
        (2, "a", 2, 2),
        (3, "b", 0, 0),
    ]
    assert sorted(table(AlapScheduler("ab").schedule(graph), ops)) == [
        (0, "a", 0, 0),
        (1, "a", 1, 1),
        (2, "a", 2, 2),
        (3, "b", 1, 1),
    ]


def test_round_robin_deals_by_dependency_level():
    # 0 -> 1 -> 2 and 3, 4 independent: levels [0, 3, 4], [1], [2]
    graph, ops = abstract_graph([(0, 1), (1, 2)], 5)
    assert sorted(table(RoundRobinScheduler("ab").schedule(graph), ops)) == [
        (0, "a", 0, 0),
        (1, "b", 1, 1),
        (2, "a", 2, 2),
        (3, "b", 0, 0),
        (4, "a", 1, 1),
    ]


class EverythingAtOnce(SchedulingStrategy):
    def schedule(self, graph: DependencyGraph) -> Schedule:
        return [ScheduledOperation(node.operation, self.resources[0], 0, 0) for node in graph]


def test_a_strategy_that_breaks_dependencies_is_rejected():
    module = parse(SHARED)
    device = ops_of(module, AcquireDeviceOp)[0]
    with pytest.raises(ValueError, match="dispatched before its dependency finished"):
        schedule_device(device, EverythingAtOnce)


# ---- dominance fix-up ----------------------------------------------------------------------------
def test_restore_dominance_is_stable_and_fixes_uses_before_definitions():
    module = parse(
        f"""
        func.func @main(%a: {T}) -> {T} {{
          %b = arith.addi %a, %a : {T}
          %c = arith.addi %b, %a : {T}
          %d = arith.addi %a, %a : {T}
          return %c : {T}
        }}
        """
    )
    block = ops_of(module, func.FuncOp)[0].body.block
    b, c, d, ret = block.ops
    restore_dominance(block, [])
    assert list(block.ops) == [b, c, d, ret]
    block.detach_op(b)
    block.insert_op_after(b, d)  # c now uses %b before it is defined
    restore_dominance(block, [])
    assert list(block.ops) == [d, b, c, ret]


def test_restore_dominance_keeps_the_chain_and_side_effect_order():
    module = parse(
        f"""
        func.func private @sink({T})
        func.func @main(%a: {T}) {{
          %b = arith.addi %a, %a : {T}
          func.call @sink(%b) : ({T}) -> ()
          func.call @sink(%a) : ({T}) -> ()
          return
        }}
        """
    )
    block = ops_of(module, func.FuncOp)[1].body.block
    b, sink_b, sink_a, ret = block.ops
    block.detach_op(b)
    block.insert_op_after(b, sink_a)
    restore_dominance(block, [])
    assert list(block.ops) == [b, sink_b, sink_a, ret]  # the second call waits for the first


# ---- crossbar preparation --------------------------------------------------------------------------
def test_preparation_keeps_the_first_crossbar_and_orders_resources_like_cinnamon():
    module = parse(
        f"""
        func.func @main(%a: {T}) -> {T} {{
          %dev = cim.acquire_device {{availableCrossbarCount = 3 : i32}} -> !cim.deviceId
          %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
          %y = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
          %f = cim.op.gemm %y, %a, %a : !cim.crossbarId, {T}, {T} -> {F}
          %t = cim.barrier %f : {F} -> {T}
          %g = cim.op.gemm %y, %a, %a : !cim.crossbarId, {T}, {T} -> {F}
          %h = cim.op.gemm %x, %a, %a : !cim.crossbarId, {T}, {T} -> {F}
          cim.release_crossbar %x : !cim.crossbarId
          cim.release_crossbar %y : !cim.crossbarId
          cim.release_device %dev : !cim.deviceId
          return %t : {T}
        }}
        """
    )
    device = ops_of(module, AcquireDeviceOp)[0]
    x = named(module, "x")
    prepared = prepare_for_scheduling(device)
    acquires = ops_of(module, AcquireCrossbarOp)
    assert len(acquires) == 3 and x in acquires
    new1, new2 = (value.owner for value in prepared.crossbars[1:])
    assert prepared.crossbars[0] is x.crossbar_id
    assert acquires == [new2, new1, x]  # each new one right after the device
    assert [op.name for op in prepared.releases][-1] == ReleaseDeviceOp.name
    assert [r.crossbar_id.owner for r in ops_of(module, ReleaseCrossbarOp)] == [x, new1, new2]
    assert not ops_of(module, BarrierOp)
    assert [root.name_hint for root in prepared.roots] == ["f", "g", "h"]


def test_preparation_acquires_no_more_crossbars_than_the_device_has_products():
    module = parse(
        f"""
        func.func @main(%a: {T}) -> {T} {{
          %dev = cim.acquire_device {{availableCrossbarCount = 16 : i32}} -> !cim.deviceId
          %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
          %f = cim.op.gemm %x, %a, %a : !cim.crossbarId, {T}, {T} -> {F}
          %g = cim.op.gemm %x, %a, %a : !cim.crossbarId, {T}, {T} -> {F}
          %t = cim.barrier %f : {F} -> {T}
          cim.release_crossbar %x : !cim.crossbarId
          cim.release_device %dev : !cim.deviceId
          return %t : {T}
        }}
        """
    )
    prepared = prepare_for_scheduling(ops_of(module, AcquireDeviceOp)[0])
    assert len(prepared.crossbars) == len(ops_of(module, AcquireCrossbarOp)) == 2
    assert len(ops_of(module, ReleaseCrossbarOp)) == 2


# ---- errors -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            f"""func.func @main(%x: !cim.crossbarId, %a: {T}) {{
              %f = cim.op.gemm %x, %a, %a : !cim.crossbarId, {T}, {T} -> {F}
              return
            }}""",
            "schedule-list: cannot schedule 'cim.op.gemm' (%f): its crossbar does not come from",
        ),
        (
            f"""func.func @main(%a: {T}) {{
              %dev = cim.acquire_device {{availableCrossbarCount = 17 : i32}} -> !cim.deviceId
              cim.release_device %dev : !cim.deviceId
              return
            }}""",
            "schedule-list: 'cim.acquire_device' (%dev) asks for 17 crossbars but device 'cinnamon' has 16",
        ),
    ],
)
def test_errors_name_the_pass_and_the_op(text: str, message: str):
    module = parse(text)
    before = str(module)
    with pytest.raises(PassFailedException) as error:
        apply(module, "schedule-list{device=cinnamon}")
    assert message in str(error.value)
    assert str(module) == before  # nothing changed


def test_bad_device_option():
    with pytest.raises(PassFailedException, match="schedule-list: device config: 'preset' must be one of"):
        apply(parse(SHARED), "schedule-list{device=nothing}")


# ---- cost model and list scheduling ------------------------------------------------------------------
def test_cost_model_follows_the_device_model():
    module = parse(
        """
        func.func @main(%a: tensor<40x128xi8>, %b: tensor<128x64xi8>, %m: tensor<6x3xi8>, %v: tensor<3xi8>) {
          %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
          %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
          %g = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<40x128xi8>, tensor<128x64xi8> -> !cim.future<40x64xi32>
          %h = cim.op.gemv %x, %m, %v : !cim.crossbarId, tensor<6x3xi8>, tensor<3xi8> -> !cim.future<6xi32>
          cim.release_crossbar %x : !cim.crossbarId
          cim.release_device %dev : !cim.deviceId
          return
        }
        """
    )
    config = preset("cinnamon")
    cost = CrossbarCostModel(config)
    gemm, gemv = ops_of(module, GemmOp)[0], ops_of(module, GemvOp)[0]
    assert cost.mvm_ns(gemm) == 85.0  # Reißmann 2024, §6.3: 6 fill cycles + 80 slices - 1, at 1 ns
    assert cost.write_ns(gemm) == pytest.approx(128 * config.write_ns_per_row)
    assert cost.duration_ns(gemm, StoredTile(gemm.rhs, transposed=False)) == 85.0
    assert cost.duration_ns(gemm, None) == pytest.approx(85.0 + 128 * config.write_ns_per_row)
    work = crossbar_work(gemv)  # M·v: the matrix is stored transposed (K×M), one input vector
    assert (work.weights, work.rows, work.k, work.n) == (StoredTile(gemv.lhs, transposed=True), 1, 3, 6)
    assert cost.mvm_ns(gemv) == 6 + 2 - 1


def test_cost_model_takes_a_layers_own_input_bits():
    """cinnamon's 4-bit inputs through 2-bit DACs take 2 slices per row; a layer's 8-bit inputs 4."""
    module = parse(
        """
        func.func @main(%a: tensor<40x128xi8>, %b: tensor<128x64xi8>) {
          %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
          %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
          %g = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<40x128xi8>, tensor<128x64xi8> -> !cim.future<40x64xi32>
          %h = cim.op.gemm %x, %a, %b {weight_bits = 8 : i64, input_bits = 8 : i64} : !cim.crossbarId, tensor<40x128xi8>, tensor<128x64xi8> -> !cim.future<40x64xi32>
          cim.release_crossbar %x : !cim.crossbarId
          cim.release_device %dev : !cim.deviceId
          return
        }
        """
    )
    cost = CrossbarCostModel(preset("cinnamon"))
    plain, own = ops_of(module, GemmOp)
    assert cost.mvm_ns(plain) == 6 + 40 * 2 - 1
    assert cost.mvm_ns(own) == 6 + 40 * 4 - 1


def test_a_gemm_and_a_gemv_on_one_matrix_need_two_writes():
    """`x·W` stores W, `W·v` stores Wᵀ: a crossbar holding one must be written for the other."""
    module = parse(
        f"""
        func.func @main(%x: {T}, %w: {T}, %v: tensor<4xi32>) {{
          %dev = cim.acquire_device {{availableCrossbarCount = 1 : i32}} -> !cim.deviceId
          %c = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
          %p = cim.op.gemm %c, %x, %w : !cim.crossbarId, {T}, {T} -> {F}
          %q = cim.op.gemv %c, %w, %v : !cim.crossbarId, {T}, tensor<4xi32> -> !cim.future<4xi32>
          %r = cim.op.gemm %c, %x, %w : !cim.crossbarId, {T}, {T} -> {F}
          cim.release_crossbar %c : !cim.crossbarId
          cim.release_device %dev : !cim.deviceId
          return
        }}
        """
    )
    cost = CrossbarCostModel(preset("cinnamon"))
    p, q, r = ops_of(module, CimMatrixOp)
    write = 4 * cost.config.write_ns_per_row
    assert cost.duration_ns(q, crossbar_work(p).weights) == pytest.approx(write + cost.mvm_ns(q))
    assert cost.duration_ns(r, crossbar_work(p).weights) == cost.mvm_ns(r)
    in_order = [ScheduledOperation(op, p.crossbar_id, i, i) for i, op in enumerate((p, q, r))]
    mvms = sum(cost.mvm_ns(op) for op in (p, q, r))
    assert schedule_makespan_ns(in_order, cost) == pytest.approx(3 * write + mvms)  # W, Wᵀ, W again
    assert makespan_lower_bound_ns([p, q, r], cost, 1) == pytest.approx(2 * write + mvms)  # two tiles


def random_dag(seed: int) -> str:
    """Gemms on a random DAG of futures, shared weight tiles and inputs of 1, 4 or 16 rows."""
    rng = random.Random(seed)
    weights = rng.randint(1, 6)
    lines = [
        f"%dev = cim.acquire_device {{availableCrossbarCount = {rng.randint(1, 5)} : i32}} -> !cim.deviceId",
        "%x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId",
    ]
    futures: list[tuple[str, int]] = []
    for i in range(rng.randint(2, 30)):
        if futures and rng.random() < 0.7:
            lhs, rows = rng.choice(futures)
            lhs_type = f"!cim.future<{rows}x4xi32>"
        else:
            rows = rng.choice([1, 4, 16])
            lhs, lhs_type = f"%a{rows}", f"tensor<{rows}x4xi32>"
        lines.append(
            f"%f{i} = cim.op.gemm %x, {lhs}, %w{rng.randrange(weights)} : "
            f"!cim.crossbarId, {lhs_type}, {T} -> !cim.future<{rows}x4xi32>"
        )
        futures.append((f"%f{i}", rows))
    lines += ["cim.release_crossbar %x : !cim.crossbarId", "cim.release_device %dev : !cim.deviceId", "return"]
    arguments = [f"%a{rows}: tensor<{rows}x4xi32>" for rows in (1, 4, 16)] + [f"%w{j}: {T}" for j in range(weights)]
    return f"func.func @main({', '.join(arguments)}) {{\n" + "\n".join(lines) + "\n}"


@pytest.mark.parametrize("device", ["cinnamon", "ideal", "isaac"])
def test_list_schedule_is_never_longer_than_asap_on_random_dags(device: str):
    cost = CrossbarCostModel(preset(device))
    shorter = 0
    for seed in range(60):
        prepared, graph = prepared_graph(parse_copy(random_dag(seed)))
        scheduler = CriticalPathScheduler(prepared.crossbars, cost)
        listed = schedule_makespan_ns(scheduler.schedule(graph), cost)
        asap = schedule_makespan_ns(AsapScheduler(prepared.crossbars).schedule(graph), cost)
        assert listed == pytest.approx(scheduler.makespan_ns)  # the steps run the planned timeline
        assert listed <= asap + 1e-6, f"seed {seed}"
        shorter += listed < asap - 1e-6
    assert shorter > 20


def test_list_scheduler_reuses_the_crossbar_holding_the_weights():
    module = parse(
        f"""
        func.func @main(%a: {T}, %w0: {T}, %w1: {T}) -> ({T}, {T}) {{
          %dev = cim.acquire_device {{availableCrossbarCount = 2 : i32}} -> !cim.deviceId
          %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
          %p = cim.op.gemm %x, %a, %w1 : !cim.crossbarId, {T}, {T} -> {F}
          %q = cim.op.gemm %x, %a, %w0 : !cim.crossbarId, {T}, {T} -> {F}
          %tq = cim.barrier %q : {F} -> {T}
          %r = cim.op.gemm %x, %p, %w1 : !cim.crossbarId, {F}, {T} -> {F}
          %tr = cim.barrier %r : {F} -> {T}
          cim.release_crossbar %x : !cim.crossbarId
          cim.release_device %dev : !cim.deviceId
          return %tq, %tr : {T}, {T}
        }}
        """
    )
    text = str(module)
    listed = apply(module, "schedule-list")
    assert named(listed, "r").crossbar_id is named(listed, "p").crossbar_id
    asap = apply(parse(text), "schedule-asap")
    assert named(asap, "r").crossbar_id is not named(asap, "p").crossbar_id


class Recording(SchedulingStrategy):
    """Runs another strategy and keeps its schedule."""

    def __init__(self, inner: SchedulingStrategy):
        super().__init__(inner.resources)
        self.inner, self.result = inner, []

    def schedule(self, graph: DependencyGraph) -> Schedule:
        self.result = self.inner.schedule(graph)
        return self.result


def test_schedules_run_as_modelled_on_the_simulator():
    """A tiled layer through the real pipeline: every strategy gives the exact product, the simulator's
    latency is what the cost model says for that schedule, and the list schedule is the shortest."""
    text = matmul_program(8, 10, 8)
    rng = np.random.default_rng(1)
    x, w = rng.integers(0, 4, (8, 10)), rng.integers(0, 4, (10, 8))
    # six tiles (K = 4, 4, 2 by N = 4, 4) of different write times on four crossbars
    lowered = str(apply(parse(text), "linalg-to-cinm,tile{rows=4 cols=4},cinm-to-cim{crossbars=4}"))
    cost = CrossbarCostModel(preset("cinnamon"))
    strategies = {
        "asap": AsapScheduler,
        "alap": AlapScheduler,
        "round-robin": RoundRobinScheduler,
        "list": lambda crossbars: CriticalPathScheduler(crossbars, cost),
    }
    latency = {}
    for name, make in strategies.items():
        module = parse(lowered)
        recordings: list[Recording] = []

        def record(crossbars, make=make, recordings=recordings):
            recordings.append(Recording(make(crossbars)))
            return recordings[-1]

        (device,) = ops_of(module, AcquireDeviceOp)
        schedule_device(device, record)
        module.verify()
        assert_dominance(module)
        result = run(module, [x, w], device="cinnamon")
        assert np.array_equal(result.outputs[0], x @ w)
        latency[name] = result.device.latency_ns
        assert latency[name] == pytest.approx(schedule_makespan_ns(recordings[0].result, cost)), name
    assert latency["list"] == pytest.approx(recordings[0].inner.makespan_ns)
    assert latency["list"] <= min(latency.values())
    assert latency["list"] < latency["asap"]


def distinct_layers(seed: int) -> tuple[str, list[np.ndarray]]:
    """2–4 computes, each a gemm, a gemv or both on its own matrix, whose weights are all different
    numbers, so that no two crossbar contents are equal by chance (the device skips such a write)."""
    rng = np.random.default_rng(seed)
    arguments, inputs, body, results = [], [], [], []
    values = iter(rng.permutation(np.arange(-(2**15), 2**15)))

    def argument(name: str, shape: tuple[int, ...], unique: bool) -> str:
        size = int(np.prod(shape))
        data = np.fromiter(values, np.int64, size) if unique else rng.integers(-(2**15), 2**15, size)
        arguments.append(f"%{name}: tensor<{'x'.join(map(str, shape))}xi32>")
        inputs.append(data.reshape(shape))
        return f"%{name}"

    for c in range(rng.integers(2, 5)):
        rows, m, n = (int(d) for d in rng.integers(2, 40, 3))
        w = argument(f"w{c}", (m, n), unique=True)
        kinds = [["gemm"], ["gemv"], ["gemm", "gemv"]][rng.integers(3)]
        ops, types = [], []
        for kind in kinds:
            if kind == "gemm":
                x = argument(f"x{c}", (rows, m), unique=False)
                types.append(f"tensor<{rows}x{n}xi32>")
                ops.append(f"cinm.op.gemm {x}, {w} : (tensor<{rows}x{m}xi32>, tensor<{m}x{n}xi32>) -> {types[-1]}")
            else:
                v = argument(f"v{c}", (n,), unique=False)
                types.append(f"tensor<{m}xi32>")
                ops.append(f"cinm.op.gemv {w}, {v} : (tensor<{m}x{n}xi32>, tensor<{n}xi32>) -> {types[-1]}")
        names = [f"%p{c}_{i}" for i in range(len(ops))]
        body.append(
            f"%h{c}:{len(ops)} = cinm.compute -> {', '.join(types)} {{\n"
            + "".join(f"  {name} = {op}\n" for name, op in zip(names, ops, strict=True))
            + f"  cinm.yield {', '.join(names)} : {', '.join(types)}\n}}"
        )
        results += [(f"%h{c}#{i}", t) for i, t in enumerate(types)]
    text = (
        f"func.func @main({', '.join(arguments)}) -> ({', '.join(t for _, t in results)}) {{\n"
        + "\n".join(body)
        + f"\nfunc.return {', '.join(r for r, _ in results)} : {', '.join(t for _, t in results)}\n}}"
    )
    return text, inputs


@pytest.mark.parametrize("seed", range(6))
def test_no_strategy_beats_the_lower_bound_on_compiled_programs(seed: int):
    """`makespan_lower_bound_ns` is a bound: every strategy's simulated latency of every layer, and of
    the whole lowered program on the device's crossbars, is at least the bound of its cim ops."""
    config = preset("cinnamon").replace(name="16-bit", weight_bits=16, input_bits=16)
    cost = CrossbarCostModel(config)
    text, inputs = distinct_layers(seed)
    crossbars = [1, 3, 16][seed % 3]
    tiled = apply(parse(text), f"tile{{rows=16 cols=8}},cinm-to-cim{{crossbars={crossbars}}}")
    for strategy in ("asap", "alap", "list", "round-robin"):
        module = tiled.clone()
        layers = [
            [op for op in ops_of(module, CimMatrixOp) if op.crossbar_id.owner.device_id is device.device_id]
            for device in ops_of(module, AcquireDeviceOp)
        ]
        whole = makespan_lower_bound_ns([op for layer in layers for op in layer], cost, config.crossbars)
        apply(module, f'schedule-{strategy}{{device="cinnamon"}}' if strategy == "list" else f"schedule-{strategy}")
        scheduled = run(module, inputs, config)
        assert len(scheduled.layers) == len(layers)
        for ops, layer in zip(layers, scheduled.layers, strict=True):
            assert makespan_lower_bound_ns(ops, cost, crossbars) <= layer["latency_ns"] + 1e-6, strategy
        lowered = run(apply(module, "cim-to-memristor,memristor-to-func"), inputs, config)
        assert whole <= lowered.device.latency_ns + 1e-6, strategy
        assert lowered.device.latency_ns >= sum(layer["latency_ns"] for layer in scheduled.layers) - 1e-6


def test_the_list_pass_takes_the_device_as_an_object(monkeypatch):
    """From Python the device reaches the pass as a `DeviceConfig` (no file, nothing loaded by name);
    `cimxdsl.compile` passes its device so, and the pass prints as its option with the device's name."""
    loaded: list[str] = []
    monkeypatch.setattr(device_option, "load_device_config", lambda name: loaded.append(name) or preset(name))
    one = preset("cinnamon").replace(name="one", crossbars=1)
    with pytest.raises(PassFailedException, match="asks for 2 crossbars but device 'one' has 1"):
        apply_passes(parse(SHARED), ScheduleListPass.for_device(one))
    assert str(ScheduleListPass.for_device(one)) == 'schedule-list{device="one"}'
    compiled = cimxdsl.compile(small_cnn(), device=one, strategy="list")
    assert "cim.op.gemm" in compiled.mlir("schedule")
    assert not loaded
    apply(parse(SHARED), "schedule-list{device=cinnamon}")
    assert set(loaded) == {"cinnamon"}  # the option loads a preset or a file, as for cim-opt
