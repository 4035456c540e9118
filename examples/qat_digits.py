"""Quantization-aware fine-tuning of the demo CNN for a per-layer precision that post-training
quantization alone loses too much at.

cimxdsl quantizes after training: per-output-channel symmetric weight scales (max |w| of each
channel over the largest code, 2^(w-1) - 1) and per-tensor input scales from calibration (the
largest input over 2^a - 1 for non-negative inputs). At few bits that loses accuracy. This script
fine-tunes the float model with the same quantizers in its forward pass (rounding passed straight
through in the backward pass: the straight-through estimator of Bengio et al., "Estimating or
propagating gradients through stochastic neurons for conditional computation", 2013; the recipe of
Jacob et al., "Quantization and training of neural networks for efficient integer-arithmetic-only
inference", CVPR 2018), exports it as ONNX, and compiles and runs both models at that precision
with cimxdsl (`evaluate_precision`), so post-training quantization of the fine-tuned model finds
weights that survive the bits.

    python examples/qat_digits.py [--bits W A] [--epochs N] [--device cinnamon] [-o qat.onnx]

Dev-time dependency: torch (the package itself does not need it).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import nn

from cimxdsl.explore.precision import evaluate_precision

EXAMPLES = Path(__file__).resolve().parent
MODEL = EXAMPLES / "digits_cnn.onnx"
LAYERS = ("conv1", "conv2", "fc")


class RoundStraightThrough(torch.autograd.Function):
    """round() forward, identity backward."""

    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


def fake_quantize(x: torch.Tensor, scale: torch.Tensor, low: int, high: int) -> torch.Tensor:
    return torch.clamp(RoundStraightThrough.apply(x / scale), low, high) * scale


class QuantizedInput(nn.Module):
    """A layer's input as `bits`-bit unsigned codes over the largest value seen (a running maximum,
    as cimxdsl's calibration takes the largest input of the calibration set)."""

    def __init__(self, bits: int):
        super().__init__()
        self.bits = bits
        self.register_buffer("peak", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            self.peak = torch.maximum(self.peak, x.detach().max())
        top = 2**self.bits - 1
        return fake_quantize(x, torch.clamp(self.peak, min=1e-12) / top, 0, top)


def quantized_weights(w: torch.Tensor, bits: int) -> torch.Tensor:
    """Symmetric per-output-channel codes (axis 0), ±(2^(bits-1) - 1) (±1 for one bit)."""
    limit = max(2 ** (bits - 1) - 1, 1)
    peak = w.detach().abs().amax(dim=tuple(range(1, w.dim())), keepdim=True)
    return fake_quantize(w, torch.clamp(peak, min=1e-12) / limit, -limit, limit)


class DigitsCNN(nn.Module):
    """The demo CNN (examples/train_digits_cnn.py), each product's weights and input fake-quantized
    to its layer's bits when `bits` is given."""

    def __init__(self, weights: dict[str, np.ndarray], bits: dict[str, tuple[int, int]] | None = None):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(64, 10)
        for layer, (w, b) in {"conv1": ("w1", "b1"), "conv2": ("w2", "b2"), "fc": ("fc_w", "fc_b")}.items():
            getattr(self, layer).weight.data = torch.tensor(weights[w])
            getattr(self, layer).bias.data = torch.tensor(weights[b])
        self.bits = bits
        self.inputs = nn.ModuleDict({name: QuantizedInput(bits[name][1]) for name in LAYERS} if bits else {})

    def product(self, name: str, x: torch.Tensor) -> torch.Tensor:
        layer = getattr(self, name)
        if not self.bits:
            return layer(x)
        x = self.inputs[name](x)
        w = quantized_weights(layer.weight, self.bits[name][0])
        if isinstance(layer, nn.Conv2d):
            return nn.functional.conv2d(x, w, layer.bias, padding=1)
        return nn.functional.linear(x, w, layer.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.product("conv1", x)), 2)
        x = nn.functional.max_pool2d(torch.relu(self.product("conv2", x)), 2)
        return self.product("fc", torch.flatten(x, 1))


def export(model: DigitsCNN, path: Path) -> None:
    """The float network (its fine-tuned weights, no quantizers) as ONNX with the bundled model's
    node names, so that the precision's layer names apply."""
    plain = DigitsCNN(
        {
            "w1": model.conv1.weight.detach().numpy(), "b1": model.conv1.bias.detach().numpy(),
            "w2": model.conv2.weight.detach().numpy(), "b2": model.conv2.bias.detach().numpy(),
            "fc_w": model.fc.weight.detach().numpy(), "fc_b": model.fc.bias.detach().numpy(),
        }
    ).eval()  # fmt: skip
    torch.onnx.export(plain, torch.zeros(1, 1, 8, 8), str(path), input_names=["x"], output_names=["logits"], dynamo=False)
    exported = onnx.load(str(path))
    products = [n for n in exported.graph.node if n.op_type in ("Conv", "Gemm")]
    for node, name in zip(products, LAYERS, strict=True):
        node.name = name
    onnx.save(exported, str(path))


def fine_tune(model: DigitsCNN, x: np.ndarray, y: np.ndarray, epochs: int, seed: int = 0) -> None:
    torch.manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    inputs, labels = torch.tensor(x), torch.tensor(y)
    model.train()
    for epoch in range(epochs):
        order = torch.randperm(len(inputs))
        total = 0.0
        for start in range(0, len(inputs), 32):
            batch = order[start : start + 32]
            loss = nn.functional.cross_entropy(model(inputs[batch]), labels[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        print(f"epoch {epoch + 1}: loss {total / len(inputs):.4f}")
    model.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bits", type=int, nargs=2, default=(2, 3), metavar=("W", "A"), help="weight and input bits of every layer")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--device", default="cinnamon")
    parser.add_argument("-o", "--output", help="where to write the fine-tuned ONNX model (default: a temporary file)")
    args = parser.parse_args()
    bits = {name: tuple(args.bits) for name in LAYERS}
    train, test = np.load(EXAMPLES / "digits_train.npz"), np.load(EXAMPLES / "digits_test.npz")
    weights = {init.name: numpy_helper.to_array(init) for init in onnx.load(str(MODEL)).graph.initializer}

    def evaluate(model_path: Path) -> dict:
        return evaluate_precision(
            model_path, bits, test["inputs"], test["labels"], device=args.device,
            calibration=train["calibration"], batch_size=len(test["inputs"]),
        )  # fmt: skip

    before = evaluate(MODEL)
    model = DigitsCNN(weights, bits)
    fine_tune(model, train["inputs"], train["labels"], args.epochs)
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(args.output) if args.output else Path(tmp) / "digits_cnn_qat.onnx"
        export(model, output)
        after = evaluate(output)
    print(f"{args.bits[0]}-bit weights, {args.bits[1]}-bit inputs on '{args.device}', {before['images']} held-out images:")
    for label, result in (("post-training quantization", before), ("after quantization-aware fine-tuning", after)):
        print(f"  {label}: accuracy {result['accuracy']:.2%}, {result['latency_ns']:.0f} ns, {result['energy_pj']:.0f} pJ per image")


if __name__ == "__main__":
    main()
