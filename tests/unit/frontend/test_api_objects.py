"""The Python API in a notebook: `cimxdsl.compile` is the function itself; a compiled model has a
short repr, takes its inputs by name as onnxruntime's `run` does, and reports as a table, a dict
and rows (a pandas DataFrame where pandas is installed)."""

import inspect
import json
import sys
import types

import numpy as np
import pytest

import cimxdsl
from cimxdsl.api import CompileError, compile_pim
from cimxdsl.reference import onnxruntime_session
from tests.unit.frontend.models import small_cnn

X = np.random.default_rng(3).normal(size=(1, 3, 8, 8)).astype(np.float32)


@pytest.fixture(scope="module")
def compiled():
    return cimxdsl.compile(small_cnn(), device="cinnamon", crossbars=4)


def test_compile_shows_its_signature_and_docstring():
    from cimxdsl import api

    assert cimxdsl.compile is api.compile and cimxdsl.load is api.load
    assert list(inspect.signature(cimxdsl.compile).parameters)[:3] == ["model", "device", "target"]
    assert "Import, quantize" in inspect.getdoc(cimxdsl.compile)
    with pytest.raises(AttributeError, match="no attribute 'compiel'"):
        cimxdsl.compiel  # noqa: B018


def test_a_compiled_model_has_a_short_repr(compiled):
    assert repr(compiled) == (
        "CompiledModel(model='test', target='memristor', device='cinnamon', mode='int8', "
        "stages=['import', 'quantize', 'cinm', 'tile', 'cim', 'schedule', 'memristor', 'func'])"
    )


def test_inputs_by_name_as_onnxruntime_runs_them(compiled):
    session = onnxruntime_session(small_cnn().SerializeToString())
    assert compiled.input_names == [i.name for i in session.get_inputs()]
    assert compiled.output_names == [o.name for o in session.get_outputs()]
    positional = compiled(X)
    np.testing.assert_array_equal(compiled({"x": X}), positional)
    (by_name,) = compiled.run_onnx(["y"], {"x": X})
    np.testing.assert_array_equal(by_name, positional)
    (everything,) = compiled.run_onnx(None, {"x": X})
    np.testing.assert_array_equal(everything, positional)
    with pytest.raises(CompileError, match=r"^the model has no input 'z' \(inputs: x\)$"):
        compiled({"z": X})
    with pytest.raises(CompileError, match=r"^the model has no output 'logits' \(outputs: y\)$"):
        compiled.run_onnx(["logits"], {"x": X})


def test_a_pim_model_takes_inputs_by_name(tmp_path):
    model = compile_pim(small_cnn(), cores=0, out_dir=tmp_path)
    assert repr(model).startswith("PimModel(model='test', target='pim', device='isaac'")
    np.testing.assert_array_equal(model({"x": X}), model(X))
    (by_name,) = model.run_onnx(["y"], {"x": X})
    np.testing.assert_array_equal(by_name, model(X))
    report = model.report()
    assert report["precision"]["device"] == "isaac" and report["precision"]["crossbar_rows"] == 128
    assert str(report).startswith("precision: mode int8 (power-of-two scales, 8-bit weights and inputs); device isaac")
    assert f"cores_used: {report['cores_used']}" in str(report).splitlines()
    with pytest.raises(CompileError, match="no value for input 'x'"):
        model({})


def test_the_report_prints_as_tables_and_converts(compiled):
    compiled(X)
    report = compiled.report()
    assert isinstance(report, dict) and report["device"] == "cinnamon"  # dict access, as before
    text = str(report)
    assert text == repr(report)
    assert "device: cinnamon" in text and "precision: mode int8" in text
    names = [layer["layer"] for layer in report["layers"]]
    table = text[text.index("layer  placement") :].splitlines()
    assert [line.split()[0] for line in table[1 : 1 + len(names)]] == names
    assert table[1 + len(names) :] == [f"note: {note}" for note in report["notes"]]
    plain = report.to_dict()
    assert type(plain) is dict and json.loads(json.dumps(plain)) == plain
    assert plain["total"]["writes"] == report["total"]["writes"]
    rows = report.to_records()
    assert [row["layer"] for row in rows] == names
    for row, layer in zip(rows, report["layers"], strict=True):
        assert row["writes"] == layer["writes"]
        assert row["energy_adc_pj"] == layer["energy_pj"]["adc"]


def test_to_pandas_gives_the_rows_or_one_clear_line(compiled, monkeypatch):
    compiled(X)
    report = compiled.report()
    given = {}

    class DataFrame:  # a stand-in for pandas.DataFrame: records what it was built from
        def __init__(self, rows):
            given["rows"] = rows
            self.columns = list(rows[0])

        def __contains__(self, column):
            return column in self.columns

        def set_index(self, column):
            given["index"] = column
            return self

    monkeypatch.setitem(sys.modules, "pandas", types.SimpleNamespace(DataFrame=DataFrame))
    assert isinstance(report.to_pandas(), DataFrame)
    assert given == {"rows": report.to_records(), "index": "layer"}
    assert report.to_dataframe is not None
    monkeypatch.setitem(sys.modules, "pandas", None)  # not installed
    with pytest.raises(ImportError, match=r"^Report.to_pandas needs pandas: pip install pandas$"):
        report.to_pandas()


def test_names_survive_save_and_load(compiled, tmp_path):
    compiled.save(tmp_path / "m.cimx")
    loaded = cimxdsl.load(tmp_path / "m.cimx")
    assert (loaded.name, loaded.input_names, loaded.output_names) == ("test", ["x"], ["y"])
    np.testing.assert_array_equal(loaded({"x": X}), compiled(X))
