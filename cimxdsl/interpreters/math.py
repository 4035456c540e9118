"""NumPy implementations of `math`, element-wise."""

from collections.abc import Callable

import numpy as np
from xdsl.dialects import math
from xdsl.interpreter import InterpreterFunctions, impl, register_impls

from cimxdsl.interpreters.numeric import erf, round_half_away
from cimxdsl.interpreters.values import elementwise

ELEMENTWISE: dict[type, Callable] = {
    math.PowFOp: np.power,
    math.ExpOp: np.exp,
    math.TanhOp: np.tanh,
    math.SqrtOp: np.sqrt,
    math.ErfOp: erf,
    math.RoundEvenOp: np.rint,
    math.AbsFOp: np.abs,
    math.RsqrtOp: lambda x: 1 / np.sqrt(x),
    math.CosOp: np.cos,
    math.SinOp: np.sin,
    math.AbsIOp: np.abs,
    math.LogOp: np.log,
    math.CeilOp: np.ceil,
    math.FloorOp: np.floor,
    math.RoundOp: round_half_away,
}
"""The ops and the NumPy functions they are (`elementwise`)."""


class MathFunctions(InterpreterFunctions):
    """Each op is `elementwise` of its function in `ELEMENTWISE`."""


for _kind, _function in ELEMENTWISE.items():
    setattr(MathFunctions, f"run_{_kind.__name__}", impl(_kind)(elementwise(_function)))
MathFunctions = register_impls(MathFunctions)
