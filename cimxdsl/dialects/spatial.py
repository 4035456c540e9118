"""The `spat` dialect: the spatial level of the RAPTOR flow (M. Miotti, "Channel-Wise Lowering of ONNX-Based Deep Learning Models for ReRAM Architectures", Master's thesis, Politecnico di Milano, 2025, §4).

A `spat.compute` is a virtual core. Its `[weights]` are the crossbar-sized matrices to be programmed
into that core's crossbars; its `(inputs)` are the activations it receives. Inside its body,
`spat.apply_filters` runs a channel-wise convolution (or, with a 1×1 kernel, a gemm) on those
crossbars, picking them by index; `spat.vadd` sums partial results of different input-channel
tiles, `spat.concat` joins output-channel tiles. Channels (`!spat.ch`) model core-to-core transfers
once computes are assigned to cores.

Layout convention of every op here: activations are pixel-major, `[H, W, C]` (one image, no batch
dimension), so that the `C` channels of a pixel are contiguous, which is what a crossbar reads
(`mvmul`) and what the vector unit adds. A gemm is the 1×1-kernel case on `[rows, K]`. A weight
matrix is `[C_in, C_out]` (crossbar rows = inputs, columns = outputs). The ops accept tensors and,
after `pim-bufferize`, memrefs; on memrefs a result is a fresh local buffer.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    MemRefType,
    TensorType,
    UnitAttr,
    i32,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import (
    Commutative,
    HasParent,
    IsTerminator,
    RecursiveMemoryEffect,
    ReturnLike,
)
from xdsl.utils.exceptions import VerifyException

from cimxdsl.dialects.crossbar_ops import (
    GEOMETRY_FORMAT,
    IM2COL_FORMAT,
    ApplyFiltersBase,
    FilterGeometry,
    HoldsCrossbarWeights,
    Im2col,
    SpatTensor,
    TensorSemanticsEffect,
    WindowOp,
    verify_same_kind,
)
from cimxdsl.dialects.utils import (
    element_type,
    i64_array,
    i64_attr,
    shape_of_type,
    static_shape,
    verify_yielded,
    with_shape,
)


@functools.cache
def segment_sizes(*sizes: int) -> DenseArrayBase:
    """The `operandSegmentSizes` property of an op with operand groups of `sizes`."""
    return DenseArrayBase.from_list(i32, sizes)


@irdl_attr_definition
class ChannelType(ParametrizedAttribute, TypeAttribute):
    """A virtual point-to-point channel between two cores: `!spat.ch`."""

    name = "spat.ch"


# ----------------------------------------------------------------------------------------------
# Execution
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class ComputeOp(IRDLOperation):
    """A virtual core: `[weights]` go to its crossbars, `(inputs)` are the activations it receives.

    The single block's arguments are the weights, then the inputs (same types, same order); the
    body ends with `spat.yield` of the results. Ops in the body use the block arguments, and
    `spat.apply_filters` selects weights by their position in `[weights]`."""

    name = "spat.compute"

    weights = var_operand_def(SpatTensor)
    inputs = var_operand_def(SpatTensor)
    outputs = var_result_def(SpatTensor)
    body = region_def("single_block")

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(HoldsCrossbarWeights(), RecursiveMemoryEffect())
    assembly_format = (
        "`[` $weights `]` `(` $inputs `)` attr-dict `:` `[` type($weights) `]` `(` type($inputs) `)` "
        "`->` type($outputs) $body"
    )

    def __init__(
        self,
        weights: Sequence[SSAValue | Operation],
        inputs: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        body: Region | None = None,
    ):
        operands = [SSAValue.get(v) for v in (*weights, *inputs)]
        if body is None:
            body = Region(Block(arg_types=[v.type for v in operands]))
        # what IRDL's argument building gives, built directly: the mapping makes thousands of computes
        sizes = {"operandSegmentSizes": segment_sizes(len(weights), len(inputs))}
        Operation.__init__(self, operands=operands, result_types=result_types, properties=sizes, regions=[body])

    @property
    def weight_args(self) -> tuple[SSAValue, ...]:
        """The block arguments standing for the weights."""
        return self.body.block.args[: len(self.weights)]

    @property
    def input_args(self) -> tuple[SSAValue, ...]:
        """The block arguments standing for the inputs."""
        return self.body.block.args[len(self.weights) :]

    def verify_(self) -> None:
        for i, weight in enumerate(self.weights):
            shape = static_shape(self, f"weight {i}", weight)
            if len(shape) != 2:
                raise VerifyException(f"'spat.compute' weight {i} must be a matrix (rank 2), got {weight.type}")
        block = self.body.block
        operands = (*self.weights, *self.inputs)
        if len(block.args) != len(operands):
            raise VerifyException(
                f"'spat.compute' body has {len(block.args)} arguments but the op has {len(self.weights)} weights "
                f"and {len(self.inputs)} inputs"
            )
        for i, (arg, operand) in enumerate(zip(block.args, operands)):
            if arg.type != operand.type:
                raise VerifyException(
                    f"'spat.compute' body argument {i} has type {arg.type} but its operand has type {operand.type}"
                )
        verify_yielded(self, YieldOp, self.outputs)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Returns the results of a `spat.compute`."""

    name = "spat.yield"

    values = var_operand_def(SpatTensor)

    traits = lazy_traits_def(lambda: (HasParent(ComputeOp), IsTerminator(), ReturnLike(), TensorSemanticsEffect()))
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])


# ----------------------------------------------------------------------------------------------
# Crossbar work
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class ApplyFiltersOp(ApplyFiltersBase):
    """Channel-wise convolution of one input-channel tile on crossbar-resident weights.

    `input` is `[H, W, C_in]`, the result `[H_out, W_out, C_out]`. `weightIndices` has one entry
    per kernel position `k = ky·kernel_w + kx`: the position of the `[C_in, C_out]` matrix in the
    enclosing `spat.compute`/`pim.core`'s weights, or -1 when that position is skipped (an all-zero
    matrix, or one handled by another `apply_filters` whose partial sum is added with `spat.vadd`):

        result[oy, ox, :] = Σ_k input[oy·sh - pad_top + ky·dh, ox·sw - pad_left + kx·dw, :] · W[k]

    over positions with an index >= 0 and an input pixel inside the image (padding is zero). The
    rank-2 form `[rows, K] -> [rows, N]` with the default 1×1 geometry is a gemm (Miotti 2025, App. B).
    The result element type may be a wider integer than the input's (`i8 -> i32`).

    With `im2col [p0, p1, ...] offset o`, the input pixels at those kernel positions are unrolled
    into one vector `u` per output pixel (position-major, zeros for padding) and `weightIndices`
    lists matrices `W_0, W_1, ...` holding its consecutive rows from row `o` on:
    `result[oy, ox, :] = u[o : o + Σ rows] · [W_0; W_1; ...]`. With `pixels p`, `u` is the unrolled
    window of p adjacent output pixels (the geometry is the window's: its kernel (p - 1)·stride
    wider, its stride p times the pixels'), and the product is their p·C_out channels, pixel-major:
    the result `[H_out, W_out, C_out]` is the `[H_out, W_out ÷ p, p·C_out]` of the products."""

    name = "spat.apply_filters"

    input = operand_def(SpatTensor)
    result = result_def(SpatTensor)

    traits = traits_def(TensorSemanticsEffect())
    assembly_format = (
        f"$input `weights` $weightIndices {GEOMETRY_FORMAT} {IM2COL_FORMAT} attr-dict `:` type($input) `->` "
        "type($result)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        weight_indices: Sequence[int],
        result_type: Attribute,
        geometry: FilterGeometry = FilterGeometry(),
        packing: Im2col | None = None,
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "weightIndices": i64_array(weight_indices),
                **self.geometry_properties(geometry),
                **(packing.properties() if packing is not None else {}),
            },
        )

    def verify_(self) -> None:
        verify_same_kind(self, self.input, self.result)
        self.verify_filters(self.input, self.result)


# ----------------------------------------------------------------------------------------------
# Vector ops
# ----------------------------------------------------------------------------------------------


class VectorBinaryOp(IRDLOperation):
    """Base of the element-wise binary ops: `result = lhs ∘ rhs`.

    `rhs` has the shape of `lhs` or a suffix of it (`[C]` against `[H, W, C]`: a per-channel bias or
    scale, broadcast over the pixels); the result has the type of `lhs`."""

    T: ClassVar = VarConstraint("T", SpatTensor)
    lhs = operand_def(T)
    rhs = operand_def(SpatTensor)
    result = result_def(T)

    traits = traits_def(TensorSemanticsEffect())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)"

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        super().__init__(operands=[lhs, rhs], result_types=[SSAValue.get(lhs).type])

    def verify_(self) -> None:
        verify_same_kind(self, self.lhs, self.rhs)
        lhs, rhs = static_shape(self, "lhs", self.lhs), static_shape(self, "rhs", self.rhs)
        if element_type(self.lhs) != element_type(self.rhs):
            raise VerifyException(
                f"'{self.name}' lhs and rhs must have the same element type, got "
                f"{element_type(self.lhs)} and {element_type(self.rhs)}"
            )
        if len(rhs) > len(lhs) or lhs[len(lhs) - len(rhs) :] != rhs:
            raise VerifyException(
                f"'{self.name}' rhs shape {list(rhs)} must equal the lhs shape {list(lhs)} or a suffix of it"
            )

    def broadcasts(self) -> bool:
        """Whether `rhs` is broadcast over the leading dimensions of `lhs`."""
        return self.lhs.type != self.rhs.type


@irdl_op_definition
class VAddOp(VectorBinaryOp):
    """Element-wise `lhs + rhs`: partial-sum reduction, residual adds, bias (ISA `vvadd`)."""

    name = "spat.vadd"
    traits = traits_def(Commutative())


@irdl_op_definition
class VSubOp(VectorBinaryOp):
    """Element-wise `lhs - rhs` (ISA `vvsub`)."""

    name = "spat.vsub"


@irdl_op_definition
class VMulOp(VectorBinaryOp):
    """Element-wise `lhs * rhs`, e.g. a per-channel scale (ISA `vvmul`)."""

    name = "spat.vmul"
    traits = traits_def(Commutative())


@irdl_op_definition
class VMaxOp(VectorBinaryOp):
    """Element-wise `max(lhs, rhs)` (ISA `vvmax`)."""

    name = "spat.vmax"
    traits = traits_def(Commutative())


class VectorUnaryOp(IRDLOperation):
    """Base of the element-wise unary ops; the result has the input's type."""

    T: ClassVar = VarConstraint("T", SpatTensor)
    input = operand_def(T)
    result = result_def(T)

    traits = traits_def(TensorSemanticsEffect())
    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input: SSAValue | Operation):
        super().__init__(operands=[input], result_types=[SSAValue.get(input).type])

    def verify_(self) -> None:
        static_shape(self, "input", self.input)


@irdl_op_definition
class VReluOp(VectorUnaryOp):
    """`max(input, 0)` element-wise (ISA `vrelu`)."""

    name = "spat.vrelu"


@irdl_op_definition
class VTanhOp(VectorUnaryOp):
    """`tanh(input)` element-wise (ISA `vtanh`)."""

    name = "spat.vtanh"


@irdl_op_definition
class VSigmOp(VectorUnaryOp):
    """The logistic sigmoid element-wise (ISA `vsigm`)."""

    name = "spat.vsigm"


# ----------------------------------------------------------------------------------------------
# Pooling and concatenation
# ----------------------------------------------------------------------------------------------


class PoolOp(WindowOp):
    """Base of the sliding-window pools on `[H, W, C]`, giving `[H_out, W_out, C]`."""

    input = operand_def(SpatTensor)
    result = result_def(SpatTensor)

    traits = traits_def(TensorSemanticsEffect())

    def __init__(
        self,
        input: SSAValue | Operation,
        geometry: FilterGeometry,
        result_type: Attribute | None = None,
        properties: dict[str, Attribute] | None = None,
    ):
        input_type = SSAValue.get(input).type
        if result_type is None:
            assert isinstance(input_type, TensorType | MemRefType)
            height, width, channels = input_type.get_shape()
            out_h, out_w = geometry.output_size(height, width)
            result_type = type(input_type)(input_type.element_type, (out_h, out_w, channels))
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties=self.geometry_properties(geometry) | (properties or {}),
        )

    def verify_(self) -> None:
        verify_same_kind(self, self.input, self.result)
        geometry = self.verify_geometry()
        input_shape = static_shape(self, "input", self.input)
        output_shape = static_shape(self, "result", self.result)
        if len(input_shape) != 3 or len(output_shape) != 3:
            raise VerifyException(f"'{self.name}' input and result must be [H, W, C] (rank 3)")
        if element_type(self.input) != element_type(self.result):
            raise VerifyException(f"'{self.name}' input and result must have the same element type")
        if input_shape[2] != output_shape[2]:
            raise VerifyException(
                f"'{self.name}' result must keep the {input_shape[2]} channels of the input, got {output_shape[2]}"
            )
        self.verify_output_pixels(geometry, input_shape, output_shape)


@irdl_op_definition
class MaxPoolOp(PoolOp):
    """Maximum over each kernel window, per channel; padded pixels are ignored."""

    name = "spat.maxpool"

    assembly_format = f"$input {GEOMETRY_FORMAT} attr-dict `:` type($input) `->` type($result)"


@irdl_op_definition
class AvgPoolOp(PoolOp):
    """Average over each kernel window, per channel. The divisor counts the window's pixels inside
    the image, or all kernel positions with `count_include_pad` (ONNX `count_include_pad`).
    Integers are divided with floor division."""

    name = "spat.avgpool"

    count_include_pad = opt_prop_def(UnitAttr, prop_name="countIncludePad")

    assembly_format = (
        f"$input {GEOMETRY_FORMAT} (`count_include_pad` $countIncludePad^)? attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        geometry: FilterGeometry,
        result_type: Attribute | None = None,
        count_include_pad: bool = False,
    ):
        super().__init__(input, geometry, result_type, {"countIncludePad": UnitAttr()} if count_include_pad else None)


@irdl_op_definition
class GlobalAvgPoolOp(IRDLOperation):
    """Average of all pixels, per channel: `[H, W, C] -> [1, 1, C]` (floor division for integers)."""

    name = "spat.global_avgpool"

    input = operand_def(SpatTensor)
    result = result_def(SpatTensor)

    traits = traits_def(TensorSemanticsEffect())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation):
        input_type = SSAValue.get(input).type
        assert isinstance(input_type, TensorType | MemRefType)
        channels = input_type.get_shape()[-1]
        super().__init__(operands=[input], result_types=[type(input_type)(input_type.element_type, (1, 1, channels))])

    def verify_(self) -> None:
        verify_same_kind(self, self.input, self.result)
        input_shape = static_shape(self, "input", self.input)
        output_shape = static_shape(self, "result", self.result)
        if len(input_shape) != 3:
            raise VerifyException(
                f"'spat.global_avgpool' input must be [H, W, C] (rank 3), got rank {len(input_shape)}"
            )
        if output_shape != (1, 1, input_shape[2]):
            raise VerifyException(
                f"'spat.global_avgpool' result must be 1x1x{input_shape[2]}, got {'x'.join(map(str, output_shape))}"
            )
        if element_type(self.input) != element_type(self.result):
            raise VerifyException("'spat.global_avgpool' input and result must have the same element type")


@irdl_op_definition
class ConcatOp(IRDLOperation):
    """Joins `inputs` along `axis` (e.g. output-channel tiles along the channel axis 2)."""

    name = "spat.concat"

    axis = prop_def(IntegerAttr.constr(type=i64))
    inputs = var_operand_def(SpatTensor)
    result = result_def(SpatTensor)

    traits = traits_def(TensorSemanticsEffect())
    assembly_format = "`axis` $axis $inputs attr-dict `:` type($inputs) `->` type($result)"

    def __init__(self, inputs: Sequence[SSAValue | Operation], axis: int):
        operands = [SSAValue.get(v) for v in inputs]
        types = [v.type for v in operands]
        first = types[0]
        assert isinstance(first, TensorType | MemRefType)
        shape = list(shape_of_type(first))
        shape[axis] = sum(shape_of_type(t)[axis] for t in types if isinstance(t, TensorType | MemRefType))
        Operation.__init__(
            self,
            operands=operands,
            result_types=[with_shape(first, tuple(shape))],
            properties={"axis": i64_attr(axis)},
        )

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException("'spat.concat' needs at least one input")
        verify_same_kind(self, *self.inputs, self.result)
        axis = self.axis.value.data
        result_shape = static_shape(self, "result", self.result)
        if not 0 <= axis < len(result_shape):
            raise VerifyException(f"'spat.concat' axis {axis} is out of range for rank {len(result_shape)}")
        total = 0
        for i, value in enumerate(self.inputs):
            shape = static_shape(self, f"input {i}", value)
            if element_type(value) != element_type(self.result):
                raise VerifyException(f"'spat.concat' input {i} must have the result's element type")
            if len(shape) != len(result_shape) or any(
                d != r for n, (d, r) in enumerate(zip(shape, result_shape)) if n != axis
            ):
                raise VerifyException(
                    f"'spat.concat' input {i} shape {list(shape)} must match the result shape {list(result_shape)} "
                    f"except along axis {axis}"
                )
            total += shape[axis]
        if total != result_shape[axis]:
            raise VerifyException(
                f"'spat.concat' result has {result_shape[axis]} elements along axis {axis}, the inputs {total}"
            )


class ExtractOp(IRDLOperation):
    """Base of the extracts of a run `offset ..< offset + n` along one axis of `input` (`AXIS`), `n`
    the result's size along it."""

    AXIS: ClassVar[int]
    NOUN: ClassVar[str]

    offset = prop_def(IntegerAttr.constr(type=i64))
    input = operand_def(SpatTensor)
    result = result_def(SpatTensor)

    traits = traits_def(TensorSemanticsEffect())
    assembly_format = "$input `offset` $offset attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, offset: int, count: int):
        input_type = SSAValue.get(input).type
        assert isinstance(input_type, TensorType | MemRefType)
        shape = list(input_type.get_shape())
        shape[self.AXIS] = count
        Operation.__init__(
            self,
            operands=[SSAValue.get(input)],
            result_types=[with_shape(input_type, tuple(shape))],
            properties={"offset": i64_attr(offset)},
        )

    def verify_(self) -> None:
        verify_same_kind(self, self.input, self.result)
        source, result = static_shape(self, "input", self.input), static_shape(self, "result", self.result)
        axis, offset = self.AXIS, self.offset.value.data
        if len(source) <= axis or len(result) != len(source):
            raise VerifyException(f"'{self.name}' input and result must have the same rank, at least {axis + 1}")
        others = [n for i, n in enumerate(source) if i != axis] != [n for i, n in enumerate(result) if i != axis]
        if element_type(self.input) != element_type(self.result) or others:
            raise VerifyException(f"'{self.name}' result must keep the input's element type and its other axes")
        if offset < 0 or offset + result[axis] > source[axis]:
            raise VerifyException(
                f"'{self.name}' {self.NOUN} {offset}:{offset + result[axis]} exceed the input's {source[axis]} {self.NOUN}"
            )


@irdl_op_definition
class ExtractRowsOp(ExtractOp):
    """Rows `offset ..< offset + n` of `input` along its first axis (image rows of `[H, W, C]`,
    matrix rows of `[rows, K]`), `n` the result's row count: the band of an activation that one
    replica of a compute reads (rows are contiguous in memory, so no data moves)."""

    name = "spat.extract_rows"
    AXIS: ClassVar[int] = 0
    NOUN: ClassVar[str] = "rows"


@irdl_op_definition
class ExtractColumnsOp(ExtractOp):
    """Columns `offset ..< offset + n` of an image `input` `[H, W, C]`, `n` the result's column
    count: the part of a row band that one replica of a compute computes when the replicas share
    each row (a view when `H` is 1, else one copy per row)."""

    name = "spat.extract_columns"
    AXIS: ClassVar[int] = 1
    NOUN: ClassVar[str] = "columns"


# ----------------------------------------------------------------------------------------------
# Channels
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class ChannelNewOp(IRDLOperation):
    """Creates a channel between two cores. Transfers are blocking and pair up in order: the k-th
    `channel_send` on a channel is received by its k-th `channel_receive`."""

    name = "spat.channel_new"

    channel = result_def(ChannelType)

    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[ChannelType()])

    def verify_(self) -> None:
        sends = sum(isinstance(use.operation, ChannelSendOp) for use in self.channel.uses)
        receives = sum(isinstance(use.operation, ChannelReceiveOp) for use in self.channel.uses)
        if sends != receives:
            raise VerifyException(
                f"'spat.channel_new' channel has {sends} sends but {receives} receives; they must pair up"
            )


@irdl_op_definition
class ChannelSendOp(IRDLOperation):
    """Sends `value` through `channel`; blocks until it is received (ISA `send`)."""

    name = "spat.channel_send"

    channel = operand_def(ChannelType)
    value = operand_def(SpatTensor)

    assembly_format = "$value `to` $channel attr-dict `:` type($value)"

    def __init__(self, value: SSAValue | Operation, channel: SSAValue | Operation):
        super().__init__(operands=[channel, value])

    def verify_(self) -> None:
        static_shape(self, "value", self.value)


@irdl_op_definition
class ChannelReceiveOp(IRDLOperation):
    """Receives a value from `channel`; blocks until it was sent (ISA `recv`)."""

    name = "spat.channel_receive"

    channel = operand_def(ChannelType)
    result = result_def(SpatTensor)

    assembly_format = "$channel attr-dict `:` type($result)"

    def __init__(self, channel: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[channel], result_types=[result_type])

    def verify_(self) -> None:
        static_shape(self, "result", self.result)


Spatial = Dialect(
    "spat",
    [
        ComputeOp,
        YieldOp,
        ApplyFiltersOp,
        VAddOp,
        VSubOp,
        VMulOp,
        VMaxOp,
        VReluOp,
        VTanhOp,
        VSigmOp,
        MaxPoolOp,
        AvgPoolOp,
        GlobalAvgPoolOp,
        ConcatOp,
        ExtractRowsOp,
        ExtractColumnsOp,
        ChannelNewOp,
        ChannelSendOp,
        ChannelReceiveOp,
    ],
    [ChannelType],
)
