"""NumPy implementations of `arith` (element-wise on arrays as on scalars); they replace xDSL's
scalar-only ones."""

from collections.abc import Callable

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS, CMPI_COMPARISON_OPERATIONS
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from cimxdsl.interpreters.numeric import divide
from cimxdsl.interpreters.values import constant_value, elementwise, identity, result_of


def compare(predicate: str):
    """The NumPy comparison of an `arith.cmpi` predicate (`CMPI_COMPARISON_OPERATIONS`)."""
    function = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal}
    function |= {"gt": np.greater, "ge": np.greater_equal}
    if predicate.startswith("u"):  # sign-extended to 64 bits, values of one width keep their unsigned order
        return lambda a, b: function[predicate[1:]](np.asarray(a).astype(np.uint64), np.asarray(b).astype(np.uint64))
    return function[predicate.removeprefix("s")]


def compare_floats(predicate: str):
    """The NumPy comparison of an `arith.cmpf` predicate: ordered ones are false, unordered ones
    true, when an operand is NaN."""
    if predicate in ("false", "true"):
        return lambda a, b: np.full(np.broadcast_shapes(np.shape(a), np.shape(b)), predicate == "true")
    if predicate in ("ord", "uno"):
        return lambda a, b: (np.isnan(a) | np.isnan(b)) == (predicate == "uno")
    function = compare(predicate[1:])

    def run(a, b):
        unordered = np.isnan(a) | np.isnan(b)
        return np.where(unordered, predicate[0] == "u", function(a, b))

    return run


def unsigned_remainder(a, b):
    """`arith.remui`: the remainder of the operands read as unsigned integers."""
    return np.remainder(np.asarray(a).astype(np.uint64), np.asarray(b).astype(np.uint64))


ELEMENTWISE: dict[type, Callable] = {
    arith.AddiOp: np.add,
    arith.AddfOp: np.add,
    arith.SubiOp: np.subtract,
    arith.SubfOp: np.subtract,
    arith.MuliOp: np.multiply,
    arith.MulfOp: np.multiply,
    arith.DivfOp: np.true_divide,
    arith.DivSIOp: divide,
    arith.FloorDivSIOp: np.floor_divide,
    arith.RemSIOp: np.fmod,
    arith.MaxSIOp: np.maximum,
    arith.MinSIOp: np.minimum,
    arith.MaximumfOp: np.maximum,
    arith.MinimumfOp: np.minimum,
    arith.AndIOp: np.bitwise_and,
    arith.OrIOp: np.bitwise_or,
    arith.XOrIOp: np.bitwise_xor,
    arith.ShLIOp: np.left_shift,
    arith.ShRSIOp: np.right_shift,
    arith.NegfOp: np.negative,
    arith.ExtSIOp: identity,
    arith.TruncIOp: identity,
    arith.SIToFPOp: identity,
    arith.UIToFPOp: identity,
    arith.ExtUIOp: identity,
    arith.FPToSIOp: identity,
    arith.ExtFOp: identity,
    arith.TruncFOp: identity,
    arith.IndexCastOp: identity,
    arith.RemUIOp: unsigned_remainder,
}
"""The element-wise ops and the NumPy functions they are (`elementwise`)."""


class ArithFunctions(InterpreterFunctions):
    """The element-wise ops share one implementation (`elementwise`, `ELEMENTWISE`)."""

    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues):
        return (constant_value(op),)

    @impl(arith.SelectOp)
    def run_select(self, interpreter: Interpreter, op: arith.SelectOp, args: PythonValues):
        return result_of(op, np.where(args[0], args[1], args[2]))

    @impl(arith.CmpfOp)
    def run_cmpf(self, interpreter: Interpreter, op: arith.CmpfOp, args: PythonValues):
        return result_of(op, compare_floats(CMPF_COMPARISON_OPERATIONS[op.predicate.value.data])(*args))

    @impl(arith.CmpiOp)
    def run_cmpi(self, interpreter: Interpreter, op: arith.CmpiOp, args: PythonValues):
        return result_of(op, compare(CMPI_COMPARISON_OPERATIONS[op.predicate.value.data])(*args))


for _kind, _function in ELEMENTWISE.items():
    setattr(ArithFunctions, f"run_{_kind.__name__}", impl(_kind)(elementwise(_function)))
ArithFunctions = register_impls(ArithFunctions)
