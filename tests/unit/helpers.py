"""Shared test helpers: parsing and running pipelines in process."""

from xdsl.dialects.builtin import ModuleOp

from cimxdsl.api import apply_passes
from cimxdsl.parsing import parse_module_text


def parse(text: str) -> ModuleOp:
    return parse_module_text(text, "<test>")


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
