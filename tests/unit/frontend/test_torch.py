"""The PyTorch path, `cimxdsl.compile(torch_module, example_input=x)`.

Without torch (as in CI) it is tested against committed exports: `torch_exports/` holds what
`torch.onnx.export` produced for two networks and torch's outputs (`examples/export_torch_net.py`,
torch 2.13.0). With torch installed, the last test also exports and compiles a module itself.
"""

import io
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import cimxdsl
from cimxdsl.api import CompileError

EXPORTS = Path(__file__).resolve().parent / "torch_exports"
NAMES = ("residual", "sequential")


def exported(name: str) -> tuple[bytes, np.ndarray, np.ndarray]:
    with np.load(EXPORTS / f"{name}.npz") as data:
        return (EXPORTS / f"{name}.onnx").read_bytes(), data["input"], data["output"]


@pytest.mark.parametrize("name", NAMES)
def test_committed_exports_compute_torch_outputs(name):
    _, x, expected = exported(name)
    compiled = cimxdsl.compile(EXPORTS / f"{name}.onnx", device="ideal", mode="exact")
    np.testing.assert_allclose(compiled(x), expected, rtol=1e-4, atol=1e-5)
    int8 = cimxdsl.compile(EXPORTS / f"{name}.onnx", device="ideal", calibration=x)
    assert np.argmax(int8(x), -1).tolist() == np.argmax(expected, -1).tolist()


class Module:
    """Stands for a `torch.nn.Module`: `compile` recognises one by `forward` and `parameters`."""

    def __init__(self):
        self.evaluating = False

    def forward(self, x):
        raise AssertionError("compile must export the module, not call it")

    def parameters(self):
        return iter(())

    def eval(self):
        self.evaluating = True
        return self


@pytest.mark.parametrize("name", NAMES)
def test_a_module_is_exported_like_torch_exports_it(name, monkeypatch):
    """The module path with a stand-in `torch` whose exporter returns the committed export: the
    call `compile` makes (eval mode, the example input as a tuple, opset 17, the TorchScript
    exporter) and what it does with the result."""
    model, x, expected = exported(name)
    calls = []

    def export(module, inputs, target, opset_version, dynamo):
        calls.append((module.evaluating, inputs, opset_version, dynamo))
        assert isinstance(target, io.BytesIO)
        target.write(model)

    fake = types.ModuleType("torch")
    fake.onnx = types.SimpleNamespace(export=export)
    monkeypatch.setitem(sys.modules, "torch", fake)
    module = Module()
    compiled = cimxdsl.compile(module, example_input=x, device="ideal", mode="exact")
    ((evaluating, inputs, opset, dynamo),) = calls
    assert evaluating and len(inputs) == 1 and inputs[0] is x and (opset, dynamo) == (17, False)
    np.testing.assert_allclose(compiled(x), expected, rtol=1e-4, atol=1e-5)
    with pytest.raises(CompileError, match="needs example_input"):
        cimxdsl.compile(Module())


def test_torch_module_compiles_and_matches():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8, 5)
    ).eval()
    x = torch.randn(1, 3, 8, 8)
    compiled = cimxdsl.compile(net, example_input=x, device="ideal", mode="exact")
    np.testing.assert_allclose(compiled(x.numpy()), net(x).detach().numpy(), rtol=1e-4, atol=1e-5)
