"""Replacing an op from a rewrite pattern, naming the new values as the lowerings of this package do."""

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint, Rewriter

__all__ = ["replace_op"]


def replace_op(
    rewriter: PatternRewriter,
    op: Operation,
    new_ops: Operation | Sequence[Operation],
    new_results: Sequence[SSAValue] | None = None,
) -> None:
    """Replace `op` by `new_ops` (its results by `new_results`, by default the last new op's) through
        `rewriter`. The new ops' unnamed results take the name of `op`'s first result; values that were
        there before keep theirs (`rewriter.replace` would name them after the results they replace). The
    walker is not told of the new ops and the changed users, so it does not visit them again: a lowering
    whose patterns never match what they produce saves that time."""
    new_ops = [new_ops] if isinstance(new_ops, Operation) else list(new_ops)
    if new_results is None:
        new_results = new_ops[-1].results if new_ops else []
    if len(new_results) != len(op.results):
        raise ValueError(f"'{op.name}' has {len(op.results)} results, replaced by {len(new_results)} values")
    if op.results:
        for result in (r for new_op in new_ops for r in new_op.results if r.name_hint is None):
            result.name_hint = op.results[0].name_hint
    for old, new in zip(op.results, new_results, strict=True):
        old.replace_all_uses_with(new)
    Rewriter.insert_op(new_ops, InsertPoint.before(op))
    rewriter.erase(op)
