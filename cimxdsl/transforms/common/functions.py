"""The functions a pass works on: those whose body holds the ops it lowers."""

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation


def functions_holding(module: ModuleOp, kind: type[Operation]) -> list[func.FuncOp]:
    """The functions of `module` (nested ones too, in walk order) with an op of type `kind` directly
    in their body, listed before the pass changes any of them."""
    return [f for f in functions_in(module) if f.body.blocks and any(isinstance(o, kind) for o in f.body.block.ops)]


def function_notes(module: ModuleOp, name: str) -> list[str]:
    """The string attribute `name` of each function of `module` that has one (a pass's summary)."""
    notes = [function.attributes.get(name) for function in functions_in(module)]
    return [note.data for note in notes if isinstance(note, StringAttr)]


def functions_in(op: Operation) -> list[func.FuncOp]:
    """The functions inside `op` in walk order, not looking into their bodies (a function's body
    holds no function, and walking the lowered layers' bodies costs as much as a pass)."""
    found = []
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                if isinstance(inner, func.FuncOp):
                    found.append(inner)
                elif inner.regions:
                    found += functions_in(inner)
    return found
