"""Shared test helpers: parsing and running pipelines in process."""

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from cimxdsl.api import apply_passes
from cimxdsl.parsing import parse_module_text


def parse(text: str) -> ModuleOp:
    return parse_module_text(text, "<test>")


def dense_hex(array: np.ndarray, element: str) -> str:
    """`dense<"0x…">` of `array` as `element` ("i32" or "f32"): its little-endian bytes, which
    parse in milliseconds where the decimal text of 10^5 values takes seconds."""
    values = np.asarray(array)
    cast = values.astype({"i32": "<i4", "f32": "<f4"}[element])
    assert np.array_equal(cast, values), f"values do not fit {element}"
    return f'dense<"0x{cast.tobytes().hex().upper()}">'


def apply(module: ModuleOp, spec: str) -> ModuleOp:
    """Apply a pass pipeline to `module` in place, verifying the result."""
    apply_passes(module, spec)
    module.verify()
    return module


def matmul_program(m: int, k: int, n: int) -> str:
    """`@main(x: m×k, w: k×n) -> m×n` as one int32 `linalg.matmul` into a zero-filled tensor."""
    a, b, c = f"tensor<{m}x{k}xi32>", f"tensor<{k}x{n}xi32>", f"tensor<{m}x{n}xi32>"
    return f"""
    func.func @main(%x: {a}, %w: {b}) -> {c} {{
      %e = tensor.empty() : {c}
      %c0 = arith.constant 0 : i32
      %z = linalg.fill ins(%c0 : i32) outs(%e : {c}) -> {c}
      %y = linalg.matmul ins(%x, %w : {a}, {b}) outs(%z : {c}) -> {c}
      return %y : {c}
    }}
    """
