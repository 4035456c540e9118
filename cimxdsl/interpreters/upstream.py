"""Interpreter functions for the upstream ops cimxdsl adds (`dialects/upstream.py`), and for
`affine.for` with `iter_args` (the loop form of `tile`), which xDSL's own implementation lacks.

The bodies of `linalg.map`, `tensor.generate` and `linalg.generic` run once, on whole arrays: a
scalar op of the body computes every element at once (host functions keep array values of scalar
types). A `linalg.generic` runs on arrays over its whole loop nest; one with reduction loops must
yield `out ⊕ f(ins)` (⊕ an add, multiply, max or min), reduced along those loops with NumPy.
"""

import numpy as np
from xdsl.dialects import affine, arith, bufferization, math, tensor
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.linalg.attrs import IteratorType
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.dialects.linalg.ops import ReduceOp as LinalgReduceOp
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
from xdsl.ir import Operation, Region
from xdsl.ir.affine import AffineDimExpr

from cimxdsl.dialects import upstream
from cimxdsl.interpreters.cinm import round_half_away
from cimxdsl.interpreters.values import elementwise, interpretation_error, numpy_dtype, result_of

REDUCTIONS: dict[type, np.ufunc] = {
    arith.AddfOp: np.add,
    arith.AddiOp: np.add,
    arith.MulfOp: np.multiply,
    arith.MuliOp: np.multiply,
    arith.MaximumfOp: np.maximum,
    arith.MaxSIOp: np.maximum,
    arith.MaxUIOp: np.maximum,
    arith.MaxnumfOp: np.fmax,
    arith.MinimumfOp: np.minimum,
    arith.MinSIOp: np.minimum,
    arith.MinUIOp: np.minimum,
    arith.MinnumfOp: np.fmin,
}
"""The ops a `linalg.generic` or `linalg.reduce` may combine its output with a reduced value, as
NumPy functions (`maxui`/`minui` on the integers read as unsigned)."""
UNSIGNED = (arith.MaxUIOp, arith.MinUIOp)


def identity(combine: Operation, dtype: np.dtype):
    """The value `x` with `x ⊕ y == y` for every `y` of `dtype`, `⊕` the op `combine`."""
    ufunc = REDUCTIONS[type(combine)]
    if ufunc.identity is not None:
        return dtype.type(ufunc.identity)
    if isinstance(combine, UNSIGNED):
        return dtype.type(0 if isinstance(combine, arith.MaxUIOp) else -1)
    floating = np.issubdtype(dtype, np.floating)
    smallest, largest = (-np.inf, np.inf) if floating else (np.iinfo(dtype).min, np.iinfo(dtype).max)
    return dtype.type(smallest if ufunc in (np.maximum, np.fmax) else largest)


def on_loops(value, dims: tuple[int, ...], loops: int) -> np.ndarray:
    """`value`, indexed by the loop dimensions `dims`, as an array over all `loops` loops (size 1
    along the loops it does not depend on)."""
    shape = [1] * loops
    for dim, size in zip(dims, np.shape(value), strict=True):
        shape[dim] = size
    return np.transpose(value, np.argsort(dims)).reshape(shape)


def combining_op(body: Region) -> Operation | None:
    """For a body `yield out ⊕ value` with `out` its last argument, used nowhere else: the op `⊕`."""
    block = body.block
    yielded = block.last_op.operands[0] if block.last_op is not None and len(block.last_op.operands) == 1 else None
    owner = getattr(yielded, "owner", None)
    out = block.args[-1]
    if not isinstance(owner, Operation) or type(owner) not in REDUCTIONS or out not in owner.operands:
        return None
    return owner if out.has_one_use() else None


def reduce_along(combine: Operation, values, axes: tuple[int, ...], init) -> np.ndarray:
    """`init ⊕ (⊕ of values along axes)`, `⊕` the op `combine`."""
    ufunc = REDUCTIONS[type(combine)]
    values, init = np.asarray(values), np.asarray(init)
    if isinstance(combine, UNSIGNED):
        unsigned = init.dtype.str.replace("i", "u")
        return ufunc(init.view(unsigned), ufunc.reduce(values.view(unsigned), axis=axes)).view(init.dtype)
    return ufunc(init, ufunc.reduce(values, axis=axes))


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

    @impl(upstream.MatvecOp)
    def run_matvec(self, interpreter: Interpreter, op: upstream.MatvecOp, args: PythonValues):
        a, x, y = args
        return result_of(op, y + np.matmul(a.astype(y.dtype), x.astype(y.dtype)), y)

    @impl(GenericOp)
    def run_generic(self, interpreter: Interpreter, op: GenericOp, args: PythonValues):
        maps = [m.data for m in op.indexing_maps]
        if len(op.outputs) != 1 or not all(isinstance(e, AffineDimExpr) for m in maps for e in m.results):
            raise interpretation_error(op, "only a linalg.generic with one output and maps that pick loops is run")
        dims = [tuple(e.position for e in m.results if isinstance(e, AffineDimExpr)) for m in maps]
        loops = len(op.iterator_types)
        reduced = tuple(d for d, t in enumerate(op.iterator_types) if t.data == IteratorType.REDUCTION)
        init = np.asarray(args[-1])
        inputs = [on_loops(v, d, loops) for v, d in zip(args[:-1], dims[:-1], strict=True)]
        combine = combining_op(op.body) if reduced else None
        if reduced and combine is None:
            raise interpretation_error(op, "a linalg.generic with reduction loops must yield 'out' combined by one op")
        out = identity(combine, init.dtype) if combine else on_loops(init, dims[-1], loops)
        (value,) = interpreter.run_ssacfg_region(op.body, (*inputs, out), "linalg.generic")
        shape = [1] * loops
        for value_dims, array in zip(dims, [*args[:-1], init], strict=True):
            for dim, size in zip(value_dims, np.shape(array), strict=True):
                shape[dim] = size
        value = np.broadcast_to(value, shape)
        kept = [d for d in range(loops) if d not in reduced]
        order = [kept.index(d) for d in dims[-1]]
        if combine is None:
            return result_of(op, np.transpose(value, order), args[-1])
        init_on_kept = np.transpose(init, np.argsort(order))
        return result_of(op, np.transpose(reduce_along(combine, value, reduced, init_on_kept), order), args[-1])

    @impl(LinalgReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: LinalgReduceOp, args: PythonValues):
        block = op.region.block
        combine = combining_op(op.region)
        if combine is None or len(block.args) != 2 or set(combine.operands) != set(block.args):
            raise interpretation_error(op, "only a linalg.reduce whose body combines its two arguments with one op is run")
        return result_of(op, reduce_along(combine, args[0], tuple(op.dimensions.get_values()), args[1]), args[1])

    run_log = impl(math.LogOp)(elementwise(np.log))
    run_ceil = impl(math.CeilOp)(elementwise(np.ceil))
    run_floor = impl(math.FloorOp)(elementwise(np.floor))
    run_round = impl(math.RoundOp)(elementwise(round_half_away))

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
