"""Interpreter functions for the upstream ops cimxdsl adds (`dialects/upstream.py`), and for
`affine.for` with `iter_args` (the loop form of `tile`), which xDSL's own implementation lacks.

The bodies of `linalg.map` and `tensor.generate` run once, on whole arrays: a scalar op of the
body computes every element at once (host functions keep array values of scalar types).
"""

import numpy as np
from xdsl.dialects import affine, arith, bufferization, math, tensor
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.linalg.ops import YieldOp as LinalgYieldOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)

from cimxdsl.dialects import upstream
from cimxdsl.interpreters.values import elementwise, interpretation_error, numpy_dtype


def unsigned_remainder(a, b):
    """`arith.remui`: the remainder of the operands read as unsigned integers."""
    return np.remainder(np.asarray(a).astype(np.uint64), np.asarray(b).astype(np.uint64))


@register_impls
class UpstreamFunctions(InterpreterFunctions):
    run_rsqrt = impl(math.RsqrtOp)(elementwise(lambda x: 1 / np.sqrt(x)))
    run_cos = impl(math.CosOp)(elementwise(np.cos))
    run_sin = impl(math.SinOp)(elementwise(np.sin))
    run_absi = impl(math.AbsIOp)(elementwise(np.abs))
    run_remui = impl(arith.RemUIOp)(elementwise(unsigned_remainder))

    @impl(tensor.SplatOp)
    def run_splat(self, interpreter: Interpreter, op: tensor.SplatOp, args: PythonValues):
        result_type = op.result.type
        assert isinstance(result_type, TensorType)
        return (np.full(result_type.get_shape(), args[0], numpy_dtype(result_type.element_type)),)

    @impl(tensor.InsertOp)
    def run_insert(self, interpreter: Interpreter, op: tensor.InsertOp, args: PythonValues):
        scalar, dest, *indices = args
        result = np.array(dest, copy=True)
        result[tuple(int(i) for i in indices)] = scalar
        return (result,)

    @impl(bufferization.MaterializeInDestinationOp)
    def run_materialize(self, interpreter: Interpreter, op, args: PythonValues):
        if op.result is None:
            args[1][...] = args[0]
            return ()
        return (args[0],)

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

    @impl_terminator(LinalgYieldOp)
    def run_linalg_yield(self, interpreter: Interpreter, op: LinalgYieldOp, args: PythonValues):
        return ReturnedValues(args), ()

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
