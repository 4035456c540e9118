"""Layer-level products on bit-sliced devices: the tiles of a layer in one stacked sliced product
give the outputs and per-tile metrics of the tile-by-tile run, bit for bit."""

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cimxdsl.device import Device
from cimxdsl.device.device import MVM
from cimxdsl.interpreters import Program
from cimxdsl.interpreters.layer_products import BookedRun
from tests.unit.helpers import apply, dense_hex, parse

EIGHT_BIT = {"preset": "cinnamon", "weight_bits": 8, "input_bits": 8, "adc_bits": 8}
DEVICES = {
    "cinnamon-8bit": EIGHT_BIT,
    "isaac": {"preset": "isaac", "adc_bits": 6},
    "prime": {"preset": "prime"},  # bipolar DACs, a static ADC span per weight slice
    "static-column": {**EIGHT_BIT, "adc_range": "static_column", "adc_bits": 5},
    "static-array": {**EIGHT_BIT, "adc_range": "static_array", "input_encoding": "twos_complement"},
    "programming-noise": {**EIGHT_BIT, "prog_noise": 0.1, "stuck_on_rate": 0.01, "seed": 3},
    "sign-magnitude": {**EIGHT_BIT, "input_encoding": "sign_magnitude", "adc_bits": 6},
    "bipolar-static-slice": {**EIGHT_BIT, "input_encoding": "bipolar", "adc_range": "static_slice", "adc_bits": 5},
    "bipolar-analog-noise": {
        **EIGHT_BIT,
        "input_encoding": "bipolar",
        "subtraction": "analog",
        "prog_noise": 0.05,
        "prog_noise_model": "independent",
        "prog_noise_clip": "zero",
        "seed": 7,
    },
    "sign-magnitude-analog": {
        **EIGHT_BIT,
        "input_encoding": "sign_magnitude",
        "subtraction": "analog",
        "prog_noise": 0.05,
        "seed": 5,
    },
}

SHARED = """
func.func @main(%a: tensor<{m}x{k}xi32>, %b: tensor<{m}x{k}xi32>) -> (tensor<{m}x{n}xi32>, tensor<{m}x{n}xi32>) {{
  %w = arith.constant {w} : tensor<{k}x{n}xi32>
  %r = cinm.compute -> tensor<{m}x{n}xi32> {{
    %0 = cinm.op.gemm %a, %w : (tensor<{m}x{k}xi32>, tensor<{k}x{n}xi32>) -> tensor<{m}x{n}xi32>
    cinm.yield %0 : tensor<{m}x{n}xi32>
  }}
  %s = cinm.compute -> tensor<{m}x{n}xi32> {{
    %1 = cinm.op.gemm %b, %w : (tensor<{m}x{k}xi32>, tensor<{k}x{n}xi32>) -> tensor<{m}x{n}xi32>
    cinm.yield %1 : tensor<{m}x{n}xi32>
  }}
  func.return %r, %s : tensor<{m}x{n}xi32>, tensor<{m}x{n}xi32>
}}
"""


def config_file(name: str, tmp_path_factory) -> str:
    path = tmp_path_factory.getbasetemp() / f"{name}.toml"
    lines = [f"{key} = {value!r}".replace("'", '"') for key, value in DEVICES[name].items()]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def program_text(w: np.ndarray, m: int) -> str:
    k, n = w.shape
    return SHARED.format(m=m, k=k, n=n, w=dense_hex(w, "i32"))


def inputs(rng, config, m: int, k: int, blocks: int) -> np.ndarray:
    """Rows unsigned, signed, and signed with a K-block of their own without negative entries."""
    bits = config.input_bits
    x = rng.integers(1 - 2 ** (bits - 1), 2 ** (bits - 1), (m, k))
    x[::3] = np.abs(x[::3])
    x[1::3, : k // blocks] = np.abs(x[1::3, : k // blocks])
    return x


@pytest.fixture(scope="module", params=sorted(DEVICES))
def device(request, tmp_path_factory):
    path = config_file(request.param, tmp_path_factory)
    return path, Device(path).config


@settings(
    max_examples=4, deadline=None, phases=[Phase.generate], suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.data(),
    m=st.integers(1, 5),
    k_tiles=st.sampled_from([(1, 0), (1, -1), (1, 1), (2, 0), (2, 37)]),
    n_tiles=st.sampled_from([(1, 0), (1, -1), (2, 0), (2, 5), (3, -7)]),
)
def test_stacked_products_equal_tile_by_tile(device, data, m, k_tiles, n_tiles):
    """K and N at and across the crossbar's tile edges (multiples of its rows and columns, and
    not), two layers sharing one weight matrix, two runs (the second finds weights resident)."""
    path, config = device
    rows, cols = config.tile_shape
    k, n = max(1, k_tiles[0] * rows + k_tiles[1]), max(1, n_tiles[0] * cols + n_tiles[1])
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    w = random_weights(rng, config, k, n)
    module = apply(parse(program_text(w, m)), f'memristor{{device="{path}" crossbars=4}}')
    stacked, tiled = stacked_and_tiled(module, config, lambda: [inputs(rng, config, m, k, 2) for _ in range(2)])
    tiles = -(-k // rows) * -(-n // cols)
    fused = stacked.prepared.fused or []  # (X whole, an argument of the function: not recognised)
    assert counted_tiles(fused) == (2 * tiles if k > rows else 0)
    for _ in range(2):
        assert_runs_agree(stacked, tiled, [inputs(rng, config, m, k, -(-k // rows)) for _ in range(2)])


def made_program(m: int, k: int, weights: list[np.ndarray]) -> str:
    """A program whose X (m × k) is made by two ops (not an argument) and read whole by a layer per
    matrix of `weights`; the results of two layers are read first by one op (their product)."""
    n = weights[0].shape[1]
    x, y = f"tensor<{m}x{k}xi32>", f"tensor<{m}x{n}xi32>"
    lines = [
        f"func.func @main(%a: {x}) -> {y} {{",
        f"  %x = arith.subi %a, %a : {x}",
        f"  %y = arith.addi %x, %a : {x}",
    ]
    for i, w in enumerate(weights):
        lines += [
            f"  %w{i} = arith.constant {dense_hex(w, 'i32')} : tensor<{k}x{n}xi32>",
            f"  %r{i} = cinm.compute -> {y} {{",
            f"    %p{i} = cinm.op.gemm %y, %w{i} : ({x}, tensor<{k}x{n}xi32>) -> {y}",
            f"    cinm.yield %p{i} : {y}",
            "  }",
        ]
    if len(weights) == 2:
        lines.append(f"  %r = arith.muli %r0, %r1 : {y}")
    lines += [f"  func.return %r{'' if len(weights) == 2 else 0} : {y}", "}"]
    return "\n".join(lines)


def random_weights(rng, config, k: int, n: int) -> np.ndarray:
    high = 2 ** (config.weight_bits - 1) - 1
    return rng.integers(-high, high + 1, (k, n))


def assert_runs_agree(stacked: Program, tiled: Program, x: list) -> None:
    """The same outputs, metrics and per-layer figures with layer products and tile by tile; the
    metrics reset after."""
    ours, theirs = stacked(x), tiled(x)
    for a, b in zip(ours.outputs, theirs.outputs, strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    assert ours.device.report() == theirs.device.report() and ours.layers == theirs.layers
    stacked.device.reset_metrics(), tiled.device.reset_metrics()


@pytest.mark.parametrize("n_tiles", [(1, 0), (1, -3), (2, 5)])
def test_a_layer_whose_rows_fit_one_tile_runs_as_one_product(device, n_tiles):
    """X made by the program (not an argument) and read whole by the tiles of one K-block: one tile
    (its output buffer made before the tile product) or a row of them, as one product."""
    path, config = device
    rows, cols = config.tile_shape
    k, n, m = rows - 1, n_tiles[0] * cols + n_tiles[1], 3
    rng = np.random.default_rng(n)
    module = apply(
        parse(made_program(m, k, [random_weights(rng, config, k, n)])), f'memristor{{device="{path}" crossbars=4}}'
    )
    stacked, tiled = stacked_and_tiled(module, config, lambda: [inputs(rng, config, m, k, 1)])
    assert counted_tiles(stacked.prepared.fused or []) == -(-n // cols)  # (every tile product counted, not run)
    for _ in range(2):
        assert_runs_agree(stacked, tiled, [inputs(rng, config, m, k, 1)])


def test_two_products_of_one_tile_read_first_by_one_op(device):
    """Two layers of one tile each (a shared X, two weight matrices) whose results one op reads
    first: both run, as one product each, before it."""
    path, config = device
    rows, cols = config.tile_shape
    k, n, m = rows // 2, cols // (2 * config.cells_per_weight) or 1, 4
    rng = np.random.default_rng(k + n)
    weights = [random_weights(rng, config, k, n) for _ in range(2)]
    module = apply(parse(made_program(m, k, weights)), f'memristor{{device="{path}" crossbars=4}}')
    stacked, tiled = stacked_and_tiled(module, config, lambda: [inputs(rng, config, m, k, 1)])
    assert counted_tiles(stacked.prepared.fused or []) == 2
    assert_runs_agree(stacked, tiled, [inputs(rng, config, m, k, 1)])


def stacked_and_tiled(module, config, calibration) -> tuple[Program, Program]:
    """`module` run with layer products and tile by tile, on devices of `config` whose static ADC
    ranges (if any) are calibrated on the inputs `calibration()` gives (drawn only then)."""
    spans = None
    if config.static_adc:
        calibrating = Device(config, calibrating=True)
        Program(module, calibrating)(calibration())
        spans = calibrating.adc_spans
    stacked = Program(module, Device(config, adc_spans=spans and dict(spans)))
    tiled = Program(module, Device(config, adc_spans=spans and dict(spans)), layer_products=False)
    return stacked, tiled


def counted_tiles(steps) -> int:
    """The tile products that prepared `steps` count without computing: on their own, or in a run
    of crossbar operations booked at once."""
    counted = [s for s in steps if getattr(s.implementation, "__qualname__", "").startswith("count_columns")]
    booked = [s.implementation for s in steps if isinstance(s.implementation, BookedRun)]
    return len(counted) + sum(int((b.ops.kinds == MVM).sum()) for b in booked)


def test_read_noise_runs_tile_by_tile(tmp_path):
    """Read noise is drawn per tile MVM: such a device keeps the tile-by-tile path."""
    w = np.random.default_rng(0).integers(-100, 100, (200, 40))
    (tmp_path / "noisy.toml").write_text('preset = "cinnamon"\nweight_bits = 8\ninput_bits = 8\nread_noise = 0.05\n')
    module = apply(parse(program_text(w, 2)), f'memristor{{device="{tmp_path / "noisy.toml"}" crossbars=4}}')
    config = Device(str(tmp_path / "noisy.toml")).config
    x = [np.random.default_rng(1).integers(0, 200, (2, 200)) for _ in range(2)]
    ours = Program(module, Device(config))(x)
    theirs = Program(module, Device(config), layer_products=False)(x)
    for a, b in zip(ours.outputs, theirs.outputs, strict=True):
        np.testing.assert_array_equal(a, b)
    noisy = Device(config)
    noisy.write(0, w[:128, :32])
    with pytest.raises(ValueError, match="read noise"):
        noisy.defer_mvm(0, x[0][:, :128])
