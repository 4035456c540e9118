"""Runtime values of the interpreter: tensors and memrefs are NumPy arrays, scalars Python numbers."""

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    TensorType,
    VectorType,
)
from xdsl.interpreter import InterpreterFunctions, impl
from xdsl.ir import Attribute

_FLOAT_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": np.float32}


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


def element_type(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, TensorType | MemRefType | VectorType) else t


def is_shaped(t: Attribute) -> bool:
    return isinstance(t, TensorType | MemRefType | VectorType)


def as_type(value, t: Attribute):
    """`value` converted to the runtime representation of type `t` (array or Python scalar)."""
    dtype = numpy_dtype(element_type(t))
    if is_shaped(t):
        return np.asarray(value).astype(dtype, copy=False)
    scalar = np.asarray(value).astype(dtype).item()
    return scalar


def dense_array(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The contents of a dense attribute as an array, read straight from its bytes (splats broadcast)."""
    element = attr.get_element_type()
    stored = np.frombuffer(attr.data.data, dtype=np.dtype(element.format))
    dtype = numpy_dtype(element)
    values = stored != 0 if dtype == np.bool_ else stored.astype(dtype, copy=False)
    shape = attr.get_shape()
    if values.size == 1 and int(np.prod(shape)) != 1:
        return np.full(shape, values[0], dtype=dtype)
    return values.reshape(shape).copy()


def attribute_value(attr: Attribute, t: Attribute):
    """The runtime value of a constant attribute of type `t`."""
    if isinstance(attr, DenseIntOrFPElementsAttr):
        return dense_array(attr)
    if isinstance(attr, IntegerAttr | FloatAttr):
        return as_type(attr.value.data, t)
    raise ValueError(f"constant {attr} cannot be interpreted")


def register_family(functions: type[InterpreterFunctions], ops, implementation) -> None:
    """Use `implementation` for every op class in `ops` (call `register_impls` afterwards)."""
    for op_type in ops:
        setattr(functions, f"run_{op_type.__name__}", impl(op_type)(implementation))
