"""Export a small PyTorch network (conv, batch norm, ReLU, max pool, a residual block, adaptive
average pool, linear, softmax) to `tests/filecheck/tools/inputs/torch_net.onnx`: a model file
from the field for the tests, which do not need torch installed.

    pip install torch==2.13.0 && python examples/export_torch_net.py
"""

from pathlib import Path

import torch


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


def main() -> None:
    torch.manual_seed(0)
    net = Net().eval()
    for module in net.modules():
        if isinstance(module, torch.nn.BatchNorm2d):  # non-trivial statistics, as after training
            module.running_mean.uniform_(-0.2, 0.2)
            module.running_var.uniform_(0.5, 1.5)
    target = Path(__file__).parents[1] / "tests" / "filecheck" / "tools" / "inputs" / "torch_net.onnx"
    torch.onnx.export(net, (torch.randn(1, 3, 16, 16),), str(target), opset_version=17, dynamo=False)
    print(f"wrote {target} ({target.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
