"""`cinm-isolate-compute`: wrap matrix products that sit outside any `cinm.compute` in one.

Only the ops inside a `cinm.compute` are offloaded by `cinm-to-cim`, so a stray `cinm.op.gemm`
would otherwise stay a host op. Each run of consecutive stray ops that `cinm-to-cim` lowers
(products, the element-wise ops around them, im2col) becomes one compute if it holds a product,
yielding the values used after the run (as Cinnamon's compute-block isolation does). Ops already
inside a compute, and the host-side ops of quantized programs (quantize, dequantize), stay.
A `cinm.compute_block` (Cinnamon's compute isolated from above) becomes a `cinm.compute` first.
"""

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from cimxdsl.dialects import cinm
from cimxdsl.transforms.cinm_to_cim import HOST_ARITH, is_stray_product

GROUPED = (cinm.GemmOp, cinm.GemvOp, cinm.Im2colOp, *HOST_ARITH)
"""The ops a compute around a product takes along."""


def stray_runs(block: Block) -> Iterator[list[Operation]]:
    """Maximal runs of consecutive `GROUPED` ops of `block` outside any compute, with a product."""
    run: list[Operation] = []
    for op in [*block.ops, None]:
        if op is not None and isinstance(op, GROUPED) and cinm.enclosing_compute(op) is None:
            run.append(op)
            continue
        if any(is_stray_product(o) for o in run):
            yield run
        run = []


def _within(op: Operation | None, ops: set[Operation]) -> bool:
    """Whether `op` is one of `ops` or nested in one of them."""
    while op is not None:
        if op in ops:
            return True
        op = op.parent_op()
    return False


def escaping_results(run: list[Operation]) -> list[SSAValue]:
    """Results of the run that an op outside it uses."""
    inside = set(run)
    return [
        result for op in run for result in op.results if any(not _within(use.operation, inside) for use in result.uses)
    ]


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


def open_compute_block(op: cinm.ComputeBlockOp) -> cinm.ComputeOp:
    """`op` as a `cinm.compute` in its place: its body arguments replaced by the values they name."""
    block = op.body.block
    for argument, value in zip(block.args, op.arguments, strict=True):
        argument.replace_all_uses_with(value)
    for argument in reversed(block.args):
        block.erase_arg(argument)
    compute = cinm.ComputeOp([r.type for r in op.results], op.detach_region(op.body))
    compute.properties |= op.properties
    compute.attributes |= op.attributes
    Rewriter.replace_op(op, compute)
    return compute


@dataclass(frozen=True)
class CinmIsolateComputePass(ModulePass):
    """Wrap every run of `cinm` ops with a matrix product outside a `cinm.compute` in a compute (and
    turn every `cinm.compute_block` into a `cinm.compute`)."""

    name = "cinm-isolate-compute"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for compute_block in [o for o in op.walk() if isinstance(o, cinm.ComputeBlockOp)]:
            open_compute_block(compute_block)
        blocks = dict.fromkeys(o.parent_block() for o in op.walk() if is_stray_product(o))
        for block in blocks:
            for run in list(stray_runs(block)):
                isolate(run)
