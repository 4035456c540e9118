"""The `pim` interpreter functions, one op kind per test; expected values computed with NumPy."""

import numpy as np
import pytest
from xdsl.utils.exceptions import InterpretationError

from tests.unit.interpreters.test_spatial import call

RNG = np.random.default_rng(1)


def test_load_and_store_copy_element_ranges():
    """Core 0 loads elements 2..5 of the input and stores them at elements 4..7 of the output."""
    x = RNG.integers(-9, 9, (8,))
    body = """  %g = bufferization.to_buffer %x : tensor<8xi32> to memref<8xi32>
  %out = memref.alloc() : memref<8xi32>
  pim.core() coreId 0 : () {
    %buf = memref.alloc() : memref<4xi32>
    %l = pim.load %g[2], %buf size 4 : memref<8xi32>, memref<4xi32>
    pim.store %l, %out[4] size 4 : memref<4xi32>, memref<8xi32>
    pim.halt
  }
  %r = bufferization.to_tensor %out restrict writable : memref<8xi32> to tensor<8xi32>"""
    got = call(body, {"x": "tensor<8xi32>"}, "tensor<8xi32>", [x])
    np.testing.assert_array_equal(got[4:], x[2:6])


def test_apply_filters_overwrites_its_output_buffer():
    image, matrix = RNG.integers(-9, 9, (2, 2, 3)), RNG.integers(-9, 9, (3, 2))
    body = f"""  %w = arith.constant dense<{matrix.tolist()}> : tensor<3x2xi32>
  %g = bufferization.to_buffer %x : tensor<2x2x3xi32> to memref<2x2x3xi32>
  %out = memref.alloc() : memref<2x2x2xi32>
  pim.core(%w) coreId 0 : (tensor<3x2xi32>) {{
    %in = memref.alloc() : memref<2x2x3xi32>
    %l = pim.load %g[0], %in size 12 : memref<2x2x3xi32>, memref<2x2x3xi32>
    %y = memref.alloc() : memref<2x2x2xi32>
    %acc = memref.alloc() : memref<2xi32>
    pim.apply_filters ins(%l : memref<2x2x3xi32>) outs(%y : memref<2x2x2xi32>) accum(%acc : memref<2xi32>) weights [0]
    pim.store %y, %out[0] size 8 : memref<2x2x2xi32>, memref<2x2x2xi32>
    pim.halt
  }}
  %r = bufferization.to_tensor %out restrict writable : memref<2x2x2xi32> to tensor<2x2x2xi32>"""
    got = call(body, {"x": "tensor<2x2x3xi32>"}, "tensor<2x2x2xi32>", [image])
    np.testing.assert_array_equal(got, np.einsum("hwc,cf->hwf", image, matrix))


def two_cores(first: str, second: str) -> str:
    return f"""  %g = bufferization.to_buffer %x : tensor<4xi32> to memref<4xi32>
  %out = memref.alloc() : memref<4xi32>
  %ch = spat.channel_new
  %back = spat.channel_new
{first}
{second}
  %r = bufferization.to_tensor %out restrict writable : memref<4xi32> to tensor<4xi32>"""


RECEIVER = """  pim.core() coreId 1 : () {
    %v = spat.channel_receive %ch : memref<4xi32>
    %d = spat.vadd %v, %v : memref<4xi32>, memref<4xi32>
    pim.store %d, %out[0] size 4 : memref<4xi32>, memref<4xi32>
    pim.halt
  }"""
SENDER = """  pim.core() coreId 0 : () {
    %buf = memref.alloc() : memref<4xi32>
    %l = pim.load %g[0], %buf size 4 : memref<4xi32>, memref<4xi32>
    spat.channel_send %l to %ch : memref<4xi32>
    pim.halt
  }"""


def test_cores_run_concurrently_whatever_their_order_in_the_block():
    """The receiving core comes first in the block: it waits until the sender has run."""
    x = RNG.integers(-9, 9, (4,))
    got = call(two_cores(RECEIVER, SENDER), {"x": "tensor<4xi32>"}, "tensor<4xi32>", [x])
    np.testing.assert_array_equal(got, 2 * x)


def test_cores_waiting_on_each_other_are_a_deadlock():
    first = """  pim.core() coreId 1 : () {
    %v = spat.channel_receive %ch : memref<4xi32>
    spat.channel_send %v to %back : memref<4xi32>
    pim.halt
  }"""
    second = """  pim.core() coreId 0 : () {
    %u = spat.channel_receive %back : memref<4xi32>
    spat.channel_send %u to %ch : memref<4xi32>
    pim.halt
  }"""
    with pytest.raises(InterpretationError, match=r"'pim\.core': deadlock: cores 1, 0 wait"):
        call(two_cores(first, second), {"x": "tensor<4xi32>"}, "tensor<4xi32>", [np.zeros(4)])


def test_instruction_level_cores_run_on_the_instruction_set_machine():
    """Load 4 words, add 5 to each (lldi + vvadd), store them: the stream pim-codegen emits."""
    x = RNG.integers(-9, 9, (4,))
    body = """  %g = bufferization.to_buffer %x : {pim.address = 0 : i64} tensor<4xi32> to memref<4xi32>
  %out = memref.alloc() {pim.address = 16 : i64} : memref<4xi32>
  pim.core() coreId 0 : () {
    pim.setbw ibiw = 32, obiw = 32
    pim.sldi rd = 28, imm = 0
    pim.sldi rd = 29, imm = 0
    pim.sldi rd = 0, imm = 0
    pim.ld rd = 0, rs1 = 28, size = 16, offset_select = 0, offset_value = 0
    pim.sldi rd = 1, imm = 16
    pim.lldi rd = 1, imm = 5, len = 4, offset_select = 0, offset_value = 0
    pim.sldi rd = 2, imm = 32
    pim.vvadd rd = 2, rs1 = 0, rs2 = 1, len = 4, offset_select = 0, offset_value = 0
    pim.sldi rd = 29, imm = 16
    pim.st rd = 28, rs1 = 2, size = 16, offset_select = 0, offset_value = 0
    pim.halt
  }
  %r = bufferization.to_tensor %out restrict writable : memref<4xi32> to tensor<4xi32>"""
    got = call(body, {"x": "tensor<4xi32>"}, "tensor<4xi32>", [x])
    np.testing.assert_array_equal(got, x + 5)


def test_a_machine_fault_is_an_interpretation_error_naming_the_instruction():
    body = """  %out = memref.alloc() {pim.address = 0 : i64} : memref<4xi32>
  pim.core() coreId 0 : () {
    pim.setbw ibiw = 32, obiw = 32
    pim.sldi rd = 28, imm = 0
    pim.sldi rd = 29, imm = 64
    pim.st rd = 28, rs1 = 0, size = 16, offset_select = 0, offset_value = 0
    pim.halt
  }
  %r = bufferization.to_tensor %out restrict writable : memref<4xi32> to tensor<4xi32>"""
    with pytest.raises(InterpretationError, match=r"core_0\.json: instruction 3 \(st\): global bytes \[64, 80\)"):
        call(body, {}, "tensor<4xi32>", [])
