"""`placement` as a sweep axis and key: a compile option, not a device field."""

import pytest

from cimxdsl.explore import load_sweep, runner
from cimxdsl.explore.runner import compile_key, expand_points, prepare_context
from cimxdsl.explore.sweep import SweepError

SWEEP = {
    "model": "digits",
    "data": "digits",
    "limit": 8,
    "device": {"preset": "cinnamon", "weight_bits": 8, "input_bits": 8},
    "axes": {"adc_bits": [0, 6], "placement": ["host", "crossbar"]},
}


def test_each_placement_has_its_own_program_and_the_device_ignores_it():
    sweep = load_sweep(SWEEP)
    points = expand_points(sweep)
    assert [(p.values["adc_bits"], p.values["placement"]) for p in points] == [
        (0, "host"),
        (0, "crossbar"),
        (6, "host"),
        (6, "crossbar"),
    ]
    assert [p.program for p in points] == [0, 1, 0, 1]
    context = prepare_context(sweep)
    assert runner.point_config(context, points[1]).adc_bits == 0  # no 'placement' field reaches the device
    model = runner.compile_program(context, compile_key(context, points[1].values))
    assert model.options["placement"] == "crossbar"


def test_the_sweep_key_is_the_default_of_points_without_the_axis():
    sweep = load_sweep({**SWEEP, "placement": "auto", "axes": {"adc_bits": [0, 6]}})
    assert {compile_key(sweep, p.values)[-1] for p in expand_points(sweep)} == {"auto"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"axes": {"placement": ["host", "gpu"]}}, "axis 'placement' value 2: must be one of host, crossbar, auto, got 'gpu'"),
        ({"placement": "gpu"}, "'placement' must be one of"),
    ],
)
def test_a_bad_placement_is_a_one_line_sweep_error(change, message):
    with pytest.raises(SweepError, match=message) as error:
        load_sweep({**SWEEP, **change})
    assert "\n" not in str(error.value)
