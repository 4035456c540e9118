"""NumPy implementations of `arith` (element-wise on arrays as on scalars); they replace xDSL's
scalar-only ones."""

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS, CMPI_COMPARISON_OPERATIONS
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from cimxdsl.interpreters.numeric import divide
from cimxdsl.interpreters.values import constant_value, elementwise, result_of


def identity(x):
    return x


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


@register_impls
class ArithFunctions(InterpreterFunctions):
    """The element-wise ops share one implementation (`elementwise`)."""

    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues):
        return (constant_value(op),)

    run_addi = impl(arith.AddiOp)(elementwise(np.add))
    run_addf = impl(arith.AddfOp)(elementwise(np.add))
    run_subi = impl(arith.SubiOp)(elementwise(np.subtract))
    run_subf = impl(arith.SubfOp)(elementwise(np.subtract))
    run_muli = impl(arith.MuliOp)(elementwise(np.multiply))
    run_mulf = impl(arith.MulfOp)(elementwise(np.multiply))
    run_divf = impl(arith.DivfOp)(elementwise(np.true_divide))
    run_divsi = impl(arith.DivSIOp)(elementwise(divide))
    run_floordivsi = impl(arith.FloorDivSIOp)(elementwise(np.floor_divide))
    run_remsi = impl(arith.RemSIOp)(elementwise(np.fmod))
    run_maxsi = impl(arith.MaxSIOp)(elementwise(np.maximum))
    run_minsi = impl(arith.MinSIOp)(elementwise(np.minimum))
    run_maximumf = impl(arith.MaximumfOp)(elementwise(np.maximum))
    run_minimumf = impl(arith.MinimumfOp)(elementwise(np.minimum))
    run_andi = impl(arith.AndIOp)(elementwise(np.bitwise_and))
    run_ori = impl(arith.OrIOp)(elementwise(np.bitwise_or))
    run_xori = impl(arith.XOrIOp)(elementwise(np.bitwise_xor))
    run_shli = impl(arith.ShLIOp)(elementwise(np.left_shift))
    run_shrsi = impl(arith.ShRSIOp)(elementwise(np.right_shift))
    run_negf = impl(arith.NegfOp)(elementwise(np.negative))
    run_extsi = impl(arith.ExtSIOp)(elementwise(identity))
    run_trunci = impl(arith.TruncIOp)(elementwise(identity))
    run_sitofp = impl(arith.SIToFPOp)(elementwise(identity))
    run_uitofp = impl(arith.UIToFPOp)(elementwise(identity))
    run_extui = impl(arith.ExtUIOp)(elementwise(identity))
    run_fptosi = impl(arith.FPToSIOp)(elementwise(identity))
    run_extf = impl(arith.ExtFOp)(elementwise(identity))
    run_truncf = impl(arith.TruncFOp)(elementwise(identity))
    run_index_cast = impl(arith.IndexCastOp)(elementwise(identity))

    @impl(arith.SelectOp)
    def run_select(self, interpreter: Interpreter, op: arith.SelectOp, args: PythonValues):
        return result_of(op, np.where(args[0], args[1], args[2]))

    @impl(arith.CmpfOp)
    def run_cmpf(self, interpreter: Interpreter, op: arith.CmpfOp, args: PythonValues):
        return result_of(op, compare_floats(CMPF_COMPARISON_OPERATIONS[op.predicate.value.data])(*args))

    @impl(arith.CmpiOp)
    def run_cmpi(self, interpreter: Interpreter, op: arith.CmpiOp, args: PythonValues):
        return result_of(op, compare(CMPI_COMPARISON_OPERATIONS[op.predicate.value.data])(*args))

    run_remui = impl(arith.RemUIOp)(elementwise(unsigned_remainder))
