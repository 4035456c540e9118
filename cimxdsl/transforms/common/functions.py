"""The functions a pass works on: those whose body holds the ops it lowers."""

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation


def functions_holding(module: ModuleOp, kind: type[Operation]) -> list[func.FuncOp]:
    """The functions of `module` (nested ones too, in walk order) with an op of type `kind` directly
    in their body, listed before the pass changes any of them."""
    return [
        f
        for f in module.walk()
        if isinstance(f, func.FuncOp) and f.body.blocks and any(isinstance(o, kind) for o in f.body.block.ops)
    ]
