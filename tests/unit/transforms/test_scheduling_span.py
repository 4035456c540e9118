"""Scheduling a device looks only at its span (first to last cim op), not the whole block: the same IR
as the whole-block analysis and re-sort (`apply_scheduling` without `first`), and a fall-back to the
whole block when hooks reach outside the span."""

import pytest
from xdsl.dialects.builtin import BoolAttr
from xdsl.ir import Operation
from xdsl.rewriter import Rewriter

from cimxdsl.dialects.cim import AcquireCrossbarOp, AcquireDeviceOp, CimMatrixOp
from cimxdsl.transforms.memristor.scheduling import (
    AlapScheduler,
    AsapScheduler,
    RoundRobinScheduler,
    SchedulingHooks,
    SchedulingStrategy,
    apply_scheduling,
    framework,
    prepare_for_scheduling,
    schedule_device,
)
from cimxdsl.transforms.memristor.scheduling.framework import (
    check_schedulable,
    insert_barrier_for_cim_op_result,
    schedule_cim_op_on_crossbar,
)
from tests.unit.transforms.test_scheduling import (
    F,
    T,
    assert_dominance,
    named,
    ops_of,
    parse,
    parse_copy,
    random_program,
)


def schedule_whole_block(device: AcquireDeviceOp, strategy: type[SchedulingStrategy]) -> list[Operation]:
    """`schedule_device` analysing and re-sorting the whole block (no `first`)."""
    prepared = prepare_for_scheduling(device)
    hooks = SchedulingHooks(
        operation_filter=frozenset[Operation](prepared.cim_ops).__contains__,
        strategy=strategy(prepared.crossbars).schedule,
        operation_scheduler=schedule_cim_op_on_crossbar,
        barrier_inserter=insert_barrier_for_cim_op_result,
    )
    emitted = apply_scheduling(prepared.roots, hooks, keep_after=prepared.releases)
    device.properties["isFullyScheduled"] = BoolAttr.from_bool(True)
    return emitted


@pytest.fixture
def whole_block_sorts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How often `apply_scheduling` re-sorts a whole block (each call appends the block's length)."""
    calls: list[int] = []
    whole = framework.restore_dominance

    def counting(block, chain, keep_after=()):
        calls.append(len(block.ops))
        whole(block, chain, keep_after)

    monkeypatch.setattr(framework, "restore_dominance", counting)
    return calls


@pytest.mark.parametrize("strategy", [AsapScheduler, AlapScheduler, RoundRobinScheduler])
@pytest.mark.parametrize("seed", range(40))
def test_span_gives_the_same_ir_as_the_whole_block(
    strategy: type[SchedulingStrategy], seed: int, whole_block_sorts: list[int]
):
    text = random_program(seed, ops=8 + seed % 20, devices=1 + seed % 4, effects=seed % 5 != 0)
    span, whole = parse_copy(text), parse_copy(text)
    for device in check_schedulable(span, "test"):
        schedule_device(device, strategy)
    assert whole_block_sorts == []
    for device in check_schedulable(whole, "test"):
        schedule_whole_block(device, strategy)
    assert str(span) == str(whole)
    assert_dominance(span)


LATE = f"""
func.func @main(%a: {T}, %b: {T}) -> ({T}, {T}) {{
  %dev = cim.acquire_device {{availableCrossbarCount = 1 : i32}} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %z = arith.addi %b, %b : {T}
  %h = arith.addi %a, %b : {T}
  %p = cim.op.gemm %x, %a, %b : !cim.crossbarId, {T}, {T} -> {F}
  %tp = cim.barrier %p : {F} -> {T}
  %q = cim.op.gemm %x, %h, %b : !cim.crossbarId, {T}, {T} -> {F}
  %tq = cim.barrier %q : {F} -> {T}
  %late = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  cim.release_crossbar %late : !cim.crossbarId
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %tp, %tq : {T}, {T}
}}
"""


def schedule_late(resource: str, keep_after: str | None, first: bool) -> str:
    """Schedule the cim ops of `LATE` (barriers taken out) on `resource`, keeping `keep_after` after
    them, with or without `first`."""
    module = parse(LATE)
    cim_ops = ops_of(module, CimMatrixOp)
    crossbar = named(module, resource)
    assert isinstance(crossbar, AcquireCrossbarOp)
    for barrier in [use.operation for op in cim_ops for use in op.result.uses]:
        barrier.results[0].replace_all_uses_with(barrier.operands[0])
        Rewriter.erase_op(barrier)
    hooks = SchedulingHooks(
        operation_filter=frozenset[Operation](cim_ops).__contains__,
        strategy=AsapScheduler([crossbar.crossbar_id]).schedule,
        operation_scheduler=schedule_cim_op_on_crossbar,
        barrier_inserter=insert_barrier_for_cim_op_result,
    )
    kept = [named(module, keep_after)] if keep_after else []
    apply_scheduling([op.result for op in cim_ops], hooks, kept, cim_ops[0] if first else None)
    assert_dominance(module)
    return str(module)


def test_the_span_is_enough_for_hooks_that_stay_inside_it(whole_block_sorts: list[int]):
    assert schedule_late("x", None, first=True) == schedule_late("x", None, first=False)
    assert len(whole_block_sorts) == 1  # the one without `first`


def test_a_resource_defined_after_the_span_falls_back_to_the_whole_block(whole_block_sorts: list[int]):
    text = schedule_late("late", None, first=True)
    assert len(whole_block_sorts) == 1
    assert text == schedule_late("late", None, first=False)
    assert text.index("%late = cim.acquire_crossbar") < text.index("cim.op.gemm")


def test_an_op_to_keep_after_the_chain_before_the_span_falls_back_to_the_whole_block(whole_block_sorts: list[int]):
    text = schedule_late("x", "z", first=True)
    assert len(whole_block_sorts) == 1
    assert text == schedule_late("x", "z", first=False)
    assert text.index("cim.barrier") < text.index("arith.addi %b, %b")


def device_layers(count: int) -> str:
    """`count` copies of one device with host ops between its cim ops, each using the previous result."""
    lines, previous = [], "%a"
    for i in range(count):
        lines += [
            f"%dev{i} = cim.acquire_device {{availableCrossbarCount = 2 : i32}} -> !cim.deviceId",
            f"%x{i} = cim.acquire_crossbar %dev{i} : !cim.deviceId -> !cim.crossbarId",
            f"%p{i} = cim.op.gemm %x{i}, {previous}, %w : !cim.crossbarId, {T}, {T} -> {F}",
            f"%tp{i} = cim.barrier %p{i} : {F} -> {T}",
            f"%h{i} = arith.addi %tp{i}, %w : {T}",
            f"%q{i} = cim.op.gemm %x{i}, %h{i}, %w : !cim.crossbarId, {T}, {T} -> {F}",
            f"%r{i} = cim.op.gemm %x{i}, {previous}, %h{i} : !cim.crossbarId, {T}, {T} -> {F}",
            f"%tq{i} = cim.barrier %q{i} : {F} -> {T}",
            f"%tr{i} = cim.barrier %r{i} : {F} -> {T}",
            f"%s{i} = arith.addi %tq{i}, %tr{i} : {T}",
            f"cim.release_crossbar %x{i} : !cim.crossbarId",
            f"cim.release_device %dev{i} : !cim.deviceId",
        ]
        previous = f"%s{i}"
    body = "\n  ".join(lines)
    return f"func.func @main(%a: {T}, %w: {T}) -> {T} {{\n  {body}\n  return {previous} : {T}\n}}"


def test_scheduling_a_device_costs_the_same_however_long_the_block(monkeypatch: pytest.MonkeyPatch):
    """Ops whose operands the analysis and the re-sort look up, scheduling one device of a short and
    of a long block: the same number."""
    looked_at: list[Operation] = []
    definers = framework._definers_in_block

    def counting(operation, block):
        looked_at.append(operation)
        return definers(operation, block)

    monkeypatch.setattr(framework, "_definers_in_block", counting)
    counts = []
    for layers in (2, 20):
        module = parse(device_layers(layers))
        devices = check_schedulable(module, "test")
        looked_at.clear()
        schedule_device(devices[1], AsapScheduler)
        counts.append(len(looked_at))
        assert_dominance(module)
    assert counts[0] == counts[1] < 40
