"""`cinm-isolate-compute`: wrap `cinm` ops that sit outside any `cinm.compute` in one.

Only the ops inside a `cinm.compute` are offloaded by `cinm-to-cim` and `cinm-to-spatial`, so a
stray `cinm.op.gemm` would otherwise stay a host op. Each run of consecutive stray `cinm` ops of a
block becomes one compute, yielding the values used after the run (as Cinnamon's compute-block
isolation does). Ops already inside a compute are left alone.
"""

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from cimxdsl.dialects import cinm


def is_stray(op: Operation) -> bool:
    """A `cinm` op (not a compute or yield) with no `cinm.compute` around it."""
    if not op.name.startswith("cinm.op."):
        return False
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, cinm.ComputeOp):
            return False
        parent = parent.parent_op()
    return True


def stray_runs(block: Block) -> Iterator[list[Operation]]:
    """Maximal runs of consecutive stray `cinm` ops of `block`."""
    run: list[Operation] = []
    for op in block.ops:
        if is_stray(op):
            run.append(op)
            continue
        if run:
            yield run
        run = []
    if run:
        yield run


def escaping_results(run: list[Operation]) -> list[SSAValue]:
    """Results of the run that an op outside it uses."""
    inside = set(run)
    return [
        result for op in run for result in op.results if any(not _within(use.operation, inside) for use in result.uses)
    ]


def _within(op: Operation | None, ops: set[Operation]) -> bool:
    """Whether `op` is one of `ops` or nested in one of them."""
    while op is not None:
        if op in ops:
            return True
        op = op.parent_op()
    return False


def isolate(run: list[Operation]) -> cinm.ComputeOp:
    """Move `run` into a new `cinm.compute` in its place; later uses take the compute's results."""
    escaping = escaping_results(run)
    compute = cinm.ComputeOp([v.type for v in escaping], Region(Block()))
    Rewriter.insert_op(compute, InsertPoint.before(run[0]))
    body = compute.body.block
    for op in run:
        op.detach()
        body.add_op(op)
    body.add_op(cinm.YieldOp(*escaping))
    for value, result in zip(escaping, compute.results, strict=True):
        value.replace_uses_with_if(result, lambda use: not _within(use.operation, {compute}))
    return compute


@dataclass(frozen=True)
class CinmIsolateComputePass(ModulePass):
    """Wrap every run of `cinm` ops outside a `cinm.compute` in a compute of its own."""

    name = "cinm-isolate-compute"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        blocks = dict.fromkeys(o.parent_block() for o in op.walk() if is_stray(o))
        for block in blocks:
            for run in list(stray_runs(block)):
                isolate(run)
