"""`affine.for` with `iter_args` (the loop form of `tile`), which xDSL's own implementation lacks."""

from xdsl.dialects import affine
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)


@register_impls
class AffineFunctions(InterpreterFunctions):
    @impl(affine.ForOp)
    def run_for(self, interpreter: Interpreter, op: affine.ForOp, args: PythonValues):
        lower = op.lowerBoundMap.data.eval(list(args[: len(op.lowerBoundOperands)]), [])[0]
        upper_operands = args[len(op.lowerBoundOperands) : len(op.lowerBoundOperands) + len(op.upperBoundOperands)]
        upper = op.upperBoundMap.data.eval(list(upper_operands), [])[0]
        values = tuple(args[len(op.lowerBoundOperands) + len(op.upperBoundOperands) :])
        for index in range(lower, upper, op.step.value.data):
            values = tuple(interpreter.run_ssacfg_region(op.body, (index, *values), "affine.for"))
        return values

    @impl_terminator(affine.YieldOp)
    def run_affine_yield(self, interpreter: Interpreter, op: affine.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()
