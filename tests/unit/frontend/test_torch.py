"""A `torch.nn.Module` compiles through `torch.onnx.export` (torch is an optional dependency)."""

import numpy as np
import pytest

import cimxdsl

torch = pytest.importorskip("torch")


def test_torch_module_compiles_and_matches():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8, 5)
    ).eval()
    x = torch.randn(1, 3, 8, 8)
    compiled = cimxdsl.compile(net, example_input=x, device="ideal", mode="exact")
    np.testing.assert_allclose(compiled(x.numpy()), net(x).detach().numpy(), rtol=1e-4, atol=1e-5)
