"""Values are released after their last use in a block, and only then."""

import tracemalloc

import numpy as np
from xdsl.dialects import func

from cimxdsl.interpreters import run
from cimxdsl.interpreters.lifetimes import dying_values
from tests.unit.helpers import parse

T = "tensor<4xf32>"

PROGRAM = f"""
func.func @main(%x: {T}, %n: index) -> {T} {{
  %a = arith.addf %x, %x : {T}
  %b = arith.mulf %a, %a : {T}
  %unused = arith.subf %b, %b : {T}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %b) -> ({T}) {{
    %s = arith.addf %acc, %a : {T}
    scf.yield %s : {T}
  }}
  %m = memref.alloc() {{"pim.address" = 0 : i64}} : memref<4xf32>
  %k = memref.alloc() : memref<4xf32>
  memref.dealloc %k : memref<4xf32>
  func.return %l : {T}
}}
"""


def test_each_value_dies_at_its_last_use_unless_a_region_or_an_address_needs_it():
    block = next(op for op in parse(PROGRAM).walk() if isinstance(op, func.FuncOp)).body.block
    names = {v: v.name_hint for v in (*block.args, *(r for op in block.ops for r in op.results))}
    dying = {op.name: sorted(names[v] or "" for v in values) for op, values in dying_values(block).items() if values}
    # %a is used in the loop body and %b by the loop (an op with a region, which may read it later),
    # %m is reached by its address, %unused has no use to release it after
    assert dying == {"arith.addf": ["x"], "memref.dealloc": ["k"], "func.return": ["l"]}


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
