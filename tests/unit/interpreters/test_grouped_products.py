"""A grouped layer's groups (the per-group gemms of a grouped convolution: column slices of one
im2col matrix, joined by a concat) run as one batched product, and the crossbar operations of the
layer are booked at once: outputs equal a per-group NumPy product (bit for bit on integers) and
the tile-by-tile run, and metrics, per crossbar and in total, equal the tile-by-tile run's."""

import numpy as np
import pytest

from cimxdsl.device import Device
from cimxdsl.dialects import memristor
from cimxdsl.interpreters import Program
from cimxdsl.interpreters.layer_products import BookedRun, device_call
from tests.unit.helpers import apply, dense_hex, parse

SMALL_EXACT = {"preset": "ideal", "rows": 64, "cols": 32, "crossbars": 8}
EIGHT_BIT = {"preset": "cinnamon", "weight_bits": 8, "input_bits": 8, "adc_bits": 8}
LOSSLESS = {**EIGHT_BIT, "adc_bits": 0}
DEVICES = {
    "ideal-float": {"preset": "ideal"},
    "ideal-int": {"preset": "ideal"},
    "small-exact-float": SMALL_EXACT,
    "cinnamon-lossless": LOSSLESS,
    "cinnamon-8bit": EIGHT_BIT,
}


def grouped_program(x_type: str, element: str, weights: list[np.ndarray], rows: int) -> str:
    """@main(x: rows × G·d) -> rows × G·f: per group g, x[:, g·d:(g+1)·d] · weights[g], the
    products joined along the columns, inside one compute (as `linalg-to-cinm` lowers a grouped
    convolution)."""
    groups, (depth, width) = len(weights), weights[0].shape
    slice_type, product_type = f"tensor<{rows}x{depth}x{element}>", f"tensor<{rows}x{width}x{element}>"
    result_type = f"tensor<{rows}x{groups * width}x{element}>"
    lines = []
    for g, w in enumerate(weights):
        lines.append(f"  %w{g} = arith.constant {dense_hex(w, element)} : tensor<{depth}x{width}x{element}>")
    body = []
    for g in range(groups):
        body.append(
            f"    %s{g} = tensor.extract_slice %x[0, {g * depth}] [{rows}, {depth}] [1, 1] : {x_type} to {slice_type}"
        )
        body.append(f"    %p{g} = cinm.op.gemm %s{g}, %w{g} : ({slice_type}, tensor<{depth}x{width}x{element}>) -> {product_type}")
    if groups > 1:
        joined = ", ".join(f"%p{g}" for g in range(groups))
        types = ", ".join([product_type] * groups)
        body.append(f"    %c = tensor.concat dim(1) {joined} : ({types}) -> {result_type}")
        out = "%c"
    else:
        out = "%p0"
    return "\n".join(
        [
            f"func.func @main(%x: {x_type}) -> {result_type} {{",
            *lines,
            f"  %r = cinm.compute -> {result_type} {{",
            *body,
            f"    cinm.yield {out} : {result_type}",
            "  }",
            f"  func.return %r : {result_type}",
            "}",
        ]
    )


def config_file(tmp_path, name: str, fields: dict) -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text("\n".join(f"{key} = {value!r}".replace("'", '"') for key, value in fields.items()) + "\n")
    return str(path)


SHAPES = [  # (groups, depth d, width f): depthwise, at and across the tile edges of both devices
    (12, 9, 1),
    (3, 64, 32),
    (2, 65, 33),
    (5, 100, 7),
    (1, 130, 40),
    (4, 128, 128),
    (2, 300, 70),
]


@pytest.mark.parametrize(("groups", "depth", "width"), SHAPES)
@pytest.mark.parametrize("device", sorted(DEVICES))
def test_grouped_products_equal_per_group_products(tmp_path, device, groups, depth, width):
    """Two runs in a row (the second finds the weights that stayed resident): outputs as the
    per-group products (but through the 8-bit ADC), bit for bit as the tile-by-tile run's on
    integers, and metrics as the tile-by-tile run's."""
    rng = np.random.default_rng(groups * 1000 + depth + width)
    rows, integer = 3, not device.endswith("float")
    config = config_file(tmp_path, device, DEVICES[device])
    if integer:
        weights = [rng.integers(-127, 128, (depth, width)) for _ in range(groups)]
        element = "i32"
    else:
        weights = [rng.normal(size=(depth, width)).astype(np.float32) for _ in range(groups)]
        element = "f32"
    text = grouped_program(f"tensor<{rows}x{groups * depth}x{element}>", element, weights, rows)
    module = apply(parse(text), f'memristor{{device="{config}" crossbars=4}}')
    grouped, tiled = Program(module, Device(config)), Program(module, Device(config), layer_products=False)
    fused = grouped.prepared.fused
    assert any(isinstance(s.implementation, BookedRun) for s in fused)
    computed = [s for s in fused if device_call(s, memristor.GemmOp) and not isinstance(s.implementation, BookedRun)]
    assert not computed  # every tile product is counted, in a booked run, and none computed
    for _ in range(2):
        if integer:
            x = rng.integers(-128, 128, (rows, groups * depth))
        else:
            x = rng.normal(size=(rows, groups * depth)).astype(np.float32)
        ours, theirs = grouped([x]), tiled([x])
        parts = [x[:, g * depth : (g + 1) * depth].astype(np.float64) @ weights[g] for g in range(groups)]
        reference = np.hstack(parts)
        if integer:
            if device != "cinnamon-8bit":
                np.testing.assert_array_equal(ours.outputs[0], reference.astype(np.int64))
            np.testing.assert_array_equal(ours.outputs[0], theirs.outputs[0])
        else:  # float32 sums of `depth` products, in another order than the tiles'
            bound = np.hstack([np.abs(x[:, g * depth : (g + 1) * depth]) @ np.abs(weights[g]) for g in range(groups)])
            tolerance = 4 * depth * np.finfo(np.float32).eps * bound
            assert np.all(np.abs(ours.outputs[0] - reference) <= tolerance)
        assert ours.outputs[0].dtype == theirs.outputs[0].dtype
        assert ours.device.report() == theirs.device.report()
        assert ours.device.crossbars_used() == theirs.device.crossbars_used()
        grouped.device.reset_metrics(), tiled.device.reset_metrics()
