"""Instruction counts and compile time of the `pim` flow as the image grows (Miotti 2025, Fig. 5.2-5.4).

One 3×3 convolution, 4 input channels, 8 filters, zero padding 1, on square images 2…32 pixels wide,
for crossbars of 3×3 (the thesis's small size, which forces splitting across cores) and 128×128.
Prints one table row per (crossbar size, width): the spatial IR size (constant in the width), the
instructions per op type, and the compile time of each stage. `sldi` is listed but, as in the
thesis, it only sets up the addresses of the other instructions.

    .venv/bin/python benchmarks/pim_instruction_counts.py [--widths 2,4,8,16,32] [--xbars 3,128]
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xdsl.context import Context
from xdsl.dialects import get_all_dialects as upstream_dialects
from xdsl.parser import Parser

from cimxdsl.dialects import get_all_dialects
from cimxdsl.flow.pim import compile_to_pim

COLUMNS = ("mvmul", "vvadd", "ld", "st", "send", "recv", "lldi", "vrelu", "sldi")


def conv_text(width: int, channels: int = 4, filters: int = 8, seed: int = 0) -> str:
    """The convolution in the form `linalg-to-cinm` produces (im2col + gemm on a constant matrix)."""
    rng = np.random.default_rng(seed)
    matrix = rng.integers(-8, 8, (channels * 9, filters))
    rows = ", ".join("[" + ", ".join(str(v) for v in row) + "]" for row in matrix)
    padded = width + 2
    t = lambda *shape: "tensor<" + "x".join(map(str, shape)) + "xi32>"  # noqa: E731
    return f"""
func.func @main(%x: {t(1, channels, width, width)}) -> {t(1, filters, width, width)} {{
  %c0 = arith.constant 0 : i32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {{
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %c0 : i32
  }} : {t(1, channels, width, width)} to {t(1, channels, padded, padded)}
  %w = arith.constant dense<[{rows}]> : {t(channels * 9, filters)}
  %y = cinm.compute -> {t(1, filters, width, width)} {{
    %cols = cinm.op.im2col %p {{kernel = array<i64: 3, 3>}} : {t(1, channels, padded, padded)} -> {t(width * width, channels * 9)}
    %g = cinm.op.gemm %cols, %w : ({t(width * width, channels * 9)}, {t(channels * 9, filters)}) -> {t(width * width, filters)}
    %e = tensor.expand_shape %g [[0, 1, 2], [3]] output_shape [1, {width}, {width}, {filters}] : {t(width * width, filters)} into {t(1, width, width, filters)}
    %i = tensor.empty() : {t(1, filters, width, width)}
    %n = linalg.transpose ins(%e : {t(1, width, width, filters)}) outs(%i : {t(1, filters, width, width)}) permutation = [0, 3, 1, 2]
    cinm.yield %n : {t(1, filters, width, width)}
  }}
  func.return %y : {t(1, filters, width, width)}
}}
"""  # noqa: E501


def parse(text: str):
    ctx = Context()
    for name, factory in {**upstream_dialects(), **get_all_dialects()}.items():
        ctx.register_dialect(name, factory)
    return Parser(ctx, text).parse_module()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="2,4,8,16,32")
    parser.add_argument("--xbars", default="3,128")
    parser.add_argument("--cores", type=int, default=64)
    parser.add_argument("--crossbars-per-core", type=int, default=5)
    args = parser.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    header = (
        f"{'xbar':>4} {'width':>5} {'spat ops':>8} {'cores':>5} "
        + " ".join(f"{c:>7}" for c in COLUMNS)
        + f" {'total':>8} {'spatial s':>9} {'pim s':>6} {'codegen s':>9} {'total s':>7}"
    )
    print(header)
    print("-" * len(header))
    for xbar in (int(x) for x in args.xbars.split(",")):
        for width in widths:
            module = parse(conv_text(width))
            report = compile_to_pim(module, args.cores, args.crossbars_per_core, xbar)
            counts, times = report["instruction_counts"], report["compile_time_s"]
            print(
                f"{xbar:>4} {width:>5} {report['ir_ops']['cinm-to-spatial']:>8} {report['cores_used']:>5} "
                + " ".join(f"{counts.get(c, 0):>7}" for c in COLUMNS)
                + f" {report['instructions']:>8} {times['cinm-to-spatial']:>9.3f}"
                + f" {times['spatial-to-pim'] + times['pim-bufferize']:>6.3f} {times['pim-codegen']:>9.3f}"
                + f" {times['total']:>7.3f}"
            )


if __name__ == "__main__":
    main()
