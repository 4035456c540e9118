"""`cinm-to-cim`: run each `cinm.compute` on an acquired device.

The compute's body moves in front of it between `cim.acquire_device`/`cim.acquire_crossbar` and
the matching releases. Matrix products become `cim.op.gemm`/`cim.op.gemv` returning futures; a
product that feeds another product takes the future directly, anything else waits for it with
`cim.barrier`; they keep the product's precision (`weight_bits`, `input_bits`). A bias and the element-wise ops of a tiled layer (partial-sum additions) become
host arithmetic on the barrier results; `cinm.op.im2col` stays, as host data movement, and so do
the unary and tensor-scalar element-wise ops and reductions (`cinm-to-linalg` lowers them). The
yielded values replace the compute's results. A compute placed on the host (`cimxdsl.placement =
"host"`, see `linalg-to-cinm`) stays; a placed compute's device carries its placement.
"""

from dataclasses import dataclass
from typing import cast

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, MemRefType, ModuleOp, StringAttr, TensorType
from xdsl.dialects.linalg.ops import AddOp as LinalgAddOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from cimxdsl.dialects import cim, cinm
from cimxdsl.dialects.utils import carry_precision, shaped_type
from cimxdsl.transforms.common.errors import check_choice, pass_error

HOST_ARITH: dict[type[Operation], tuple[type[Operation], type[Operation]]] = {
    cinm.AddOp: (arith.AddiOp, arith.AddfOp),
    cinm.SubOp: (arith.SubiOp, arith.SubfOp),
    cinm.MulOp: (arith.MuliOp, arith.MulfOp),
    cinm.DivOp: (arith.DivSIOp, arith.DivfOp),
}


def host_arith(kind: type[Operation], lhs: SSAValue, rhs: SSAValue) -> Operation:
    """The `arith` op computing the cinm element-wise op `kind` on tensors."""
    assert isinstance(lhs.type, TensorType)
    integer_op, float_op = HOST_ARITH[kind]
    return (integer_op if isinstance(lhs.type.element_type, IntegerType) else float_op)(lhs, rhs)


def is_stray_product(op: Operation) -> bool:
    """A matrix product outside any `cinm.compute`: nothing would offload it."""
    return isinstance(op, cinm.GemmOp | cinm.GemvOp) and cinm.enclosing_compute(op) is None


def future_of(value: SSAValue) -> SSAValue:
    """The future behind a barrier result, so that crossbar ops chain without waiting."""
    return value.owner.value if isinstance(value.owner, cim.BarrierOp) else value


@dataclass
class ProductToCim(RewritePattern):
    """A product of the compute body `block` as a crossbar op on `crossbar` whose future a barrier
    waits for; a product that feeds another takes the future directly."""

    block: Block
    crossbar: SSAValue

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cinm.GemmOp | cinm.GemvOp, rewriter: PatternRewriter):
        if op.parent_block() is not self.block:
            return
        lhs, rhs = (future_of(v) for v in (op.left, op.right))
        target = op.target.type
        assert isinstance(target, TensorType | MemRefType)
        future = shaped_type(cim.FutureType, target.element_type, target.get_shape())
        kind = cim.GemmOp if isinstance(op, cinm.GemmOp) else cim.GemvOp
        product = kind.create(operands=[self.crossbar, lhs, rhs], result_types=[future])  # (one per tile)
        if cinm.LAYER in op.attributes:
            product.attributes[cinm.LAYER] = op.attributes[cinm.LAYER]
        carry_precision(op, product)
        result = product.results[0]
        barrier = cim.BarrierOp.create(operands=[result], result_types=[cim.barrier_type(future, type(target))])
        new_ops: list[Operation] = [product, barrier]
        if op.out is not None:  # the buffer form: out += product (+ bias)
            for addend in (barrier.result, op.bias):
                if addend is not None:
                    new_ops.append(LinalgAddOp((op.out, addend), (op.out,), res=()))
        elif op.bias is not None:
            new_ops.append(host_arith(cinm.AddOp, barrier.result, op.bias))
        rewriter.replace(op, new_ops, [new_ops[-1].results[0]] if op.results else [])


@dataclass
class HostOpsOfCompute(RewritePattern):
    """The other cinm ops of the compute body `block`: element-wise binary ops as host arithmetic;
    data movement (im2col), unary and tensor-scalar element-wise ops and reductions stay as they are
    (host ops); any other cinm op is an error."""

    block: Block

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if op.parent_block() is not self.block or op.dialect_name() != "cinm" or isinstance(op, cinm.YieldOp):
            return
        if isinstance(op, cinm.AddOp | cinm.SubOp | cinm.MulOp | cinm.DivOp):
            rewriter.replace(op, host_arith(type(op), op.lhs, op.rhs))
        elif not isinstance(op, HOST_CINM | cinm.GemmOp | cinm.GemvOp):
            raise pass_error("cinm-to-cim", f"cannot lower '{op.name}' to the cim dialect")


HOST_CINM = cinm.Im2colOp | cinm.ElementwiseBufferOp | cinm.ElementWiseOp | cinm.ElementwiseScalarOp | cinm.ReduceOp
"""The cinm ops that stay as host ops"""


@dataclass
class ComputeToCim(RewritePattern):
    """A compute's body, lowered by the patterns above, in its place between the acquired device and
    crossbar and their releases; the yielded values replace its results. Computes are lowered one
    after the other, so that a product takes the future of an earlier compute's product. With
    `shared` crossbars (by block), a compute's products go on its block's shared device instead,
    each marked with its layer (`cimxdsl.layer`)."""

    crossbars: int
    shared: dict[Block, SSAValue] | None = None

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cinm.ComputeOp, rewriter: PatternRewriter):
        where = cinm.placement(op)
        if where == "host":
            return
        body = op.body.block
        if self.shared is not None:
            block = op.parent_block()
            assert block is not None
            crossbar_id = self.shared[block]
            layer = StringAttr(cinm.layer_name(op))
            for product in body.ops:
                if isinstance(product, cinm.GemmOp | cinm.GemvOp):
                    product.attributes[cinm.LAYER] = layer
            self.lower_body(op, crossbar_id, rewriter)
            rewriter.replace(op, [], list(cast(cinm.YieldOp, body.last_op).values))
            return
        device = cim.AcquireDeviceOp(self.crossbars)
        if where is not None:
            device.attributes[cinm.PLACEMENT] = op.attributes[cinm.PLACEMENT]
        if op.results and op.results[0].name_hint:
            device.device_id.name_hint = f"{op.results[0].name_hint}_dev"
        crossbar = cim.AcquireCrossbarOp(device)
        rewriter.insert([device, crossbar], InsertPoint.before(op))
        self.lower_body(op, crossbar.crossbar_id, rewriter)
        yield_op = body.last_op
        assert isinstance(yield_op, cinm.YieldOp)
        results = list(yield_op.values)
        release = [cim.ReleaseCrossbarOp(crossbar), cim.ReleaseDeviceOp(device)]
        rewriter.replace(op, release, results)
        for barrier in [o for o in op_list_between(device, release[0]) if isinstance(o, cim.BarrierOp)]:
            if not barrier.result.uses:
                rewriter.erase(barrier)

    @staticmethod
    def lower_body(op: cinm.ComputeOp, crossbar: SSAValue, rewriter: PatternRewriter) -> None:
        """The compute's body lowered and moved in front of it (its yield stays)."""
        body = op.body.block
        patterns = [ProductToCim(body, crossbar), HostOpsOfCompute(body)]
        applier = GreedyRewritePatternApplier(patterns, dce_enabled=False)
        # the rewriter listens, so that the walker over the whole module forgets the ops replaced here
        PatternRewriteWalker(applier, apply_recursively=False, listener=rewriter).rewrite_region(op.body)
        for inner in list(body.ops)[:-1]:
            inner.detach()
            rewriter.insert(inner, InsertPoint.before(op))


def op_list_between(first: Operation, last: Operation) -> list[Operation]:
    ops = []
    current = first.next_op
    while current is not None and current is not last:
        ops.append(current)
        current = current.next_op
    return ops


@dataclass(frozen=True)
class CinmToCimPass(ModulePass):
    """Lower `cinm.compute` regions to `cim` devices, crossbars, futures and barriers.

    `crossbars` is the number of crossbars each device offers to the scheduler. `devices=layer`
    acquires a device per compute (a layer), `devices=model` one per block of computes (a
    function's body, say): its crossbars are shared by the layers, whose products a cross-layer
    scheduler (`schedule-clsa`) interleaves; each product then names its layer (`cimxdsl.layer`)."""

    name = "cinm-to-cim"

    crossbars: int = 1
    devices: str = "layer"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.crossbars < 1:
            raise pass_error(self.name, f"option 'crossbars' must be at least 1, got {self.crossbars}")
        check_choice(self.name, "devices", self.devices, ("layer", "model"))
        stray = next((o for o in op.walk() if is_stray_product(o)), None)
        if stray is not None:
            raise pass_error(
                self.name,
                "a matrix product outside any cinm.compute would not be offloaded (run cinm-isolate-compute first)",
                stray,
            )
        shared = shared_devices(op, self.crossbars) if self.devices == "model" else None
        PatternRewriteWalker(ComputeToCim(self.crossbars, shared), apply_recursively=False).rewrite_module(op)


def shared_devices(module: ModuleOp, crossbars: int) -> dict[Block, SSAValue]:
    """A device with `crossbars` crossbars for each block with computes to lower, acquired before
    its first and released after its last; its crossbar, by block."""
    computes: dict[Block, list[cinm.ComputeOp]] = {}
    for compute in module.walk():
        if isinstance(compute, cinm.ComputeOp) and cinm.placement(compute) != "host":
            block = compute.parent_block()
            assert block is not None
            computes.setdefault(block, []).append(compute)
    shared: dict[Block, SSAValue] = {}
    for block, ops in computes.items():
        device = cim.AcquireDeviceOp(crossbars)
        device.device_id.name_hint = "model_dev"
        crossbar = cim.AcquireCrossbarOp(device)
        Rewriter.insert_op([device, crossbar], InsertPoint.before(ops[0]))
        Rewriter.insert_op([cim.ReleaseCrossbarOp(crossbar), cim.ReleaseDeviceOp(device)], InsertPoint.after(ops[-1]))
        shared[block] = crossbar.crossbar_id
    return shared
