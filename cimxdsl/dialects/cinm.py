"""The `cinm` dialect: high-level, device-agnostic compute-in-memory operations on tensors.

Op names, operands and assembly formats follow the Cinnamon compiler's `cinm` dialect, so IR
written for Cinnamon parses here. Two of Cinnamon's bugs are fixed on purpose: the result of
`cinm.op.gemv` has the matrix's row count, and `cinm.op.gemm` may accumulate into a wider
integer type (`i8 x i8 -> i32`), which quantized crossbar programs need.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    AnyFloat,
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, Operation, Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    Commutative,
    EffectInstance,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryEffect,
    MemoryEffectKind,
    Pure,
    ReturnLike,
    SameOperandsAndResultType,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from cimxdsl.dialects.utils import (
    element_type,
    is_accumulator_type,
    shape_of,
    symmetric_limit,
    verify_precision,
    verify_yielded,
)

NOTILE = "cinm.notile"
"""Unit attribute marking a cinm op the tiler must leave alone."""
PLACEMENT = "cimxdsl.placement"
"""On a `cinm.compute` of run-time products (and the device it becomes): where they run, `host`
(the digital unit) or `crossbar`."""
LAYER = "cimxdsl.layer"
"""On a product placed on the host once its compute is lowered (`cinm-to-linalg`): the name of the
compute's layer (`layer_name`), which the runtime records the product under."""
LAYER_PRODUCT = "cimxdsl.layer_product"
"""On such a product: its index and the number of products of its layer (the first starts the
layer's record, the last ends it)."""


class ScanMethod(StrEnum):
    ADD = "add"
    MUL = "mul"


class ReduceMethod(StrEnum):
    """The thesis-era methods, and the `arith`-named ones of Cinnamon's main branch (`maxnumf`:
    the largest number, NaN ignored; `maxsi`/`maxui`: signed/unsigned integer maximum)."""

    ADD = "add"
    MUL = "mul"
    MAX = "max"
    MIN = "min"
    MAXNUMF = "maxnumf"
    MINNUMF = "minnumf"
    MAXSI = "maxsi"
    MINSI = "minsi"
    MAXUI = "maxui"
    MINUI = "minui"


class SimilarityMetric(StrEnum):
    DOT = "dot"
    COS = "cos"


class ElementwiseKind(StrEnum):
    """The unary functions of linalg's `UnaryFn`, as Cinnamon re-uses them."""

    EXP = "exp"
    LOG = "log"
    ABS = "abs"
    CEIL = "ceil"
    FLOOR = "floor"
    NEGF = "negf"
    RECIPROCAL = "reciprocal"
    ROUND = "round"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    SQUARE = "square"
    TANH = "tanh"
    ERF = "erf"


@irdl_attr_definition
class ScanMethodAttr(EnumAttribute[ScanMethod], SpacedOpaqueSyntaxAttribute):
    name = "cinm.scan_method"


@irdl_attr_definition
class ReduceMethodAttr(EnumAttribute[ReduceMethod], SpacedOpaqueSyntaxAttribute):
    name = "cinm.reduce_method"


@irdl_attr_definition
class SimilarityMetricAttr(EnumAttribute[SimilarityMetric], SpacedOpaqueSyntaxAttribute):
    name = "cinm.similarity_metric"


@irdl_attr_definition
class ElementwiseKindAttr(EnumAttribute[ElementwiseKind], SpacedOpaqueSyntaxAttribute):
    name = "cinm.elemwise_kind"


def verify_accumulator_type(op_name: str, operand_type: Attribute, result_type: Attribute) -> None:
    if is_accumulator_type(operand_type, result_type):
        return
    raise VerifyException(
        f"'{op_name}' result element type {result_type} cannot hold products of {operand_type} "
        "(it must be the same type or a wider integer)"
    )


_COMPUTE_DEFAULTS = {
    "workgroupShape": DenseArrayBase.from_list(i64, (2, 32, 16)),
    "bufferSizesInBytes": DenseArrayBase.from_list(i64, (0, 65536, 0)),
}


_TARGETS = ("platform", "accelerator")
"""Where Cinnamon says a compute runs: `on platform #p` (a platform) or `on accelerator #a` (an
array of its units, `#upmem.array<…>`)."""


def _parse_platform(parser: Parser) -> tuple[str, Attribute] | None:
    """Cinnamon's `on platform #attr` or `on accelerator #attr` prefix of a compute, if present."""
    if parser.parse_optional_keyword("on") is None:
        return None
    target = parser.parse_optional_keyword("platform") or parser.parse_optional_keyword("accelerator")
    if target is None:
        parser.raise_error("expected 'platform' or 'accelerator' after 'on'")
    return target, parser.parse_attribute()


def _parse_compute_tail(parser: Parser) -> tuple[list[Attribute], dict[str, Attribute]]:
    """`(attributes {…})? (-> types)? (attributes {…})?`: attributes before the result types (thesis
    era) or after them (Cinnamon's main branch)."""
    attributes = parser.parse_optional_attr_dict_with_keyword()
    result_types = []
    if parser.parse_optional_punctuation("->") is not None:
        result_types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
    if attributes is None:
        attributes = parser.parse_optional_attr_dict_with_keyword()
    return result_types, dict(attributes.data) if attributes is not None else {}


def _set_compute_attributes(
    op: Operation, platform: tuple[str, Attribute] | None, attributes: dict[str, Attribute]
) -> None:
    if platform is not None:
        op.properties[platform[0]] = platform[1]
    for name, value in attributes.items():
        if name in _COMPUTE_DEFAULTS or name in _TARGETS:
            op.properties[name] = value
        else:
            op.attributes[name] = value


def _print_compute(printer: Printer, op: Operation, arguments: Sequence[tuple[SSAValue, SSAValue]]) -> None:
    """`(on platform #p)? ((%arg = %value : type, …))? attributes {…} (-> types)? region`; the
    arguments are those of `cinm.compute_block`."""
    for target in _TARGETS:
        if (where := op.properties.get(target)) is not None:
            printer.print_string(f" on {target} ")
            printer.print_attribute(where)
    if arguments:
        printer.print_string(" (")

        def print_argument(pair: tuple[SSAValue, SSAValue]) -> None:
            printer.print_block_argument(pair[0], print_type=False)
            printer.print_string(" = ")
            printer.print_operand(pair[1])
            printer.print_string(" : ")
            printer.print_attribute(pair[1].type)

        printer.print_list(arguments, print_argument)
        printer.print_string(")")
    shown = {
        name: value
        for name, value in op.properties.items()
        if name in _COMPUTE_DEFAULTS and value != _COMPUTE_DEFAULTS[name]
    }
    printer.print_op_attributes(shown | dict(op.attributes), print_keyword=True)
    if op.results:
        printer.print_string(" -> ")
        printer.print_list([r.type for r in op.results], printer.print_attribute)
    printer.print_string(" ")
    printer.print_region(op.regions[0], print_entry_block_args=False)


class ComputeBase(IRDLOperation):
    """The properties, results and body shared by `cinm.compute` and `cinm.compute_block`."""

    workgroup_shape = prop_def(
        DenseArrayBase.constr(i64), default_value=_COMPUTE_DEFAULTS["workgroupShape"], prop_name="workgroupShape"
    )
    buffer_sizes_in_bytes = prop_def(
        DenseArrayBase.constr(i64),
        default_value=_COMPUTE_DEFAULTS["bufferSizesInBytes"],
        prop_name="bufferSizesInBytes",
    )
    platform = opt_prop_def(Attribute)
    """The platform Cinnamon's `on platform #…` names; kept, not used (this flow targets crossbars)."""
    accelerator = opt_prop_def(Attribute)
    """The array of units Cinnamon's `on accelerator #…` names; kept, not used."""
    results_ = var_result_def()
    body = region_def("single_block")


@irdl_op_definition
class ComputeOp(ComputeBase):
    """A region of cinm ops offloaded together; its results are yielded by `cinm.yield`."""

    name = "cinm.compute"

    def __init__(self, result_types: Sequence[Attribute], body: Region):
        super().__init__(result_types=[result_types], regions=[body])

    def verify_(self) -> None:
        verify_yielded(self, YieldOp, self.results)

    @classmethod
    def parse(cls, parser: Parser) -> ComputeOp:
        """`(on platform #p)?`, then `attributes {…}` before `-> types` (thesis era) or after them
        (Cinnamon's main branch)."""
        platform = _parse_platform(parser)
        result_types, attributes = _parse_compute_tail(parser)
        op = cls(result_types, parser.parse_region())
        _set_compute_attributes(op, platform, attributes)
        return op

    def print(self, printer: Printer) -> None:
        _print_compute(printer, self, [])


@irdl_op_definition
class ComputeBlockOp(ComputeBase):
    """Cinnamon's compute isolated from above: `cinm.compute_block (on platform #p)? (%a = %v : T, …)
    -> types attributes {…} { … }`; the body sees the operands only through its arguments.
    `cinm-isolate-compute` turns it into a `cinm.compute` (arguments replaced by the operands)."""

    name = "cinm.compute_block"

    arguments = var_operand_def()

    traits = traits_def(IsolatedFromAbove())

    def __init__(self, arguments: Sequence[SSAValue], result_types: Sequence[Attribute], body: Region):
        super().__init__(operands=[arguments], result_types=[result_types], regions=[body])

    def verify_(self) -> None:
        argument_types = [a.type for a in self.body.block.args]
        if argument_types != [v.type for v in self.arguments]:
            raise VerifyException("'cinm.compute_block' body arguments must have the types of its operands")
        verify_yielded(self, YieldOp, self.results)

    @classmethod
    def parse(cls, parser: Parser) -> ComputeBlockOp:
        platform = _parse_platform(parser)

        def argument() -> tuple[Parser.Argument, SSAValue]:
            name = parser.parse_argument(expect_type=False)
            parser.parse_punctuation("=")
            value = parser.parse_unresolved_operand()
            parser.parse_punctuation(":")
            value_type = parser.parse_type()
            return name.resolve(value_type), parser.resolve_operand(value, value_type)

        pairs = parser.parse_optional_comma_separated_list(Parser.Delimiter.PAREN, argument) or []
        result_types, attributes = _parse_compute_tail(parser)
        body = parser.parse_region([a for a, _ in pairs])
        op = cls([v for _, v in pairs], result_types, body)
        _set_compute_attributes(op, platform, attributes)
        return op

    def print(self, printer: Printer) -> None:
        _print_compute(printer, self, list(zip(self.body.block.args, self.arguments, strict=True)))


@irdl_op_definition
class MergePartialOp(IRDLOperation):
    """`cinm.op.mergePartial`, declared by Cinnamon's main branch without operands or results (its
    definition's description swallows them) and without semantics; parsed and printed generically
    only, so that IR naming it round-trips. It cannot run or be lowered."""

    name = "cinm.op.mergePartial"

    inputs = var_operand_def()
    outputs = var_result_def()


def placement(op: Operation | None) -> str | None:
    """The `cimxdsl.placement` of `op` (None when it has none)."""
    attr = None if op is None else op.attributes.get(PLACEMENT)
    return attr.data if isinstance(attr, StringAttr) else None


def layer_name(compute: Operation) -> str:
    """The name a compute's layer is recorded under: its first result's name."""
    return (compute.results[0].name_hint if compute.results else None) or "layer"


def on_host(op: Operation) -> bool:
    """Whether `op` is in a compute placed on the host's digital unit."""
    return placement(enclosing_compute(op)) == "host"


def enclosing_compute(op: Operation) -> ComputeOp | None:
    """The `cinm.compute` `op` is nested in, if any."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ComputeOp):
        parent = parent.parent_op()
    return parent


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Returns values from a `cinm.compute`."""

    name = "cinm.yield"

    values = var_operand_def()

    traits = lazy_traits_def(lambda: (Pure(), HasParent(ComputeOp, ComputeBlockOp), ReturnLike(), IsTerminator()))
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])


def _parse_into(parser: Parser) -> UnresolvedOperand | None:
    """Cinnamon's main-branch destination operand (`into %out`)."""
    return parser.parse_unresolved_operand() if parser.parse_optional_keyword("into") is not None else None


def _resolve_into(
    parser: Parser, out: UnresolvedOperand | None, out_type: Attribute | None, op_name: str
) -> SSAValue | None:
    """The `into` destination: a memref (Cinnamon's buffer form, which writes into it) is returned;
    a tensor is checked and dropped, since for tensors Cinnamon's `into` is only a bufferization hint
    (the result may reuse the destination's buffer) and values are the same without it."""
    if out is None:
        return None
    if out_type is None:
        parser.raise_error(f"'{op_name}' with 'into' needs the destination's type ('into' type)")
    value = parser.resolve_operand(out, out_type)
    return value if isinstance(out_type, MemRefType) else None


class BufferFormEffects(MemoryEffect):
    """No effect on tensors; in the buffer form (no result) the op reads its operands and writes its
    destination, so it is never removed as dead."""

    @classmethod
    def get_effects(cls, op: Operation) -> AbstractSet[EffectInstance]:
        if op.results:
            return frozenset()
        return frozenset((EffectInstance(MemoryEffectKind.READ), EffectInstance(MemoryEffectKind.WRITE)))


def _parse_product(parser: Parser, op_name: str) -> tuple[list[SSAValue], SSAValue | None, Attribute | None, dict]:
    """Operands, buffer, result type and attributes of a gemm/gemv in either generation of Cinnamon's
    syntax: `%a, %b (plus %c)? attr-dict : (ta, tb) -> t` (thesis era; the bias has the result type) or
    `%a, %b (plus %c)? (into %d)? attr-dict : ta, tb (plus tc)? (into td)? (-> t)?` (its main branch;
    no result when `%d` is a memref)."""
    names = [parser.parse_unresolved_operand()]
    parser.parse_punctuation(",")
    names.append(parser.parse_unresolved_operand())
    if parser.parse_optional_keyword("plus") is not None:
        names.append(parser.parse_unresolved_operand())
    out = _parse_into(parser)
    attributes = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    parenthesized = parser.parse_optional_punctuation("(") is not None
    types = [parser.parse_type()]
    parser.parse_punctuation(",")
    types.append(parser.parse_type())
    out_type = None
    if parenthesized:
        parser.parse_punctuation(")")
    else:
        if parser.parse_optional_keyword("plus") is not None:
            types.append(parser.parse_type())
        if parser.parse_optional_keyword("into") is not None:
            out_type = parser.parse_type()
    buffer = _resolve_into(parser, out, out_type, op_name)
    result_type = None
    if buffer is None or parser.parse_optional_punctuation("->") is not None:
        if buffer is None:
            parser.parse_punctuation("->")
        result_type = parser.parse_type()
    if len(names) == 3 and len(types) == 2 and result_type is not None:
        types.append(result_type)
    if len(types) != len(names):
        parser.raise_error("a bias type ('plus' type) needs a bias operand ('plus' operand)")
    operands = [parser.resolve_operand(n, t) for n, t in zip(names, types, strict=True)]
    return operands, buffer, result_type, attributes


def _print_product(printer: Printer, op: ProductOp) -> None:
    """The thesis-era form on tensors, which cimxdsl prints: `%a, %b (plus %c)? attr-dict : (ta, tb) -> t`;
    the buffer form in Cinnamon's main-branch syntax: `%a, %b (plus %c)? into %d attr-dict : ta, tb
    (plus tc)? into td`."""
    printer.print_string(" ")
    printer.print_operand(op.left)
    printer.print_string(", ")
    printer.print_operand(op.right)
    if op.bias is not None:
        printer.print_string(" plus ")
        printer.print_operand(op.bias)
    if op.out is not None:
        printer.print_string(" into ")
        printer.print_operand(op.out)
    printer.print_op_attributes(op.attributes)
    if op.out is None:
        printer.print_string(" : (")
        printer.print_list([op.left.type, op.right.type], printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(op.results[0].type)
        return
    printer.print_string(" : ")
    printer.print_list([op.left.type, op.right.type], printer.print_attribute)
    for keyword, value in (("plus", op.bias), ("into", op.out)):
        if value is not None:
            printer.print_string(f" {keyword} ")
            printer.print_attribute(value.type)


class ProductOp(IRDLOperation):
    """Base of `cinm.op.gemm` and `cinm.op.gemv`: `left · right (+ bias)`, the bias of the result's
    type. On tensors the product is the result. In Cinnamon's buffer form (memrefs, no result) it is
    added into the `out` memref: `out += left · right (+ bias)`.

    Operands: left, right, bias?, out?. As in Cinnamon, `operandSegmentSizes` tells them apart; it is
    only stored (and printed in the generic form) when there is an `out`, so that the thesis era's
    generic form (left, right, bias?) stays valid."""

    operands_ = var_operand_def(TensorType | MemRefType)
    segment_sizes = opt_prop_def(DenseArrayBase.constr(i32), prop_name="operandSegmentSizes")
    result = opt_result_def(TensorType)

    traits = traits_def(BufferFormEffects())

    def __init__(
        self,
        left: SSAValue | Operation,
        right: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
        result_type: Attribute | None = None,
        out: SSAValue | Operation | None = None,
    ):
        extra = [v for v in (bias, out) if v is not None]
        properties = {}
        result_types = []
        if out is not None:
            properties["operandSegmentSizes"] = DenseArrayBase.from_list(i32, (1, 1, int(bias is not None), 1))
        else:
            result_types = [result_type or self.inferred_type(SSAValue.get(left).type, SSAValue.get(right).type)]
        super().__init__(operands=[[left, right, *extra]], result_types=[result_types], properties=properties)

    @staticmethod
    def inferred_type(left: Attribute, right: Attribute) -> TensorType:
        """The result type of `left · right`: abstract here, defined by `GemmOp` and `GemvOp`."""
        raise NotImplementedError(f"{ProductOp.__name__} is abstract")

    def sizes(self) -> tuple[int, ...]:
        """How many operands are left, right, bias and out."""
        if self.segment_sizes is not None:
            return tuple(self.segment_sizes.get_values())
        return (1, 1, len(self.operands) - 2, 0)

    def _operand(self, segment: int) -> SSAValue | None:
        sizes = self.sizes()
        return self.operands[sum(sizes[:segment])] if sizes[segment] else None

    @property
    def left(self) -> SSAValue:
        return self.operands[0]

    @property
    def right(self) -> SSAValue:
        return self.operands[1]

    @property
    def bias(self) -> SSAValue | None:
        return self._operand(2)

    @property
    def out(self) -> SSAValue | None:
        """The memref the buffer form adds the product into (None on tensors)."""
        return self._operand(3)

    @property
    def target(self) -> SSAValue:
        """Where the product goes: the result, or the buffer form's `out`."""
        return self.out if self.result is None else self.result

    def verify_forms(self) -> None:
        """The operand segments, and one form: tensors with a result, or memrefs into `out`; its
        precision attributes (`weight_bits`, `input_bits`), if any, in range."""
        verify_precision(self)
        sizes = self.sizes()
        if len(sizes) != 4 or sizes[:2] != (1, 1) or not set(sizes[2:]) <= {0, 1} or sum(sizes) != len(self.operands):
            raise VerifyException(
                f"'{self.name}' takes left, right, an optional bias and an optional 'into' buffer, "
                f"got {len(self.operands)} operands with segment sizes {list(sizes)}"
            )
        kind = MemRefType if self.out is not None else TensorType
        if (self.result is None) != (self.out is not None) or not all(isinstance(v.type, kind) for v in self.operands):
            raise VerifyException(
                f"'{self.name}' operands must be tensors with a result, or memrefs adding into an 'into' memref "
                "(Cinnamon's buffer form) without one"
            )
        if self.bias is not None and self.bias.type != self.target.type:
            raise VerifyException(f"'{self.name}' bias type {self.bias.type} must be the result type {self.target.type}")

    @classmethod
    def parse(cls, parser: Parser) -> ProductOp:
        operands, out, result_type, attributes = _parse_product(parser, cls.name)
        op = cls(*operands[:2], operands[2] if len(operands) == 3 else None, result_type, out)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        _print_product(printer, self)


@irdl_op_definition
class GemmOp(ProductOp):
    """`result = left · right (+ bias)`: a matrix-matrix product, the op crossbars compute."""

    name = "cinm.op.gemm"

    @staticmethod
    def inferred_type(left: Attribute, right: Attribute) -> TensorType:
        assert isinstance(left, TensorType) and isinstance(right, TensorType)
        return TensorType(left.element_type, (left.get_shape()[0], right.get_shape()[1]))

    def verify_(self) -> None:
        self.verify_forms()
        left, right, result = shape_of(self.left), shape_of(self.right), shape_of(self.target)
        if len(left) != 2 or len(right) != 2 or len(result) != 2:
            raise VerifyException("'cinm.op.gemm' operands and result must be matrices (rank 2)")
        if element_type(self.left) != element_type(self.right):
            raise VerifyException("'cinm.op.gemm' left and right must have the same element type")
        verify_accumulator_type(self.name, element_type(self.left), element_type(self.target))
        if left[1] != right[0]:
            raise VerifyException(
                f"'cinm.op.gemm' inner dimensions differ: left is {left[0]}x{left[1]}, right is {right[0]}x{right[1]}"
            )
        if result != (left[0], right[1]):
            raise VerifyException(f"'cinm.op.gemm' result must be {left[0]}x{right[1]}, got {result[0]}x{result[1]}")


@irdl_op_definition
class GemvOp(ProductOp):
    """`result = left · right (+ bias)`: a matrix (M×K) times a vector (K) gives a vector (M)."""

    name = "cinm.op.gemv"

    @staticmethod
    def inferred_type(left: Attribute, right: Attribute) -> TensorType:
        assert isinstance(left, TensorType)
        return TensorType(left.element_type, (left.get_shape()[0],))

    def verify_(self) -> None:
        self.verify_forms()
        left, right, result = shape_of(self.left), shape_of(self.right), shape_of(self.target)
        if len(left) != 2 or len(right) != 1:
            raise VerifyException("'cinm.op.gemv' left must be a matrix (rank 2) and right a vector (rank 1)")
        if len(result) != 1:
            raise VerifyException("'cinm.op.gemv' result must be a vector (rank 1)")
        if element_type(self.left) != element_type(self.right):
            raise VerifyException("'cinm.op.gemv' left and right must have the same element type")
        verify_accumulator_type(self.name, element_type(self.left), element_type(self.target))
        if left[1] != right[0]:
            raise VerifyException(
                f"'cinm.op.gemv' inner dimensions differ: matrix is {left[0]}x{left[1]}, vector has {right[0]}"
            )
        if result[0] != left[0]:
            raise VerifyException(
                f"'cinm.op.gemv' result must have {left[0]} elements (the matrix rows), got {result[0]}"
            )


def output_pixels(input_shape, kernel, strides, dilations) -> tuple[int, int]:
    """`(OH, OW)`: the windows of `kernel` along the height and width of an NCHW input (< 1 if it does not fit)."""
    oh, ow = ((size - d * (k - 1) - 1) // s + 1 for size, k, s, d in zip(input_shape[2:], kernel, strides, dilations))
    return oh, ow


def im2col_shape(input_shape, kernel, strides, dilations) -> tuple[int, int] | None:
    """`(N·OH·OW, C·KH·KW)` of the patch matrix of an NCHW input, or None if the kernel does not fit."""
    n, c, _, _ = input_shape
    out = output_pixels(input_shape, kernel, strides, dilations)
    if min(out) < 1:
        return None
    return n * out[0] * out[1], c * kernel[0] * kernel[1]


@irdl_op_definition
class Im2colOp(IRDLOperation):
    """The patches of an NCHW image as rows of a matrix, so a convolution becomes a gemm.

    Row `(n, oy, ox)` holds the input window of output pixel `(oy, ox)` of image `n`, in column
    order `(c, ky, kx)`: the order of an FCHW weight reshaped to `F × (C·KH·KW)` (then transposed).
    Padding is applied before (`tensor.pad`)."""

    name = "cinm.op.im2col"

    kernel = prop_def(DenseArrayBase.constr(i64))
    strides = prop_def(DenseArrayBase.constr(i64), default_value=DenseArrayBase.from_list(i64, (1, 1)))
    dilations = prop_def(DenseArrayBase.constr(i64), default_value=DenseArrayBase.from_list(i64, (1, 1)))
    input = operand_def(TensorType)
    result = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(
        self,
        input: SSAValue | Operation,
        kernel: Sequence[int],
        strides: Sequence[int] = (1, 1),
        dilations: Sequence[int] = (1, 1),
    ):
        input_type = SSAValue.get(input).type
        assert isinstance(input_type, TensorType)
        shape = im2col_shape(input_type.get_shape(), kernel, strides, dilations)
        assert shape is not None, "the kernel does not fit the image"
        super().__init__(
            operands=[input],
            result_types=[TensorType(input_type.element_type, shape)],
            properties={
                "kernel": DenseArrayBase.from_list(i64, kernel),
                "strides": DenseArrayBase.from_list(i64, strides),
                "dilations": DenseArrayBase.from_list(i64, dilations),
            },
        )

    def output_size(self) -> tuple[int, int]:
        """`(OH, OW)`: the output image whose pixels are the rows, per batch image."""
        geometry = [a.get_values() for a in (self.kernel, self.strides, self.dilations)]
        return output_pixels(shape_of(self.input), *geometry)

    def verify_(self) -> None:
        shape = shape_of(self.input)
        if len(shape) != 4:
            raise VerifyException(f"'cinm.op.im2col' input must be an NCHW image (rank 4), got rank {len(shape)}")
        geometry = [tuple(a.get_values()) for a in (self.kernel, self.strides, self.dilations)]
        if any(len(g) != 2 or min(g) < 1 for g in geometry):
            raise VerifyException("'cinm.op.im2col' kernel, strides and dilations must be two positive integers")
        expected = im2col_shape(shape, *geometry)
        if expected is None:
            raise VerifyException(
                f"'cinm.op.im2col' kernel {list(geometry[0])} does not fit the {shape[2]}x{shape[3]} image"
            )
        if shape_of(self.result) != expected or element_type(self.result) != element_type(self.input):
            raise VerifyException(
                f"'cinm.op.im2col' result must be {expected[0]}x{expected[1]} of {element_type(self.input)}, "
                f"got {self.result.type}"
            )


class ScaleOp(IRDLOperation):
    """Base of quantize/dequantize: a per-tensor (one value) or per-channel (`axis`) float scale."""

    scale = prop_def(DenseIntOrFPElementsAttr)
    axis = prop_def(IntegerAttr[I64], default_value=IntegerAttr(1, i64))
    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def verify_scale(self) -> None:
        shape = shape_of(self.input)
        count = len(self.scale)
        if count == 1:
            return
        axis = self.axis.value.data
        if not 0 <= axis < len(shape) or shape[axis] != count:
            raise VerifyException(
                f"'{self.name}' has {count} scales, which must match dimension {axis} of {self.input.type}"
            )


@irdl_op_definition
class QuantizeOp(ScaleOp):
    """`round(x / scale)` clamped to `bits`-bit integers: signed and symmetric
    (`±(2^(bits-1) - 1)`, and `±1` for one bit: a ternary sign), or unsigned (`0 … 2^bits - 1`)
    for non-negative data."""

    name = "cinm.op.quantize"

    bits = prop_def(IntegerAttr[I64], default_value=IntegerAttr(8, i64))
    signed = prop_def(BoolAttr, default_value=BoolAttr.from_bool(True))

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def code_range(self) -> tuple[int, int]:
        """The smallest and largest code: `±(2^(bits-1) - 1)` signed (±1 for one bit), `0 … 2^bits - 1` unsigned."""
        bits = self.bits.value.data
        limit = symmetric_limit(bits)
        return (-limit, limit) if self.signed.value else (0, 2**bits - 1)

    def __init__(
        self,
        input: SSAValue | Operation,
        scale,
        result_type: Attribute,
        bits: int = 8,
        signed: bool = True,
        axis: int = 1,
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "scale": scale,
                "axis": IntegerAttr(axis, i64),
                "bits": IntegerAttr(bits, i64),
                "signed": BoolAttr.from_bool(signed),
            },
        )

    def verify_(self) -> None:
        self.verify_scale()
        if not isinstance(element_type(self.result), IntegerType):
            raise VerifyException("'cinm.op.quantize' result must be a tensor of integers")
        if shape_of(self.result) != shape_of(self.input):
            raise VerifyException("'cinm.op.quantize' result must have the input's shape")
        bits = self.bits.value.data
        width = element_type(self.result).width.data
        if not 1 <= bits <= width:
            raise VerifyException(f"'cinm.op.quantize' bits must be in 1..{width}, got {bits}")


@irdl_op_definition
class DequantizeOp(ScaleOp):
    """`x · scale`: integers (a crossbar's accumulated products) back to floats."""

    name = "cinm.op.dequantize"

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(
        self, input: SSAValue | Operation, scale: DenseIntOrFPElementsAttr, result_type: Attribute, axis: int = 1
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"scale": scale, "axis": IntegerAttr(axis, i64)},
        )

    def verify_(self) -> None:
        self.verify_scale()
        if shape_of(self.result) != shape_of(self.input):
            raise VerifyException("'cinm.op.dequantize' result must have the input's shape")


class ElementwiseBinaryOp(IRDLOperation):
    """Base of the element-wise tensor-tensor ops."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)

    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        super().__init__(operands=[lhs, rhs], result_types=[SSAValue.get(lhs).type])


@irdl_op_definition
class AddOp(ElementwiseBinaryOp):
    """Element-wise `lhs + rhs`."""

    name = "cinm.op.add"
    traits = traits_def(Pure(), Commutative(), SameOperandsAndResultType())


@irdl_op_definition
class SubOp(ElementwiseBinaryOp):
    """Element-wise `lhs - rhs`."""

    name = "cinm.op.sub"
    traits = traits_def(Pure(), SameOperandsAndResultType())


@irdl_op_definition
class MulOp(ElementwiseBinaryOp):
    """Element-wise `lhs * rhs`."""

    name = "cinm.op.mul"
    traits = traits_def(Pure(), Commutative(), SameOperandsAndResultType())


@irdl_op_definition
class DivOp(ElementwiseBinaryOp):
    """Element-wise `lhs / rhs`."""

    name = "cinm.op.div"
    traits = traits_def(Pure(), SameOperandsAndResultType())


UNARY_SPELLINGS = {"neg": ElementwiseKind.NEGF} | {kind.value: kind for kind in ElementwiseKind}
"""Cinnamon's main-branch unary kinds of `cinm.op.elementwise`, as `cinm.op.element_wise` methods."""


_BINARY_KINDS = ("add", "sub", "mul", "div")


@irdl_op_definition
class ElementwiseBufferOp(IRDLOperation):
    """`cinm.op.elementwise kind %a(, %b)? (into %o)? : T (into T)?`, the element-wise ops as
    Cinnamon's main branch spells them. On tensors, binary kinds parse into `cinm.op.add` (`sub`,
    `mul`, `div`) and unary ones into `cinm.op.element_wise` (`neg` is `negf`), which cimxdsl prints;
    a tensor destination (`into`, a bufferization hint) is dropped. The buffer form (memrefs, `into`
    a memref: `out = a kind b`, no result) is kept as this op, printed in the same syntax."""

    name = "cinm.op.elementwise"

    kind = prop_def(StringAttr)
    operands_ = var_operand_def(MemRefType)
    """lhs, rhs (binary kinds only), out"""

    traits = traits_def(BufferFormEffects())

    def __init__(self, kind: str, inputs: Sequence[SSAValue], out: SSAValue):
        super().__init__(operands=[[*inputs, out]], properties={"kind": StringAttr(kind)})

    @property
    def inputs(self) -> Sequence[SSAValue]:
        return self.operands[:-1]

    @property
    def out(self) -> SSAValue:
        return self.operands[-1]

    def verify_(self) -> None:
        kind = self.kind.data
        if kind not in _BINARY_KINDS and kind not in UNARY_SPELLINGS:
            raise VerifyException(
                f"'{self.name}' kind must be one of {', '.join([*_BINARY_KINDS, *UNARY_SPELLINGS])}, got '{kind}'"
            )
        count = 2 if kind in _BINARY_KINDS else 1
        if len(self.inputs) != count:
            raise VerifyException(f"'{self.name}' {kind} takes {count} operand(s) and an 'into' memref")
        if any(v.type != self.out.type for v in self.inputs) and kind in _BINARY_KINDS:
            raise VerifyException(f"'{self.name}' operands and 'into' memref must have the same type")
        if shape_of(self.inputs[0]) != shape_of(self.out):
            raise VerifyException(f"'{self.name}' 'into' memref must have the operands' shape")

    @classmethod
    def parse(cls, parser: Parser) -> Operation:
        binary = dict(zip(_BINARY_KINDS, (AddOp, SubOp, MulOp, DivOp), strict=True))
        kind = parser.parse_identifier()
        if kind not in binary and kind not in UNARY_SPELLINGS:
            parser.raise_error(
                f"'cinm.op.elementwise' kind must be one of {', '.join([*binary, *UNARY_SPELLINGS])}, got '{kind}'"
            )
        operands = [parser.parse_unresolved_operand()]
        if kind in binary:
            parser.parse_punctuation(",")
            operands.append(parser.parse_unresolved_operand())
        out = _parse_into(parser)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        operand_type = parser.parse_type()
        out_type = parser.parse_type() if parser.parse_optional_keyword("into") is not None else None
        buffer = _resolve_into(parser, out, out_type, cls.name)
        values = [parser.resolve_operand(o, operand_type) for o in operands]
        if buffer is not None:
            op = cls(kind, values, buffer)
        elif kind in binary:
            op = binary[kind](*values)
        else:
            op = ElementWiseOp.create(
                operands=values,
                result_types=[operand_type],
                properties={"method": ElementwiseKindAttr(UNARY_SPELLINGS[kind])},
            )
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(" into ")
        printer.print_operand(self.out)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.inputs[0].type)
        printer.print_string(" into ")
        printer.print_attribute(self.out.type)


class ElementwiseScalarOp(IRDLOperation):
    """Base of the tensor-scalar ops: `rhs` has the element type of `lhs`."""

    lhs = operand_def(TensorType)
    rhs = operand_def()
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        super().__init__(operands=[lhs, rhs], result_types=[SSAValue.get(lhs).type])

    def verify_(self) -> None:
        if self.result.type != self.lhs.type:
            raise VerifyException(f"'{self.name}' result type must match lhs type {self.lhs.type}")
        if self.rhs.type != element_type(self.lhs):
            raise VerifyException(
                f"'{self.name}' rhs must have the element type of lhs ({element_type(self.lhs)}), got {self.rhs.type}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> ElementwiseScalarOp:
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        lhs_type = parser.parse_type()
        if not isinstance(lhs_type, TensorType):
            parser.raise_error(f"'{cls.name}' expects a tensor type, got {lhs_type}")
        op = cls(parser.resolve_operand(lhs, lhs_type), parser.resolve_operand(rhs, lhs_type.element_type))
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)


@irdl_op_definition
class AddsOp(ElementwiseScalarOp):
    """`lhs + rhs` for every element of `lhs`."""

    name = "cinm.op.adds"


@irdl_op_definition
class SubsOp(ElementwiseScalarOp):
    """`lhs - rhs` for every element of `lhs`."""

    name = "cinm.op.subs"


@irdl_op_definition
class MulsOp(ElementwiseScalarOp):
    """`lhs * rhs` for every element of `lhs`."""

    name = "cinm.op.muls"


@irdl_op_definition
class DivsOp(ElementwiseScalarOp):
    """`lhs / rhs` for every element of `lhs`."""

    name = "cinm.op.divs"


@irdl_op_definition
class ElementWiseOp(IRDLOperation):
    """A unary function (`exp`, `tanh`, ...) applied to every element."""

    name = "cinm.op.element_wise"

    T: ClassVar = VarConstraint("T", base(TensorType))
    method = prop_def(ElementwiseKindAttr)
    input = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure(), SameOperandsAndResultType())
    assembly_format = "$method `(` $input `)` attr-dict `:` type($input)"


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """Reduces `input` with `method` along `dimensions` (default: the last one)."""

    name = "cinm.op.reduce"

    method = prop_def(ReduceMethodAttr)
    dimensions = prop_def(DenseArrayBase.constr(i64), default_value=DenseArrayBase.from_list(i64, (-1,)))
    input = operand_def(TensorType)
    result = result_def()

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())
    assembly_format = "$method `(` $input `)` attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, method: ReduceMethodAttr, dimensions: DenseArrayBase, result_type: Attribute):
        super().__init__(
            operands=[input], result_types=[result_type], properties={"method": method, "dimensions": dimensions}
        )

    def verify_(self) -> None:
        shape = shape_of(self.input)
        if not shape:
            raise VerifyException("'cinm.op.reduce' input must have rank 1 or more")
        for d in self.dimensions.get_values():
            if not -len(shape) <= d < len(shape):
                raise VerifyException(f"'cinm.op.reduce' dimension {d} is out of range for rank {len(shape)}")
        result_type = self.result.type
        result_element = result_type.element_type if isinstance(result_type, TensorType) else result_type
        if result_element != element_type(self.input):
            raise VerifyException(
                f"'cinm.op.reduce' result element type {result_element} must match the input's "
                f"{element_type(self.input)}"
            )
        method = self.method.data
        is_float = isinstance(element_type(self.input), AnyFloat)
        if (method.endswith("f") and not is_float) or (method.endswith(("si", "ui")) and is_float):
            kind = "floats" if method.endswith("f") else "integers"
            raise VerifyException(f"'cinm.op.reduce' method '{method}' reduces {kind}, got {self.input.type}")
        dimensions = self.dimensions.get_values()
        reduced = {d % len(shape) for d in dimensions}
        if len(reduced) != len(dimensions):
            raise VerifyException(f"'cinm.op.reduce' dimensions must be distinct, got {list(dimensions)}")
        kept = [size for i, size in enumerate(shape) if i not in reduced]
        if (list(result_type.get_shape()) if isinstance(result_type, TensorType) else []) != kept:
            raise VerifyException(
                f"'cinm.op.reduce' result must have shape {kept} (the input's without the reduced dimensions), "
                f"got {result_type}"
            )


@irdl_op_definition
class ScanOp(IRDLOperation):
    """Inclusive prefix scan of `input` with `method`."""

    name = "cinm.op.scan"

    T: ClassVar = VarConstraint("T", base(TensorType))
    method = prop_def(ScanMethodAttr)
    input = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure(), SameOperandsAndResultType())
    assembly_format = "$method `(` $input `)` attr-dict `:` type($input)"


@irdl_op_definition
class TopKOp(IRDLOperation):
    """The `k` largest values of `input` and their indices."""

    name = "cinm.op.topK"

    input = operand_def(TensorType)
    k = operand_def(i64)
    result_values = result_def(TensorType)
    result_indices = result_def(TensorType)

    traits = traits_def(Pure())
    assembly_format = "$k `(` $input `)` attr-dict `:` type($input) `->` type($result_values) `,` type($result_indices)"

    def verify_(self) -> None:
        values = self.result_values.type
        indices = self.result_indices.type
        assert isinstance(values, TensorType) and isinstance(indices, TensorType)
        if values.element_type != element_type(self.input):
            raise VerifyException("'cinm.op.topK' values must have the input's element type")
        if not isinstance(indices.element_type, IndexType):
            raise VerifyException("'cinm.op.topK' indices must be a tensor of index")


@irdl_op_definition
class SimSearchOp(IRDLOperation):
    """The `k` entries of `left` most similar to `right` under `metric`: values and indices."""

    name = "cinm.op.simSearch"

    metric = prop_def(SimilarityMetricAttr)
    k = prop_def(IntegerAttr)
    left = operand_def(TensorType)
    right = operand_def(TensorType)
    result_values = result_def(TensorType)
    result_indices = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, metric: SimilarityMetric, k: int, left: SSAValue, right: SSAValue):
        element = element_type(left)
        super().__init__(
            operands=[left, right],
            result_types=[TensorType(element, (DYNAMIC_INDEX,)), TensorType(IndexType(), (DYNAMIC_INDEX,))],
            properties={"metric": SimilarityMetricAttr(metric), "k": IntegerAttr(k, i64)},
        )

    def verify_(self) -> None:
        if self.left.type != self.right.type:
            raise VerifyException("'cinm.op.simSearch' left and right must have the same type")

    @classmethod
    def parse(cls, parser: Parser) -> SimSearchOp:
        metric = SimilarityMetricAttr.parse_parameter(parser)
        k = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_punctuation("(")
        left = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        right = parser.parse_unresolved_operand()
        parser.parse_punctuation(")")
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        operand_type = parser.parse_type()
        op = cls(metric, k, parser.resolve_operand(left, operand_type), parser.resolve_operand(right, operand_type))
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.metric.data} {self.k.value.data}(")
        printer.print_operand(self.left)
        printer.print_string(", ")
        printer.print_operand(self.right)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.left.type)


@irdl_op_definition
class TransposeOp(IRDLOperation):
    """Permutes the dimensions of `input1` by `perms` (generic syntax only, as in Cinnamon)."""

    name = "cinm.op.transpose"

    input1 = operand_def(TensorType)
    perms = operand_def(TensorType)
    output = result_def(TensorType)

    traits = traits_def(Pure())


@irdl_op_definition
class PopCountOp(IRDLOperation):
    """Counts the set bits of a tensor of i1 (generic syntax only, as in Cinnamon)."""

    name = "cinm.op.popCount"

    left = operand_def(TensorType)
    result = result_def(IntegerType)

    traits = traits_def(Pure())

    def verify_(self) -> None:
        if element_type(self.left) != IntegerType(1):
            raise VerifyException("'cinm.op.popCount' operand must be a tensor of i1")


Cinm = Dialect(
    "cinm",
    [
        ComputeOp,
        ComputeBlockOp,
        YieldOp,
        GemmOp,
        GemvOp,
        Im2colOp,
        QuantizeOp,
        DequantizeOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        AddsOp,
        SubsOp,
        MulsOp,
        DivsOp,
        ElementWiseOp,
        ElementwiseBufferOp,
        ReduceOp,
        ScanOp,
        TopKOp,
        SimSearchOp,
        TransposeOp,
        PopCountOp,
        MergePartialOp,
    ],
    [ScanMethodAttr, ReduceMethodAttr, SimilarityMetricAttr, ElementwiseKindAttr],
)
