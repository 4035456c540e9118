"""NumPy implementations of `linalg`, on tensors (a result) and on memrefs (written into the
destination); they replace xDSL's loops over the iteration space.

A `linalg.generic` runs its body once, on arrays over its whole loop nest (a scalar op of the body
computes every element at once); one with reduction loops must yield `out ⊕ f(ins)` (⊕ an add,
multiply, max or min), reduced along those loops with NumPy. Its output's map picks loops; an
input's map may also sum loops times non-negative constants (`oy·sh + ky·dh`, as a convolution's
windows): the input is then a strided view over the loops, and the result a copy of it
(`numeric.gather`, as im2col).

A `linalg.matmul` placed on the host (`cimxdsl.placement = "host"`, as `cinm-to-linalg` lowers a
host compute's products) is counted on the runtime's digital unit, in its layer, as the `cinm`
interpreter counts the compute's products."""

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseArrayBase, StringAttr
from xdsl.dialects.linalg.attrs import IteratorType
from xdsl.dialects.linalg.ops import (
    AddOp,
    BroadcastOp,
    Conv2DNchwFchwOp,
    Conv2DNgchwGfchwOp,
    FillOp,
    GenericOp,
    MatmulOp,
    MaxOp,
    MinOp,
    MulOp,
    PoolingNchwMaxOp,
    SelectOp,
    SubOp,
    TransposeOp,
)
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
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)

from cimxdsl.dialects import cinm
from cimxdsl.dialects.utils import precision_of
from cimxdsl.interpreters.numeric import conv2d_nchw_fchw, conv2d_ngchw_gfchw, gather, strided
from cimxdsl.interpreters.runtime import CrossbarRuntime
from cimxdsl.interpreters.values import interpretation_error, result_of

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


@dataclass(frozen=True)
class LinearMap:
    """An indexing map whose results are sums of loops times non-negative constants, plus one:
    result `r` is `constants[r] + Σ_l coefficients[r, l] · loop_l`."""

    coefficients: np.ndarray
    constants: np.ndarray
    loops: tuple[int | None, ...]
    """The loop each result is (a plain `d_l`), or None."""

    @staticmethod
    @functools.cache
    def of(affine_map: AffineMap) -> "LinearMap | None":
        """The map as a `LinearMap`, or None if it is not one (mod, division, symbols, negative terms)."""
        if affine_map.num_symbols or not all(linear(e) for e in affine_map.results):
            return None
        n = affine_map.num_dims
        constants = np.array(affine_map.eval([0] * n, []), np.int64).reshape(-1)
        units = [affine_map.eval([int(i == d) for i in range(n)], []) for d in range(n)]
        coefficients = np.array(units, np.int64).reshape(n, -1).T - constants[:, None]
        if (coefficients < 0).any() or (constants < 0).any():
            return None
        loops = tuple(e.position if isinstance(e, AffineDimExpr) else None for e in affine_map.results)
        return LinearMap(coefficients, constants, loops)

    @property
    def picks_loops(self) -> bool:
        return None not in self.loops

    def view(self, op: Operation, value, sizes: tuple[int, ...]) -> np.ndarray:
        """`value` as an array over the loops of `sizes` (size 1 along the loops the map does not
        use): a read-only view where the map picks loops, else a copy of the elements it gathers
        (`numeric.gather`); an index the loops reach outside `value` is an error naming `op`."""
        array = np.asarray(value)
        shape = tuple(size if used else 1 for size, used in zip(sizes, self.coefficients.any(axis=0), strict=True))
        reach = self.constants + self.coefficients @ (np.array(shape, np.int64) - 1)
        if array.ndim != len(reach) or (min(shape, default=1) > 0 and (reach >= array.shape).any()):
            message = f"an indexing map reaches {(reach + 1).tolist()}, beyond its operand {list(array.shape)}"
            raise interpretation_error(op, message)
        if self.picks_loops:
            return strided(array, self.coefficients, self.constants, shape)
        return gather(array, self.coefficients, self.constants, shape)


def linear(expr: AffineExpr) -> bool:
    """Whether `expr` is made of loops and constants by additions and multiplications by constants."""
    return all(
        isinstance(e, AffineDimExpr | AffineConstantExpr)
        or (isinstance(e, AffineBinaryOpExpr) and e.kind in LINEAR_KINDS and e.is_pure_affine())
        for e in expr.dfs()
    )


LINEAR_KINDS = (AffineBinaryOpKind.Add, AffineBinaryOpKind.Mul)


def loop_sizes(op: Operation, maps: list[LinearMap], args) -> tuple[int, ...]:
    """The size of each loop, from the operand dimensions that are one loop (as MLIR infers them)."""
    sizes: list[int | None] = [None] * len(op.iterator_types)
    for linear_map, value in zip(maps, args, strict=True):
        for loop, size in zip(linear_map.loops, np.shape(value), strict=True):
            if loop is not None:
                sizes[loop] = size
    if None in sizes:
        raise interpretation_error(op, "the size of a loop that no operand dimension is alone cannot be inferred")
    return tuple(sizes)  # pyright: ignore[reportReturnType]


def combining_op(body: Region) -> Operation | None:
    """For a body `yield out ⊕ value` with `out` its last argument, used nowhere else: the op `⊕`."""
    block = body.block
    yielded = block.last_op.operands[0] if block.last_op is not None and len(block.last_op.operands) == 1 else None
    owner = getattr(yielded, "owner", None)
    out = block.args[-1]
    if not isinstance(owner, Operation) or type(owner) not in REDUCTIONS or out not in owner.operands:
        return None
    return owner if out.has_one_use() else None


def copied_input(body: Region) -> int | None:
    """For a body that only yields one of its inputs' elements: that input's index."""
    block = body.block
    last = block.last_op
    if last is None or last is not block.first_op or len(last.operands) != 1:
        return None
    index = block.args.index(last.operands[0]) if last.operands[0] in block.args else None
    return index if index is not None and index < len(block.args) - 1 else None


def reduce_along(combine: Operation, values, axes: tuple[int, ...], init) -> np.ndarray:
    """`init ⊕ (⊕ of values along axes)`, `⊕` the op `combine`."""
    ufunc = REDUCTIONS[type(combine)]
    values, init = np.asarray(values), np.asarray(init)
    if isinstance(combine, UNSIGNED):
        unsigned = init.dtype.str.replace("i", "u")
        return ufunc(init.view(unsigned), ufunc.reduce(values.view(unsigned), axis=axes)).view(init.dtype)
    return ufunc(init, ufunc.reduce(values, axis=axes))


def linalg_elementwise(function: Callable):
    """The implementation of a named linalg op whose result is `function` of its `ins`."""

    def run(functions: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
        return result_of(op, function(*args[: len(op.inputs)]), args[-1])

    return run


def linalg_convolution(product: Callable):
    """The implementation of a linalg convolution: `init` plus `product(x, w, strides, dilations)`
    in the accumulator's type (`product` gives a new array, which takes the sum)."""

    def run(functions: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
        x, w, init = args
        strides, dilations = op.strides.get_values(), op.dilations.get_values()
        dtype = np.asarray(init).dtype
        x, w = (np.asarray(a).astype(dtype, copy=False) for a in (x, w))
        result = product(x, w, strides, dilations)
        result += init
        return result_of(op, result)

    return run


def count_on_host(runtime: CrossbarRuntime, op: Operation, left, right) -> None:
    """Count a product placed on the host on the digital unit; in a layer (`cinm.LAYER`,
    `cinm.LAYER_PRODUCT`), its first product starts the layer's record and its last ends it."""
    layer, part = op.attributes.get(cinm.LAYER), op.attributes.get(cinm.LAYER_PRODUCT)
    index, count = part.get_values() if isinstance(part, DenseArrayBase) and len(part) == 2 else (-1, -1)
    named = isinstance(layer, StringAttr)
    if named and index == 0:
        runtime.begin_layer(layer.data, "host")
    runtime.digital_product(np.shape(left), np.shape(right), precision_of(op))
    if named and index == count - 1:
        runtime.end_layer()


@register_impls
@dataclass
class LinalgFunctions(InterpreterFunctions):
    runtime: CrossbarRuntime | None = None
    """Where products placed on the host are counted (none: they are not)."""

    @impl(MatmulOp)
    def run_matmul(self, interpreter: Interpreter, op: MatmulOp, args: PythonValues):
        a, b, c = args
        if self.runtime is not None and cinm.placement(op) == "host":
            count_on_host(self.runtime, op, a, b)
        return result_of(op, c + np.matmul(a.astype(c.dtype), b.astype(c.dtype)))

    run_conv = impl(Conv2DNchwFchwOp)(linalg_convolution(conv2d_nchw_fchw))
    run_grouped_conv = impl(Conv2DNgchwGfchwOp)(linalg_convolution(conv2d_ngchw_gfchw))

    @impl(BroadcastOp)
    def run_broadcast(self, interpreter: Interpreter, op: BroadcastOp, args: PythonValues):
        source, init = args
        expanded = np.expand_dims(source, tuple(op.dimensions.get_values()))
        # a read-only view on tensors (they are not written); written into the destination on memrefs
        return result_of(op, np.broadcast_to(expanded, np.shape(init)), init)

    @impl(PoolingNchwMaxOp)
    def run_pooling_max(self, interpreter: Interpreter, op: PoolingNchwMaxOp, args: PythonValues):
        image, window, init = args
        (sh, sw), (dh, dw) = op.strides.get_values(), op.dilations.get_values()
        kh, kw = np.shape(window)
        extent = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
        windows = np.lib.stride_tricks.sliding_window_view(image, extent, axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
        return result_of(op, np.maximum(init, windows.max(axis=(-2, -1))))

    @impl(TransposeOp)
    def run_transpose(self, interpreter: Interpreter, op: TransposeOp, args: PythonValues):
        # a view on tensors, as `run_extract_slice`'s; written into the destination on memrefs
        return result_of(op, np.transpose(args[0], op.permutation.get_values()), args[1])

    run_add = impl(AddOp)(linalg_elementwise(np.add))
    run_sub = impl(SubOp)(linalg_elementwise(np.subtract))
    run_mul = impl(MulOp)(linalg_elementwise(np.multiply))
    run_max = impl(MaxOp)(linalg_elementwise(np.maximum))
    run_min = impl(MinOp)(linalg_elementwise(np.minimum))
    run_linalg_select = impl(SelectOp)(linalg_elementwise(np.where))

    @impl(FillOp)
    def run_fill(self, interpreter: Interpreter, op: FillOp, args: PythonValues):
        return result_of(op, np.full(np.shape(args[1]), args[0]), args[1])

    @impl_terminator(LinalgYieldOp)
    def run_linalg_yield(self, interpreter: Interpreter, op: LinalgYieldOp, args: PythonValues):
        return ReturnedValues(args), ()

    @impl(GenericOp)
    def run_generic(self, interpreter: Interpreter, op: GenericOp, args: PythonValues):
        found = [LinearMap.of(m.data) for m in op.indexing_maps]
        maps = [m for m in found if m is not None]
        if len(op.outputs) != 1 or len(maps) != len(found) or not maps[-1].picks_loops:
            message = "only a linalg.generic with one output whose map picks loops (inputs' maps may sum loops) runs"
            raise interpretation_error(op, message)
        sizes = loop_sizes(op, maps, args)
        reduced = tuple(d for d, t in enumerate(op.iterator_types) if t.data == IteratorType.REDUCTION)
        init = np.asarray(args[-1])
        inputs = [m.view(op, v, sizes) for v, m in zip(args[:-1], maps[:-1], strict=True)]  # (gathers copied)
        combine = combining_op(op.body) if reduced else None
        if reduced and combine is None:
            raise interpretation_error(op, "a linalg.generic with reduction loops must yield 'out' combined by one op")
        copied = copied_input(op.body) if not reduced else None
        if copied is not None:  # a copy (as im2col's gather): the input is the value, without running the body
            value = inputs[copied]
        else:
            out = identity(combine, init.dtype) if combine else maps[-1].view(op, init, sizes)
            (value,) = interpreter.run_ssacfg_region(op.body, (*inputs, out), "linalg.generic")
        if np.shape(value) != sizes:
            value = np.broadcast_to(value, sizes)
        kept = [d for d in range(len(sizes)) if d not in reduced]
        order = [kept.index(d) for d in maps[-1].loops]
        if combine is None:
            return result_of(op, np.transpose(value, order), args[-1])
        init_on_kept = np.transpose(init, np.argsort(order))
        return result_of(op, np.transpose(reduce_along(combine, value, reduced, init_on_kept), order), args[-1])

    @impl(LinalgReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: LinalgReduceOp, args: PythonValues):
        block = op.region.block
        combine = combining_op(op.region)
        if combine is None or len(block.args) != 2 or set(combine.operands) != set(block.args):
            message = "only a linalg.reduce whose body combines its two arguments with one op is run"
            raise interpretation_error(op, message)
        return result_of(op, reduce_along(combine, args[0], tuple(op.dimensions.get_values()), args[1]), args[1])
