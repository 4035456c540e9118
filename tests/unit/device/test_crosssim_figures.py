"""The cimxdsl side of the CrossSim comparison in docs/device-model.md is what the model computes
now (CrossSim's side is stored; the test needs no CrossSim)."""

import json
from pathlib import Path

import pytest

from benchmarks import crosssim_compare

STORED = json.loads((Path(__file__).parents[3] / "docs" / "figures" / "crosssim_compare.json").read_text())


@pytest.mark.parametrize(
    "name",
    [
        "full-resolution, ADC 6 b full",
        "bit-serial, ADC 7 b calibrated",
        "full-resolution, ADC 8 b calibrated, digital subtraction",
        "bit-serial, programming error independent σ=0.02, lossless ADC",
    ],
)
def test_the_stored_cimxdsl_errors_are_reproduced(name):
    (row,) = [row for row in STORED["cases"] if row["name"] == name]
    data = crosssim_compare.problems(STORED["trials"], STORED["seed"])
    assert crosssim_compare.cimxdsl_errors(data, row["case"]) == pytest.approx(row["cimxdsl"], rel=1e-9)
    assert all(0.8 <= ours / theirs <= 1.2 for ours, theirs in zip(row["cimxdsl"], row["crosssim"], strict=True))
