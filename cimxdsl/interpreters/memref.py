"""NumPy implementations of `memref`: buffers are NumPy arrays."""

from xdsl.dialects import memref
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from cimxdsl.interpreters.values import zeros


@register_impls
class MemrefFunctions(InterpreterFunctions):
    @impl(memref.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: memref.AllocOp, args: PythonValues):
        return (zeros(op.memref.type),)

    @impl(memref.LoadOp)
    def run_load(self, interpreter: Interpreter, op: memref.LoadOp, args: PythonValues):
        return (args[0][tuple(args[1:])].item(),)

    @impl(memref.StoreOp)
    def run_store(self, interpreter: Interpreter, op: memref.StoreOp, args: PythonValues):
        args[1][tuple(args[2:])] = args[0]
        return ()

    @impl(memref.DeallocOp)
    def run_dealloc(self, interpreter: Interpreter, op: memref.DeallocOp, args: PythonValues):
        return ()
