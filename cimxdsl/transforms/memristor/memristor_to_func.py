"""`memristor-to-func`: call the crossbar runtime instead of using memristor ops.

Each memristor op becomes a `func.call` of its runtime function (`memristor_gemm_i32`, ...), its
memref operands cast to fully dynamic shapes; the functions are declared at the top of the module.
A call keeps the op's precision attributes (`weight_bits`, `input_bits`), which the runtime reads.
"""

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint, Rewriter

from cimxdsl.dialects.memristor import MemristorOp
from cimxdsl.dialects.upstream import CastOp
from cimxdsl.dialects.utils import carry_precision, identity_cache, shaped_type
from cimxdsl.transforms.common.rewriting import replace_op


@identity_cache
def dynamic_memref(value_type: MemRefType) -> MemRefType:
    """`value_type` with every dimension dynamic (one attribute per element type and rank)."""
    return shaped_type(MemRefType, value_type.element_type, (DYNAMIC_INDEX,) * value_type.get_num_dims())


@dataclass
class MemristorOpToCall(RewritePattern):
    """A memristor op as a call of its runtime function, whose declaration it collects (in order of
    first use) in `declarations`. Its memref operands are cast to fully dynamic shapes. Each
    dynamic type (`dynamic_memref`) and callee reference (`callees`) is built once, and the casts
    and calls are created from their parts (`create`: one per tile operand and op, all alike)."""

    declarations: dict[str, func.FuncOp] = field(default_factory=dict[str, func.FuncOp])
    callees: dict[str, SymbolRefAttr] = field(default_factory=dict[str, SymbolRefAttr])

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MemristorOp, rewriter: PatternRewriter) -> None:
        new_ops: list[Operation] = []
        arguments: list[SSAValue] = []
        for operand in op.operands:
            operand_type = operand.type
            if isinstance(operand_type, MemRefType):
                cast = CastOp.create(operands=[operand], result_types=[dynamic_memref(operand_type)])
                new_ops.append(cast)
                operand = cast.results[0]
            arguments.append(operand)
        callee = op.library_call_name()
        reference = self.callees.get(callee)
        if reference is None:
            reference = self.callees[callee] = SymbolRefAttr(callee)
        call = func.CallOp.create(operands=arguments, properties={"callee": reference})
        carry_precision(op, call)
        replace_op(rewriter, op, [*new_ops, call])
        if callee not in self.declarations:
            declaration = func.FuncOp.external(callee, [a.type for a in arguments], [])
            declaration.sym_visibility = StringAttr("nested")
            self.declarations[callee] = declaration


@dataclass(frozen=True)
class MemristorToFuncPass(ModulePass):
    """Lower memristor ops to calls of `memristor_*` runtime functions, declared (`nested`, as
    Cinnamon declares them) at the top of the module."""

    name = "memristor-to-func"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        to_call = MemristorOpToCall()
        PatternRewriteWalker(to_call, apply_recursively=False).rewrite_module(op)
        declared = {f.sym_name.data for f in op.body.block.ops if isinstance(f, func.FuncOp)}
        new = [d for name, d in to_call.declarations.items() if name not in declared]
        Rewriter.insert_op(new, InsertPoint.at_start(op.body.block))  # in order of first use, as Cinnamon
