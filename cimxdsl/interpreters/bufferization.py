"""`bufferization`: a buffer made from a tensor is the same NumPy array, so writes through the
buffer are seen through the tensor."""

from xdsl.dialects import bufferization
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from cimxdsl.interpreters.values import zeros


@register_impls
class BufferizationFunctions(InterpreterFunctions):
    @impl(bufferization.AllocTensorOp)
    def run_alloc_tensor(self, interpreter: Interpreter, op: bufferization.AllocTensorOp, args: PythonValues):
        return (zeros(op.tensor.type),)

    @impl(bufferization.ToBufferOp)
    def run_to_buffer(self, interpreter: Interpreter, op: bufferization.ToBufferOp, args: PythonValues):
        return (args[0],)

    @impl(bufferization.ToTensorOp)
    def run_to_tensor(self, interpreter: Interpreter, op: bufferization.ToTensorOp, args: PythonValues):
        return (args[0],)

    @impl(bufferization.MaterializeInDestinationOp)
    def run_materialize(self, interpreter: Interpreter, op, args: PythonValues):
        if op.result is None:
            args[1][...] = args[0]
            return ()
        return (args[0],)
