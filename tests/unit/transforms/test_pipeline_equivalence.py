"""Every pass of the memristor pipeline keeps the program's result, on random int8 programs."""

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cimxdsl.interpreters import run
from tests.unit.helpers import apply, parse

STRATEGIES = ["asap", "alap", "list", "round-robin"]


@dataclass
class Program:
    """A random program: a chain of layers (gemm with optional bias, or gemv), some weights reused."""

    text: str
    inputs: list[np.ndarray]
    expected: list[np.ndarray]


def t(shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xi32>"


@st.composite
def programs(draw) -> Program:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    small = lambda shape: rng.integers(-128, 128, shape).astype(np.int32)  # noqa: E731
    m = draw(st.integers(1, 4))
    width = draw(st.integers(1, 90))
    args, inputs, body = [f"%x: {t((m, width))}"], [small((m, width))], []
    value, expected, shape = "%x", inputs[0].astype(np.int64), (m, width)
    weights: list[tuple[str, np.ndarray]] = []
    for i in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, 90))
        reuse = [w for w in weights if w[1].shape == (shape[1], n)]
        if reuse and draw(st.booleans()):
            name, w = reuse[0]
        else:
            name, w = f"%w{i}", small((shape[1], n))
            args.append(f"{name}: {t(w.shape)}")
            inputs.append(w)
            weights.append((name, w))
        result = expected @ w
        product = f"cinm.op.gemm {value}, {name}"
        if draw(st.booleans()):
            bias = small((m, n))
            args.append(f"%b{i}: {t(bias.shape)}")
            inputs.append(bias)
            product += f" plus %b{i}"
            result = result + bias
        body.append(
            f"  %h{i} = cinm.compute -> {t((m, n))} {{\n"
            f"    %p{i} = {product} : ({t(shape)}, {t(w.shape)}) -> {t((m, n))}\n"
            f"    cinm.yield %p{i} : {t((m, n))}\n  }}"
        )
        value, expected, shape = f"%h{i}", result, (m, n)
    matrix, vector = small((draw(st.integers(1, 90)), width)), inputs[0][0]
    args.append(f"%mat: {t(matrix.shape)}")
    inputs.append(matrix)
    body.append(
        f"  %g = cinm.compute -> {t(matrix.shape[:1])} {{\n"
        f"    %row = tensor.extract_slice %x[0, 0] [1, {width}] [1, 1] : {t((m, width))} to {t((1, width))}\n"
        f"    %v = tensor.collapse_shape %row [[0, 1]] : {t((1, width))} into {t((width,))}\n"
        f"    %q = cinm.op.gemv %mat, %v : ({t(matrix.shape)}, {t((width,))}) -> {t(matrix.shape[:1])}\n"
        f"    cinm.yield %q : {t(matrix.shape[:1])}\n  }}"
    )
    outputs = [(value, shape), ("%g", matrix.shape[:1])]
    text = (
        f"func.func @main({', '.join(args)}) -> ({', '.join(t(s) for _, s in outputs)}) {{\n"
        + "\n".join(body)
        + f"\n  func.return {', '.join(v for v, _ in outputs)} : {', '.join(t(s) for _, s in outputs)}\n}}\n"
    )
    wrap = lambda a: a.astype(np.int32)  # noqa: E731 - the program computes in i32
    return Program(text, inputs, [wrap(expected), wrap(matrix.astype(np.int64) @ vector)])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    program=programs(),
    rows=st.sampled_from([8, 16, 32]),
    crossbars=st.integers(1, 16),
    strategy=st.sampled_from(STRATEGIES),
)
def test_each_pass_keeps_the_result(program: Program, rows: int, crossbars: int, strategy: str):
    module = parse(program.text)
    passes = [
        f"tile{{rows={rows} cols={rows}}}",
        f"cinm-to-cim{{crossbars={crossbars}}}",
        f"schedule-{strategy}",
        "cim-to-memristor",
        "memristor-to-func",
    ]
    outputs = run(module, program.inputs, "ideal").outputs
    for got, want in zip(outputs, program.expected, strict=True):
        np.testing.assert_array_equal(got, want)
    for spec in passes:
        apply(module, spec)
        after = run(module, program.inputs, "ideal").outputs
        for got, want in zip(after, outputs, strict=True):
            np.testing.assert_array_equal(got, want, err_msg=f"after {spec}")


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
