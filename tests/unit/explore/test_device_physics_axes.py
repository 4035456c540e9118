"""IR drop, drift compensation and converter noise from every face: a device file on a preset,
`cimxdsl.compile` and `cim-explore` axes, on the digits CNN."""

from pathlib import Path

import numpy as np
import pytest

import cimxdsl
from cimxdsl.device import DeviceConfig, DeviceConfigError, load_device_config
from cimxdsl.explore import explore, load_sweep
from cimxdsl.explore.sweep import SweepError

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
IMAGES = 48
YEAR = 3.15e7


def test_a_device_file_sets_every_new_key(tmp_path):
    path = tmp_path / "pcm.toml"
    path.write_text(
        'preset = "prime"\n'
        "[noise]\ndrift_nu = 0.05\ndrift_nu_std = 0.01\ndrift_t0_s = 20.0\ndrift_time_s = 86400.0\n"
        'drift_compensation = "column"\nread_noise_1f = 0.02\ninput_noise = 0.01\noutput_noise = 0.1\n'
        '[parasitics]\nwire_resistance = 1e-4\nsink_resistance = 0.01\nir_drop_solver = "fast"\n'
    )
    config = load_device_config(path)
    assert (config.rows, config.drift_compensation, config.wire_resistance, config.ir_drop_solver) == (
        256,
        "column",
        1e-4,
        "fast",
    )
    assert config.wires.row == config.wires.col == 1e-4 / 15 and config.wires.sink == 0.01 / 15  # 4-bit cells
    assert DeviceConfig.from_toml(_written(tmp_path, config)) == config  # round trip (None keys left out)
    for table, key in (("parasitics", "wire_resistance"), ("noise", "drift_nu")):
        path.write_text(f'preset = "prime"\n[{table}]\n{key} = -1\n')
        with pytest.raises(DeviceConfigError, match=rf"^device config: '{key}' must be a non-negative number, got -1$"):
            load_device_config(path)
    path.write_text('preset = "prime"\n[noise]\ndrift_t0_s = 10.0\ndrift_time_s = 1.0\n')
    with pytest.raises(DeviceConfigError, match=r"^device config: 'drift_time_s' must be at least 'drift_t0_s'"):
        load_device_config(path)
    path.write_text('preset = "prime"\n[noise]\nwire_resistance = 0.1\n')
    with pytest.raises(DeviceConfigError, match=r"key 'wire_resistance' belongs in \[parasitics\], not \[noise\]"):
        load_device_config(path)


def _written(tmp_path, config):
    path = tmp_path / "written.toml"
    path.write_text(config.to_toml())
    return path


@pytest.fixture(scope="module")
def digits():
    test = np.load(EXAMPLES / "digits_test.npz")
    return EXAMPLES / "digits_cnn.onnx", test["inputs"][:IMAGES]


def test_compile_with_drift_and_its_compensation(digits):
    """Uniform drift on a lossless device: compensation restores the undrifted logits exactly."""
    model, images = digits
    base = load_device_config("cinnamon").replace(weight_bits=8, input_bits=8, drift_nu=0.1)
    logits = {}
    for name, changes in {
        "fresh": {},
        "year": dict(drift_time_s=YEAR),
        "global": dict(drift_time_s=YEAR, drift_compensation="global"),
        "column": dict(drift_time_s=YEAR, drift_compensation="column"),
    }.items():
        logits[name] = cimxdsl.compile(model, device=base.replace(**changes), batch=IMAGES)(images)
    np.testing.assert_array_equal(logits["global"], logits["fresh"])
    np.testing.assert_array_equal(logits["column"], logits["fresh"])
    agree = np.mean(logits["year"].argmax(-1) == logits["fresh"].argmax(-1))
    assert agree < 0.8


def test_explore_axes_of_time_compensation_and_wires():
    sweep = {
        "name": "physics",
        "model": "digits",
        "data": "digits",
        "limit": IMAGES,
        "seeds": 1,
        "device": {"preset": "cinnamon", "weight_bits": 8, "input_bits": 8, "drift_nu": 0.1},
        "axes": {  # a linked axis: one case per step
            "case": {
                "drift_time_s": [1.0, YEAR, YEAR, 1.0, 1.0],
                "drift_compensation": ["none", "none", "global", "none", "none"],
                "wire_resistance": [0.0, 0.0, 0.0, 1e-3, 0.0],
                "output_noise": [0.0, 0.0, 0.0, 0.0, 0.5],
            }
        },
    }
    fresh, year, compensated, wires, noise = (s["accuracy_mean"] for s in explore(sweep).summary)
    assert compensated == fresh and year < fresh - 0.2
    assert wires != fresh and noise != fresh
    with pytest.raises(SweepError, match=r"wire_resistance"):
        load_sweep({**sweep, "axes": {"wire_resistance": [-1.0]}})
    with pytest.raises(SweepError, match=r"drift_compensation"):
        load_sweep({**sweep, "axes": {"drift_compensation": ["sometimes"]}})
