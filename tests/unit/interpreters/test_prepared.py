"""Prepared execution computes what the plain xDSL interpreter computes, bit for bit, with the same
metrics, at every stage of the pipeline and on every device preset."""

import numpy as np
import pytest

import cimxdsl
from cimxdsl.api import STAGES
from cimxdsl.device import Device, preset
from cimxdsl.interpreters import Program, build_interpreter, entry_function
from cimxdsl.interpreters.layer_products import BookedRun
from cimxdsl.interpreters.lifetimes import dying_values
from cimxdsl.interpreters.prepared import PreparedFunction
from cimxdsl.interpreters.runtime import CrossbarRuntime
from cimxdsl.interpreters.values import as_type
from tests.unit.helpers import apply, dense_hex, parse

DIGITS = "examples/digits_cnn.onnx"

DEVICES = {
    "ideal": ("exact", preset("ideal")),
    "cinnamon": ("int8", preset("cinnamon")),
    "isaac": ("int8", preset("isaac").replace(crossbars=4)),
    "puma": ("int8", preset("puma")),
    "prime": ("int8", preset("prime")),
    "noisy": ("int8", preset("cinnamon").replace(prog_noise=0.1, read_noise=0.05, stuck_on_rate=0.01, seed=3)),
}


def interpreted(module, inputs, device: Device):
    """Today's run: xDSL's `Interpreter.call_op` on the function, every op dispatched by xDSL."""
    function = entry_function(module, "main")
    runtime = CrossbarRuntime(device)
    interpreter = build_interpreter(module, runtime, release_dead_values=True)
    types = function.function_type.inputs.data
    outputs = interpreter.call_op(function, tuple(as_type(x, t) for x, t in zip(inputs, types, strict=True)))
    device.sync()
    return [np.asarray(o) for o in outputs], runtime.layers


@pytest.fixture(scope="module", params=sorted(DEVICES))
def compiled(request):
    mode, config = DEVICES[request.param]
    calibration = np.load("examples/digits_train.npz")["inputs"][:8]
    return cimxdsl.compile(DIGITS, device=config, mode=mode, calibration=calibration, batch=2, crossbars=4)


@pytest.mark.parametrize("stage", STAGES)
def test_prepared_runs_equal_the_interpreter(compiled, stage):
    """Two inputs in a row on one device (the second run finds weights resident): the same outputs,
    layers and metrics, per crossbar, as the interpreter gives on a device of its own."""
    if stage not in compiled.stages:
        pytest.skip(f"exact mode has no '{stage}' stage")
    module = compiled.module(stage)
    images = np.load("examples/digits_test.npz")["inputs"]
    spans = compiled.static_adc_spans(compiled.device) if compiled.device.static_adc else None  # prime's
    program = Program(module, Device(compiled.device, adc_spans=spans), layer_products=False)
    reference = Device(compiled.device, adc_spans=spans)
    for batch in (images[:2], images[2:4]):
        program.device.reset_metrics()
        reference.reset_metrics()
        ours = program([batch.astype(np.float32)])
        outputs, layers = interpreted(module, [batch.astype(np.float32)], reference)
        for mine, theirs in zip(ours.outputs, outputs, strict=True):
            assert mine.dtype == theirs.dtype
            np.testing.assert_array_equal(mine, theirs)
        assert ours.layers == layers
        assert program.device.report() == reference.report()


def test_constants_are_evaluated_once_and_shared_read_only():
    module = parse("""
    func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {
      %c = arith.constant dense<[1, 2]> : tensor<2xi32>
      %s = arith.constant dense<[2]> : tensor<1xi64>
      %r = tensor.reshape %c(%s) : (tensor<2xi32>, tensor<1xi64>) -> tensor<2xi32>
      %y = arith.addi %x, %r : tensor<2xi32>
      func.return %y : tensor<2xi32>
    }
    """)
    function = entry_function(module, "main")
    prepared = PreparedFunction(build_interpreter(module, Device("ideal")), function)
    assert [step.op.name for step in prepared.steps] == ["arith.addi", "func.return"]
    constants = [c for c in prepared.constants if c is not None]
    assert len(constants) == 3 and not any(c.flags.writeable for c in constants if isinstance(c, np.ndarray))
    for x in ([1, 1], [5, -7]):
        (y,) = prepared((np.array(x, np.int32),))
        np.testing.assert_array_equal(y, np.array(x) + [1, 2])


def test_values_are_released_after_their_last_use():
    """As in `lifetimes`: the run's slots hold only what later ops still need."""
    module = parse("""
    func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {
      %a = arith.addi %x, %x : tensor<2xi32>
      %b = arith.muli %a, %a : tensor<2xi32>
      func.return %b : tensor<2xi32>
    }
    """)
    prepared = PreparedFunction(build_interpreter(module, Device("ideal")), entry_function(module, "main"))
    add, mul, _ = prepared.steps
    assert add.released == add.operands[:1]  # %x, after the add
    assert mul.released == mul.operands[:1]  # %a, after the mul


def test_released_slots_are_the_values_lifetimes_finds_dying():
    """Each step releases the values `lifetimes.dying_values` finds dying at its op, less the
    constants: a value a region uses dies at the op of the region, a value used after it later."""
    module = parse("""
    func.func @main(%x: tensor<2xf32>, %s: f32) -> tensor<2xf32> {
      %c = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
      %e = tensor.empty() : tensor<2xf32>
      %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
          iterator_types = ["parallel"]} ins(%x : tensor<2xf32>) outs(%e : tensor<2xf32>) {
      ^bb0(%in: f32, %out: f32):
        %m = arith.mulf %in, %s : f32
        linalg.yield %m : f32
      } -> tensor<2xf32>
      %z = arith.addf %y, %x : tensor<2xf32>
      %w = arith.addf %z, %c : tensor<2xf32>
      func.return %w : tensor<2xf32>
    }
    """)
    function = entry_function(module, "main")
    prepared = PreparedFunction(build_interpreter(module, Device("ideal")), function)
    block = function.body.block
    dying = dying_values(block)
    slots = {id(v): i for i, v in enumerate((*block.args, *(r for op in block.ops for r in op.results)))}
    constant = {slots[id(op.results[0])] for op in block.ops if op.name == "arith.constant"}
    assert [step.op.name for step in prepared.steps] == [
        "tensor.empty",
        "linalg.generic",
        "arith.addf",
        "arith.addf",
        "func.return",
    ]
    for step in prepared.steps:
        assert step.released == tuple(sorted({slots[id(v)] for v in dying[id(step.op)]} - constant)), step.op.name
    empty, generic, add, _, _ = prepared.steps
    assert generic.released == (1, *empty.results)  # %s, used in the region only; %e
    assert add.released == (0, *generic.results)  # %x after its last use; %y
    (w,) = prepared((np.array([1, 2], np.float32), np.float32(3)))
    np.testing.assert_array_equal(w, [1 * 3 + 1 + 1, 2 * 3 + 2 + 2])


TILED = """
func.func @main(%a: tensor<6x300x{t}>) -> tensor<6x200x{t}> {{
  %w = arith.constant {w} : tensor<300x200x{t}>
  %r = cinm.compute -> tensor<6x200x{t}> {{
    %0 = cinm.op.gemm %a, %w : (tensor<6x300x{t}>, tensor<300x200x{t}>) -> tensor<6x200x{t}>
    cinm.yield %0 : tensor<6x200x{t}>
  }}
  func.return %r : tensor<6x200x{t}>
}}
"""


def tiled_program(element: str, weights: np.ndarray):
    """A 6×300 · 300×200 product lowered for 128×128 crossbars: 3 × 2 tiles, partial sums added
    and column blocks inserted."""
    return apply(parse(TILED.format(t=element, w=dense_hex(weights, element))), "memristor{device=ideal crossbars=4}")


@pytest.mark.parametrize(("element", "mode"), [("i32", "int"), ("f32", "float")])
def test_layer_products_count_every_tile(element, mode):
    """On an exact device the tiles of the product run as one: the result is the exact product (bit
    for bit on integers), and every tile's write, MVM, latency and energy are counted as before."""
    rng = np.random.default_rng(1)
    if mode == "int":
        w, x = rng.integers(-127, 128, (300, 200)), rng.integers(-128, 128, (6, 300))
    else:
        w, x = rng.normal(size=(300, 200)).astype(np.float32), rng.normal(size=(6, 300)).astype(np.float32)
    module = tiled_program(element, w)
    fused, plain = Program(module, "ideal"), Program(module, "ideal", layer_products=False)
    assert fused.prepared.fused is not None
    booked = [s for s in fused.prepared.fused if isinstance(s.implementation, BookedRun)]
    assert len(booked) == 1 and len(fused.prepared.fused) < len(fused.prepared.steps)
    for _ in range(2):  # the second run finds the weights resident
        ours, theirs = fused([x]), plain([x])
        if mode == "int":
            np.testing.assert_array_equal(ours.outputs[0], x @ w)
            np.testing.assert_array_equal(ours.outputs[0], theirs.outputs[0])
        else:
            reference = x.astype(np.float64) @ w.astype(np.float64)
            np.testing.assert_allclose(ours.outputs[0], reference, rtol=1e-5, atol=1e-4)
        assert ours.outputs[0].dtype == theirs.outputs[0].dtype
        assert fused.device.report() == plain.device.report() and ours.layers == theirs.layers
        fused.device.reset_metrics(), plain.device.reset_metrics()


def test_layer_products_on_a_lossy_device_equal_the_tiles():
    """A lossy device computes the tiles of a layer stacked through its model: the same run as
    tile by tile."""
    rng = np.random.default_rng(2)
    w, x = rng.integers(-127, 128, (300, 200)), rng.integers(-128, 128, (6, 300))
    module = tiled_program("i32", w)
    device = preset("ideal").replace(adc_bits=6, weight_bits=8, input_bits=8, cell_bits=8, dac_bits=1)
    ours = Program(module, Device(device))([x])
    theirs = Program(module, Device(device), layer_products=False)([x])
    np.testing.assert_array_equal(ours.outputs[0], theirs.outputs[0])
    assert not np.array_equal(ours.outputs[0], x @ w)  # the 6-bit ADC rounds
    assert ours.device.report() == theirs.device.report()


def test_a_program_called_from_several_threads_runs_each_call_alone():
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(3)
    w = rng.integers(-127, 128, (300, 200))
    program = Program(tiled_program("i32", w), "cinnamon")
    inputs = [rng.integers(0, 128, (6, 300)) for _ in range(6)]
    config = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=6, cell_bits=8)
    devices = [Device(config) for _ in inputs]
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda pair: program([pair[0]], pair[1]), zip(inputs, devices)))
    for x, device, result in zip(inputs, devices, results, strict=True):
        alone = Program(tiled_program("i32", w), Device(device.config))([x])
        np.testing.assert_array_equal(result.outputs[0], alone.outputs[0])
        assert result.device is device and device.report() == alone.device.report()


def test_outputs_are_the_callers_writable_arrays():
    """A function returning a broadcast of its argument (a read-only view inside the run) gives
    the caller an array it may write."""
    from cimxdsl.interpreters import run
    from tests.unit.helpers import parse

    module = parse(
        """
        func.func @main(%x: tensor<3xf32>) -> tensor<2x3xf32> {
          %e = tensor.empty() : tensor<2x3xf32>
          %b = linalg.broadcast ins(%x : tensor<3xf32>) outs(%e : tensor<2x3xf32>) dimensions = [0]
          func.return %b : tensor<2x3xf32>
        }
        """
    )
    (out,) = run(module, [np.arange(3, dtype=np.float32)], "ideal").outputs
    out[0, 0] = 7.0
    np.testing.assert_array_equal(out, [[7, 1, 2], [0, 1, 2]])
