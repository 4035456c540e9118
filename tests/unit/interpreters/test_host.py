"""The host interpreter functions (arith, math, tensor, linalg, tosa, bufferization, memref), op
by op, against NumPy references."""

import math

import numpy as np
import pytest
from xdsl.dialects import arith, func
from xdsl.dialects.arith import CMPI_COMPARISON_OPERATIONS
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnitAttr, i32
from xdsl.utils.exceptions import InterpretationError

from cimxdsl.interpreters import run
from cimxdsl.interpreters.numeric import ERF_BANDS, ERF_ONE, erf
from cimxdsl.interpreters.tensor import pad
from tests.unit.helpers import parse
from tests.unit.interpreters.programs import run_main

A = np.array([7, -7, 9, -9, 12, 5])
B = np.array([2, 2, -4, -4, 5, 5])


def python_map(function):
    return lambda a, b: [function(int(x), int(y)) for x, y in zip(a, b, strict=True)]


@pytest.mark.parametrize(
    ("op", "reference"),
    [
        ("addi", python_map(lambda x, y: x + y)),
        ("subi", python_map(lambda x, y: x - y)),
        ("muli", python_map(lambda x, y: x * y)),
        ("divsi", python_map(lambda x, y: int(x / y))),
        ("floordivsi", python_map(lambda x, y: x // y)),
        ("remsi", python_map(lambda x, y: int(math.fmod(x, y)))),
        ("maxsi", python_map(max)),
        ("minsi", python_map(min)),
        ("andi", python_map(lambda x, y: x & y)),
        ("ori", python_map(lambda x, y: x | y)),
        ("xori", python_map(lambda x, y: x ^ y)),
    ],
)
def test_integer_binary_ops(op, reference):
    t = "tensor<6xi32>"
    (out,) = run_main(f"%a: {t}, %b: {t}", f"%r = arith.{op} %a, %b : {t}\nfunc.return %r : {t}", t, A, B)
    np.testing.assert_array_equal(out, reference(A, B))


@pytest.mark.parametrize(("op", "reference"), [("shli", lambda x, y: x << y), ("shrsi", lambda x, y: x >> y)])
def test_shifts(op, reference):
    (out,) = run_main("%a: i32, %b: i32", f"%r = arith.{op} %a, %b : i32\nfunc.return %r : i32", "i32", -20, 2)
    assert out == reference(-20, 2)


@pytest.mark.parametrize(
    ("op", "reference"),
    [
        ("addf", lambda x, y: x + y),
        ("subf", lambda x, y: x - y),
        ("mulf", lambda x, y: x * y),
        ("divf", lambda x, y: x / y),
        ("maximumf", max),
        ("minimumf", min),
    ],
)
def test_float_binary_ops(op, reference):
    a, b = [1.5, -2.0, 3.25], [0.5, 4.0, -2.0]
    t = "tensor<3xf32>"
    (out,) = run_main(f"%a: {t}, %b: {t}", f"%r = arith.{op} %a, %b : {t}\nfunc.return %r : {t}", t, a, b)
    np.testing.assert_allclose(out, [reference(x, y) for x, y in zip(a, b, strict=True)])
    assert out.dtype == np.float32


@pytest.mark.parametrize(
    ("op", "reference"),
    [
        ("arith.negf", lambda x: -x),
        ("math.exp", math.exp),
        ("math.tanh", math.tanh),
        ("math.sqrt", math.sqrt),
        ("math.absf", abs),
        ("math.roundeven", round),  # Python rounds halves to even
    ],
)
def test_float_unary_ops(op, reference):
    x = [0.5, 2.5, 3.5, 1.25]
    t = "tensor<4xf32>"
    (out,) = run_main(f"%x: {t}", f"%r = {op} %x : {t}\nfunc.return %r : {t}", t, x)
    np.testing.assert_allclose(out, [reference(v) for v in x], rtol=1e-6)


def test_powf():
    t = "tensor<3xf32>"
    (out,) = run_main(
        f"%a: {t}, %b: {t}", f"%r = math.powf %a, %b : {t}\nfunc.return %r : {t}", t, [2, 9, 4], [3, 0.5, -1]
    )
    np.testing.assert_allclose(out, [8, 3, 0.25])


@pytest.mark.parametrize(
    ("op", "source", "target", "value", "expected"),
    [
        ("extsi", "i8", "i32", -5, -5),
        ("trunci", "i32", "i8", 300, 44),  # 300 mod 256
        ("sitofp", "i32", "f32", -3, -3.0),
        ("fptosi", "f32", "i32", -3.75, -3),
        ("extf", "f32", "f64", 0.5, 0.5),
        ("truncf", "f64", "f32", 1 / 3, np.float32(1 / 3)),
        ("index_cast", "i32", "index", 42, 42),
    ],
)
def test_casts(op, source, target, value, expected):
    (out,) = run_main(
        f"%x: {source}", f"%r = arith.{op} %x : {source} to {target}\nfunc.return %r : {target}", target, value
    )
    assert out == expected


def test_constants_scalar_and_dense():
    scalar, dense = run_main(
        "",
        """%s = arith.constant -4 : i32
           %d = arith.constant dense<[[1.5, 2.0], [0.0, -1.0]]> : tensor<2x2xf32>
           func.return %s, %d : i32, tensor<2x2xf32>""",
        "i32, tensor<2x2xf32>",
    )
    assert scalar == -4
    np.testing.assert_array_equal(dense, [[1.5, 2.0], [0.0, -1.0]])


def test_select_picks_by_the_condition():
    picked, other = run_main(
        "%a: tensor<3xi32>, %b: tensor<3xi32>",
        """%t = arith.constant true
           %f = arith.constant false
           %r = arith.select %t, %a, %b : tensor<3xi32>
           %s = arith.select %f, %a, %b : tensor<3xi32>
           func.return %r, %s : tensor<3xi32>, tensor<3xi32>""",
        "tensor<3xi32>, tensor<3xi32>",
        [1, 2, 3],
        [10, 20, 30],
    )
    np.testing.assert_array_equal(picked, [1, 2, 3])
    np.testing.assert_array_equal(other, [10, 20, 30])


CMPI_REFERENCE = {
    "eq": lambda x, y: x == y,
    "ne": lambda x, y: x != y,
    "slt": lambda x, y: x < y,
    "sle": lambda x, y: x <= y,
    "sgt": lambda x, y: x > y,
    "sge": lambda x, y: x >= y,
    "ult": lambda x, y: x % 256 < y % 256,  # i8 read as unsigned
    "ule": lambda x, y: x % 256 <= y % 256,
    "ugt": lambda x, y: x % 256 > y % 256,
    "uge": lambda x, y: x % 256 >= y % 256,
}


@pytest.mark.parametrize("predicate", CMPI_COMPARISON_OPERATIONS)
def test_cmpi_every_predicate(predicate):
    reference = CMPI_REFERENCE[predicate]
    a, b = [-1, 3, 5, -128, 0], [1, 3, -2, 127, 0]
    compares = "\n".join(f"%r{i} = arith.cmpi {predicate}, %a{i}, %b{i} : i8" for i in range(5))
    outputs = run_main(
        ", ".join(f"%a{i}: i8, %b{i}: i8" for i in range(5)),
        f"{compares}\nfunc.return {', '.join(f'%r{i}' for i in range(5))} : {', '.join(['i1'] * 5)}",
        ", ".join(["i1"] * 5),
        *(v for pair in zip(a, b, strict=True) for v in pair),
    )
    assert [bool(o) for o in outputs] == [reference(x, y) for x, y in zip(a, b, strict=True)]


def test_a_constant_the_interpreter_cannot_represent_names_the_op_and_its_place():
    """A constant that is no number nor dense array (built: it would not verify)."""
    constant = arith.ConstantOp.create(properties={"value": UnitAttr()}, result_types=[i32])
    constant.location = FileLineColLoc(StringAttr("c.mlir"), IntAttr(2), IntAttr(14))
    main = func.FuncOp("main", ((), ()))
    main.body.block.add_ops([constant, func.ReturnOp()])
    with pytest.raises(
        InterpretationError, match=r"^c.mlir:2:14: 'arith.constant': constant unit cannot be interpreted"
    ):
        run(ModuleOp([main]), [])


# tensors -----------------------------------------------------------------------------------------
X = np.arange(24).reshape(4, 6)
X_TYPE = "tensor<4x6xi32>"


def test_empty_is_zeros():
    (out,) = run_main("", "%e = tensor.empty() : tensor<2x3xi32>\nfunc.return %e : tensor<2x3xi32>", "tensor<2x3xi32>")
    np.testing.assert_array_equal(out, np.zeros((2, 3)))


def test_extract_slice_with_a_dynamic_offset():
    (out,) = run_main(
        f"%x: {X_TYPE}, %i: index",
        f"""%s = tensor.extract_slice %x[%i, 1] [2, 3] [1, 2] : {X_TYPE} to tensor<2x3xi32>
            func.return %s : tensor<2x3xi32>""",
        "tensor<2x3xi32>",
        X,
        1,
    )
    np.testing.assert_array_equal(out, [[X[r][c] for c in (1, 3, 5)] for r in (1, 2)])


def test_insert_slice_leaves_the_destination_unchanged():
    s = np.array([[-1, -2, -3], [-4, -5, -6]])
    inserted, original = run_main(
        f"%s: tensor<2x3xi32>, %x: {X_TYPE}",
        f"""%r = tensor.insert_slice %s into %x[2, 0] [2, 3] [1, 2] : tensor<2x3xi32> into {X_TYPE}
            func.return %r, %x : {X_TYPE}, {X_TYPE}""",
        f"{X_TYPE}, {X_TYPE}",
        s,
        X,
    )
    expected = X.tolist()
    for r in range(2):
        for c in range(3):
            expected[2 + r][2 * c] = s[r][c]
    np.testing.assert_array_equal(inserted, expected)
    np.testing.assert_array_equal(original, X)


def test_extract_an_element():
    (out,) = run_main(
        f"%x: {X_TYPE}, %i: index, %j: index",
        f"%e = tensor.extract %x[%i, %j] : {X_TYPE}\nfunc.return %e : i32",
        "i32",
        X,
        3,
        4,
    )
    assert out == 3 * 6 + 4


def test_collapse_expand_and_reshape_keep_row_major_order():
    collapsed, expanded, reshaped = run_main(
        f"%x: {X_TYPE}, %shape: tensor<2xi64>",
        f"""%c = tensor.collapse_shape %x [[0, 1]] : {X_TYPE} into tensor<24xi32>
            %e = tensor.expand_shape %c [[0, 1, 2]] output_shape [2, 3, 4] : tensor<24xi32> into tensor<2x3x4xi32>
            %r = tensor.reshape %x(%shape) : ({X_TYPE}, tensor<2xi64>) -> tensor<3x8xi32>
            func.return %c, %e, %r : tensor<24xi32>, tensor<2x3x4xi32>, tensor<3x8xi32>""",
        "tensor<24xi32>, tensor<2x3x4xi32>, tensor<3x8xi32>",
        X,
        [3, 8],
    )
    flat = [v for row in X.tolist() for v in row]
    assert collapsed.tolist() == flat
    assert expanded.tolist() == [[flat[12 * i + 4 * j : 12 * i + 4 * j + 4] for j in range(3)] for i in range(2)]
    assert reshaped.tolist() == [flat[8 * i : 8 * i + 8] for i in range(3)]


def test_pad_with_the_yielded_value():
    (out,) = run_main(
        "%x: tensor<2x2xi32>",
        """%v = arith.constant 9 : i32
           %p = tensor.pad %x low[1, 0] high[0, 2] {
           ^bb0(%i: index, %j: index):
             tensor.yield %v : i32
           } : tensor<2x2xi32> to tensor<3x4xi32>
           func.return %p : tensor<3x4xi32>""",
        "tensor<3x4xi32>",
        [[1, 2], [3, 4]],
    )
    np.testing.assert_array_equal(out, [[9, 9, 9, 9], [1, 2, 9, 9], [3, 4, 9, 9]])


def test_pad_of_a_transposed_array_keeps_its_order_in_memory():
    """An NHWC array seen as NCHW (a transposed view) is padded as `np.pad` pads it, and stays NHWC
    in memory, as the `im2col` that reads it next needs."""
    nhwc = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    nchw = nhwc.transpose(0, 3, 1, 2)
    widths = [(0, 0), (0, 0), (1, 2), (2, 1)]
    padded = pad(nchw, widths, -1.5)
    np.testing.assert_array_equal(padded, np.pad(nchw, widths, constant_values=-1.5))
    assert padded.transpose(0, 2, 3, 1).flags.c_contiguous
    np.testing.assert_array_equal(pad(nhwc, widths, 0), np.pad(nhwc, widths))  # C order stays C order
    assert pad(nhwc, widths, 0).flags.c_contiguous


def test_concat_and_cast():
    concatenated, cast = run_main(
        "%a: tensor<2x2xi32>, %b: tensor<2x1xi32>",
        """%c = tensor.concat dim(1) %a, %b : (tensor<2x2xi32>, tensor<2x1xi32>) -> tensor<2x3xi32>
           %d = tensor.cast %a : tensor<2x2xi32> to tensor<?x2xi32>
           func.return %c, %d : tensor<2x3xi32>, tensor<?x2xi32>""",
        "tensor<2x3xi32>, tensor<?x2xi32>",
        [[1, 2], [3, 4]],
        [[5], [6]],
    )
    np.testing.assert_array_equal(concatenated, [[1, 2, 5], [3, 4, 6]])
    np.testing.assert_array_equal(cast, [[1, 2], [3, 4]])


# linalg ------------------------------------------------------------------------------------------
def test_matmul_accumulates_into_its_init():
    a, b = np.arange(6).reshape(2, 3), np.arange(12).reshape(3, 4) - 6
    (out,) = run_main(
        "%a: tensor<2x3xi32>, %b: tensor<3x4xi32>",
        """%one = arith.constant 1 : i32
           %e = tensor.empty() : tensor<2x4xi32>
           %c = linalg.fill ins(%one : i32) outs(%e : tensor<2x4xi32>) -> tensor<2x4xi32>
           %m = linalg.matmul ins(%a, %b : tensor<2x3xi32>, tensor<3x4xi32>) outs(%c : tensor<2x4xi32>) -> tensor<2x4xi32>
           func.return %m : tensor<2x4xi32>""",
        "tensor<2x4xi32>",
        a,
        b,
    )
    np.testing.assert_array_equal(
        out, [[1 + sum(a[i, k] * b[k, j] for k in range(3)) for j in range(4)] for i in range(2)]
    )


def test_conv_2d_nchw_fchw_with_strides_and_dilations():
    rng = np.random.default_rng(0)
    x, w = rng.integers(-5, 5, (2, 3, 6, 7)), rng.integers(-5, 5, (4, 3, 2, 2))
    (out,) = run_main(
        "%x: tensor<2x3x6x7xi32>, %w: tensor<4x3x2x2xi32>",
        """%e = tensor.empty() : tensor<2x4x3x5xi32>
           %c = linalg.conv_2d_nchw_fchw {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[2, 1]> : tensor<2xi64>}
             ins(%x, %w : tensor<2x3x6x7xi32>, tensor<4x3x2x2xi32>) outs(%e : tensor<2x4x3x5xi32>) -> tensor<2x4x3x5xi32>
           func.return %c : tensor<2x4x3x5xi32>""",
        "tensor<2x4x3x5xi32>",
        x,
        w,
    )
    expected = np.zeros((2, 4, 3, 5), int)
    for n, f, oy, ox in np.ndindex(expected.shape):
        expected[n, f, oy, ox] = sum(
            x[n, c, 2 * oy + ky, ox + 2 * kx] * w[f, c, ky, kx] for c in range(3) for ky in range(2) for kx in range(2)
        )
    np.testing.assert_array_equal(out, expected)


def test_pooling_nchw_max():
    x = np.random.default_rng(1).integers(-50, 50, (1, 2, 5, 5))
    (out,) = run_main(
        "%x: tensor<1x2x5x5xi32>",
        """%k = tensor.empty() : tensor<3x3xi32>
           %low = arith.constant -1000 : i32
           %e = tensor.empty() : tensor<1x2x2x2xi32>
           %i = linalg.fill ins(%low : i32) outs(%e : tensor<1x2x2x2xi32>) -> tensor<1x2x2x2xi32>
           %p = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
             ins(%x, %k : tensor<1x2x5x5xi32>, tensor<3x3xi32>) outs(%i : tensor<1x2x2x2xi32>) -> tensor<1x2x2x2xi32>
           func.return %p : tensor<1x2x2x2xi32>""",
        "tensor<1x2x2x2xi32>",
        x,
    )
    expected = [
        [
            [[x[0, c, 2 * oy : 2 * oy + 3, 2 * ox : 2 * ox + 3].max() for ox in range(2)] for oy in range(2)]
            for c in range(2)
        ]
    ]
    np.testing.assert_array_equal(out, expected)


def test_broadcast_and_transpose():
    broadcast, transposed = run_main(
        "%v: tensor<3xi32>, %m: tensor<2x3xi32>",
        """%e = tensor.empty() : tensor<2x3xi32>
           %b = linalg.broadcast ins(%v : tensor<3xi32>) outs(%e : tensor<2x3xi32>) dimensions = [0]
           %f = tensor.empty() : tensor<3x2xi32>
           %t = linalg.transpose ins(%m : tensor<2x3xi32>) outs(%f : tensor<3x2xi32>) permutation = [1, 0]
           func.return %b, %t : tensor<2x3xi32>, tensor<3x2xi32>""",
        "tensor<2x3xi32>, tensor<3x2xi32>",
        [1, 2, 3],
        [[1, 2, 3], [4, 5, 6]],
    )
    np.testing.assert_array_equal(broadcast, [[1, 2, 3], [1, 2, 3]])
    np.testing.assert_array_equal(transposed, [[1, 4], [2, 5], [3, 6]])


@pytest.mark.parametrize(
    ("op", "reference"),
    [("add", lambda x, y: x + y), ("sub", lambda x, y: x - y), ("mul", lambda x, y: x * y), ("max", max), ("min", min)],
)
def test_linalg_elementwise_ops_ignore_the_init(op, reference):
    a, b = [4, -1, 7], [2, 5, -3]
    t = "tensor<3xi32>"
    (out,) = run_main(
        f"%a: {t}, %b: {t}",
        f"""%c = arith.constant dense<100> : {t}
            %r = linalg.{op} ins(%a, %b : {t}, {t}) outs(%c : {t}) -> {t}
            func.return %r : {t}""",
        t,
        a,
        b,
    )
    np.testing.assert_array_equal(out, [reference(x, y) for x, y in zip(a, b, strict=True)])


# tosa --------------------------------------------------------------------------------------------
def test_clamp_and_reciprocal():
    clamped, reciprocal = run_main(
        "%x: tensor<4xi32>, %f: tensor<2xf32>",
        """%c = tosa.clamp %x {min_val = -2 : i32, max_val = 3 : i32} : (tensor<4xi32>) -> tensor<4xi32>
           %r = tosa.reciprocal %f : (tensor<2xf32>) -> tensor<2xf32>
           func.return %c, %r : tensor<4xi32>, tensor<2xf32>""",
        "tensor<4xi32>, tensor<2xf32>",
        [-5, 0, 2, 9],
        [4.0, -0.5],
    )
    np.testing.assert_array_equal(clamped, [-2, 0, 2, 3])
    np.testing.assert_allclose(reciprocal, [0.25, -2.0])


@pytest.mark.parametrize(("op", "reference"), [("sum", sum), ("max", max), ("min", min), ("product", math.prod)])
def test_reductions_keep_the_axis(op, reference):
    x = [[3, -1, 4], [1, 5, -9]]
    (out,) = run_main(
        "%x: tensor<2x3xi32>",
        f"%r = tosa.reduce_{op} %x {{axis = 1 : i32}} : (tensor<2x3xi32>) -> tensor<2x1xi32>\nfunc.return %r : tensor<2x1xi32>",
        "tensor<2x1xi32>",
        x,
    )
    np.testing.assert_array_equal(out, [[reference(row)] for row in x])


def test_max_and_avg_pool2d_nhwc():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    pooled, averaged = run_main(
        "%x: tensor<1x4x4x1xf32>",
        """%z = arith.constant dense<0.0> : tensor<1xf32>
           %m = tosa.max_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>}
             : (tensor<1x4x4x1xf32>) -> tensor<1x2x2x1xf32>
           %a = tosa.avg_pool2d %x, %z, %z {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, pad = array<i64: 1, 0, 1, 0>,
             acc_type = f32} : (tensor<1x4x4x1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x1xf32>
           func.return %m, %a : tensor<1x2x2x1xf32>, tensor<1x2x2x1xf32>""",
        "tensor<1x2x2x1xf32>, tensor<1x2x2x1xf32>",
        x,
    )
    grid = x[0, :, :, 0]
    np.testing.assert_array_equal(pooled[0, :, :, 0], [[5, 7], [13, 15]])
    # Padding one row and column above-left: windows cover 1, 2, 2 and 4 real elements.
    expected = [[grid[0, 0], (grid[0, 1] + grid[0, 2]) / 2], [(grid[1, 0] + grid[2, 0]) / 2, grid[1:3, 1:3].mean()]]
    np.testing.assert_allclose(averaged[0, :, :, 0], expected)


# buffers -----------------------------------------------------------------------------------------
def test_memref_alloc_store_load_copy_and_dealloc():
    loaded, copied = run_main(
        "%v: i32, %i: index",
        """%m = memref.alloc() : memref<2x2xi32>
           memref.store %v, %m[%i, %i] : memref<2x2xi32>
           %l = memref.load %m[%i, %i] : memref<2x2xi32>
           %n = memref.alloc() : memref<2x2xi32>
           "memref.copy"(%m, %n) : (memref<2x2xi32>, memref<2x2xi32>) -> ()
           %c = "memref.cast"(%n) : (memref<2x2xi32>) -> memref<?x2xi32>
           %t = bufferization.to_tensor %c : memref<?x2xi32> to tensor<?x2xi32>
           memref.dealloc %m : memref<2x2xi32>
           func.return %l, %t : i32, tensor<?x2xi32>""",
        "i32, tensor<?x2xi32>",
        7,
        1,
    )
    assert loaded == 7
    np.testing.assert_array_equal(copied, [[0, 0], [0, 7]])


def test_linalg_broadcast_and_transpose_on_memrefs_write_their_outs():
    x = np.array([1, 2, 3], np.int32)
    broadcast, transposed = run_main(
        "%x: memref<3xi32>",
        """%b = memref.alloc() : memref<2x3xi32>
           linalg.broadcast ins(%x : memref<3xi32>) outs(%b : memref<2x3xi32>) dimensions = [0]
           %t = memref.alloc() : memref<3x2xi32>
           linalg.transpose ins(%b : memref<2x3xi32>) outs(%t : memref<3x2xi32>) permutation = [1, 0]
           func.return %b, %t : memref<2x3xi32>, memref<3x2xi32>""",
        "memref<2x3xi32>, memref<3x2xi32>",
        x,
    )
    np.testing.assert_array_equal(broadcast, [x, x])
    np.testing.assert_array_equal(transposed, np.stack([x, x], axis=1))


def test_an_index_out_of_bounds_names_the_op_and_its_place():
    """NumPy's errors inside an op (here an IndexError) are reported as the op's."""
    module = parse(
        """func.func @main(%i: index) -> i32 {
             %m = memref.alloc() : memref<2xi32>
             %l = memref.load %m[%i] : memref<2xi32> loc("m.mlir":3:14)
             func.return %l : i32
           }"""
    )
    with pytest.raises(InterpretationError) as error:
        run(module, [5])
    assert str(error.value) == "m.mlir:3:14: 'memref.load': index 5 is out of bounds for axis 0 with size 2"


def test_writes_through_a_buffer_of_a_tensor_are_seen_through_the_tensor():
    (out,) = run_main(
        "%v: i32, %i: index",
        """%t = bufferization.alloc_tensor() : tensor<2xi32>
           %b = bufferization.to_buffer %t : tensor<2xi32> to memref<2xi32>
           memref.store %v, %b[%i] : memref<2xi32>
           %r = bufferization.to_tensor %b : memref<2xi32> to tensor<2xi32>
           func.return %r : tensor<2xi32>""",
        "tensor<2xi32>",
        5,
        0,
    )
    np.testing.assert_array_equal(out, [5, 0])


def test_erf_is_within_1e_14_of_math_erf_on_a_dense_grid():
    edges = np.array([*ERF_BANDS, ERF_ONE])
    edges = np.concatenate([edges, np.nextafter(edges, 0)])  # each band's first and the previous band's last value
    grid = np.concatenate([np.linspace(-7, 7, 200_001), [-np.inf, np.inf, 0.0, -0.0], edges, -edges])
    expected = np.array([math.erf(x) for x in grid])
    np.testing.assert_allclose(erf(grid), expected, rtol=0, atol=1e-14)
    assert erf(np.float32([0.5])).dtype == np.float32 and np.isnan(erf(np.array([np.nan])))[0]


def test_math_erf_runs_on_tensors():
    x = np.array([-1.5, -0.25, 0.0, 0.75, 3.0], np.float32)
    t = "tensor<5xf32>"
    (out,) = run_main(f"%x: {t}", f"%r = math.erf %x : {t}\nfunc.return %r : {t}", t, x)
    np.testing.assert_allclose(out, [math.erf(v) for v in x], rtol=1e-6)


@pytest.mark.parametrize(
    ("predicate", "reference"),
    [("oeq", lambda x, y: x == y), ("une", lambda x, y: not x == y), ("olt", lambda x, y: x < y)],
)
def test_cmpf_in_a_map_treats_nan_as_unordered(predicate, reference):
    a, b = np.float32([1.0, np.nan, 2.0, -3.0]), np.float32([1.0, 1.0, 3.0, -4.0])
    t, r = "tensor<4xf32>", "tensor<4xi1>"
    body = (
        f"%e = tensor.empty() : {r}\n"
        f"%m = linalg.map ins(%a, %b : {t}, {t}) outs(%e : {r}) (%x: f32, %y: f32) {{\n"
        f"  %c = arith.cmpf {predicate}, %x, %y : f32\n  linalg.yield %c : i1\n}}\nfunc.return %m : {r}"
    )
    (out,) = run_main(f"%a: {t}, %b: {t}", body, r, a, b)
    np.testing.assert_array_equal(out, [reference(float(x), float(y)) for x, y in zip(a, b, strict=True)])


def test_linalg_select_picks_per_element():
    cond, a, b = np.array([True, False, True]), np.float32([1, 2, 3]), np.float32([-1, -2, -3])
    t, c = "tensor<3xf32>", "tensor<3xi1>"
    body = f"%r = linalg.select ins(%c, %a, %b : {c}, {t}, {t}) outs(%a : {t}) -> {t}\nfunc.return %r : {t}"
    (out,) = run_main(f"%c: {c}, %a: {t}, %b: {t}", body, t, cond, a, b)
    np.testing.assert_array_equal(out, [1, -2, 3])


def test_a_slice_whose_offsets_change_reads_the_new_ones():
    """Slice parameters are read once per op, and again when a pass replaces them."""
    from xdsl.dialects import tensor
    from xdsl.dialects.builtin import DenseArrayBase, i64

    module = parse(
        """func.func @main(%x: tensor<6xi32>) -> tensor<2xi32> {
             %s = tensor.extract_slice %x[1] [2] [1] : tensor<6xi32> to tensor<2xi32>
             func.return %s : tensor<2xi32>
           }"""
    )
    x = np.arange(6, dtype=np.int32) * 10
    np.testing.assert_array_equal(run(module, [x]).outputs[0], [10, 20])
    (op,) = [o for o in module.walk() if isinstance(o, tensor.ExtractSliceOp)]
    op.properties["static_offsets"] = DenseArrayBase.from_list(i64, [3])
    np.testing.assert_array_equal(run(module, [x]).outputs[0], [30, 40])
