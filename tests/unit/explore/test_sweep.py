"""Sweep files: parsing, defaults, paths, and one-line errors that name the bad key."""

from pathlib import Path

import numpy as np
import pytest

from cimxdsl.device import preset
from cimxdsl.explore import SweepError, load_sweep
from cimxdsl.explore.context import prepare_context
from cimxdsl.explore.points import expand_points
from cimxdsl.explore.sweep import BUNDLED_DATA, BUNDLED_MODELS

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def sweep(**changes) -> dict:
    spec = {
        "model": "digits",
        "data": "digits",
        "device": {"preset": "cinnamon", "weight_bits": 8, "input_bits": 8},
        "axes": {"adc_bits": [4, 8]},
    }
    spec.update(changes)
    return {k: v for k, v in spec.items() if v is not None}


def test_a_sweep_file_is_read_with_defaults_and_paths_relative_to_it(tmp_path):
    (tmp_path / "sub").mkdir()
    model = tmp_path / "sub" / "m.onnx"
    model.write_bytes(BUNDLED_MODELS["digits"].read_bytes())
    (tmp_path / "dev.toml").write_text('preset = "isaac"\nadc_bits = 7\n')
    (tmp_path / "s.toml").write_text(
        'model = "sub/m.onnx"\ndata = "digits"\nseeds = 3\n'
        '[device]\nfile = "dev.toml"\nprecision = { dac_bits = 2 }\n'
        "[axes]\nprog_noise = [0, 0.1]\n"
        "[axes.stuck]\nstuck_on_rate = [0.0, 0.01]\nstuck_off_rate = [0.0, 0.02]\n"
    )
    s = load_sweep(tmp_path / "s.toml")
    assert s.name == "s" and s.model == model.resolve() and s.data == BUNDLED_DATA["digits"]
    assert (s.seeds, s.seed, s.grid, s.mode, s.strategy, s.limit) == (3, 0, "product", "int8", "list", None)
    assert s.base == preset("isaac").replace(adc_bits=7, dac_bits=2, name="dev")  # named after its file
    assert [a.name for a in s.axes] == ["prog_noise", "stuck"]
    assert s.axes[0].values == ((0.0,), (0.1,))  # ints become floats like the device field
    assert s.axes[1].fields == ("stuck_on_rate", "stuck_off_rate")
    assert s.axes[1].settings(1) == {"stuck_on_rate": 0.01, "stuck_off_rate": 0.02}
    assert s.swept_fields == ("prog_noise", "stuck_on_rate", "stuck_off_rate")


def test_the_shipped_example_sweeps_are_valid():
    files = sorted(EXAMPLES.glob("sweep_*.toml"))
    assert EXAMPLES / "sweep_digits.toml" in files
    for file in files:
        s = load_sweep(file)
        models = (BUNDLED_MODELS["digits"], *(EXAMPLES / f"digits_{m}.onnx" for m in ("vit", "bnn", "tnn")))
        assert s.model in models and len(expand_points(s)) > 1


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"axes": {"adc_bit": [4]}}, "axis 'adc_bit' is not a device parameter (did you mean 'adc_bits'?)"),
        ({"seeeds": 3}, "unknown key 'seeeds' (did you mean 'seeds'?)"),
        ({"model": None}, "missing key 'model'"),
        ({"axes": None}, "missing key 'axes'"),
        ({"model": "nope.onnx"}, "'model': no such file 'nope.onnx'"),
        ({"data": 3}, "'data' must be a path"),
        ({"seeds": 0}, "'seeds' must be a positive integer, got 0"),
        ({"seed": -1}, "'seed' must be a non-negative integer"),
        ({"limit": 1.5}, "'limit' must be a positive integer"),
        ({"grid": "products"}, "'grid' must be one of product, each, got 'products' (did you mean 'product'?)"),
        ({"mode": "int4"}, "'mode' must be one of int8, exact"),
        ({"strategy": "fastest"}, "'strategy' must be one of"),
        ({"axes": {}}, "'axes' must be a table with at least one axis"),
        ({"axes": {"adc_bits": []}}, "axis 'adc_bits' must be a non-empty list of values"),
        ({"axes": {"adc_bits": 4}}, "axis 'adc_bits' must be a non-empty list of values, got 4"),
        ({"axes": {"adc_bits": [4, -1]}}, "axis 'adc_bits' value 2: 'adc_bits' must be an integer from 0"),
        ({"axes": {"encoding": ["differential", "diff"]}}, "axis 'encoding' value 2: 'encoding' must be one of"),
        ({"axes": {"adc_bits": [4, 4]}}, "axis 'adc_bits' repeats a value"),
        ({"axes": {"seed": [1, 2]}}, "axis 'seed': the seed is not an axis; set 'seeds'"),
        ({"axes": {"name": ["a"]}}, "axis 'name' is not a device parameter"),
        (
            {"axes": {"stuck": {"stuck_on_rate": [0.0, 0.1], "stuck_off_rate": [0.0]}}},
            "axis 'stuck': its fields need value lists of one length, got stuck_on_rate: 2, stuck_off_rate: 1",
        ),
        ({"axes": {"stuck": {"stuck_on_rat": [0.0]}}}, "axis 'stuck.stuck_on_rat' is not a device parameter"),
        (
            {"axes": {"adc_bits": [4], "a": {"adc_bits": [5]}}},
            "axis 'a': field 'adc_bits' is already swept by axis 'adc_bits'",
        ),
        ({"device": {"preset": "isac"}}, "device: 'preset' must be one of"),
        ({"device": {"preset": "cinnamon", "adc_bit": 4}}, "device: unknown key 'adc_bit' (did you mean 'adc_bits'?)"),
        ({"device": {"preset": "cinnamon", "file": "x.toml"}}, "device: give 'preset' or 'file', not both"),
        ({"device": {"file": "missing.toml"}}, "device.file: no such file 'missing.toml'"),
        ({"device": "cinnamon"}, "'device' must be a table"),
        ({"cost": {"adc": "quadratic"}}, "cost.adc must be one of fixed, linear, exponential, got 'quadratic'"),
        ({"cost": {"adc_bits": 8}}, "unknown key 'cost.adc_bits'"),
        ({"cost": {"dac_reference_bits": 0}}, "cost.dac_reference_bits must be an integer from 1 to 32"),
        (
            {"cost": {"adc": "linear"}, "axes": {"adc_pj": [1.0, 2.0]}},
            "cost.adc sets 'adc_pj' from the bits, so it cannot be an axis too",
        ),
    ],
)
def test_malformed_sweeps_are_one_line_errors_naming_the_key(changes, message):
    with pytest.raises(SweepError) as caught:
        load_sweep(sweep(**changes))
    text = str(caught.value)
    assert text.startswith("sweep file: ") and "\n" not in text
    assert message in text, text


def test_unreadable_and_invalid_toml_files_are_one_line(tmp_path):
    with pytest.raises(SweepError, match=r"^sweep file: cannot read '.*nothing.toml': no such file$"):
        load_sweep(tmp_path / "nothing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("model = 'digits'\n[axes\n")
    with pytest.raises(SweepError) as caught:
        load_sweep(bad)
    assert "is not valid TOML" in str(caught.value) and "\n" not in str(caught.value)


def test_data_set_problems_name_the_data_key(tmp_path):
    unlabelled = tmp_path / "unlabelled.npz"
    np.savez(unlabelled, inputs=np.zeros((4, 1, 8, 8), np.float32))
    with pytest.raises(SweepError, match=r"^sweep file: 'data': .* has no array 'labels' \(it has: inputs\)$"):
        prepare_context(load_sweep(sweep(data=str(unlabelled))))
    wrong_shape = tmp_path / "wrong.npz"
    np.savez(wrong_shape, inputs=np.zeros((4, 3, 8), np.float32), labels=np.zeros(4, np.int64))
    message = (
        r"^sweep file: 'data': '.*wrong.npz': the examples of input 'x' must have shape \[N, 1, 8, 8\] "
        r"\(N ≥ 1 examples along the first axis\), got \[4, 3, 8\]$"
    )
    with pytest.raises(SweepError, match=message):
        prepare_context(load_sweep(sweep(data=str(wrong_shape))))
    # one axis too many: each example has the model's whole input shape, batch axis included
    wrong_rank = tmp_path / "rank.npz"
    np.savez(wrong_rank, inputs=np.zeros((4, 1, 1, 8, 8), np.float32), labels=np.zeros(4, np.int64))
    with pytest.raises(SweepError, match=r"must have shape \[N, 1, 8, 8\] \(N ≥ 1 .*\), got \[4, 1, 1, 8, 8\]$"):
        prepare_context(load_sweep(sweep(data=str(wrong_rank))))
    channels_last = tmp_path / "nhwc.npz"
    np.savez(channels_last, inputs=np.zeros((4, 8, 8, 1), np.float32), labels=np.zeros(4, np.int64))
    with pytest.raises(SweepError, match=r"must have shape \[N, 1, 8, 8\] .*, got \[4, 8, 8, 1\] \(the same dim"):
        prepare_context(load_sweep(sweep(data=str(channels_last))))
    not_npz = tmp_path / "text.npz"
    not_npz.write_text("hello")
    with pytest.raises(SweepError, match=r"^sweep file: 'data': cannot read"):
        prepare_context(load_sweep(sweep(data=str(not_npz))))


@pytest.mark.parametrize(
    "changes, bits",
    [
        # cinnamon with 8-bit weights: 128 rows × 3 (2-bit DAC) × 3 (2-bit cell) = 1152, 11 bits
        ({}, 11),
        ({"input_encoding": "bipolar"}, 12),  # signed sums: a sign bit more
        ({"subtraction": "analog"}, 12),
        ({"adc_bits": 6, "input_encoding": "bipolar"}, 6),
    ],
)
def test_a_lossless_adc_is_costed_as_the_adc_that_converts_its_sums_exactly(changes, bits):
    from cimxdsl.explore.sweep import CostModel

    base = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_pj=1.0)
    config = CostModel(adc="linear", adc_reference_bits=8).apply(base.replace(**changes), base)
    assert config.adc_pj == pytest.approx(bits / 8)
