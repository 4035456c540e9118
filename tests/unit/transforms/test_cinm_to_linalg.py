"""`cinm-to-linalg` keeps every result: each element-wise kind and reduction method on its own, im2col,
and the host functions of Cinnamon's RoBERTa (integer softmax and layer norm) and Llama-2 (softmax, RMS
norm, attention), run in the interpreter before and after the pass on the same random inputs."""

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.utils.exceptions import InterpretationError

from cimxdsl.device import Device, preset
from cimxdsl.dialects import cinm
from cimxdsl.dialects.cinm import ElementwiseKind
from cimxdsl.interpreters import run
from cimxdsl.interpreters.linalg import LinearMap
from cimxdsl.tools.cim_run import load_inputs
from tests.unit.helpers import apply, parse

CINNAMON = Path(__file__).parents[2] / "filecheck" / "cinnamon" / "inputs"
EPS32 = np.finfo(np.float32).eps
FLOAT_METHODS = ["add", "mul", "max", "min", "maxnumf", "minnumf"]
INTEGER_METHODS = ["add", "mul", "max", "min", "maxsi", "minsi", "maxui", "minui"]


def cinm_ops(module) -> set[str]:
    return {op.name for op in module.walk() if op.name.startswith("cinm.")}


def before_and_after(text: str, inputs: list, entry: str = "main") -> tuple[list, list]:
    """The results of `entry` as written and after `cinm-to-linalg`, which must leave no cinm op."""
    before = run(parse(text), inputs, "ideal", entry=entry).outputs
    lowered = apply(parse(text), "cinm-to-linalg")
    assert not cinm_ops(lowered) - {"cinm.op.gemm", "cinm.op.gemv", "cinm.compute", "cinm.yield"}
    return before, run(lowered, inputs, "ideal", entry=entry).outputs


@pytest.mark.parametrize("kind", list(ElementwiseKind))
def test_every_unary_kind(kind):
    x = np.random.default_rng(1).uniform(0.25, 4.0, (3, 5)).astype(np.float32)
    text = f"""
    func.func @main(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {{
      %y = cinm.op.element_wise {kind.value} (%x) : tensor<3x5xf32>
      return %y : tensor<3x5xf32>
    }}"""
    (before,), (after,) = before_and_after(text, [x])
    np.testing.assert_allclose(after, before, rtol=EPS32, atol=0)


@pytest.mark.parametrize("kind", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("element", ["i32", "f32"])
def test_binary_and_scalar_kinds(kind, element):
    rng = np.random.default_rng(2)
    integer = element == "i32"
    a, b = (rng.integers(-50, 50, (4, 3)) if integer else rng.uniform(-4, 4, (4, 3)) for _ in range(2))
    b[b == 0] = 7
    dtype = np.int32 if integer else np.float32
    s = dtype(-3)
    t = f"tensor<4x3x{element}>"
    text = f"""
    func.func @main(%a: {t}, %b: {t}, %s: {element}) -> ({t}, {t}) {{
      %y = cinm.op.{kind} %a, %b : {t}
      %z = cinm.op.{kind}s %y, %s : {t}
      return %y, %z : {t}, {t}
    }}"""
    before, after = before_and_after(text, [a.astype(dtype), b.astype(dtype), s])
    for got, want in zip(after, before, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "method, element", [(m, "f32") for m in FLOAT_METHODS] + [(m, "i32") for m in INTEGER_METHODS]
)
def test_every_reduce_method(method, element):
    """Over the last dimension, the first, and all of them (a scalar), negatives included (so that
    the unsigned methods differ from the signed)."""
    rng = np.random.default_rng(3)
    integer = element == "i32"
    x = rng.integers(-3, 4, (4, 6)).astype(np.int32) if integer else rng.uniform(-2, 2, (4, 6)).astype(np.float32)
    text = f"""
    func.func @main(%x: tensor<4x6x{element}>) -> (tensor<4x{element}>, tensor<6x{element}>, {element}) {{
      %r = cinm.op.reduce {method} (%x) : tensor<4x6x{element}> -> tensor<4x{element}>
      %c = cinm.op.reduce {method} (%x) {{dimensions = array<i64: 0>}} : tensor<4x6x{element}> -> tensor<6x{element}>
      %a = cinm.op.reduce {method} (%x) {{dimensions = array<i64: 0, 1>}} : tensor<4x6x{element}> -> {element}
      return %r, %c, %a : tensor<4x{element}>, tensor<6x{element}>, {element}
    }}"""
    before, after = before_and_after(text, [x])
    for got, want in zip(after, before, strict=True):
        if integer:
            np.testing.assert_array_equal(got, want)
        else:  # the same sums in another order: 24 terms of at most 2 (or products of at most 2^24)
            np.testing.assert_allclose(got, want, rtol=24 * EPS32, atol=24 * EPS32 * 2)


def test_buffer_form_writes_its_into_memref():
    text = """
    func.func @main(%a: memref<5xf32>, %b: memref<5xf32>, %out: memref<5xf32>) {
      cinm.op.elementwise mul %a, %b into %out : memref<5xf32> into memref<5xf32>
      cinm.op.elementwise exp %out into %out : memref<5xf32> into memref<5xf32>
      func.return
    }"""
    a, b = np.random.default_rng(4).uniform(-1, 1, (2, 5)).astype(np.float32)
    outs = [np.zeros(5, np.float32), np.zeros(5, np.float32)]
    run(parse(text), [a, b, outs[0]], "ideal")
    run(apply(parse(text), "cinm-to-linalg"), [a, b, outs[1]], "ideal")
    np.testing.assert_array_equal(outs[1], outs[0])
    np.testing.assert_allclose(outs[0], np.exp(a * b), rtol=2 * EPS32)


@pytest.mark.parametrize(
    "program, entry",
    [
        ("roberta_base.mlir", "isoftmax"),
        ("roberta_base.mlir", "ilayernorm"),
        ("llama2_110M.mlir", "softmax"),
        ("llama2_110M.mlir", "rmsnorm"),
        ("llama2_110M.mlir", "mha"),
    ],
)
def test_cinnamon_host_functions(program, entry):
    """Integer functions bitwise; float ones within the rounding of their longest reduction (1024)."""
    text = (CINNAMON / program).read_text()
    inputs = load_inputs(parse(text), entry, [], True, 0, 8)
    before, after = before_and_after(text, inputs, entry)
    for got, want in zip(after, before, strict=True):
        got, want = np.asarray(got), np.asarray(want)
        if np.issubdtype(want.dtype, np.integer):
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1024 * EPS32, atol=1024 * EPS32 * np.abs(want).max())


HOST_AND_CROSSBAR = """
func.func @main(%x: tensor<4x6xi32>, %w: tensor<6x5xi32>) -> (tensor<4xi32>, tensor<4x5xi32>, tensor<4xi32>) {
  %r = cinm.op.reduce add (%x) : tensor<4x6xi32> -> tensor<4xi32>
  %c:2 = cinm.compute -> tensor<4x5xi32>, tensor<4xi32> {
    %p = cinm.op.gemm %x, %w : tensor<4x6xi32>, tensor<6x5xi32> -> tensor<4x5xi32>
    %e = cinm.op.element_wise abs (%p) : tensor<4x5xi32>
    %m = cinm.op.reduce max (%e) : tensor<4x5xi32> -> tensor<4xi32>
    cinm.yield %e, %m : tensor<4x5xi32>, tensor<4xi32>
  }
  return %r, %c#0, %c#1 : tensor<4xi32>, tensor<4x5xi32>, tensor<4xi32>
}
"""


@pytest.mark.parametrize("tiling", ["unroll", "loop"])
def test_memristor_pipeline_leaves_no_cinm_op(tiling):
    """A standalone reduce, and a unary op and a reduce in a compute after its product (they stay on
    the host), end as linalg; the products as runtime calls."""
    rng = np.random.default_rng(5)
    x, w = rng.integers(-128, 128, (4, 6)).astype(np.int32), rng.integers(-128, 128, (6, 5)).astype(np.int32)
    product = np.abs(x.astype(np.int64) @ w)
    lowered = apply(parse(HOST_AND_CROSSBAR), f"memristor{{device=ideal crossbars=2 tiling={tiling}}}")
    assert not cinm_ops(lowered)
    assert any(op.name == "func.call" for op in lowered.walk())
    for got, want in zip(run(lowered, [x, w], "ideal").outputs, [x.sum(axis=1), product, product.max(axis=1)]):
        np.testing.assert_array_equal(got, want)


HOST_PRODUCTS = """
func.func @main(%q: tensor<4x8xi32>, %k: tensor<8x3xi32>, %b: tensor<4x3xi32>) -> tensor<4x3xi32> {
  %qk = cinm.compute attributes {cimxdsl.placement = "host"} -> tensor<4x3xi32> {
    %p = cinm.op.gemm %q, %k : (tensor<4x8xi32>, tensor<8x3xi32>) -> tensor<4x3xi32>
    %r = cinm.op.gemm %q, %k plus %b : (tensor<4x8xi32>, tensor<8x3xi32>) -> tensor<4x3xi32>
    %s = cinm.op.sub %r, %p : tensor<4x3xi32>
    cinm.yield %s : tensor<4x3xi32>
  }
  return %qk : tensor<4x3xi32>
}
"""


def test_a_compute_on_the_host_becomes_matmuls_counted_in_its_layer():
    """A compute placed on the host (two gemms, one with a bias) ends as `linalg.matmul`s that the
    runtime counts as the compute's: one layer `qk` with the same digital MACs, latency and energy."""
    rng = np.random.default_rng(6)
    q, k, b = (rng.integers(-100, 100, shape).astype(np.int32) for shape in [(4, 8), (8, 3), (4, 3)])
    config = preset("ideal").replace(digital_pj_per_mac=0.25, digital_macs_per_ns=4.0)
    before = run(parse(HOST_PRODUCTS), [q, k, b], Device(config))
    lowered = apply(parse(HOST_PRODUCTS), "cinm-to-linalg")
    assert not cinm_ops(lowered)
    after = run(lowered, [q, k, b], Device(config))
    np.testing.assert_array_equal(after.outputs[0], b)  # (q·k + b) - q·k
    np.testing.assert_array_equal(before.outputs[0], b)
    assert [(layer["layer"], layer["placement"], layer["digital_macs"]) for layer in after.layers] == [
        ("qk", "host", 2 * 4 * 8 * 3)
    ]
    assert after.layers == before.layers
    assert after.layers[0]["latency_ns"] == 2 * 4 * 8 * 3 / 4.0
    assert after.device.report() == before.device.report()
    # a matmul marked only with the placement is counted on the digital unit, in no layer
    for op in lowered.walk():
        for name in (cinm.LAYER, cinm.LAYER_PRODUCT):
            op.attributes.pop(name, None)
    unnamed = run(lowered, [q, k, b], Device(config))
    assert unnamed.layers == []
    assert unnamed.device.report()["total"] == before.device.report()["total"]


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize(("bits", "signed"), [(8, True), (4, False), (3, True)])
def test_quantize_and_dequantize_become_generics_with_the_same_integers(per_channel, bits, signed):
    rng = np.random.default_rng(bits)
    scales = np.array([0.5, 0.25, 2.0], np.float32) if per_channel else np.array([0.5], np.float32)
    # halves of a scale step (round half to even), values beyond the clamp, negatives for unsigned
    reach = 2 ** (bits + 1) + 10
    x = (rng.integers(-reach, reach, (4, 3)) * 0.5 * scales.reshape(1, -1)).astype(np.float32)
    codes = rng.integers(-300, 300, (4, 3)).astype(np.int32)
    scale = ", ".join(f"{v:.6e}" for v in scales)
    text = f"""
    func.func @main(%x: tensor<4x3xf32>, %c: tensor<4x3xi32>) -> (tensor<4x3xi32>, tensor<4x3xf32>) {{
      %q = cinm.op.quantize %x {{scale = dense<[{scale}]> : tensor<{scales.size}xf32>, axis = 1, bits = {bits}, signed = {str(signed).lower()}}} : tensor<4x3xf32> -> tensor<4x3xi32>
      %d = cinm.op.dequantize %c {{scale = dense<[{scale}]> : tensor<{scales.size}xf32>, axis = 1}} : tensor<4x3xi32> -> tensor<4x3xf32>
      return %q, %d : tensor<4x3xi32>, tensor<4x3xf32>
    }}"""
    lowered = apply(parse(text), "cinm-to-linalg")
    assert not cinm_ops(lowered)
    assert sum(op.name == "linalg.generic" for op in lowered.walk()) == 2
    quantized, dequantized = run(lowered, [x, codes], "ideal").outputs
    low, high = (-(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    expected = np.clip(np.rint(x.astype(np.float64) / scales.astype(np.float64)), low, high)
    np.testing.assert_array_equal(quantized, expected.astype(np.int32))
    assert {int(v) for v in quantized.ravel()} & {low, high}  # the clamp is reached
    np.testing.assert_array_equal(dequantized, (codes * scales.astype(np.float64)).astype(np.float32))


@pytest.mark.parametrize(
    ("kernel", "strides", "dilations"), [((3, 3), (1, 1), (1, 1)), ((2, 3), (2, 1), (1, 2)), ((1, 1), (2, 2), (1, 1))]
)
def test_im2col_becomes_a_copy_generic_with_the_same_patches(kernel, strides, dilations):
    """Row (n, oy, ox), column (c, ky, kx) holds x[n, c, oy·sh + ky·dh, ox·sw + kx·dw] (indexed here
    element by element), before and after the lowering (bitwise: a copy)."""
    x = np.random.default_rng(7).normal(size=(2, 5, 9, 8)).astype(np.float32)
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    oh, ow = (9 - dh * (kh - 1) - 1) // sh + 1, (8 - dw * (kw - 1) - 1) // sw + 1
    n, c, oy, ox, ky, kx = np.indices((2, 5, oh, ow, kh, kw))
    expected = x[n, c, oy * sh + ky * dh, ox * sw + kx * dw].transpose(0, 2, 3, 1, 4, 5).reshape(2 * oh * ow, -1)
    result = f"tensor<{2 * oh * ow}x{5 * kh * kw}xf32>"
    text = f"""
    func.func @main(%x: tensor<2x5x9x8xf32>) -> {result} {{
      %c = cinm.op.im2col %x {{kernel = array<i64: {kh}, {kw}>, strides = array<i64: {sh}, {sw}>, dilations = array<i64: {dh}, {dw}>}} : tensor<2x5x9x8xf32> -> {result}
      return %c : {result}
    }}"""
    (before,), (after,) = before_and_after(text, [x])
    assert not cinm_ops(apply(parse(text), "cinm-to-linalg"))
    np.testing.assert_array_equal(before, expected)
    np.testing.assert_array_equal(after, expected)


def test_a_generic_map_beyond_its_operand_is_a_one_line_error():
    """The verifier and the argument check refuse such IR and inputs; a view of a smaller array
    (which only a faulty implementation could pass) is refused too, not read out of bounds."""
    text = """
    func.func @main(%x: tensor<1x1x5x5xf32>) -> tensor<1x2x2x1x3x3xf32> {
      %e = tensor.empty() : tensor<1x2x2x1x3x3xf32>
      %g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d1 * 2 + d4, d2 * 2 + d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x1x5x5xf32>) outs(%e : tensor<1x2x2x1x3x3xf32>) {
      ^bb0(%a: f32, %b: f32):
        linalg.yield %a : f32
      } -> tensor<1x2x2x1x3x3xf32>
      return %g : tensor<1x2x2x1x3x3xf32>
    }"""
    image = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    (windows,) = run(parse(text), [image], "ideal").outputs
    np.testing.assert_array_equal(windows[0, 1, 0, 0], image[0, 0, 2:5, 0:3])
    message = r"'linalg.generic': an indexing map reaches \[1, 1, 5, 5\], beyond its operand \[1, 1, 4, 4\]"
    generic = next(op for op in parse(text).walk() if isinstance(op, GenericOp))
    window = LinearMap.of(generic.indexing_maps.data[0].data)
    assert window is not None and not window.picks_loops
    with pytest.raises(InterpretationError, match=message):
        window.view(generic, image[:, :, :4, :4], (1, 2, 2, 1, 3, 3))
