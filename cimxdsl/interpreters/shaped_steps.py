"""Host steps whose work is fixed by their result type, with that type read once when the program
is prepared: an empty tensor of a static shape (zeros, a read-only view shared by the runs, as
`tensor.empty` gives) and the reshapes to a static shape (`tensor.expand_shape`,
`tensor.collapse_shape`, `tensor.reshape`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects import tensor
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import Operation

from cimxdsl.dialects.utils import numpy_dtype

RESHAPES = (tensor.ExpandShapeOp, tensor.CollapseShapeOp, tensor.ReshapeOp)


def shaped_implementation(op: Operation) -> Callable | None:
    """The implementation of `op` with its result type read once, or None for other ops."""
    if not isinstance(op, (tensor.EmptyOp, *RESHAPES)) or len(op.results) != 1:
        return None
    result = op.results[0].type
    if not isinstance(result, TensorType) or DYNAMIC_INDEX in result.get_shape():
        return None
    shape = tuple(result.get_shape())
    if isinstance(op, tensor.EmptyOp):
        value = np.broadcast_to(np.zeros((), numpy_dtype(result.element_type)), shape)  # (read-only)
        return lambda interpreter, op, args: (value,)
    return lambda interpreter, op, args: (np.reshape(args[0], shape),)
