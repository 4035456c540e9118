"""Runs of host ops between layers run as one prepared step (`host_steps`): the same outputs as
the interpreter, bit for bit, with constants computed once, results written into the run's own
dead arrays only, and every op run shown to the listeners."""

from dataclasses import replace

import numpy as np
import pytest
from xdsl.utils.exceptions import InterpretationError

import cimxdsl
from cimxdsl.device import Device
from cimxdsl.device.threads import using_threads
from cimxdsl.interpreters import Program, build_interpreter, entry_function
from cimxdsl.interpreters.host_steps import HostRun, host_runs
from cimxdsl.interpreters.prepared import PreparedFunction
from tests.unit.helpers import parse

T = "tensor<1x4x3x3xf32>"
PROGRAM = f"""
func.func @main(%x: {T}, %y: tensor<1x3x3x4xf32>) -> (tensor<1x8x5x5xf32>, {T}, tensor<1x2x5x5xf32>) {{
  %b = arith.constant dense<[0.5, -1.0, 2.0, -3.0]> : tensor<4xf32>
  %zero = arith.constant 0.25 : f32
  %e = tensor.empty() : {T}
  %bb = linalg.broadcast ins(%b : tensor<4xf32>) outs(%e : {T}) dimensions = [0, 2, 3]
  %e2 = tensor.empty() : {T}
  %t = linalg.transpose ins(%y : tensor<1x3x3x4xf32>) outs(%e2 : {T}) permutation = [0, 3, 1, 2]
  %s = arith.addf %x, %t : {T}
  %u = arith.addf %s, %bb : {T}
  %r = tosa.clamp %u {{min_val = 0.0 : f32, max_val = 6.0 : f32}} : ({T}) -> {T}
  %m = arith.mulf %r, %r : {T}
  %p = tensor.pad %m low[0, 0, 1, 1] high[0, 0, 1, 1] {{
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  }} : {T} to tensor<1x4x5x5xf32>
  %c = tensor.concat dim(1) %p, %p : (tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>) -> tensor<1x8x5x5xf32>
  %h = tensor.extract_slice %p[0, 1, 0, 0] [1, 2, 5, 5] [1, 1, 1, 1] : tensor<1x4x5x5xf32> to tensor<1x2x5x5xf32>
  func.return %c, %s, %h : tensor<1x8x5x5xf32>, {T}, tensor<1x2x5x5xf32>
}}
"""


class Seen:
    def __init__(self):
        self.ops = []

    def will_interpret_op(self, op, args):
        pass

    def did_interpret_op(self, op, results):
        self.ops.append((op.name, [np.array(r, copy=True) for r in results]))


def prepared_runs(listeners=()):
    module = parse(PROGRAM)
    interpreter = build_interpreter(module, Device("ideal"), listeners)
    prepared = PreparedFunction(interpreter, entry_function(module, "main"), listeners)
    constants = {slot: value for slot, value in enumerate(prepared.constants) if value is not None}
    prepared.fused = host_runs(prepared.steps, constants, prepared.listeners)
    return prepared


def inputs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(1, 4, 3, 3)).astype(np.float32) * 4, rng.normal(size=(1, 3, 3, 4)).astype(np.float32) * 4


def test_a_run_of_host_ops_is_one_step_equal_to_the_interpreter():
    prepared = prepared_runs()
    (run, ret) = prepared.fused
    assert isinstance(run.implementation, HostRun) and ret.op.name == "func.return"
    x, y = inputs()
    ours = prepared((x, y), layer_products=True)
    theirs = prepared((x, y), layer_products=False)  # (each op on the interpreter)
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.dtype == reference.dtype
        np.testing.assert_array_equal(mine, reference)
    s = x + y.transpose(0, 3, 1, 2)
    r = np.clip(s + np.array([0.5, -1, 2, -3], np.float32)[:, None, None], 0, 6)
    p = np.pad(r * r, [(0, 0), (0, 0), (1, 1), (1, 1)], constant_values=0.25)
    np.testing.assert_array_equal(ours[0], np.concatenate([p, p], axis=1))
    np.testing.assert_array_equal(ours[1], s)  # (%s outlives the add that reads it: not written into)
    np.testing.assert_array_equal(ours[2], p[:, 1:3])


def test_results_go_into_dead_arrays_the_run_made_and_constants_are_computed_once():
    (run, _) = prepared_runs().fused
    parts = {part.op.name + str(i): part for i, part in enumerate(run.implementation.parts)}
    names = [part.op.name for part in run.implementation.parts]
    assert "linalg.broadcast" not in names  # (of a constant: computed when prepared)
    into = {part.op.name: part.into for part in parts.values() if part.op.name != "arith.addf"}
    adds = [part.into for part in parts.values() if part.op.name == "arith.addf"]
    assert adds == [-1, -1]  # %s is returned too; the broadcast constant is not the run's array
    assert into["tosa.clamp"] == 0  # %u: made by the run, read by the clamp alone
    assert into["arith.mulf"] == -1  # %r is read twice by the product


def test_listeners_see_each_op_run_with_its_results():
    seen, reference = Seen(), Seen()
    x, y = inputs()
    prepared_runs([seen])((x, y), layer_products=True)
    prepared_runs([reference])((x, y), layer_products=False)
    computed_once = {"linalg.broadcast", "tensor.empty", "tensor.yield", "func.return"}  # (and the pad's region)
    expected = [(name, values) for name, values in reference.ops if name not in computed_once]
    assert [name for name, _ in seen.ops if name not in computed_once] == [name for name, _ in expected]
    for (_, mine), (_, theirs) in zip([s for s in seen.ops if s[0] not in computed_once], expected, strict=True):
        for a, b in zip(mine, theirs, strict=True):
            np.testing.assert_array_equal(a, b)


def test_a_compiled_network_runs_its_host_ops_in_runs_bit_for_bit():
    """Integer products (int8 mode): the layers' products are those of their tiles bit for bit (in
    float, a layer reading its patches in (ky, kx, c) order sums in another order)."""
    compiled = cimxdsl.compile("examples/digits_cnn.onnx", device="ideal", mode="int8", batch=2)
    images = np.load("examples/digits_test.npz")["inputs"][:2].astype(np.float32)
    compiled(images)  # (the weights written: the runs below find them resident)
    ours = compiled(images)
    report = compiled.last_run.device.report()
    program = compiled.program()
    assert any(isinstance(step.implementation, HostRun) for step in program.prepared.fused)
    program.layer_products = False
    np.testing.assert_array_equal(ours, compiled(images))
    assert report == compiled.last_run.device.report()


def test_a_bias_add_writes_into_the_layer_product_it_reads_last():
    """A layer's product is a new array each call: the bias add after it (through the views of the
    layout change) writes into it; the outputs are bitwise those of the same runs allocating their
    results, call after call (no constant written)."""
    compiled = cimxdsl.compile("examples/digits_cnn.onnx", device="ideal", mode="exact", batch=2)
    images = np.load("examples/digits_test.npz")["inputs"][:2].astype(np.float32)
    first = compiled(images)
    steps = [s for s in compiled.program().prepared.fused if isinstance(s.implementation, HostRun)]
    writing = []  # (run, part index) of the parts writing into an array the run was given
    for step in steps:
        made = {r: part for part in step.implementation.parts for r in part.results}
        for k, part in enumerate(step.implementation.parts):
            value = part.operands[part.into] if part.into >= 0 else -1
            while value in made and made[value].step.view:
                value = made[value].operands[0]
            if 0 <= value < len(step.operands):
                writing.append((step.implementation, k))
    assert any(run.parts[k].op.name == "arith.addf" for run, k in writing)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(images), first)
    for run, k in writing:  # (the same runs, allocating)
        run.parts[k] = replace(run.parts[k], into=-1)
    np.testing.assert_array_equal(compiled(images), first)


GENERIC = """
func.func @main(%x: tensor<4x64x32x32xf32>, %s: tensor<64xf32>) -> tensor<4x32x32x64xi8> {
  %e = tensor.empty() : tensor<4x32x32x64xi8>
  %q = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>,
      affine_map<(n, c, h, w) -> (c)>, affine_map<(n, c, h, w) -> (n, h, w, c)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %s : tensor<4x64x32x32xf32>, tensor<64xf32>) outs(%e : tensor<4x32x32x64xi8>) {
  ^bb0(%in: f32, %scale: f32, %out: i8):
    %d = arith.divf %in, %scale : f32
    %r = math.roundeven %d : f32
    %lo = arith.constant -128.0 : f32
    %hi = arith.constant 127.0 : f32
    %c = arith.maximumf %r, %lo : f32
    %k = arith.minimumf %c, %hi : f32
    %i = arith.fptosi %k : f32 to i8
    linalg.yield %i : i8
  } -> tensor<4x32x32x64xi8>
  func.return %q : tensor<4x32x32x64xi8>
}
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_an_elementwise_generic_is_a_host_step_equal_to_the_interpreter(threads):
    """A requantization (`linalg.generic`: a divide, round, clamp and conversion per element, a
    broadcast scale, its output in another order) runs as a host step, in slices on two threads
    when large: bitwise the interpreter's body run op by op."""
    module = parse(GENERIC)
    interpreter = build_interpreter(module, Device("ideal"))
    prepared = PreparedFunction(interpreter, entry_function(module, "main"))
    constants = {slot: value for slot, value in enumerate(prepared.constants) if value is not None}
    prepared.fused = host_runs(prepared.steps, constants, ())
    assert [
        p.op.name for s in prepared.fused if isinstance(s.implementation, HostRun) for p in s.implementation.parts
    ] == ["linalg.generic"]
    rng = np.random.default_rng(threads)
    x = (rng.normal(size=(4, 64, 32, 32)) * 300).astype(np.float32)
    x[0, 0, 0, :4] = [0.5, 1.5, -2.5, np.float32(2.5)]  # (ties: half to even)
    scale = rng.uniform(0.5, 2.0, 64).astype(np.float32)
    with using_threads(threads):
        (ours,) = prepared((x, scale), layer_products=True)
    (theirs,) = prepared((x, scale), layer_products=False)
    assert ours.dtype == np.int8 and ours.shape == (4, 32, 32, 64)
    np.testing.assert_array_equal(ours, theirs)
    expected = np.clip(np.rint(x / scale[:, None, None]), -128, 127).astype(np.int8).transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(ours, expected)


def test_an_op_failing_in_a_run_is_named():
    program = Program(parse(PROGRAM), Device("ideal"))
    (run, _) = program.prepared.fused
    clamp = next(part for part in run.implementation.parts if part.op.name == "tosa.clamp")

    def failing(args):
        raise ValueError("no clamp today")

    object.__setattr__(clamp.step, "run", failing)
    object.__setattr__(clamp.step, "into", lambda args, out: failing(args))
    with pytest.raises(InterpretationError, match=r"^'tosa\.clamp': no clamp today$"):
        program(list(inputs()))
