"""`memristor-to-func`: call the crossbar runtime instead of using memristor ops.



"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from cimxdsl.dialects.memristor import MemristorOp
from cimxdsl.dialects.upstream import CastOp


def dynamic_argument(value: SSAValue) -> tuple[list[Operation], SSAValue]:
    """`value` as a runtime argument: memrefs are cast to fully dynamic shapes."""
    value_type = value.type
    if not isinstance(value_type, MemRefType):
        return [], value
    dynamic = MemRefType(value_type.element_type, [DYNAMIC_INDEX] * value_type.get_num_dims())
    cast = CastOp(value, dynamic)
    return [cast], cast.dest


@dataclass(frozen=True)
class MemristorToFuncPass(ModulePass):
    """Lower memristor ops to calls of `memristor_*` runtime functions, declared (`nested`, as
    Cinnamon declares them) at the top of the module."""

    name = "memristor-to-func"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        declared = {f.sym_name.data for f in op.body.block.ops if isinstance(f, func.FuncOp)}
        place = InsertPoint.at_start(op.body.block)  # declarations first, in order of first use, as Cinnamon
        for inner in [o for o in op.walk() if isinstance(o, MemristorOp)]:
            new_ops: list[Operation] = []
            arguments: list[SSAValue] = []
            for operand in inner.operands:
                casts, argument = dynamic_argument(operand)
                new_ops += casts
                arguments.append(argument)
            callee = inner.library_call_name()
            Rewriter.replace_op(inner, [*new_ops, func.CallOp(callee, arguments, [])])
            if callee not in declared:
                declaration = func.FuncOp.external(callee, [a.type for a in arguments], [])
                declaration.sym_visibility = StringAttr("nested")
                Rewriter.insert_op(declaration, place)
                place = InsertPoint.after(declaration)
                declared.add(callee)
