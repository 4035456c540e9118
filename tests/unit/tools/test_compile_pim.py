"""`cimxdsl.compile(..., target="pim")` takes the PIM geometry and the artifact directory."""

import json
from pathlib import Path

import numpy as np
import pytest

import cimxdsl
from cimxdsl.api import CompileError, PimModel
from tests.unit.frontend.models import small_cnn

DIGITS = Path(__file__).resolve().parents[3] / "examples" / "digits_cnn.onnx"  # 22 crossbars of 128x128


def test_pim_target_forwards_cores_crossbars_per_core_and_out_dir(tmp_path):
    out = tmp_path / "artifacts"
    compiled = cimxdsl.compile(DIGITS, target="pim", cores=12, crossbars_per_core=2, out_dir=out, packing="kernel")
    assert isinstance(compiled, PimModel) and compiled.directory == out
    config = json.loads((out / "config.json").read_text())
    assert config["core_cnt"] == 12
    assert all(len(groups) <= 2 for groups in config["array_group_map"].values())
    x = np.random.default_rng(0).random((1, 1, 8, 8)).astype(np.float32)
    golden = compiled.program.dequantize(compiled.golden(x))[0]
    np.testing.assert_array_equal(compiled(x), golden)


def test_pim_geometry_that_cannot_hold_the_model_is_refused():
    with pytest.raises(CompileError, match="3 cores x 2 crossbars per core hold only 6"):
        cimxdsl.compile(DIGITS, target="pim", cores=3, crossbars_per_core=2, packing="kernel")


def test_pim_options_are_refused_on_the_memristor_target():
    with pytest.raises(CompileError, match="options of target 'pim'"):
        cimxdsl.compile(small_cnn(), cores=3)


def test_pim_target_forwards_packing_mapping_and_its_budget(tmp_path):
    compiled = cimxdsl.compile(
        DIGITS, target="pim", cores=4, crossbars_per_core=8, packing="im2col", mapping="ga", mapping_budget=0.0
    )
    report = compiled.report()
    assert report["packing"] == "im2col"
    assert "mapping search stopped at its time budget (0 s)" in report["mapping"]
    x = np.random.default_rng(0).random((1, 1, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(compiled(x), compiled.program.dequantize(compiled.golden(x))[0])


def test_unknown_pim_options_are_refused():
    with pytest.raises(CompileError, match="unknown option packng"):
        cimxdsl.compile(DIGITS, target="pim", packng="im2col")
    with pytest.raises(CompileError, match="packing: options of target 'pim'"):
        cimxdsl.compile(small_cnn(), packing="im2col")
