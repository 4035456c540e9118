"""Every pass of the memristor pipeline keeps the program's result, on random int8 programs.

The programs share weights between products (a gemm and a gemv on one matrix, one matrix in several
products and layers), put several products in one `cinm.compute`, and have sizes at and across the
tile edges. The reference is computed with NumPy from the inputs alone; every stage is run on the
exact `ideal` device and on a lossless bit-sliced one (2-bit cells and DACs, differential pairs),
whose products go through the slices, not the exact shortcut the device model takes for such a
config."""

from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cimxdsl.device import device as device_model
from cimxdsl.device import preset, tile_mvm
from cimxdsl.interpreters import run
from tests.unit.helpers import apply, parse

STRATEGIES = ["asap", "alap", "list", "round-robin"]
BIT_SLICED = preset("cinnamon").replace(name="bit-sliced", weight_bits=8, input_bits=8)
"""8-bit weights in four 2-bit cells per array of a differential pair, 8-bit inputs in four 2-bit DAC
slices, lossless ADC, no noise: every product exact, through the whole slicing path."""
DEVICES = {"ideal": preset("ideal"), "bit-sliced": BIT_SLICED}
TILES = [4, 8, 16]  # 16 columns of 4 cells fill BIT_SLICED's 128 columns with 8-bit weights


def t(shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xi32>"


@dataclass
class Program:
    """A random program under construction: arguments, computes, outputs and their NumPy values."""

    rng: np.random.Generator
    args: list[str] = field(default_factory=list)
    inputs: list[np.ndarray] = field(default_factory=list)
    weights: list[tuple[str, np.ndarray]] = field(default_factory=list)
    results: list[tuple[str, np.ndarray]] = field(default_factory=list)
    """values computed so far (a chain of layers may use them), with their reference"""
    body: list[str] = field(default_factory=list)

    def argument(self, prefix: str, shape: tuple[int, ...]) -> tuple[str, np.ndarray]:
        value = self.rng.integers(-128, 128, shape).astype(np.int32)
        name = f"%{prefix}{len(self.args)}"
        self.args.append(f"{name}: {t(shape)}")
        self.inputs.append(value)
        return name, value

    def text(self) -> str:
        names, types = ", ".join(n for n, _ in self.results), ", ".join(t(v.shape) for _, v in self.results)
        return (
            f"func.func @main({', '.join(self.args)}) -> ({types}) {{\n"
            + "\n".join(self.body)
            + f"\n  func.return {names} : {types}\n}}\n"
        )


def wrap(value: np.ndarray) -> np.ndarray:
    """The program computes in i32: results wrap (so do chains of them, modulo 2**32 all the same)."""
    return value.astype(np.int64).astype(np.int32)


def size(edge: int) -> st.SearchStrategy[int]:
    """A size at or across a tile edge, or any size up to two tiles."""
    return st.one_of(st.sampled_from([1, edge - 1, edge, edge + 1, 2 * edge + 1]), st.integers(1, 2 * edge))


def often(draw) -> bool:
    """True three times in four."""
    return draw(st.integers(0, 3)) > 0


def with_bias(draw, program: Program, op: str, reference: np.ndarray) -> tuple[str, np.ndarray]:
    """The product `op`, with a bias (`plus`) argument half of the time."""
    if not draw(st.booleans()):
        return op, reference
    b, bv = program.argument("b", reference.shape)
    return f"{op} plus {b}", reference + bv


@st.composite
def programs(draw, rows: int, cols: int, chains: bool) -> tuple[str, list[np.ndarray], list[np.ndarray]]:
    """1–3 computes of 1–4 products on 1–2 matrices each, new ones or (often) earlier ones. A product is
    a gemm `x·W` (W stored as is) or a gemv `W·v` (W stored transposed), so one matrix is often used
    both ways in one compute, and in several computes. With `chains`, inputs may be earlier results
    (new matrices are then often shaped to take one; values outgrow int8)."""
    program = Program(np.random.default_rng(draw(st.integers(0, 2**32 - 1))))
    m = draw(st.integers(1, 3))
    for c in range(draw(st.integers(1, 3))):
        matrices: list[tuple[str, np.ndarray]] = []
        for _ in range(draw(st.integers(1, 2))):
            if program.weights and often(draw):
                matrices.append(draw(st.sampled_from(program.weights)))
                continue
            widths = [r.shape[1] for _, r in program.results if chains and r.ndim == 2]
            k = draw(st.sampled_from(widths)) if widths and draw(st.booleans()) else draw(size(rows))
            matrices.append(program.argument("w", (k, draw(size(cols)))))
            program.weights.append(matrices[-1])
        products: list[tuple[str, str, np.ndarray]] = []  # (name, op text, reference)
        for p in range(draw(st.integers(1, 4))):
            w, wv = draw(st.sampled_from(matrices))
            if draw(st.booleans()):
                earlier = [r for r in program.results if chains and r[1].shape == (m, wv.shape[0])]
                x, xv = (
                    draw(st.sampled_from(earlier))
                    if earlier and often(draw)
                    else program.argument("x", (m, wv.shape[0]))
                )
                op, reference = with_bias(draw, program, f"cinm.op.gemm {x}, {w}", xv.astype(np.int64) @ wv)
                types = f"({t(xv.shape)}, {t(wv.shape)}) -> {t(reference.shape)}"
            else:
                earlier = [r for r in program.results if chains and r[1].shape == (wv.shape[1],)]
                v, vv = (
                    draw(st.sampled_from(earlier)) if earlier and often(draw) else program.argument("v", wv.shape[1:])
                )
                op, reference = with_bias(draw, program, f"cinm.op.gemv {w}, {v}", wv.astype(np.int64) @ vv)
                types = f"({t(wv.shape)}, {t(vv.shape)}) -> {t(reference.shape)}"
            products.append((f"%p{c}_{p}", f"{op} : {types}", wrap(reference)))
        names, types = ", ".join(n for n, _, _ in products), ", ".join(t(r.shape) for _, _, r in products)
        results = [f"%h{c}#{i}" if len(products) > 1 else f"%h{c}" for i in range(len(products))]
        program.body.append(
            f"  %h{c}{f':{len(products)}' if len(products) > 1 else ''} = cinm.compute -> {types} {{\n"
            + "".join(f"    {n} = {op}\n" for n, op, _ in products)
            + f"    cinm.yield {names} : {types}\n  }}"
        )
        program.results += [(r, reference) for r, (_, _, reference) in zip(results, products, strict=True)]
    return program.text(), program.inputs, [reference for _, reference in program.results]


@st.composite
def cases(draw, chains: bool):
    rows = draw(st.sampled_from(TILES))
    cols = rows if draw(st.booleans()) else draw(st.sampled_from(TILES))
    return rows, cols, draw(programs(rows, cols, chains))


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), crossbars=st.sampled_from([1, 2, 3, 16]), strategy=st.sampled_from(STRATEGIES))
def test_each_pass_keeps_the_result(device: str, data: st.DataObject, crossbars: int, strategy: str):
    rows, cols, (text, inputs, expected) = data.draw(cases(chains=device == "ideal"))
    module = parse(text)
    passes = [
        "",
        f"tile{{rows={rows} cols={cols}}}",
        f"cinm-to-cim{{crossbars={crossbars}}}",
        f"schedule-{strategy}",
        "cim-to-memristor",
        "memristor-to-func",
    ]
    config = DEVICES[device]
    assert config.exact  # lossless ADC, no noise
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(device_model, "tile_mvm", partial(tile_mvm, fast_path=device == "ideal"))
        for spec in passes:
            if spec:
                apply(module, spec)
            outputs = run(module, inputs, config).outputs
            for got, want in zip(outputs, expected, strict=True):
                np.testing.assert_array_equal(got, want, err_msg=f"after {spec or 'nothing'}")


@pytest.mark.parametrize("crossbars", [1, 4])
def test_tiled_program_uses_the_crossbars(crossbars: int):
    """After scheduling on N crossbars, the tiles of a 300x200 layer run on N crossbars."""
    text = (
        "func.func @main(%a: tensor<4x300xi32>, %b: tensor<300x200xi32>) -> tensor<4x200xi32> {\n"
        "  %r = cinm.compute -> tensor<4x200xi32> {\n"
        "    %0 = cinm.op.gemm %a, %b : (tensor<4x300xi32>, tensor<300x200xi32>) -> tensor<4x200xi32>\n"
        "    cinm.yield %0 : tensor<4x200xi32>\n  }\n  func.return %r : tensor<4x200xi32>\n}\n"
    )
    rng = np.random.default_rng(1)
    a, b = rng.integers(-128, 128, (4, 300)), rng.integers(-128, 128, (300, 200))
    module = apply(parse(text), f"tile{{rows=128 cols=128}},cinm-to-cim{{crossbars={crossbars}}},schedule-asap")
    result = run(module, [a, b], "ideal")
    np.testing.assert_array_equal(result.outputs[0], (a @ b).astype(np.int32))
    assert len(result.device.report()["crossbars"]) == crossbars
