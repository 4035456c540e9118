"""NumPy implementations of `math`, element-wise."""

import numpy as np
from xdsl.dialects import math
from xdsl.interpreter import InterpreterFunctions, impl, register_impls

from cimxdsl.interpreters.numeric import erf, round_half_away
from cimxdsl.interpreters.values import elementwise


@register_impls
class MathFunctions(InterpreterFunctions):
    run_powf = impl(math.PowFOp)(elementwise(np.power))
    run_exp = impl(math.ExpOp)(elementwise(np.exp))
    run_tanh = impl(math.TanhOp)(elementwise(np.tanh))
    run_sqrt = impl(math.SqrtOp)(elementwise(np.sqrt))
    run_erf = impl(math.ErfOp)(elementwise(erf))
    run_roundeven = impl(math.RoundEvenOp)(elementwise(np.rint))
    run_absf = impl(math.AbsFOp)(elementwise(np.abs))
    run_rsqrt = impl(math.RsqrtOp)(elementwise(lambda x: 1 / np.sqrt(x)))
    run_cos = impl(math.CosOp)(elementwise(np.cos))
    run_sin = impl(math.SinOp)(elementwise(np.sin))
    run_absi = impl(math.AbsIOp)(elementwise(np.abs))
    run_log = impl(math.LogOp)(elementwise(np.log))
    run_ceil = impl(math.CeilOp)(elementwise(np.ceil))
    run_floor = impl(math.FloorOp)(elementwise(np.floor))
    run_round = impl(math.RoundOp)(elementwise(round_half_away))
