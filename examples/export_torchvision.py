"""Export the "done when" models of the PIM flow to ONNX with the TorchScript exporter (opset 17,
random weights, batch-norm statistics made non-trivial): torchvision's ResNet-18 and MobileNetV2 at
224×224, and a small CNN with depthwise convolutions (`depthwise_cnn`, the one bundled as
`examples/depthwise_cnn.onnx`). torch and torchvision are not dependencies of cimxdsl; run this
with a Python that has them:

    python examples/export_torchvision.py OUT_DIR [resnet18 mobilenet_v2 depthwise_cnn]
    cim-compile OUT_DIR/resnet18.onnx --target pim --random-inputs --compare -o out/
"""

import argparse
import io
from pathlib import Path

import torch


class DepthwiseCNN(torch.nn.Module):
    """Conv, depthwise-separable blocks (a depthwise 3×3 and a pointwise 1×1), a strided depthwise
    convolution, global average pooling, flatten (`view`) and a linear classifier."""

    def __init__(self):
        super().__init__()

        def separable(c_in: int, c_out: int, stride: int) -> list[torch.nn.Module]:
            return [
                torch.nn.Conv2d(c_in, c_in, 3, stride, 1, groups=c_in, bias=False),
                torch.nn.BatchNorm2d(c_in),
                torch.nn.ReLU6(),
                torch.nn.Conv2d(c_in, c_out, 1, bias=False),
                torch.nn.BatchNorm2d(c_out),
                torch.nn.ReLU(),
            ]

        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, 2, 1), torch.nn.ReLU(), *separable(16, 32, 1), *separable(32, 32, 2)
        )
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = torch.nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.fc(x.view(x.shape[0], -1))


def model(name: str) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    if name == "depthwise_cnn":
        net, size = DepthwiseCNN(), 32
    else:
        import torchvision

        net, size = getattr(torchvision.models, name)(weights=None), 224
    for module in net.modules():
        if isinstance(module, torch.nn.BatchNorm2d):  # as after training
            module.running_mean.uniform_(-0.2, 0.2)
            module.running_var.uniform_(0.5, 1.5)
    return net.eval(), torch.randn(1, 3, size, size)


def export(net: torch.nn.Module, x: torch.Tensor) -> bytes:
    buffer = io.BytesIO()
    torch.onnx.export(net, (x,), buffer, opset_version=17, dynamo=False)
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("models", nargs="*", default=["resnet18", "mobilenet_v2", "depthwise_cnn"])
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name in args.models:
        path = args.out_dir / f"{name}.onnx"
        path.write_bytes(export(*model(name)))
        print(f"{path} ({path.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
