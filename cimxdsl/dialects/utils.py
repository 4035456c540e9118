"""Helpers shared by the cimxdsl dialects, passes and interpreters: shapes of shaped values,
element types and constants as NumPy arrays (weights stay arrays; they are never expanded into
Python lists)."""

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import numpy as np
from xdsl.dialects import func, tensor
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FileLineColLoc,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException


def location_prefix(op: Operation) -> str:
    """`file:line:col: ` where `op` was parsed from, or "" when its location is not a file position;
    the prefix of every one-line error about an op."""
    place = op.location
    if isinstance(place, FileLineColLoc):
        return f"{place.filename.data}:{place.line.data}:{place.column.data}: "
    return ""


def is_accumulator_type(operand_type: Attribute, result_type: Attribute) -> bool:
    """Whether products of `operand_type` values may be kept in `result_type`.

    The same type always works; integers may also accumulate in a wider integer (`i8 -> i32`)."""
    if operand_type == result_type:
        return True
    return (
        isinstance(operand_type, IntegerType)
        and isinstance(result_type, IntegerType)
        and result_type.width.data >= operand_type.width.data
    )


_FLOAT_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": np.float32}


@functools.cache
def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The NumPy dtype holding values of an MLIR element type (signless integers are signed)."""
    if isinstance(element_type, IndexType):
        return np.dtype(np.int64)
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return np.dtype(np.bool_)
        for bits in (8, 16, 32, 64):
            if width <= bits:
                return np.dtype(f"int{bits}")
        raise ValueError(f"integers of {width} bits are not supported")
    name = str(element_type)
    if name in _FLOAT_DTYPES:
        return np.dtype(_FLOAT_DTYPES[name])
    raise ValueError(f"element type {element_type} has no NumPy equivalent")


def stored_values(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The elements a dense attribute stores, flat, read straight from its bytes: a splat's one
    value, not broadcast (not a copy, so read-only)."""
    element = attr.get_element_type()
    stored = np.frombuffer(attr.data.data, dtype=np.dtype(element.format))
    dtype = numpy_dtype(element)
    return stored != 0 if dtype == np.bool_ else stored.astype(dtype, copy=False)


def dense_array(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The contents of a dense attribute as an array, read straight from its bytes (splats broadcast;
    not a copy, so read-only: constants are values)."""
    values = stored_values(attr)
    shape = attr.get_shape()
    if values.size == 1 and int(np.prod(shape)) != 1:
        return np.full(shape, values[0], dtype=values.dtype)
    return values.reshape(shape)  # read-only when it is the attribute's own bytes


def dense_attr(array: np.ndarray, element_type: Attribute) -> DenseIntOrFPElementsAttr:
    """A dense constant of `element_type` holding `array` (its bytes, not a list of values)."""
    stored = np.asarray(array, dtype=np.dtype(element_type.format))  # C-order bytes in one copy
    return DenseIntOrFPElementsAttr(TensorType(element_type, array.shape), BytesAttr(stored.tobytes()))


def static_shape(op: Operation, what: str, value: SSAValue | Attribute) -> tuple[int, ...]:
    """The static shape of a tensor or memref, or a VerifyException naming `op` and `what`."""
    t = value.type if isinstance(value, SSAValue) else value
    if not isinstance(t, TensorType | MemRefType):
        raise VerifyException(f"'{op.name}' {what} must be a tensor or memref, got {t}")
    shape = t.get_shape()
    if any(d < 0 for d in shape):
        raise VerifyException(f"'{op.name}' {what} must have a static shape, got {t}")
    return shape


def shape_of(value: SSAValue) -> tuple[int, ...]:
    """The shape of a tensor or memref value."""
    t = value.type
    assert isinstance(t, TensorType | MemRefType)
    return shape_of_type(t)


def element_type(value: SSAValue) -> Attribute:
    """The element type of a tensor or memref value."""
    t = value.type
    assert isinstance(t, TensorType | MemRefType)
    return t.element_type


def num_elements(shape: Sequence[int]) -> int:
    """The number of elements of a static shape."""
    count = 1
    for d in shape:
        count *= d
    return count


T = TypeVar("T")

IDENTITY_CACHE_SIZE = 1 << 16
"""The entries an `identity_cache` holds before it starts again."""


_BY_VALUE = (int, float, str, tuple, bool, type(None))
"""The arguments an `identity_cache` keys by value (the others, attributes, by identity)."""


def identity_cache(function: Callable[..., T]) -> Callable[..., T]:
    """`function` of attributes (and numbers, strings and tuples) computed once per attribute
    object: attributes are immutable, but hashing or comparing an equal one walks all its
    parameters, where an object's id is one lookup. The table keeps the attributes it has seen
    alive, so an id stays theirs, and starts again past `IDENTITY_CACHE_SIZE` entries."""
    table: dict = {}

    def remembered(key, args: tuple) -> T:
        if len(table) >= IDENTITY_CACHE_SIZE:
            table.clear()
        hit = table[key] = (args, function(*args))
        return hit[1]

    if function.__code__.co_argcount == 1:  # (one attribute: its id is the key)

        @functools.wraps(function)
        def cached_one(a):
            hit = table.get(id(a))
            return remembered(id(a), (a,)) if hit is None else hit[1]

        return cached_one

    @functools.wraps(function)
    def cached(*args):
        key = tuple([a if isinstance(a, _BY_VALUE) else id(a) for a in args])
        hit = table.get(key)
        return remembered(key, args) if hit is None else hit[1]

    return cached


@identity_cache
def shape_of_type(t: TensorType | MemRefType) -> tuple[int, ...]:
    """The shape of a tensor or memref type (read from its attribute once)."""
    return t.get_shape()


@identity_cache
def attribute_text(a: Attribute) -> str:
    """`str(a)`, once per attribute object (printing one runs xDSL's printer)."""
    return str(a)


@identity_cache
def memref_type(t: Attribute) -> Attribute:
    """The buffer type of a tensor type (`t` itself if it is none)."""
    return shaped_type(MemRefType, t.element_type, shape_of_type(t)) if isinstance(t, TensorType) else t


@identity_cache
def shaped_type(kind: type, element_type: Attribute, shape: tuple[int, ...]):
    """The shaped type `kind` (a tensor, memref or `cim` future type) of `element_type` and the
    static `shape`: one attribute per element type and shape (the passes give thousands of tiles'
    values types of a few shapes, and building one checks its parameters against IRDL constraints
    made anew each time)."""
    return kind(element_type, shape)


@identity_cache
def with_shape(t: TensorType | MemRefType, shape: tuple[int, ...]) -> TensorType | MemRefType:
    """A tensor (or memref) type like `t` of shape `shape`; one attribute per type and shape, since
    building a type verifies its parameters and the passes ask for the same few again and again."""
    return shaped_type(type(t), t.element_type, shape)


def static_slice(source: SSAValue, offsets: Sequence[int], sizes: Sequence[int]) -> tensor.ExtractSliceOp:
    """`tensor.extract_slice` of `source` at static `offsets` and `sizes`, unit strides (as
    `ExtractSliceOp.from_static_parameters` builds it), created from its parts: the tiling passes
    make one per tile, and building one converts and checks every argument."""
    element_type = source.type.element_type  # pyright: ignore[reportAttributeAccessIssue]
    result_type = shaped_type(TensorType, element_type, tuple(sizes))
    properties = slice_properties(offsets, sizes, (1, 0, 0, 0))
    return tensor.ExtractSliceOp.create(operands=[source], result_types=[result_type], properties=properties)


def static_insert(
    source: SSAValue, dest: SSAValue, offsets: Sequence[int], sizes: Sequence[int]
) -> tensor.InsertSliceOp:
    """`tensor.insert_slice` of `source` into `dest` at static `offsets` and `sizes`, unit strides
    (as `InsertSliceOp.from_static_parameters` builds it), created from its parts (`static_slice`)."""
    properties = slice_properties(offsets, sizes, (1, 1, 0, 0, 0))
    return tensor.InsertSliceOp.create(operands=[source, dest], result_types=[dest.type], properties=properties)


def slice_properties(offsets: Sequence[int], sizes: Sequence[int], segments: tuple[int, ...]) -> dict[str, Attribute]:
    """The properties of a static slice op of unit strides whose operand groups have `segments` sizes."""
    return {
        "static_offsets": i64_array(offsets),
        "static_sizes": i64_array(sizes),
        "static_strides": _i64_array((1,) * len(sizes)),
        "operandSegmentSizes": _i32_array(segments),
    }


@functools.cache
def _i32_array(values: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, values)


@functools.cache
def i64_attr(value: int) -> IntegerAttr:
    """The (immutable, shared) `i64` integer attribute of `value`."""
    return IntegerAttr(value, i64)


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    """A `array<i64: ...>` property (one attribute per tuple of values)."""
    return _i64_array(tuple(values))


@functools.cache
def _i64_array(values: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, values)


def reassociation(groups: Sequence[Sequence[int]]) -> ArrayAttr:
    """The `reassociation` property of `tensor.collapse_shape`/`expand_shape`."""
    return ArrayAttr(ArrayAttr(IntegerAttr(i, i64) for i in group) for group in groups)


def verify_yielded(op: Operation, terminator_type: type[Operation], results: Sequence[SSAValue]) -> None:
    """`op`'s single-block body ends with a `terminator_type` yielding values of `results`' types."""
    terminator = op.regions[0].block.last_op
    if not isinstance(terminator, terminator_type):
        raise VerifyException(f"'{op.name}' body must end with '{terminator_type.name}'")
    yielded = tuple(v.type for v in terminator.operands)
    produced = tuple(r.type for r in results)
    if yielded != produced:
        raise VerifyException(
            f"'{op.name}' yields ({', '.join(map(str, yielded))}) but has results ({', '.join(map(str, produced))})"
        )


PRECISION = ("weight_bits", "input_bits")
"""The attributes of a crossbar product's precision, its weights' and its inputs' bits (1 to
`MAX_PRECISION`), set per layer by quantization and kept by every lowering down to the runtime
calls; a product without them runs at its device's bits (and float products on exact devices)."""
MAX_PRECISION = 8


CROSSBARS = "cim.crossbars"
"""The attribute of a crossbar weight constant whose columns span several crossbars side by side:
their count (an array group, read by one `mvmul`); absent, the weights take one crossbar."""


def crossbars_of(weight: SSAValue) -> int:
    """The crossbars weight matrix `weight` takes (its constant's `CROSSBARS`, else 1)."""
    owner = weight.owner
    attr = owner.attributes.get(CROSSBARS) if isinstance(owner, Operation) else None
    return attr.value.data if isinstance(attr, IntegerAttr) else 1


def crossbar_count(weights: Iterable[SSAValue]) -> int:
    """The crossbars the weight matrices `weights` take."""
    return sum(crossbars_of(w) for w in weights)


BOUNDS = "cim.bounds"
"""The argument attribute (an array of two integers, low and high) bounding the values a function
argument takes (the integer importer's quantized inputs); the PIM code generator reads it."""


def set_argument_bounds(function: func.FuncOp, bounds: Sequence[tuple[int, int]]) -> None:
    """Record each argument's bounds on `function` (`BOUNDS`)."""
    function.arg_attrs = ArrayAttr(
        [DictionaryAttr({BOUNDS: ArrayAttr([IntegerAttr(low, i64), IntegerAttr(high, i64)])}) for low, high in bounds]
    )


def symmetric_limit(bits: int) -> int:
    """The largest code of a symmetric signed `bits`-bit integer: 2^(bits-1) - 1, and 1 (a ternary
    sign) for one bit."""
    return max(2 ** (bits - 1) - 1, 1)


def precision_of(op: Operation) -> tuple[int, int] | None:
    """`(weight_bits, input_bits)` of a product that carries them, else None."""
    values = [op.attributes.get(name) for name in PRECISION]
    if not all(isinstance(v, IntegerAttr) for v in values):
        return None
    return tuple(v.value.data for v in values)  # type: ignore[union-attr, return-value]


def set_precision(op: Operation, precision: tuple[int, int] | None) -> Operation:
    """Give `op` the precision attributes (none when `precision` is None); returns `op`."""
    if precision is not None:
        for name, bits in zip(PRECISION, precision, strict=True):
            op.attributes[name] = IntegerAttr(bits, i64)
    return op


def carry_precision(source: Operation, *targets: Operation) -> None:
    """Copy `source`'s precision attributes, if any, to each of `targets` (a lowering's new ops)."""
    precision = precision_of(source)
    for target in targets:
        set_precision(target, precision)


def verify_precision(op: Operation) -> None:
    """Both precision attributes or neither, each an integer from 1 to `MAX_PRECISION`."""
    present = [name for name in PRECISION if name in op.attributes]
    if not present:
        return
    if len(present) == 1:
        raise VerifyException(f"'{op.name}' has '{present[0]}' without '{({*PRECISION} - {*present}).pop()}'")
    for name in PRECISION:
        value = op.attributes[name]
        if not isinstance(value, IntegerAttr) or not 1 <= value.value.data <= MAX_PRECISION:
            shown = value.value.data if isinstance(value, IntegerAttr) else value
            raise VerifyException(f"'{op.name}' {name} must be an integer from 1 to {MAX_PRECISION}, got {shown}")
