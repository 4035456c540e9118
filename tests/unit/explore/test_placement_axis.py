"""`placement` as a sweep axis and key: a compile option, not a device field."""

import pytest

from cimxdsl.explore import execution, load_sweep
from cimxdsl.explore import points as point_module
from cimxdsl.explore.context import prepare_context
from cimxdsl.explore.points import compile_key, expand_points
from cimxdsl.explore.sweep import COMPILE_FIELDS, SweepError

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
    assert execution.point_config(context, points[1]).adc_bits == 0  # no 'placement' field reaches the device
    model = point_module.compile_program(context, compile_key(context, points[1].values))
    assert model.options["placement"] == "crossbar"


def test_the_sweep_key_is_the_default_of_points_without_the_axis():
    sweep = load_sweep({**SWEEP, "placement": "auto", "axes": {"adc_bits": [0, 6]}})
    at = COMPILE_FIELDS.index("placement")
    assert {compile_key(sweep, p.values)[at] for p in expand_points(sweep)} == {"auto"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"axes": {"placement": ["host", "gpu"]}},
            "axis 'placement' value 2: must be one of host, crossbar, auto, got 'gpu'",
        ),
        ({"placement": "gpu"}, "'placement' must be one of"),
    ],
)
def test_a_bad_placement_is_a_one_line_sweep_error(change, message):
    with pytest.raises(SweepError, match=message) as error:
        load_sweep({**SWEEP, **change})
    assert "\n" not in str(error.value)


def test_auto_decides_with_each_points_device():
    """Under `auto`, a swept cost field is part of the program's key: free cell writes make attention's
    products cheaper on the crossbars, costly ones on the digital unit (as compiling each point's device
    directly decides)."""
    from pathlib import Path

    from cimxdsl.dialects import cinm

    examples = Path(__file__).resolve().parents[3] / "examples"
    sweep = load_sweep(
        {
            "model": str(examples / "digits_vit.onnx"),
            "data": str(examples / "digits_test.npz"),
            "limit": 2,
            "mode": "exact",
            "placement": "auto",
            "device": {"preset": "ideal", "digital_pj_per_mac": 1.0},
            "axes": {"write_pj_per_cell": [0.0, 1000.0]},
        }
    )
    points = expand_points(sweep)
    assert [p.program for p in points] == [0, 1]
    context = prepare_context(sweep)
    chosen = []
    for point in points:
        model = point_module.compile_program(context, compile_key(context, point.values), batch=1)
        chosen.append({cinm.placement(op) for op in model.module("cinm").walk() if cinm.placement(op)})
    assert chosen == [{"crossbar"}, {"host"}]
