"""The `pim` dialect: per-core programs for a pimsim-nn PIM chip.

Two levels live here. The *core* level: `pim.core` (a physical core with the crossbar matrices it
holds and a body ending in `pim.halt`), `pim.load`/`pim.store` between a core's local buffers and
global memory, and `pim.apply_filters`, the bufferized `spat.apply_filters` with its output and
accumulation buffers. Inside a core, spat vector, pooling and channel ops carry on unchanged.

The *instruction* level: one op per pimsim-nn instruction (`pim.sldi`, `pim.mvmul`, `pim.vvadd`,
`pim.send`, ...). Each is an `InstructionOp` whose integer properties are exactly the pimsim-nn
JSON fields listed in its `FIELDS`; `to_json()` gives the JSON object of a `core_<id>.json` stream
and `InstructionOp.from_json()` reads one back. The code generator emits these ops and the
validator executes them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar, Self, overload

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, MemRefType, i32, i64
from xdsl.ir import Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator
from xdsl.utils.exceptions import VerifyException

from cimxdsl.dialects.crossbar_ops import (
    GEOMETRY_FORMAT,
    IM2COL_FORMAT,
    ApplyFiltersBase,
    FilterGeometry,
    HoldsCrossbarWeights,
    Im2col,
    SpatTensor,
)
from cimxdsl.dialects.utils import element_type, i64_array, num_elements, static_shape

# ----------------------------------------------------------------------------------------------
# Core level
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class CoreOp(IRDLOperation):
    """A physical core `coreId` running its body once, then `pim.halt`.

    `weights` are the `[C_in, C_out]` matrices programmed into the core's crossbars before
    execution; crossbar `g` holds `weights[g]` and forms array group `g` of the core
    (`array_group_map.core<id>` is one crossbar per weight, and `mvmul group = g`).
    `apply_filters` in the body select them by position. The body has no arguments: inputs are
    loaded from global memory (`pim.load`) or received from other cores."""

    name = "pim.core"

    weights = var_operand_def(SpatTensor)
    core_id = prop_def(IntegerAttr.constr(type=i32), prop_name="coreId")
    body = region_def("single_block")

    traits = traits_def(HoldsCrossbarWeights())
    assembly_format = "`(` $weights `)` `coreId` $coreId attr-dict `:` `(` type($weights) `)` $body"

    def __init__(self, core_id: int, weights: Sequence[SSAValue | Operation], body: Region | None = None):
        super().__init__(
            operands=[weights],
            properties={"coreId": IntegerAttr(core_id, i32)},
            regions=[body if body is not None else Region(Block())],
        )

    def get_core_id(self) -> int:
        return self.core_id.value.data

    def is_instruction_level(self) -> bool:
        """Whether the body holds ISA instructions (after `pim-codegen`)."""
        return any(isinstance(op, InstructionOp) for op in self.body.block.ops)

    def verify_(self) -> None:
        core_id = self.get_core_id()
        if core_id < 0:
            raise VerifyException(f"'pim.core' coreId must be >= 0, got {core_id}")
        for i, weight in enumerate(self.weights):
            if len(static_shape(self, f"weight {i}", weight)) != 2:
                raise VerifyException(f"'pim.core' weight {i} must be a matrix (rank 2), got {weight.type}")
        block = self.body.block
        if block.args:
            raise VerifyException("'pim.core' body must have no arguments")
        if not isinstance(block.last_op, HaltOp):
            raise VerifyException("'pim.core' body must end with 'pim.halt'")
        parent = self.parent_block()
        if parent is not None:
            for other in parent.ops:
                if other is not self and isinstance(other, CoreOp) and other.get_core_id() == core_id:
                    raise VerifyException(f"'pim.core' coreId {core_id} is used by another 'pim.core'")


@irdl_op_definition
class HaltOp(IRDLOperation):
    """Ends a core's program. Not an instruction of the stream: `core_<id>.json` simply ends."""

    name = "pim.halt"

    traits = lazy_traits_def(lambda: (HasParent(CoreOp), IsTerminator()))
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


def _verify_global_range(op: Operation, offset_name: str, offset: int, size: int, local, global_) -> None:
    local_shape = static_shape(op, "local buffer", local)
    global_shape = static_shape(op, "global buffer", global_)
    if offset < 0:
        raise VerifyException(f"'{op.name}' {offset_name} must be >= 0, got {offset}")
    if size != num_elements(local_shape):
        raise VerifyException(
            f"'{op.name}' size {size} must equal the {num_elements(local_shape)} elements of the local buffer"
        )
    if offset + size > num_elements(global_shape):
        raise VerifyException(
            f"'{op.name}' elements [{offset}, {offset + size}) are outside the global buffer of "
            f"{num_elements(global_shape)} elements"
        )
    if element_type(local) != element_type(global_):
        raise VerifyException(
            f"'{op.name}' local and global element types differ ({element_type(local)} vs {element_type(global_)})"
        )


@irdl_op_definition
class LoadOp(IRDLOperation):
    """Copies `size` consecutive elements of `global`, from element `globalSrcOffset` of its
    row-major contents, into the local buffer `dst` (ISA `ld`). The result is the filled buffer
    (the same buffer as `dst` once bufferized). Offsets and sizes count elements, not bytes."""

    name = "pim.load"

    T: ClassVar = VarConstraint("T", SpatTensor)
    global_ = operand_def(SpatTensor)
    dst = operand_def(T)
    result = result_def(T)
    global_src_offset = prop_def(IntegerAttr.constr(type=i64), prop_name="globalSrcOffset")
    size = prop_def(IntegerAttr.constr(type=i64))

    assembly_format = (
        "$global_ `[` $globalSrcOffset `]` `,` $dst `size` $size attr-dict `:` type($global_) `,` type($dst)"
    )

    def __init__(self, global_: SSAValue | Operation, dst: SSAValue | Operation, offset: int, size: int | None = None):
        dst_type = SSAValue.get(dst).type
        if size is None:
            size = num_elements(static_shape(self, "local buffer", dst_type))
        super().__init__(
            operands=[global_, dst],
            result_types=[dst_type],
            properties={"globalSrcOffset": IntegerAttr(offset, i64), "size": IntegerAttr(size, i64)},
        )

    def verify_(self) -> None:
        _verify_global_range(
            self, "globalSrcOffset", self.global_src_offset.value.data, self.size.value.data, self.dst, self.global_
        )


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Copies the `size` elements of the local value `src` into the global buffer `global`,
    from element `globalDstOffset` of its row-major contents on (ISA `st`)."""

    name = "pim.store"

    src = operand_def(SpatTensor)
    global_ = operand_def(MemRefType)
    global_dst_offset = prop_def(IntegerAttr.constr(type=i64), prop_name="globalDstOffset")
    size = prop_def(IntegerAttr.constr(type=i64))

    assembly_format = (
        "$src `,` $global_ `[` $globalDstOffset `]` `size` $size attr-dict `:` type($src) `,` type($global_)"
    )

    def __init__(self, src: SSAValue | Operation, global_: SSAValue | Operation, offset: int, size: int | None = None):
        if size is None:
            size = num_elements(static_shape(self, "local buffer", SSAValue.get(src).type))
        super().__init__(
            operands=[src, global_],
            properties={"globalDstOffset": IntegerAttr(offset, i64), "size": IntegerAttr(size, i64)},
        )

    def verify_(self) -> None:
        _verify_global_range(
            self, "globalDstOffset", self.global_dst_offset.value.data, self.size.value.data, self.src, self.global_
        )


@irdl_op_definition
class ApplyFiltersOp(ApplyFiltersBase):
    """The bufferized `spat.apply_filters`: same `weightIndices` and geometry, same semantics.

    Overwrites `output` (`[H_out, W_out, C_out]`) with the result. `accumulator` holds one crossbar
    read (`C_out` elements, p·`C_out` with p pixels per read; the output's element type): every
    `mvmul` writes it, then a `vvadd` adds it to the output, because crossbar results cannot
    accumulate in place (Miotti 2025, Algorithm 4.2)."""

    name = "pim.apply_filters"

    input = operand_def(MemRefType)
    output = operand_def(MemRefType)
    accumulator = operand_def(MemRefType)

    assembly_format = (
        "`ins` `(` $input `:` type($input) `)` `outs` `(` $output `:` type($output) `)` "
        f"`accum` `(` $accumulator `:` type($accumulator) `)` `weights` $weightIndices {GEOMETRY_FORMAT} "
        f"{IM2COL_FORMAT} attr-dict"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        output: SSAValue | Operation,
        accumulator: SSAValue | Operation,
        weight_indices: Sequence[int],
        geometry: FilterGeometry = FilterGeometry(),
        packing: Im2col | None = None,
    ):
        super().__init__(
            operands=[input, output, accumulator],
            properties={
                "weightIndices": i64_array(weight_indices),
                **self.geometry_properties(geometry),
                **(packing.properties() if packing is not None else {}),
            },
        )

    def verify_(self) -> None:
        self.verify_filters(self.input, self.output)
        out_channels = self.products_shape(static_shape(self, "output", self.output))[-1]
        accumulator = static_shape(self, "accumulator", self.accumulator)
        if num_elements(accumulator) != out_channels:
            raise VerifyException(
                f"'pim.apply_filters' accumulator must hold one crossbar read ({out_channels} elements), "
                f"got {num_elements(accumulator)}"
            )
        if element_type(self.accumulator) != element_type(self.output):
            raise VerifyException("'pim.apply_filters' accumulator must have the output's element type")


# ----------------------------------------------------------------------------------------------
# Instruction level
# ----------------------------------------------------------------------------------------------

ADDRESS = "pim.address"
"""The discardable attribute holding the byte address `pim-codegen` gave a global buffer."""
LOCAL_BYTES = "pim.local_bytes"
"""The discardable attribute of an instruction-level `pim.core`: the local memory it uses."""

REGISTER_FIELDS = frozenset({"rd", "rs1", "rs2"})
"""Register indices, 0..31."""
ELEMENT_WIDTH_FIELDS = frozenset({"ibiw", "obiw"})
"""`setbw`'s element widths: 8, 16, 32 or 64 bits (pimsim-nn sizes memory accesses in whole bytes)."""
ELEMENT_WIDTHS = (8, 16, 32, 64)
COUNT_FIELDS = frozenset({"len", "size", "group", "core", "event_register", "wait_value"})
"""Lengths, sizes and indices, >= 0."""
OFFSET_FIELDS = ("offset_select", "offset_value")
"""Nested as `"offset": {"offset_select": s, "offset_value": v}` when an op has both."""
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _field_rule(field: str, value: int) -> str | None:
    """What is wrong with an ISA field's value (None: nothing), the pimsim-nn decoder's rules."""
    if field in REGISTER_FIELDS and not 0 <= value <= 31:
        return f"{field} must be a register index 0..31, got {value}"
    if field in ELEMENT_WIDTH_FIELDS and value not in ELEMENT_WIDTHS:
        return f"{field} must be an element width of 8, 16, 32 or 64 bits, got {value}"
    if field == "mbiw" and value <= 0:
        return f"mbiw must be a weight bit width > 0 (pimsim-nn divides by it), got {value}"
    if field in COUNT_FIELDS and value < 0:
        return f"{field} must be >= 0, got {value}"
    if field == "relu" and value not in (0, 1):
        return f"relu must be 0 or 1, got {value}"
    if field == "offset_select" and not 0 <= value <= 7:
        return f"offset_select must be 0..7 (bit 0 rd, bit 1 rs1, bit 2 rs2), got {value}"
    return None


_FIELD_ATTRS: dict[int, IntegerAttr] = {}


def _i32(value: int) -> IntegerAttr:
    """The (immutable, shared) property attribute of a field value."""
    attr = _FIELD_ATTRS.get(value)
    if attr is None:
        attr = _FIELD_ATTRS[value] = IntegerAttr(value, i32)
    return attr


@cache
def _nests_offset(fields: tuple[str, ...]) -> bool:
    return all(f in fields for f in OFFSET_FIELDS)


@cache
def _flat_fields(fields: tuple[str, ...]) -> tuple[str, ...]:
    """The fields of an instruction object's top level (the offset pair, last in `FIELDS`, nests)."""
    return tuple(f for f in fields if not (_nests_offset(fields) and f in OFFSET_FIELDS))


@cache
def _empty_state(cls: type[InstructionOp]) -> dict[str, Any]:
    """The instance state of an op of `cls` made by the constructor: no operands, results,
    successors or regions (immutable empty sequences, shared), no location."""
    return dict(cls().__dict__)


@cache
def _mnemonic(cls: type[InstructionOp]) -> str:
    return cls.name.removeprefix("pim.")


@cache
def _json_shape(cls: type[InstructionOp]) -> tuple[tuple[str, ...], bool]:
    """The top-level fields of the op's JSON object, and whether it nests the offset pair."""
    return _flat_fields(cls.FIELDS), _nests_offset(cls.FIELDS)


@cache
def _zero_properties(cls: type[InstructionOp]) -> dict[str, IntegerAttr]:
    return {f: _i32(0) for f in cls.FIELDS}


class InstructionJsonError(ValueError):
    """A JSON instruction object that is not a valid pimsim-nn instruction."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class InstructionOp(IRDLOperation):
    """Base of the ISA ops: one i32 property per pimsim-nn JSON field named in `FIELDS`.

    Missing fields default to 0, as in pimsim-nn. Custom syntax: `pim.mvmul rd = 2, rs1 = 0,
    mbiw = 8, relu = 0, group = 0` (every field, in `FIELDS` order). Subclasses set `name`,
    `OPCODE` (pimsim-nn's opcode number) and `FIELDS`; the properties are created from `FIELDS`.
    The ISA's field rules live in `verify_`; `to_json`/`from_json` are the artifact form."""

    FIELDS: ClassVar[tuple[str, ...]] = ()
    OPCODE: ClassVar[int]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "FIELDS" in cls.__dict__:
            for field in cls.FIELDS:
                setattr(cls, field, prop_def(IntegerAttr.constr(type=i32), default_value=IntegerAttr(0, i32)))

    def __init__(self, **fields: int):
        if not fields.keys() <= set(self.FIELDS):
            unknown = sorted(set(fields) - set(self.FIELDS))
            raise TypeError(f"'{self.name}' has no field {', '.join(unknown)} (fields: {', '.join(self.FIELDS)})")
        for field, value in fields.items():
            if not INT32_MIN <= value <= INT32_MAX:
                raise VerifyException(f"'{self.name}' {field} must fit in a signed 32-bit integer, got {value}")
        # Instruction ops have no operands, results or regions: the generic IRDL initialiser (about
        # 30x slower) has nothing to check, and programs hold millions of these ops.
        Operation.__init__(self, properties={f: _i32(fields.get(f, 0)) for f in self.FIELDS})

    @classmethod
    def build(cls, **fields: int) -> Self:
        """The op with `fields` (missing ones 0), for code generators emitting millions of them:
        unchecked (the verifier checks the values), in the state the constructor gives, with fresh
        property and attribute dictionaries."""
        op = cls.__new__(cls)
        op.__dict__.update(_empty_state(cls))
        properties = dict(_zero_properties(cls))
        for f, value in fields.items():
            properties[f] = _i32(value)
        op.properties = properties
        op.attributes = {}
        return op

    @classmethod
    def mnemonic(cls) -> str:
        """The pimsim-nn op name (`"mvmul"`)."""
        return _mnemonic(cls)

    @classmethod
    def nests_offset(cls) -> bool:
        return _nests_offset(cls.FIELDS)

    def field(self, name: str) -> int:
        """The value of one ISA field."""
        attr = self.properties[name]
        assert isinstance(attr, IntegerAttr)
        return attr.value.data

    def fields(self) -> dict[str, int]:
        """All ISA fields of this op, in `FIELDS` order."""
        return {f: self.field(f) for f in self.FIELDS}

    def to_json(self) -> dict[str, Any]:
        """The pimsim-nn instruction object: every field, offsets nested when the op has both, e.g.
        `{"op": "ld", "rd": 0, "rs1": 28, "size": 128, "offset": {"offset_select": 0,
        "offset_value": 0}}`."""
        properties = self.properties
        flat, nested = _json_shape(type(self))
        obj: dict[str, Any] = {"op": self.mnemonic()}
        for f in flat:
            obj[f] = properties[f].value.data  # pyright: ignore[reportAttributeAccessIssue]
        if nested:
            obj["offset"] = {f: properties[f].value.data for f in OFFSET_FIELDS}  # pyright: ignore
        return obj

    @classmethod
    def from_json(cls, obj: Any) -> InstructionOp:
        """The verified op for a pimsim-nn instruction object. Unknown keys are ignored and missing
        fields are 0, as in pimsim-nn; anything else raises `InstructionJsonError` with one line.
        On a subclass, the object must be of that op."""
        if not isinstance(obj, Mapping):
            raise InstructionJsonError(f"an instruction must be a JSON object, got {obj!r}")
        op_name = obj.get("op")
        target = INSTRUCTION_OPS.get(op_name) if isinstance(op_name, str) else None
        if target is None:
            raise InstructionJsonError(f"unknown instruction op {op_name!r}")
        if cls is not InstructionOp and target is not cls:
            raise InstructionJsonError(f"expected a '{cls.mnemonic()}' instruction, got {op_name!r}")
        offset = obj.get("offset", {})
        if target.nests_offset() and not isinstance(offset, Mapping):
            raise InstructionJsonError(f"'{op_name}' offset must be an object, got {offset!r}")
        values: dict[str, int] = {}
        for f in target.FIELDS:
            value = (offset if f in OFFSET_FIELDS and target.nests_offset() else obj).get(f, 0)
            if not _is_int(value):
                raise InstructionJsonError(f"'{op_name}' field '{f}' must be an integer, got {value!r}")
            values[f] = value
        try:
            op = target(**values)
            op.verify()
        except VerifyException as e:
            raise InstructionJsonError(str(e)) from e
        return op

    @classmethod
    def field_rule(cls, field: str, value: int) -> str | None:
        """What is wrong with the value of one of the op's fields (None: nothing)."""
        return _field_rule(field, value)

    def verify_(self) -> None:
        for f, value in self.fields().items():
            if (problem := self.field_rule(f, value)) is not None:
                raise VerifyException(f"'{self.name}' {problem}")

    @classmethod
    def parse(cls, parser: Parser) -> InstructionOp:
        values: dict[str, int] = {}

        def parse_field(field: str, start: int) -> None:
            if field not in cls.FIELDS:
                parser.raise_error(
                    f"'{cls.name}' has no field '{field}' (fields: {', '.join(cls.FIELDS)})", start, parser.pos
                )
            if field in values:
                parser.raise_error(f"'{cls.name}' field '{field}' is given twice", start, parser.pos)
            parser.parse_punctuation("=")
            literal = parser.pos
            value = parser.parse_integer(allow_boolean=False)
            if not INT32_MIN <= value <= INT32_MAX:
                parser.raise_error(f"'{cls.name}' {field} must fit in a signed 32-bit integer", literal)
            values[field] = value

        start = parser.pos
        if cls.FIELDS and (first := parser.parse_optional_identifier()) is not None:
            parse_field(first, start)
            while parser.parse_optional_punctuation(",") is not None:
                start = parser.pos
                parse_field(parser.parse_identifier(" (an instruction field name)"), start)
        attributes = parser.parse_optional_attr_dict()
        op = cls(**values)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        if self.FIELDS:
            printer.print_string(" ")
            printer.print_string(", ".join(f"{f} = {v}" for f, v in self.fields().items()))
        printer.print_op_attributes(self.attributes)


# --- no-op and scalar unit -------------------------------------------------------------------


@irdl_op_definition
class NopOp(InstructionOp):
    """Does nothing."""

    name = "pim.nop"
    OPCODE: ClassVar[int] = 0
    FIELDS: ClassVar[tuple[str, ...]] = ()


@irdl_op_definition
class SldiOp(InstructionOp):
    """`$rd = imm`: loads an immediate (a local or global address) into a register."""

    name = "pim.sldi"
    OPCODE: ClassVar[int] = 1
    FIELDS: ClassVar[tuple[str, ...]] = ("rd", "imm")


@irdl_op_definition
class SldOp(InstructionOp):
    """`$rd = GMem[$rs1 + offset_value]` (a scalar load; `offset_value` is flat, in bytes)."""

    name = "pim.sld"
    OPCODE: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[str, ...]] = ("rd", "rs1", "offset_value")


class ScalarRegisterOp(InstructionOp):
    """Base of `$rd = $rs1 ∘ $rs2` on registers."""

    FIELDS: ClassVar[tuple[str, ...]] = ("rd", "rs1", "rs2")


@irdl_op_definition
class SaddOp(ScalarRegisterOp):
    """`$rd = $rs1 + $rs2`."""

    name = "pim.sadd"
    OPCODE: ClassVar[int] = 3


@irdl_op_definition
class SsubOp(ScalarRegisterOp):
    """`$rd = $rs1 - $rs2`."""

    name = "pim.ssub"
    OPCODE: ClassVar[int] = 4


@irdl_op_definition
class SmulOp(ScalarRegisterOp):
    """`$rd = $rs1 * $rs2`."""

    name = "pim.smul"
    OPCODE: ClassVar[int] = 5


class ScalarImmediateOp(InstructionOp):
    """Base of `$rd = $rs1 ∘ imm`."""

    FIELDS: ClassVar[tuple[str, ...]] = ("rd", "rs1", "imm")


@irdl_op_definition
class SaddiOp(ScalarImmediateOp):
    """`$rd = $rs1 + imm`."""

    name = "pim.saddi"
    OPCODE: ClassVar[int] = 6


@irdl_op_definition
class SmuliOp(ScalarImmediateOp):
    """`$rd = $rs1 * imm`."""

    name = "pim.smuli"
    OPCODE: ClassVar[int] = 7


# --- matrix unit -----------------------------------------------------------------------------


@irdl_op_definition
class SetbwOp(InstructionOp):
    """Sets the core's input and output element bit widths; emit it first on every core."""

    name = "pim.setbw"
    OPCODE: ClassVar[int] = 8
    FIELDS: ClassVar[tuple[str, ...]] = ("ibiw", "obiw")


@irdl_op_definition
class MvmulOp(InstructionOp):
    """`LMem[$rd] = LMem[$rs1] · AG[group]` on array group `group` (the core's crossbar `group`),
    weights of `mbiw` bits, optionally followed by ReLU (`relu = 1`)."""

    name = "pim.mvmul"
    OPCODE: ClassVar[int] = 9
    FIELDS: ClassVar[tuple[str, ...]] = ("rd", "rs1", "mbiw", "relu", "group")


# --- vector unit -----------------------------------------------------------------------------


class VectorBinaryInstructionOp(InstructionOp):
    """Base of `LMem[$rd..+len] = LMem[$rs1..] ∘ LMem[$rs2..]` (`len` elements)."""

    FIELDS: ClassVar[tuple[str, ...]] = ("rd", "rs1", "rs2", "len", "offset_select", "offset_value")


@irdl_op_definition
class VvaddOp(VectorBinaryInstructionOp):
    """Element-wise addition."""

    name = "pim.vvadd"
    OPCODE: ClassVar[int] = 10


@irdl_op_definition
class VvsubOp(VectorBinaryInstructionOp):
    """Element-wise subtraction."""

    name = "pim.vvsub"
    OPCODE: ClassVar[int] = 11


@irdl_op_definition
class VvmulOp(VectorBinaryInstructionOp):
    """Element-wise multiplication."""

    name = "pim.vvmul"
    OPCODE: ClassVar[int] = 12


@irdl_op_definition
class VvdmulOp(VectorBinaryInstructionOp):
    """Dot product of two vectors into one element."""

    name = "pim.vvdmul"
    OPCODE: ClassVar[int] = 13


@irdl_op_definition
class VvmaxOp(VectorBinaryInstructionOp):
    """Element-wise maximum."""

    name = "pim.vvmax"
    OPCODE: ClassVar[int] = 14


@irdl_op_definition
class VvsllOp(VectorBinaryInstructionOp):
    """Element-wise logical shift left."""

    name = "pim.vvsll"
    OPCODE: ClassVar[int] = 15


@irdl_op_definition
class VvsraOp(VectorBinaryInstructionOp):
    """Element-wise arithmetic shift right."""

    name = "pim.vvsra"
    OPCODE: ClassVar[int] = 16


@irdl_op_definition
class VavgOp(VectorBinaryInstructionOp):
    """Average of `len` elements of `LMem[$rs1]` taken with stride `$rs2`, into `LMem[$rd]`."""

    name = "pim.vavg"
    OPCODE: ClassVar[int] = 17


class VectorUnaryInstructionOp(InstructionOp):
    """Base of `LMem[$rd..+len] = f(LMem[$rs1..])`."""

    FIELDS: ClassVar[tuple[str, ...]] = ("rd", "rs1", "len", "offset_select", "offset_value")


@irdl_op_definition
class VreluOp(VectorUnaryInstructionOp):
    """Element-wise ReLU."""

    name = "pim.vrelu"
    OPCODE: ClassVar[int] = 18


@irdl_op_definition
class VtanhOp(VectorUnaryInstructionOp):
    """Element-wise tanh."""

    name = "pim.vtanh"
    OPCODE: ClassVar[int] = 19


@irdl_op_definition
class VsigmOp(VectorUnaryInstructionOp):
    """Element-wise sigmoid."""

    name = "pim.vsigm"
    OPCODE: ClassVar[int] = 20


@irdl_op_definition
class VmvOp(InstructionOp):
    """Strided gather: `len` elements of `LMem[$rs1]` with stride `$rs2` into `LMem[$rd]`."""

    name = "pim.vmv"
    OPCODE: ClassVar[int] = 22
    FIELDS: ClassVar[tuple[str, ...]] = ("rd", "rs1", "rs2", "len")


@irdl_op_definition
class VrsuOp(VectorBinaryInstructionOp):
    """Resize with an upper clamp `$rs2`."""

    name = "pim.vrsu"
    OPCODE: ClassVar[int] = 23


@irdl_op_definition
class VrslOp(VectorBinaryInstructionOp):
    """Resize with a lower clamp `$rs2`."""

    name = "pim.vrsl"
    OPCODE: ClassVar[int] = 24


# --- transfer unit ---------------------------------------------------------------------------


class GlobalTransferOp(InstructionOp):
    """Base of `ld`/`st`: `size` bytes between local and global memory. The global address is
    the register pair `($r << 32) | $r+1`; the local side is `offset` (pimsim-nn's decoding)."""

    FIELDS: ClassVar[tuple[str, ...]] = ("rd", "rs1", "size", "offset_select", "offset_value")
    PAIR: ClassVar[str]
    """The field naming the global address's register pair."""

    @classmethod
    def field_rule(cls, field: str, value: int) -> str | None:
        if field == cls.PAIR and (value % 2 or value == 31):
            return f"{field} must name an even register pair (the global address), got {value}"
        return super().field_rule(field, value)


@irdl_op_definition
class LdOp(GlobalTransferOp):
    """`LMem[$rd] ← GMem[$rs1]`, `size` bytes."""

    name = "pim.ld"
    OPCODE: ClassVar[int] = 25
    PAIR: ClassVar[str] = "rs1"


@irdl_op_definition
class StOp(GlobalTransferOp):
    """`GMem[$rd] ← LMem[$rs1]`, `size` bytes."""

    name = "pim.st"
    OPCODE: ClassVar[int] = 26
    PAIR: ClassVar[str] = "rd"


@irdl_op_definition
class LldiOp(InstructionOp):
    """Fills `len` local-memory elements at `$rd` with `imm`."""

    name = "pim.lldi"
    OPCODE: ClassVar[int] = 27
    FIELDS: ClassVar[tuple[str, ...]] = ("rd", "imm", "len", "offset_select", "offset_value")


@irdl_op_definition
class LmvOp(InstructionOp):
    """Local copy `LMem[$rd] ← LMem[$rs1]`; pimsim-nn times it with `len` and checks hazards
    with `size`, so set both."""

    name = "pim.lmv"
    OPCODE: ClassVar[int] = 28
    FIELDS: ClassVar[tuple[str, ...]] = ("rd", "rs1", "len", "size", "offset_select", "offset_value")


@irdl_op_definition
class SendOp(InstructionOp):
    """Sends `size` bytes at `LMem[$rd]` to core `core`; blocks until received. pimsim-nn reads
    the address from `rd` and uses `rs1` for hazards only, so set `rs1 = rd`."""

    name = "pim.send"
    OPCODE: ClassVar[int] = 29
    FIELDS: ClassVar[tuple[str, ...]] = ("rd", "rs1", "core", "size", "offset_select", "offset_value")


@irdl_op_definition
class RecvOp(InstructionOp):
    """Receives `size` bytes from core `core` into `LMem[$rd]`; blocks until sent."""

    name = "pim.recv"
    OPCODE: ClassVar[int] = 30
    FIELDS: ClassVar[tuple[str, ...]] = ("rd", "core", "size", "offset_select", "offset_value")


@irdl_op_definition
class WaitOp(InstructionOp):
    """Blocks until event register `event_register` equals `wait_value`, then resets it."""

    name = "pim.wait"
    OPCODE: ClassVar[int] = 31
    FIELDS: ClassVar[tuple[str, ...]] = ("event_register", "wait_value")


@irdl_op_definition
class SyncOp(InstructionOp):
    """Atomically increments event register `event_register` of core `core`."""

    name = "pim.sync"
    OPCODE: ClassVar[int] = 32
    FIELDS: ClassVar[tuple[str, ...]] = ("event_register", "core")


INSTRUCTION_CLASSES: tuple[type[InstructionOp], ...] = (
    NopOp,
    SldiOp,
    SldOp,
    SaddOp,
    SsubOp,
    SmulOp,
    SaddiOp,
    SmuliOp,
    SetbwOp,
    MvmulOp,
    VvaddOp,
    VvsubOp,
    VvmulOp,
    VvdmulOp,
    VvmaxOp,
    VvsllOp,
    VvsraOp,
    VavgOp,
    VreluOp,
    VtanhOp,
    VsigmOp,
    VmvOp,
    VrsuOp,
    VrslOp,
    LdOp,
    StOp,
    LldiOp,
    LmvOp,
    SendOp,
    RecvOp,
    WaitOp,
    SyncOp,
)

INSTRUCTION_OPS: dict[str, type[InstructionOp]] = {cls.mnemonic(): cls for cls in INSTRUCTION_CLASSES}
"""The instruction op class for each pimsim-nn op name (`"mvmul"` -> `MvmulOp`)."""
BY_OPCODE: dict[int, type[InstructionOp]] = {cls.OPCODE: cls for cls in INSTRUCTION_CLASSES}
MAX_FIELDS = max(len(cls.FIELDS) for cls in INSTRUCTION_CLASSES)
RECORD = 1 + MAX_FIELDS
"""Words of one packed instruction: the opcode, then the fields in `FIELDS` order, 0-padded."""


@cache
def json_template(cls: type[InstructionOp]) -> str:
    """`to_json`'s text (", " and ": " separators) with `%d` for the field values, in `FIELDS`
    order (the nested offset pair is last in both)."""
    marks = {f: 1_000_000_000 + i for i, f in enumerate(cls.FIELDS)}
    text = json.dumps(cls.build(**marks).to_json(), separators=(", ", ": "))
    assert [int(m) for m in re.findall(r"1000000\d{3}", text)] == list(marks.values())
    for mark in marks.values():
        text = text.replace(str(mark), "%d")
    return text


def _first_rule_break(table: np.ndarray) -> int:
    """The index of the first packed record (`RECORD` int64 words) whose fields break their op's
    `field_rule` or do not fit in 32 bits (the number of records when none does)."""
    bad = np.zeros(len(table), bool)
    for cls in INSTRUCTION_CLASSES:
        rows = table[:, 0] == cls.OPCODE
        for j, f in enumerate(cls.FIELDS, start=1):
            column = table[rows, j]
            values = np.unique(column)
            wrong = [v for v in values.tolist() if not INT32_MIN <= v <= INT32_MAX or cls.field_rule(f, v) is not None]
            if wrong:
                bad[np.flatnonzero(rows)[np.isin(column, wrong)]] = True
    return int(np.argmax(bad)) if bad.any() else len(table)


class InstructionStream(Sequence[InstructionOp]):
    """A core's instructions packed in arrays: `opcodes[i]` is instruction i's pimsim-nn opcode,
    `fields[i, j]` the value of its j-th field in `FIELDS` order (0 past its fields). Code
    generators emit this form; the artifact writer and the performance model read it without
    building ops; indexing and iteration build the ops."""

    def __init__(self, opcodes: np.ndarray, fields: np.ndarray):
        self.opcodes = np.asarray(opcodes, np.int32)
        self.fields = np.asarray(fields, np.int32).reshape(len(self.opcodes), MAX_FIELDS)

    @classmethod
    def from_records(cls, words: Sequence[int] | np.ndarray) -> InstructionStream:
        """From flat `RECORD`-word records (`opcode, field…`), e.g. an `array.array("i")`."""
        table = np.frombuffer(words, np.int32) if not isinstance(words, np.ndarray) else words
        table = table.reshape(-1, RECORD)
        return cls(table[:, 0], table[:, 1:])

    @classmethod
    def from_ops(cls, ops: Sequence[InstructionOp]) -> InstructionStream:
        if isinstance(ops, InstructionStream):
            return ops
        words = np.zeros((len(ops), RECORD), np.int32)
        for i, op in enumerate(ops):
            values = [op.OPCODE, *(op.field(f) for f in op.FIELDS)]
            words[i, : len(values)] = values
        return cls(words[:, 0], words[:, 1:])

    @classmethod
    def from_json(cls, objects: Sequence[Any]) -> InstructionStream:
        """The stream of pimsim-nn instruction objects, checked as `InstructionOp.from_json` checks
        each one, without building ops: the objects are packed in one pass and the field rules
        applied to each field's distinct values. The first bad object raises its
        `InstructionOp.from_json` error, prefixed with `instruction <index>: `."""
        shapes = {
            c.mnemonic(): (c.OPCODE, *_json_shape(c), [0] * (MAX_FIELDS - len(c.FIELDS))) for c in INSTRUCTION_CLASSES
        }
        words: list[Any] = []
        bad = len(objects)
        for index, obj in enumerate(objects):
            try:
                code, flat, nested, padding = shapes[obj["op"]]
                get = obj.get
                words.append(code)
                words += [get(f, 0) for f in flat]
                if nested:
                    offset = get("offset", {})
                    words += (offset.get("offset_select", 0), offset.get("offset_value", 0))
            except (KeyError, TypeError, AttributeError):
                bad = index
                break
            words += padding
        table = np.zeros((0, RECORD), np.int64)
        if bad == len(objects):
            try:
                if not set(map(type, words)) <= {int}:
                    raise TypeError
                table = np.array(words, np.int64).reshape(-1, RECORD)
            except (TypeError, OverflowError):  # a bool, float, ... or a huge value: find its object
                bad = next(k for k, v in enumerate(words) if type(v) is not int or abs(v) > INT32_MAX + 1) // RECORD
            else:
                bad = _first_rule_break(table)
        if bad < len(objects):
            try:
                InstructionOp.from_json(objects[bad])
            except InstructionJsonError as e:
                raise InstructionJsonError(f"instruction {bad}: {e}") from None
            raise AssertionError(f"instruction {bad} passes InstructionOp.from_json")  # pragma: no cover
        return cls(table[:, 0], table[:, 1:])

    def __len__(self) -> int:
        return len(self.opcodes)

    def op(self, i: int) -> InstructionOp:
        cls = BY_OPCODE[int(self.opcodes[i])]
        return cls.build(**dict(zip(cls.FIELDS, self.fields[i].tolist())))

    @overload
    def __getitem__(self, i: int) -> InstructionOp: ...
    @overload
    def __getitem__(self, i: slice) -> list[InstructionOp]: ...
    def __getitem__(self, i: int | slice) -> InstructionOp | list[InstructionOp]:
        if isinstance(i, slice):
            return [self.op(k) for k in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        return self.op(i % len(self))

    def __iter__(self) -> Iterator[InstructionOp]:
        builders = {code: (cls.build, cls.FIELDS) for code, cls in BY_OPCODE.items()}
        for code, row in zip(self.opcodes.tolist(), self.fields.tolist()):
            build, names = builders[code]
            yield build(**dict(zip(names, row)))

    def counts(self) -> Counter[str]:
        """Instructions per op name."""
        codes, n = np.unique(self.opcodes, return_counts=True)
        return Counter({BY_OPCODE[int(c)].mnemonic(): int(k) for c, k in zip(codes, n)})

    def column(self, name: str) -> np.ndarray:
        """Each instruction's value of field `name` (0 where its op has no such field)."""
        position = np.full(max(BY_OPCODE) + 1, -1)
        for code, cls in BY_OPCODE.items():
            if name in cls.FIELDS:
                position[code] = cls.FIELDS.index(name)
        where = position[self.opcodes]
        values = np.take_along_axis(self.fields, np.maximum(where, 0)[:, None], axis=1)[:, 0]
        return np.where(where >= 0, values, 0)

    def json_lines(self) -> str:
        """The instructions' `to_json` objects (", " and ": " separators), one per line, formatted
        in one call: the ops' templates joined, filled with their fields in order."""
        templates = np.array([json_template(BY_OPCODE.get(c, NopOp)) for c in range(max(BY_OPCODE) + 1)], object)
        counts = np.array([len(BY_OPCODE[c].FIELDS) if c in BY_OPCODE else 0 for c in range(len(templates))])
        used = np.arange(MAX_FIELDS) < counts[self.opcodes][:, None]
        return ",\n".join(templates[self.opcodes].tolist()) % tuple(self.fields[used].tolist())


@dataclass
class CoreCode:
    """A core's code in packed form: its instructions and the local memory they use. `pim-codegen`
    generates it; the artifact writer reads it without the instruction ops being built."""

    core: CoreOp
    stream: InstructionStream
    local_bytes: int


Pim = Dialect(
    "pim",
    [CoreOp, HaltOp, LoadOp, StoreOp, ApplyFiltersOp, *INSTRUCTION_CLASSES],
    [],
)
