"""Runtime values of the interpreter: tensors and memrefs are NumPy arrays, scalars Python numbers."""

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    TensorType,
    VectorType,
)
from xdsl.interpreter import InterpreterFunctions, impl
from xdsl.ir import Attribute

from cimxdsl.dialects.utils import dense_array, numpy_dtype


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
