"""Export small PyTorch networks to ONNX as `cimxdsl.compile(torch_module, example_input=x)` does
(`torch.onnx.export`, opset 17, the TorchScript exporter), with torch's own outputs: model files from
the field for the tests, which do not need torch installed.

`tests/unit/frontend/torch_exports/<name>.onnx` and `<name>.npz` (`input`, torch's `output`) for
`Net` ("residual": conv, batch norm, ReLU, max pool, a residual block, adaptive average pool,
linear, softmax) and a conv-ReLU-flatten-linear `Sequential` ("sequential"). The command-line test's
`tests/filecheck/tools/inputs/torch_net.onnx` is `Net` exported the same way by an earlier torch.

    pip install torch==2.13.0 && python examples/export_torch_net.py
"""

import io
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
EXPORTS = ROOT / "tests" / "unit" / "frontend" / "torch_exports"


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU())
        self.block = torch.nn.Sequential(
            torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 1)
        )
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(self.stem(x), 2)
        x = torch.relu(x + self.block(x))
        x = torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return torch.softmax(self.fc(x), dim=1)


def residual() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    net = Net().eval()
    for module in net.modules():
        if isinstance(module, torch.nn.BatchNorm2d):  # non-trivial statistics, as after training
            module.running_mean.uniform_(-0.2, 0.2)
            module.running_var.uniform_(0.5, 1.5)
    return net, torch.randn(1, 3, 16, 16)


def sequential() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8, 5)
    ).eval()
    return net, torch.randn(1, 3, 8, 8)


def export(net: torch.nn.Module, x: torch.Tensor) -> bytes:
    buffer = io.BytesIO()
    torch.onnx.export(net, (x,), buffer, opset_version=17, dynamo=False)
    return buffer.getvalue()


def main() -> None:
    EXPORTS.mkdir(exist_ok=True)
    for name, make in (("residual", residual), ("sequential", sequential)):
        net, x = make()
        (EXPORTS / f"{name}.onnx").write_bytes(export(net, x))
        with torch.no_grad():
            np.savez(EXPORTS / f"{name}.npz", input=x.numpy(), output=net(x).numpy())
        print(f"wrote {name}.onnx and {name}.npz")


if __name__ == "__main__":
    main()
