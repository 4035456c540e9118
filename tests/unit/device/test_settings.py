"""The one configuration mechanism: checks derived from dataclass fields, "did you mean" hints,
TOML/JSON files and presets, shared by the device, chip and sweep configurations."""

import json
from dataclasses import dataclass

import numpy as np
import pytest

from cimxdsl.device import DeviceConfigError, load_device_config, preset
from cimxdsl.device.chip import ChipConfigError, load_chip_config
from cimxdsl.device.settings import Schema, did_you_mean, setting
from cimxdsl.explore.sweep import SweepError, load_sweep


class ExampleError(ValueError):
    pass


@dataclass(frozen=True)
class Example:
    name: str = "x"
    count: int = 1
    index: int = setting(0, low=0)
    bits: int = setting(8, low=1, high=16)
    rate: float = setting(0.0, low=0, high=1)
    period: float = setting(1.0, positive=True)
    energy: float = 0.0
    flag: bool = False
    kind: str = setting("fast", choices=("fast", "slow"))
    limit: int | None = setting(None, low=1)
    table: tuple[float, ...] = setting((), low=0, expected="a list of non-negative numbers")

    def __post_init__(self):
        EXAMPLE.validate(self)


EXAMPLE = Schema(Example, ExampleError, label="example: ", presets={"small": "SMALL"})


def test_did_you_mean_names_the_closest_choice_or_nothing():
    assert did_you_mean("adc_bit", ["rows", "adc_bits", "dac_bits"]) == " (did you mean 'adc_bits'?)"
    assert did_you_mean("zzz", ["rows", "adc_bits"]) == ""
    assert did_you_mean(3, ["3x"]) == " (did you mean '3x'?)"  # any value, compared as text


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("name", "", "'name' must be a non-empty string, got ''"),
        ("count", 0, "'count' must be a positive integer, got 0"),
        ("count", "3", "'count' must be a positive integer, got '3'"),
        ("count", True, "'count' must be a positive integer, got True"),
        ("index", -1, "'index' must be a non-negative integer, got -1"),
        ("bits", 17, "'bits' must be an integer from 1 to 16, got 17"),
        ("rate", 1.5, "'rate' must be a number from 0 to 1, got 1.5"),
        ("period", 0, "'period' must be a positive number, got 0"),
        ("energy", -1.0, "'energy' must be a non-negative number, got -1.0"),
        ("energy", "a lot", "'energy' must be a number, got 'a lot'"),
        ("energy", float("inf"), "'energy' must be a number, got inf"),
        ("flag", 1, "'flag' must be true or false, got 1"),
        ("kind", "fats", "'kind' must be one of 'fast', 'slow', got 'fats'"),
        ("limit", 0, "'limit' must be a positive integer, got 0"),
        ("table", [0.1, -1], "'table' must be a list of non-negative numbers, got [0.1, -1]"),
    ],
)
def test_checks_and_their_words_come_from_the_field(key, value, expected):
    with pytest.raises(ExampleError) as caught:
        Example(**{key: value})
    assert str(caught.value) == "example: " + expected


def test_values_are_normalised_to_the_field_type():
    example = Example(count=np.int64(3), energy=2, rate=np.float32(0.5), limit=None, table=[1, 2])
    values = (example.count, example.energy, example.rate, example.limit, example.table)
    assert values == (3, 2.0, 0.5, None, (1.0, 2.0))
    assert type(example.count) is int and type(example.energy) is float


def test_a_family_may_write_choices_plainly_with_a_hint_and_keys_inside_a_table():
    plain = Schema(Example, ExampleError, table="opts", quote_choices=False, suggest=True)
    message = r"^opts.kind must be one of fast, slow, got 'fats' \(did you mean 'fast'\?\)$"
    with pytest.raises(ExampleError, match=message):
        plain.check("kind", "fats")
    with pytest.raises(ExampleError, match=r"^unknown key 'opts.cont' \(did you mean 'count'\?\)$"):
        plain.check_known("cont")


def test_unknown_keys_and_presets():
    with pytest.raises(ExampleError, match=r"^example: unknown key 'bit' \(did you mean 'bits'\?\)$"):
        EXAMPLE.check_known("bit")
    assert EXAMPLE.preset("small") == "SMALL"
    with pytest.raises(ExampleError, match=r"^'preset' must be one of small, got 'smal' \(did you mean 'small'\?\)$"):
        EXAMPLE.preset("smal")


def test_toml_and_json_files(tmp_path):
    (tmp_path / "a.toml").write_text("count = 2\n")
    (tmp_path / "a.json").write_text(json.dumps({"count": 3}))
    assert EXAMPLE.read(tmp_path / "a.toml") == {"count": 2}
    assert EXAMPLE.read(tmp_path / "a.json") == {"count": 3}
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "list.json").write_text("[1]")
    with pytest.raises(ExampleError, match=r"^example: cannot read '.*bad.json': it is not valid JSON: "):
        EXAMPLE.read(tmp_path / "bad.json")
    with pytest.raises(ExampleError, match=r"^example: expected a table of keys, got list$"):
        EXAMPLE.read(tmp_path / "list.json")
    with pytest.raises(ExampleError, match=r"^example: cannot read '.*none.toml': no such file$"):
        EXAMPLE.read(tmp_path / "none.toml")


def test_devices_chips_and_sweeps_share_the_files_and_hints(tmp_path):
    device = tmp_path / "device.json"
    device.write_text(json.dumps({"preset": "isaac", "precision": {"adc_bits": 6}}))
    assert load_device_config(device) == preset("isaac").replace(adc_bits=6, name="device")  # named after its file
    chip = tmp_path / "chip.json"
    chip.write_text(json.dumps({"preset": "pimsim-nn", "adc_count": 4}))
    assert load_chip_config(chip).adc_count == 4
    sweep = tmp_path / "sweep.json"
    sweep.write_text(json.dumps({"model": "digits", "data": "digits", "seeds": 2, "axes": {"adc_bits": [4, 6]}}))
    assert load_sweep(sweep).seeds == 2 and load_sweep(sweep).name == "sweep"
    # one misspelling, one hint, in every family
    for load, spelt, error in (
        (load_device_config, {"cell_bit": 2}, DeviceConfigError),
        (load_chip_config, {"cell_precisio": 2}, ChipConfigError),
        (load_sweep, {"model": "digits", "data": "digits", "axes": {"adc_bits": [4]}, "seds": 2}, SweepError),
    ):
        path = tmp_path / "typo.json"
        path.write_text(json.dumps(spelt))
        with pytest.raises(error, match=r"unknown key '(\w+)' \(did you mean '\w+'\?\)$"):
            load(path)
