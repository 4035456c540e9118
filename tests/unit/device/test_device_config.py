"""DeviceConfig: presets, derived quantities, validation and TOML loading."""

import dataclasses
import subprocess
import sys

import pytest

from cimxdsl.device import DeviceConfig, DeviceConfigError, load_device_config, preset
from cimxdsl.device.config import PRESETS, adc_energy_pj


def test_device_package_does_not_import_xdsl():
    code = "import sys, cimxdsl.device; print('xdsl' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cinnamon_preset_matches_seeds_section_6_2():
    c = preset("cinnamon")
    assert (c.rows, c.cols, c.dac_bits, c.cell_bits, c.encoding) == (128, 128, 2, 2, "differential")
    assert c.cycle_ns == 1.0 and c.pipeline_fill_cycles == 6
    assert c.arrays_per_crossbar == 2


@pytest.mark.parametrize(
    "name, rows, cell_bits, weight_bits, dac_bits, adc_bits",
    [
        ("isaac", 128, 2, 16, 1, 9),  # CrossSim's configs/ISAAC.json: 9 b; ISAAC itself needs its flip trick for 8
        ("puma", 128, 2, 16, 1, 8),  # PUMA's simulator, include/config.py
        ("prime", 256, 4, 8, 3, 6),  # CrossSim's configs/PRIME.json
    ],
)
def test_hardware_presets_match_notes(name, rows, cell_bits, weight_bits, dac_bits, adc_bits):
    c = preset(name)
    assert (c.rows, c.cols, c.cell_bits, c.weight_bits, c.dac_bits, c.adc_bits) == (
        rows,
        rows,
        cell_bits,
        weight_bits,
        dac_bits,
        adc_bits,
    )


def test_ideal_preset_is_exact():
    c = preset("ideal")
    assert c.exact and c.lossless_adc and c.noiseless
    assert not preset("isaac").exact


def test_isaac_adc_energy_follows_isaac_convention_not_mnsim():
    # ISAAC's 8-bit ADC: 2.0 mW at 1.28 GS/s -> 1.56 pJ (P/rate); MNSIM's (bits+2)/rate x P is 15.6 pJ.
    assert preset("isaac").adc_pj == pytest.approx(1.5625)
    mnsim = (8 + 2) / 1.28 * 2.0
    assert mnsim / adc_energy_pj(2.0, 1.28) == pytest.approx(10)


@pytest.mark.parametrize(
    "weight_bits, cell_bits, cells",
    [(8, 2, 4), (4, 2, 2), (5, 2, 3), (16, 2, 8), (8, 3, 3), (1, 4, 1), (8, 8, 1)],
)
def test_cells_per_weight(weight_bits, cell_bits, cells):
    for encoding in ("differential", "offset"):
        c = DeviceConfig(weight_bits=weight_bits, cell_bits=cell_bits, encoding=encoding)
        assert c.cells_per_weight == cells
        assert c.tile_shape == (128, 128 // cells)


@pytest.mark.parametrize("input_bits, dac_bits, slices", [(8, 1, 8), (4, 2, 2), (6, 3, 2), (5, 2, 3)])
def test_input_slices(input_bits, dac_bits, slices):
    assert DeviceConfig(input_bits=input_bits, dac_bits=dac_bits).input_slices == slices


@pytest.mark.parametrize(
    "name, shape", [("ideal", (128, 128)), ("cinnamon", (128, 64)), ("isaac", (128, 16)), ("prime", (256, 128))]
)
def test_tile_shapes(name, shape):
    assert preset(name).tile_shape == shape


BAD_CHANGES = [
    ({"adc_bit": 8}, "unknown key 'adc_bit' (did you mean 'adc_bits'?)"),
    ({"rows": 0}, "'rows' must be a positive integer, got 0"),
    ({"rows": "128"}, "'rows' must be a positive integer, got '128'"),
    ({"rows": True}, "'rows'"),
    ({"cols": 12.0}, "'cols'"),
    ({"adc_bits": -1}, "'adc_bits'"),
    ({"adc_bits": 33}, "'adc_bits'"),
    ({"cell_bits": 0}, "'cell_bits'"),
    ({"encoding": "diff"}, "'encoding' must be one of 'differential', 'offset', 'reference', got 'diff'"),
    ({"adc_range": "max"}, "'adc_range'"),
    ({"read_noise": -0.1}, "'read_noise'"),
    ({"prog_noise": "a lot"}, "'prog_noise'"),
    ({"read_noise": float("nan")}, "'read_noise'"),
    ({"stuck_on_rate": 1.5}, "'stuck_on_rate'"),
    ({"stuck_on_rate": 0.6, "stuck_off_rate": 0.6}, "'stuck_on_rate' + 'stuck_off_rate'"),
    ({"cycle_ns": 0}, "'cycle_ns'"),
    ({"cols": 4, "weight_bits": 16, "cell_bits": 2}, "'cols'"),
    ({"seed": -1}, "'seed'"),
    ({"name": ""}, "'name'"),
    ({"adc_range": "pow2"}, "'adc_range' must be one of 'full', 'full_pow2', 'calibrated', 'static_array'"),
    ({"input_encoding": "signed"}, "'input_encoding' must be one of 'offset', 'twos_complement', 'sign_magnitude'"),
    ({"prog_noise_model": "gaussian"}, "'prog_noise_model' must be one of 'proportional', 'independent', 'table'"),
    ({"prog_noise_clip": "top"}, "'prog_noise_clip' must be one of 'auto', 'zero', 'both', got 'top'"),
    ({"input_encoding": "signed_magnitude"}, "'input_encoding' must be one of 'offset', 'twos_complement', 'sign_magnitude', 'bipolar'"),
    ({"adc_range": "static_slices"}, "'adc_range' must be one of 'full', 'full_pow2', 'calibrated', 'static_array', 'static_slice', 'static_column'"),
    ({"prog_noise_table": [0.1, -0.1]}, "'prog_noise_table' must be a list of non-negative numbers"),
    ({"prog_noise_table": 0.1}, "'prog_noise_table' must be a list"),
    ({"prog_noise_model": "table"}, "'prog_noise_table' must list one σ per conductance level (4 for 'cell_bits'=2)"),
    ({"prog_noise_model": "table", "prog_noise_table": [0.1, 0.1], "cell_bits": 2}, "'prog_noise_table' must list"),
    ({"prog_noise_table": [0, 0.1, 0.1, 0.1], "cell_bits": 2}, "exactly when 'prog_noise_model' is 'table'"),
]


@pytest.mark.parametrize("changes, expected", BAD_CHANGES)
def test_invalid_configs_raise_one_line_error_naming_the_key(changes, expected):
    for build in (
        lambda: DeviceConfig().replace(**changes),
        lambda: DeviceConfig.from_dict(changes),
        lambda: preset("cinnamon").replace(**changes),
    ):
        with pytest.raises(DeviceConfigError) as err:
            build()
        message = str(err.value)
        assert isinstance(err.value, ValueError)
        assert message.startswith("device config: ")
        assert "\n" not in message
        assert expected in message


def test_numpy_scalars_are_accepted_and_normalised():
    import numpy as np

    c = DeviceConfig(rows=np.int64(64), adc_bits=np.int32(6), read_noise=np.float32(0.5))
    assert (c.rows, c.adc_bits, c.read_noise) == (64, 6, 0.5)
    assert type(c.rows) is int and type(c.read_noise) is float


def test_constructor_validates_too():
    with pytest.raises(DeviceConfigError, match="'rows'"):
        DeviceConfig(rows=-3)


@pytest.mark.parametrize(
    "build",
    [lambda: preset("isac"), lambda: DeviceConfig.from_dict({"preset": "isac"}), lambda: load_device_config("isac")],
)
def test_unknown_preset(build):
    with pytest.raises(DeviceConfigError) as err:
        build()
    message = str(err.value)
    assert "'preset'" in message and "'isac'" in message and "did you mean 'isaac'" in message
    assert "\n" not in message


def test_config_is_frozen_and_replace_copies():
    c = preset("cinnamon")
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.rows = 64
    d = c.replace(adc_bits=6)
    assert d.adc_bits == 6 and c.adc_bits == 0 and d.rows == c.rows


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_dict_round_trip(name):
    c = preset(name)
    assert DeviceConfig.from_dict(c.to_dict()) == c


def test_toml_with_preset_and_overrides(tmp_path):
    path = tmp_path / "dev.toml"
    path.write_text('preset = "isaac"\nadc_bits = 6\n\n[noise]\nread_noise = 0.02\nseed = 3\n')
    c = DeviceConfig.from_toml(path)
    assert (c.adc_bits, c.read_noise, c.seed) == (6, 0.02, 3)
    assert (c.rows, c.weight_bits, c.cycle_ns, c.encoding) == (128, 16, 100.0, "offset")  # from isaac
    assert load_device_config(str(path)) == c
    assert load_device_config(path) == c


def test_toml_without_preset_uses_defaults(tmp_path):
    path = tmp_path / "plain.toml"
    path.write_text("[geometry]\nrows = 64\ncols = 32\n[precision]\nweight_bits = 4\ncell_bits = 1\n")
    c = load_device_config(str(path))
    assert (c.rows, c.cols, c.tile_shape) == (64, 32, (64, 8))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[noise]\nread_nosie = 0.1\n", "unknown key 'read_nosie' (did you mean 'read_noise'?)"),
        ("[noize]\nread_noise = 0.1\n", "unknown table 'noize'"),
        ('rows = "many"\n', "'rows' must be a positive integer"),
        ("adc_bits = 8\n[precision]\nadc_bits = 6\n", "'adc_bits' given twice"),
        ("rows = \n", "cannot read"),
        ("[noise]\nrows = 4\n", "key 'rows' belongs in [geometry], not [noise]"),
        ("[noise]\nname = 'x'\n", "key 'name' belongs in the top level, not [noise]"),
    ],
)
def test_bad_toml(tmp_path, text, expected):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(DeviceConfigError) as err:
        load_device_config(str(path))
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_groups_cover_every_field_once():
    from cimxdsl.device.config import FIELD_NAMES, GROUPS

    grouped = [key for keys in GROUPS.values() for key in keys]
    assert sorted(grouped) == sorted(set(FIELD_NAMES) - {"name"})


def test_missing_toml_file(tmp_path):
    with pytest.raises(DeviceConfigError, match="cannot read"):
        load_device_config(str(tmp_path / "missing.toml"))


def test_new_options_round_trip_through_toml(tmp_path):
    c = preset("cinnamon").replace(
        adc_bits=6,
        adc_range="static_column",
        input_encoding="sign_magnitude",
        prog_noise_model="table",
        prog_noise_table=[0, 0.01, 0.02, 0.005],
        prog_noise_clip="zero",
    )
    assert c.prog_noise_table == (0.0, 0.01, 0.02, 0.005) and not c.noiseless
    path = tmp_path / "dev.toml"
    path.write_text(c.to_toml())
    assert DeviceConfig.from_toml(path) == c
    grouped = tmp_path / "grouped.toml"
    grouped.write_text(
        'preset = "cinnamon"\n[precision]\nadc_bits = 6\nadc_range = "full_pow2"\ninput_encoding = "twos_complement"\n'
        '[noise]\nprog_noise_model = "table"\nprog_noise_table = [0.0, 0.01, 0.02, 0.0]\n'
    )
    d = DeviceConfig.from_toml(grouped)
    assert (d.adc_range, d.input_encoding, d.prog_noise_table) == ("full_pow2", "twos_complement", (0, 0.01, 0.02, 0))
    grouped.write_text(
        'preset = "prime"\n[precision]\nadc_range = "static_slice"\ninput_encoding = "bipolar"\n'
        '[noise]\nprog_noise = 0.02\nprog_noise_model = "independent"\nprog_noise_clip = "zero"\n'
    )
    e = DeviceConfig.from_toml(grouped)
    assert (e.adc_range, e.input_encoding, e.prog_noise_clip, e.rows) == ("static_slice", "bipolar", "zero", 256)
    assert e.static_adc and e.signed_adc and e.precision["noise"]["prog_noise_clip"] == "zero"
    assert preset("cinnamon").replace(prog_noise_model="table", prog_noise_table=[0] * 4).noiseless


@pytest.mark.parametrize(
    "encoding, input_bits, dac_bits, slices",
    [
        # offset: ceil(8 / D); twos_complement: the 7 low bits in D-bit digits, then the sign bit
        ("offset", 8, 1, 8),
        ("offset", 8, 2, 4),
        ("offset", 8, 8, 1),
        ("twos_complement", 8, 1, 8),
        ("twos_complement", 8, 2, 5),
        ("twos_complement", 8, 8, 2),
        ("sign_magnitude", 8, 2, 4),
        ("bipolar", 8, 1, 8),
        ("bipolar", 8, 3, 3),
        ("bipolar", 6, 3, 2),
    ],
)
def test_input_slices_by_encoding(encoding, input_bits, dac_bits, slices):
    config = DeviceConfig(input_bits=input_bits, dac_bits=dac_bits, input_encoding=encoding)
    assert config.input_slices == slices
