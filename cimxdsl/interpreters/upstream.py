"""Interpreter functions for the upstream ops cimxdsl adds (`dialects/upstream.py`).

The bodies of `linalg.map` and `tensor.generate` run once, on whole arrays: a scalar op of the
body computes every element at once (host functions keep array values of scalar types).
"""

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from cimxdsl.dialects import upstream
from cimxdsl.interpreters.values import interpretation_error, numpy_dtype, result_of


@register_impls
class UpstreamFunctions(InterpreterFunctions):
    @impl(upstream.CastOp)
    def run_cast(self, interpreter: Interpreter, op: upstream.CastOp, args: PythonValues):
        return (args[0],)

    @impl(upstream.CopyOp)
    def run_copy(self, interpreter: Interpreter, op: upstream.CopyOp, args: PythonValues):
        args[1][...] = args[0]
        return ()

    @impl(upstream.ToMemrefOp)
    def run_to_memref(self, interpreter: Interpreter, op: upstream.ToMemrefOp, args: PythonValues):
        return (args[0],)

    @impl(upstream.MapOp)
    def run_map(self, interpreter: Interpreter, op: upstream.MapOp, args: PythonValues):
        *inputs, init = args
        if len(op.mapper.block.args) > len(inputs):
            inputs.append(init)
        (value,) = interpreter.run_ssacfg_region(op.mapper, tuple(inputs), "linalg.map")
        if op.result is None:
            init[...] = value
            return ()
        return (np.broadcast_to(np.asarray(value, init.dtype), init.shape).copy(),)

    @impl(upstream.GenerateOp)
    def run_generate(self, interpreter: Interpreter, op: upstream.GenerateOp, args: PythonValues):
        result_type = op.result.type
        assert isinstance(result_type, TensorType)
        extents = iter(args)
        shape = tuple(int(next(extents)) if d < 0 else d for d in result_type.get_shape())
        indices = tuple(np.indices(shape, dtype=np.int64))
        (value,) = interpreter.run_ssacfg_region(op.body, indices, "tensor.generate")
        dtype = numpy_dtype(result_type.element_type)
        return (np.broadcast_to(np.asarray(value, dtype), shape).copy(),)

    @impl(upstream.MatvecOp)
    def run_matvec(self, interpreter: Interpreter, op: upstream.MatvecOp, args: PythonValues):
        a, x, y = args
        return result_of(op, y + np.matmul(a.astype(y.dtype), x.astype(y.dtype)), y)

    @impl(upstream.BatchMatmulOp)
    def run_batch_matmul(self, interpreter: Interpreter, op: upstream.BatchMatmulOp, args: PythonValues):
        a, b, c = args
        return (c + np.matmul(a.astype(c.dtype), b.astype(c.dtype)),)

    @impl(upstream.GatherOp)
    def run_gather(self, interpreter: Interpreter, op: upstream.GatherOp, args: PythonValues):
        source, indices = np.asarray(args[0]), np.asarray(args[1]).astype(np.int64)
        dims = list(op.gather_dims.get_values())
        for j, dim in enumerate(dims):
            outside = (indices[..., j] < 0) | (indices[..., j] >= source.shape[dim])
            if outside.any():
                index = int(indices[..., j][outside].flat[0])
                raise interpretation_error(
                    op, f"index {index} is out of range for dimension {dim} of size {source.shape[dim]}"
                )
        front = np.moveaxis(source, dims, list(range(len(dims))))
        gathered = front[tuple(indices[..., j] for j in range(len(dims)))]
        result_type = op.result.type
        assert isinstance(result_type, TensorType)
        return (np.ascontiguousarray(gathered).reshape(result_type.get_shape()),)
