"""Values are released after their last use in a block, and only then."""

import tracemalloc

import numpy as np
from xdsl.dialects import func

from cimxdsl.interpreters import run
from cimxdsl.interpreters.lifetimes import dying_values
from tests.unit.helpers import parse

T = "tensor<4xf32>"

PROGRAM = f"""
func.func @main(%x: {T}, %n: index, %w: tensor<3x2xi8>) -> {T} {{
  %a = arith.addf %x, %x : {T}
  %b = arith.mulf %a, %a : {T}
  %unused = arith.subf %b, %b : {T}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %b) -> ({T}) {{
    %s = arith.addf %acc, %a : {T}
    scf.yield %s : {T}
  }}
  %g = memref.alloc() {{"pim.address" = 0 : i64}} : memref<4xf32>
  %k = memref.alloc() : memref<4xf32>
  %h = memref.alloc() : memref<4xf32>
  memref.dealloc %k : memref<4xf32>
  pim.core(%w) coreId 0 : (tensor<3x2xi8>) {{
    %e = "test.op"() : () -> tensor<4xf32>
    pim.store %e, %h[0] size 4 : tensor<4xf32>, memref<4xf32>
    pim.halt
  }}
  func.return %l : {T}
}}
"""


def test_each_value_dies_at_its_last_use_unless_a_core_or_an_address_needs_it():
    function = next(op for op in parse(PROGRAM).walk() if isinstance(op, func.FuncOp))
    block = function.body.block
    dying = {}
    for op in block.ops:
        if values := dying_values(block)[id(op)]:
            dying[op.name] = sorted(v.name_hint or "" for v in values)
    # %a and %b die at the loop, whose body runs while it runs; %w and %h are used by a core (which
    # may run after the op), %g is reached by its address, %unused has no use to release it after
    assert dying == {
        "arith.addf": ["x"],
        "scf.for": ["a", "b", "c0", "c1", "n"],
        "memref.dealloc": ["k"],
        "func.return": ["l"],
    }


def test_a_block_of_a_multi_block_region_keeps_everything():
    two_blocks = f"""
    func.func @main(%x: {T}) -> {T} {{
      %a = arith.addf %x, %x : {T}
      cf.br ^next
    ^next:
      func.return %a : {T}
    }}
    """
    block = next(op for op in parse(two_blocks).walk() if isinstance(op, func.FuncOp)).body.blocks.first
    assert not any(dying_values(block).values())


CHAIN = 24
SIZE = 1 << 18  # 1 MiB of f32


def chain_program() -> str:
    t = f"tensor<{SIZE}xf32>"
    lines = [f"%v0 = arith.addf %x, %x : {t}"]
    lines += [f"%v{i} = arith.addf %v{i - 1}, %x : {t}" for i in range(1, CHAIN)]
    body = "\n  ".join(lines)
    return f"func.func @main(%x: {t}) -> {t} {{\n  {body}\n  func.return %v{CHAIN - 1} : {t}\n}}"


def test_a_chain_of_intermediates_does_not_accumulate():
    x = np.ones(SIZE, np.float32)
    module = parse(chain_program())
    tracemalloc.start()
    try:
        result = run(module, [x]).outputs[0]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(result, np.full(SIZE, CHAIN + 1, np.float32))
    assert peak < 6 * x.nbytes, f"peak {peak / x.nbytes:.1f} MiB for {CHAIN} intermediates of 1 MiB"
