"""Upstream MLIR ops as MLIR writes them, where xDSL 0.74 lacks them or spells them differently.

Cinnamon's programs (LLVM 19/20 era) use `bufferization.to_memref` (since renamed `to_buffer`),
the custom forms of `memref.cast` and `memref.copy` (xDSL prints both generically), `linalg.map`
and `tensor.generate`; the ONNX importer emits `linalg.batch_matmul` (products of two run-time
tensors, as attention's) and `tensor.gather` (embedding lookups); `linalg.matvec` is the
matrix-vector product `mlir-opt` users write. The dialects below are xDSL's
`memref`, `bufferization`, `linalg` and `tensor` with these ops added or replaced; cimxdsl
registers them in place of xDSL's (see `get_upstream_dialects`), without changing xDSL itself.
Formats follow the MLIR dialect docs (https://mlir.llvm.org/docs/Dialects/).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, bufferization, memref, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    DenseArrayBase,
    IndexType,
    IntegerType,
    MemRefType,
    ShapedType,
    TensorType,
    UnitAttr,
    UnrankedMemRefType,
    i64,
)
from xdsl.dialects.linalg import Linalg as UpstreamLinalg
from xdsl.dialects.linalg.abstract_ops import NamedOperation
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.dialects.linalg.ops import YieldOp as LinalgYieldOp
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import (
    IRDLOperation,
    base,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, NoMemoryEffect, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException

from cimxdsl.dialects.utils import shape_of

AnyMemRef = base(MemRefType) | base(UnrankedMemRefType)


@irdl_op_definition
class CastOp(IRDLOperation):
    """`memref.cast %m : memref<4xf32> to memref<?xf32>`: the same buffer under a compatible type.

    See external [documentation](https://mlir.llvm.org/docs/Dialects/MemRef/#memrefcast-memrefcastop)."""

    name = "memref.cast"

    source = operand_def(AnyMemRef)
    dest = result_def(AnyMemRef)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$source attr-dict `:` type($source) `to` type($dest)"

    def __init__(self, source: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[source], result_types=[result_type])


@irdl_op_definition
class CopyOp(IRDLOperation):
    """`memref.copy %a, %b : memref<4xf32> to memref<4xf32>`: copies every element of `source`.

    See external [documentation](https://mlir.llvm.org/docs/Dialects/MemRef/#memrefcopy-memrefcopyop)."""

    name = "memref.copy"

    source = operand_def(AnyMemRef)
    target = operand_def(AnyMemRef)

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$source `,` $target attr-dict `:` type($source) `to` type($target)"

    def __init__(self, source: SSAValue | Operation, target: SSAValue | Operation):
        super().__init__(operands=[source, target])

    def verify_(self) -> None:
        source, target = self.source.type, self.target.type
        if isinstance(source, MemRefType) and isinstance(target, MemRefType):
            if source.element_type != target.element_type or source.get_shape() != target.get_shape():
                raise VerifyException(f"'memref.copy' source {source} and target {target} must have one shape and type")


@irdl_op_definition
class ToMemrefOp(IRDLOperation):
    """`bufferization.to_memref %t : tensor<4xf32> to memref<4xf32>`: the older name of
    `bufferization.to_buffer` (LLVM ≤ 20); the form `: memref<4xf32>` alone also parses."""

    name = "bufferization.to_memref"

    tensor = operand_def(TensorType)
    memref = result_def(AnyMemRef)

    traits = traits_def(Pure())

    def __init__(self, tensor: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[tensor], result_types=[result_type])

    def verify_(self) -> None:
        source, result = self.tensor.type, self.memref.type
        assert isinstance(source, TensorType)
        if isinstance(result, MemRefType) and (
            result.element_type != source.element_type or result.get_shape() != source.get_shape()
        ):
            raise VerifyException(f"'bufferization.to_memref' result {result} must match the tensor {source}")

    @classmethod
    def parse(cls, parser: Parser) -> ToMemrefOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_optional_keyword("read_only")
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        first = parser.parse_type()
        if parser.parse_optional_keyword("to") is not None:
            tensor_type, memref_type = first, parser.parse_type()
        elif isinstance(first, MemRefType):
            tensor_type, memref_type = TensorType(first.element_type, first.get_shape()), first
        else:
            parser.raise_error("'bufferization.to_memref' expects 'tensor-type to memref-type' or a memref type")
        op = cls(parser.resolve_operand(operand, tensor_type), memref_type)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.tensor)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.tensor.type)
        printer.print_string(" to ")
        printer.print_attribute(self.memref.type)


def _element_type(t: Attribute) -> Attribute:
    assert isinstance(t, ShapedType)
    return t.get_element_type()


def _types(types: Sequence[Attribute]) -> str:
    return ", ".join(str(t) for t in types)


def _parse_typed_operands(parser: Parser, keyword: str) -> list[tuple[UnresolvedOperand, Attribute]]:
    """`keyword(%a, %b : ta, tb)`, resolved later."""
    parser.parse_keyword(keyword)
    parser.parse_punctuation("(")
    operands = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_unresolved_operand)
    parser.parse_punctuation(":")
    types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
    parser.parse_punctuation(")")
    if len(operands) != len(types):
        parser.raise_error(f"'{keyword}' has {len(operands)} operands but {len(types)} types")
    return list(zip(operands, types, strict=True))


def _print_typed_operands(printer: Printer, keyword: str, values: Sequence[SSAValue]) -> None:
    printer.print_string(f" {keyword}(")
    printer.print_list(values, printer.print_operand)
    printer.print_string(" : ")
    printer.print_list([v.type for v in values], printer.print_attribute)
    printer.print_string(")")


@irdl_op_definition
class MapOp(IRDLOperation):
    """`linalg.map`: the body applied to the elements of `inputs` at every index, written to `init`.

    Both MLIR forms parse: the short `linalg.map { arith.addf } ins(...) outs(...)` and the long one
    with a body block taking one element of each input, and optionally one of `init` after them (as
    newer MLIR and Cinnamon's programs write it); the long form is printed.
    See external [documentation](https://mlir.llvm.org/docs/Dialects/Linalg/#linalgmap-linalgmapop)."""

    name = "linalg.map"

    inputs = var_operand_def(base(TensorType) | base(MemRefType))
    init = operand_def(base(TensorType) | base(MemRefType))
    result = opt_result_def(TensorType)
    mapper = region_def("single_block")

    traits = traits_def(RecursiveMemoryEffect())

    def __init__(self, inputs: Sequence[SSAValue], init: SSAValue, mapper: Region):
        result_types = [init.type] if isinstance(init.type, TensorType) else []
        super().__init__(operands=[inputs, init], result_types=[result_types], regions=[mapper])

    def verify_(self) -> None:
        shape = self.init.type.get_shape()  # type: ignore[union-attr]
        for value in self.inputs:
            if value.type.get_shape() != shape:  # type: ignore[union-attr]
                raise VerifyException(f"'linalg.map' input {value.type} must have the init's shape {list(shape)}")
        arguments = [a.type for a in self.mapper.block.args]
        expected = [_element_type(v.type) for v in self.inputs]
        if arguments not in (expected, [*expected, _element_type(self.init.type)]):
            raise VerifyException(
                f"'linalg.map' body must take the input element types ({_types(expected)}), optionally followed "
                f"by the init's, got ({_types(arguments)})"
            )
        if self.result is not None and self.result.type != self.init.type:
            raise VerifyException("'linalg.map' result must have the init's type")

    @classmethod
    def parse(cls, parser: Parser) -> MapOp:
        short_form = parser.parse_optional_punctuation("{") is not None
        if short_form:
            op_name = parser.parse_identifier()
            parser.parse_punctuation("}")
        inputs = _parse_typed_operands(parser, "ins")
        ((init, init_type),) = _parse_typed_operands(parser, "outs")
        attributes = parser.parse_optional_attr_dict()
        element_types = [_element_type(t) for _, t in inputs]
        if short_form:
            block = Block(arg_types=element_types)
            inner = parser.ctx.get_op(op_name).create(
                operands=list(block.args), result_types=[_element_type(init_type)]
            )
            block.add_ops([inner, LinalgYieldOp(inner.results[0])])
            mapper = Region(block)
        else:
            parser.parse_punctuation("(")
            arguments = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_argument)
            parser.parse_punctuation(")")
            mapper = parser.parse_region(arguments)
        op = cls(
            [parser.resolve_operand(v, t) for v, t in inputs],
            parser.resolve_operand(init, init_type),
            mapper,
        )
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        _print_typed_operands(printer, "ins", self.inputs)
        _print_typed_operands(printer, "outs", [self.init])
        printer.print_op_attributes(self.attributes)
        printer.print_string(" (")
        printer.print_list(self.mapper.block.args, printer.print_block_argument)
        printer.print_string(") ")
        printer.print_region(self.mapper, print_entry_block_args=False)


@irdl_op_definition
class GenerateOp(IRDLOperation):
    """`tensor.generate %d { ^bb0(%i: index, ...): ... tensor.yield %v }`: a tensor whose element at
    every index is the body's value there; `dynamic_extents` size the dynamic dimensions.

    See external [documentation](https://mlir.llvm.org/docs/Dialects/TensorOps/#tensorgenerate-tensorgenerateop)."""

    name = "tensor.generate"

    dynamic_extents = var_operand_def(IndexType)
    result = result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(RecursiveMemoryEffect())
    assembly_format = "$dynamic_extents $body attr-dict `:` type($result)"

    def __init__(self, dynamic_extents: Sequence[SSAValue], body: Region, result_type: Attribute):
        super().__init__(operands=[dynamic_extents], result_types=[result_type], regions=[body])

    def verify_(self) -> None:
        result = self.result.type
        assert isinstance(result, TensorType)
        dynamic = sum(1 for d in result.get_shape() if d < 0)
        if dynamic != len(self.dynamic_extents):
            raise VerifyException(
                f"'tensor.generate' needs {dynamic} dynamic extents for {result}, got {len(self.dynamic_extents)}"
            )
        arguments = [a.type for a in self.body.block.args]
        if arguments != [IndexType()] * result.get_num_dims():
            raise VerifyException(f"'tensor.generate' body must take {result.get_num_dims()} index arguments")
        terminator = self.body.block.last_op
        if not isinstance(terminator, tensor.YieldOp) or [v.type for v in terminator.operands] != [result.element_type]:
            raise VerifyException(f"'tensor.generate' body must yield one {result.element_type}")


@irdl_op_definition
class BatchMatmulOp(IRDLOperation):
    """`linalg.batch_matmul ins(%a, %b : tensor<BxMxK>, tensor<BxKxN>) outs(%c : tensor<BxMxN>)`:
    `c[b] + a[b]·b[b]` for every batch entry `b`.

    See external [documentation](https://mlir.llvm.org/docs/Dialects/Linalg/#linalgbatch_matmul-linalgbatchmatmulop)."""

    name = "linalg.batch_matmul"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    init = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, init: SSAValue | Operation):
        super().__init__(operands=[lhs, rhs, init], result_types=[SSAValue.get(init).type])

    def verify_(self) -> None:
        (a, b, c) = (v.type.get_shape() for v in (self.lhs, self.rhs, self.init))  # type: ignore[union-attr]
        if len(a) != 3 or len(b) != 3 or len(c) != 3:
            raise VerifyException("'linalg.batch_matmul' operands must have rank 3 (batch, rows, columns)")
        if a[0] != b[0] or a[2] != b[1] or c != (a[0], a[1], b[2]):
            raise VerifyException(
                f"'linalg.batch_matmul' shapes do not fit: {'x'.join(map(str, a))} times "
                f"{'x'.join(map(str, b))} into {'x'.join(map(str, c))}"
            )
        if self.result.type != self.init.type:
            raise VerifyException("'linalg.batch_matmul' result must have the init's type")

    @classmethod
    def parse(cls, parser: Parser) -> BatchMatmulOp:
        inputs = _parse_typed_operands(parser, "ins")
        outputs = _parse_typed_operands(parser, "outs")
        if len(inputs) != 2 or len(outputs) != 1:
            parser.raise_error("'linalg.batch_matmul' takes two inputs and one output")
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation("->")
        parser.parse_type()
        op = cls(*(parser.resolve_operand(v, t) for v, t in [*inputs, *outputs]))
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        _print_typed_operands(printer, "ins", [self.lhs, self.rhs])
        _print_typed_operands(printer, "outs", [self.init])
        printer.print_op_attributes(self.attributes)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class MatvecOp(NamedOperation):
    """`linalg.matvec ins(%a, %x : tensor<MxK>, tensor<K>) outs(%y : tensor<M>) -> tensor<M>`:
    `y + a·x`.

    See external [documentation](https://mlir.llvm.org/docs/Dialects/Linalg/#linalgmatvec-linalgmatvecop)."""

    name = "linalg.matvec"

    def __init__(self, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]):
        result_types = [v.type for v in outputs if isinstance(v.type, TensorType)]
        super().__init__(inputs, outputs, result_types, hidden_region=self.get_hidden_region(inputs, outputs))

    @classmethod
    def get_hidden_region(cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]) -> Region:
        """The scalar body `out + a·x` (float or integer arithmetic, by the output's element type)."""
        arg_types = cls.body_arg_types((*inputs, *outputs))
        integer = isinstance(arg_types[-1], IntegerType)
        block = Block(arg_types=arg_types)
        product = (arith.MuliOp if integer else arith.MulfOp)(block.args[0], block.args[1])
        total = (arith.AddiOp if integer else arith.AddfOp)(block.args[2], product)
        block.add_ops([product, total, LinalgYieldOp(total)])
        return Region(block)

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        return tuple(AffineMap.from_callable(f) for f in (lambda m, k: (m, k), lambda m, k: (k,), lambda m, k: (m,)))

    def get_indexing_maps(self) -> ArrayAttr[AffineMapAttr]:
        return ArrayAttr([AffineMapAttr(m) for m in self.get_default_indexing_maps()])

    def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
        return ArrayAttr([IteratorTypeAttr.parallel(), IteratorTypeAttr.reduction()])

    def verify_(self) -> None:
        a, x, y = (shape_of(v) for v in (*self.inputs, *self.outputs))
        if len(a) != 2 or len(x) != 1 or len(y) != 1 or a[1] != x[0] or a[0] != y[0]:
            raise VerifyException(
                f"'linalg.matvec' shapes do not fit: {'x'.join(map(str, a))} times {'x'.join(map(str, x))} "
                f"into {'x'.join(map(str, y))}"
            )


@irdl_op_definition
class GatherOp(IRDLOperation):
    """`tensor.gather %source[%indices] gather_dims([0]) : (tensor<VxD>, tensor<Sx1xi64>) -> tensor<Sx1xD>`:
    the slices of `source` at the coordinates in the last dimension of `indices` (along
    `gather_dims`); the gathered dimensions are kept as 1 or dropped from the result.

    See external [documentation](https://mlir.llvm.org/docs/Dialects/TensorOps/#tensorgather-tensorgatherop)."""

    name = "tensor.gather"

    source = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    gather_dims = prop_def(DenseArrayBase)
    unique = opt_prop_def(UnitAttr)

    traits = traits_def(Pure())

    def __init__(
        self,
        source: SSAValue | Operation,
        indices: SSAValue | Operation,
        gather_dims: Sequence[int],
        result_type: Attribute,
    ):
        super().__init__(
            operands=[source, indices],
            result_types=[result_type],
            properties={"gather_dims": DenseArrayBase.from_list(i64, gather_dims)},
        )

    def verify_(self) -> None:
        source, indices = self.source.type.get_shape(), self.indices.type.get_shape()  # type: ignore[union-attr]
        dims = list(self.gather_dims.get_values())
        if not isinstance(self.indices.type.element_type, IntegerType | IndexType):  # type: ignore[union-attr]
            raise VerifyException("'tensor.gather' indices must be integers")
        if not indices or indices[-1] != len(dims):
            raise VerifyException(
                f"'tensor.gather' indices must end in a dimension of {len(dims)} (one per gather dim)"
            )
        if dims != sorted(set(dims)) or any(not 0 <= d < len(source) for d in dims):
            raise VerifyException(f"'tensor.gather' gather_dims {dims} must be increasing dimensions of the source")
        kept = [1 if i in dims else d for i, d in enumerate(source)]
        dropped = [d for i, d in enumerate(source) if i not in dims]
        shape = self.result.type.get_shape()  # type: ignore[union-attr]
        if shape not in (tuple(indices[:-1]) + tuple(kept), tuple(indices[:-1]) + tuple(dropped)):
            raise VerifyException(f"'tensor.gather' result shape {list(shape)} does not fit the source and indices")
        if self.result.type.element_type != self.source.type.element_type:  # type: ignore[union-attr]
            raise VerifyException("'tensor.gather' result must have the source's element type")

    @classmethod
    def parse(cls, parser: Parser) -> GatherOp:
        source = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        indices = parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        parser.parse_keyword("gather_dims")
        parser.parse_punctuation("(")
        dims = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)
        parser.parse_punctuation(")")
        unique = parser.parse_optional_keyword("unique") is not None
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        parser.parse_punctuation("(")
        source_type = parser.parse_type()
        parser.parse_punctuation(",")
        indices_type = parser.parse_type()
        parser.parse_punctuation(")")
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        op = cls(
            parser.resolve_operand(source, source_type),
            parser.resolve_operand(indices, indices_type),
            dims,
            result_type,
        )
        if unique:
            op.unique = UnitAttr()
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        printer.print_string("[")
        printer.print_operand(self.indices)
        printer.print_string("] gather_dims([" + ", ".join(map(str, self.gather_dims.get_values())) + "])")
        if self.unique is not None:
            printer.print_string(" unique")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : (")
        printer.print_list([self.source.type, self.indices.type], printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)


def _replacing(dialect: Dialect, ops: Sequence[type[IRDLOperation]]) -> Dialect:
    """`dialect` with `ops` added, replacing its ops of the same names."""
    names = {op.name for op in ops}
    kept = [op for op in dialect.operations if op.name not in names]
    return Dialect(dialect.name, [*kept, *ops], list(dialect.attributes))


MemRef = _replacing(memref.MemRef, [CastOp, CopyOp])
Bufferization = _replacing(bufferization.Bufferization, [ToMemrefOp])
Linalg = _replacing(UpstreamLinalg, [MapOp, BatchMatmulOp, MatvecOp])
Tensor = _replacing(tensor.Tensor, [GenerateOp, GatherOp])
