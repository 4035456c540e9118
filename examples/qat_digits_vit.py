"""Quantization-aware training of the digits ViT for 2-bit inputs on its weight products.

On 2-bit DACs an 8-bit input takes four passes and a 2-bit one a single pass, so a ViT whose weight
products keep their accuracy at 2 input bits runs them up to 4x faster; but post-training
quantization of the float ViT at 2 bits loses nearly everything (signed 2-bit codes are -1, 0, +1
times the largest input seen in calibration). This script trains the ViT of
`examples/train_digits_vit.py` in float, then fine-tunes it with each weight product's input
clipped to a learned range and fake-quantized to cimxdsl's codes over that range (PACT: Choi et
al., "PACT: Parameterized Clipping Activation for Quantized Neural Networks", 2018; the range
starts where the quantization error is least, rounding passes straight through the backward pass),
its weights fake-quantized per output channel, by distilling the float ViT (Hinton et al.,
"Distilling the Knowledge in a Neural Network", 2015) on mixed-up, shifted training images (Zhang
et al., "mixup: Beyond Empirical Risk Minimization", ICLR 2018), keeping a moving average of the
weights. The clipping stays in the exported model (an ONNX `Clip` before each product), so
cimxdsl's calibration finds the trained range as the largest input and its post-training
quantization reproduces the trained codes. The MLP's second product takes GELU's output clipped at
0 (GELU's small negative values dropped), so its codes are unsigned (0 to 3). The head, which reads
one row per image, takes 4-bit inputs (a second pass costs little), and attention's two products
of run-time tensors 8 bits (on the host they take as long at any bits).

Writes `examples/digits_vit_qat.onnx` (its products keep the float ViT's names) and the precision
it was trained for, `examples/digits_vit_qat.toml`; prints the held-out accuracy in torch and
checks onnxruntime's predictions against it, then cimxdsl's on `cinnamon` for the float-trained ViT
at int8 and for this one at its precision. About 2.5 minutes on one core. The default seed is
the one of 0-3 whose model is most accurate on the first 120 held-out images (the precision
search's validation split: 92.5, 95.8, 95.8, 92.5 %; on the other 240: 93.75, 93.75, 93.75,
91.25 %).

    python examples/qat_digits_vit.py [--input-bits 2] [--weight-bits 8] [--epochs 2000] [--seed 1] [-o FILE]
    python -m benchmarks.precision_search --model examples/digits_vit_qat.onnx \
        --baseline examples/digits_vit.onnx --precision examples/digits_vit_qat.toml --methods

Dev-time dependencies: torch, onnxruntime (the package itself does not need them).
"""

from __future__ import annotations

import argparse
import copy
import logging
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import torch
from qat_digits import RoundStraightThrough, quantized_weights
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from train_digits_vit import BATCH, EXAMPLES, SEED, DigitsViT, export, load, shifted, train

from cimxdsl.explore.precision import evaluate_precision
from cimxdsl.explore.precision_search import write_precision
from cimxdsl.frontend.integer import product_layers
from cimxdsl.precision import resolve_precision

log = logging.getLogger("qat_digits_vit")

MIXUP, TEMPERATURE = 1.0, 4.0
HEAD_INPUT_BITS = 4
"""The head's input bits at least: it reads one row per image (the tokens' mean), so a second DAC
pass costs little."""
UNSIGNED = ("embed", "blocks.0.mlp.2", "blocks.1.mlp.2")
"""The products whose inputs are never negative: the pixels, and GELU's output clipped at 0."""


class ClippedLinear(nn.Linear):
    """A linear layer whose input is clipped to a learned range [-alpha, alpha] ([0, alpha] if
    `unsigned`) and, while `quantize` is set, fake-quantized to `input_bits` codes over it (as
    cimxdsl quantizes an input whose calibration peak is alpha), its weights to `weight_bits`."""

    def __init__(self, linear: nn.Linear, input_bits: int, weight_bits: int, unsigned: bool, alpha: float):
        super().__init__(linear.in_features, linear.out_features)
        self.load_state_dict(linear.state_dict())
        self.input_bits, self.weight_bits, self.unsigned = input_bits, weight_bits, unsigned
        self.alpha = nn.Parameter(torch.tensor(float(alpha)))
        self.quantize = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.quantize:  # as exported: the clip alone (an ONNX Clip of constant bounds)
            alpha = float(self.bound().detach())
            return nn.functional.linear(torch.clamp(x, 0.0 if self.unsigned else -alpha, alpha), self.weight, self.bias)
        return nn.functional.linear(
            self.quantized_input(x), quantized_weights(self.weight, self.weight_bits), self.bias
        )

    def bound(self) -> torch.Tensor:
        return self.alpha.abs() + 1e-6

    def quantized_input(self, x: torch.Tensor) -> torch.Tensor:
        alpha = self.bound()
        x = torch.minimum(torch.maximum(x, torch.zeros_like(x) if self.unsigned else -alpha), alpha)
        top = 2**self.input_bits - 1 if self.unsigned else max(2 ** (self.input_bits - 1) - 1, 1)
        scale = alpha / top
        return RoundStraightThrough.apply(x / scale) * scale


def precision(weight_bits: int, input_bits: int) -> dict[str, tuple[int, int]]:
    """The bits the model is trained for, as rules on cimxdsl's layer names (globs, later rules
    overriding earlier ones): attention's products at 8."""
    return {
        "*": (weight_bits, input_bits),
        "_head_Gemm": (weight_bits, max(input_bits, HEAD_INPUT_BITS)),
        "*attention_MatMul*": (8, 8),
    }


def clipped(net: DigitsViT, x: torch.Tensor, input_bits: int, weight_bits: int) -> None:
    """Replace every linear layer of `net` by a ClippedLinear (in place, keeping the module names),
    each range starting where fake quantization of the layer's inputs over `x` has the least squared error."""
    linears = {name: module for name, module in net.named_modules() if isinstance(module, nn.Linear)}
    seen: dict[str, torch.Tensor] = {}
    hooks = [
        module.register_forward_pre_hook(lambda m, args, name=name: seen.__setitem__(name, args[0].detach()))
        for name, module in linears.items()
    ]
    with torch.no_grad():
        net(x)
    for hook in hooks:
        hook.remove()
    for name, linear in linears.items():
        parent_name, _, child = name.rpartition(".")
        parent = net.get_submodule(parent_name) if parent_name else net
        bits = max(input_bits, HEAD_INPUT_BITS) if name == "head" else input_bits
        layer = ClippedLinear(linear, bits, weight_bits, name in UNSIGNED, 1.0)
        inputs, peak = seen[name], float(seen[name].abs().max())
        with torch.no_grad():
            errors = []
            for alpha in np.linspace(peak / 50, peak, 50):
                layer.alpha.fill_(alpha)
                errors.append((float(((layer.quantized_input(inputs) - inputs) ** 2).mean()), alpha))
            layer.alpha.fill_(min(errors)[1])
        setattr(parent, child, layer)


def fine_tune(
    net: nn.Module, teacher: nn.Module, x: torch.Tensor, epochs: int, seed: int, lr: float = 2e-3
) -> nn.Module:
    """Distil `teacher` into `net` on mixed-up, shifted training images (mixup: Zhang et al., "mixup:
    Beyond Empirical Risk Minimization", ICLR 2018; distillation at temperature 4: Hinton et al.,
    "Distilling the Knowledge in a Neural Network", 2015) and return the exponential moving average
    of its weights."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    matrices = [p for p in net.parameters() if p.dim() >= 2]
    others = [p for p in net.parameters() if p.dim() < 2]  # biases, norms, clipping ranges: no decay
    optimiser = torch.optim.AdamW(
        [{"params": matrices, "weight_decay": 0.05}, {"params": others, "weight_decay": 0.0}], lr=lr
    )
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, lr, total_steps=epochs * (len(x) // BATCH))
    average = AveragedModel(net, multi_avg_fn=get_ema_multi_avg_fn(0.998))
    mixing = torch.distributions.Beta(MIXUP, MIXUP)
    net.train()
    for epoch in range(epochs):
        order = torch.randperm(len(x), generator=generator)
        for start in range(0, len(x) - BATCH + 1, BATCH):
            images = shifted(x[order[start : start + BATCH]], generator)
            share = mixing.sample((BATCH, 1, 1, 1))
            images = share * images + (1 - share) * images[torch.randperm(BATCH, generator=generator)]
            with torch.no_grad():
                target = (teacher(images) / TEMPERATURE).softmax(-1)
            student = (net(images) / TEMPERATURE).log_softmax(-1)
            loss = TEMPERATURE**2 * nn.functional.kl_div(student, target, reduction="batchmean")
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            average.update_parameters(net)
        if epoch % 250 == 249:
            log.info("fine-tuning epoch %d: distillation loss %.3f", epoch + 1, loss.item())
    return average.module.eval()


def accuracy(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((net(x).argmax(-1) == y).float().mean())


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input-bits", type=int, default=2)
    parser.add_argument("--weight-bits", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1, help="of the fine-tuning (the float ViT is always the same)")
    parser.add_argument("-o", "--output", default=str(EXAMPLES / "digits_vit_qat.onnx"))
    args = parser.parse_args()
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    x_train, y_train = load("digits_train.npz")
    x_test, y_test = load("digits_test.npz")
    net = DigitsViT()
    train(net, x_train, y_train)
    teacher = copy.deepcopy(net.eval())
    log.info("float: held-out accuracy %.4f", accuracy(net, x_test, y_test))
    clipped(net, x_train, args.input_bits, args.weight_bits)
    log.info("fake-quantized before fine-tuning: %.4f", accuracy(net, x_test, y_test))
    net = fine_tune(net, teacher, x_train, args.epochs, args.seed)
    log.info("fake-quantized after fine-tuning: %.4f", accuracy(net, x_test, y_test))
    for layer in net.modules():
        if isinstance(layer, ClippedLinear):
            layer.quantize = False
    model = export(net)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        predicted = net(x_test).argmax(-1).numpy()
    onnx_predicted = session.run(None, {"x": x_test.numpy()})[0].argmax(-1)
    assert np.array_equal(onnx_predicted, predicted), "onnxruntime predictions differ from torch's"
    output = Path(args.output)
    onnx.save(model, output)
    bits = resolve_precision(precision(args.weight_bits, args.input_bits), product_layers(model), (8, 8))
    write_precision(bits, output.with_suffix(".toml"))  # one table per layer
    log.info("wrote %s and its precision %s", output, output.with_suffix(".toml").name)
    calibration = np.load(EXAMPLES / "digits_train.npz")["calibration"]
    for label, path, layers in (
        ("float-trained ViT, int8", EXAMPLES / "digits_vit.onnx", {"*": (8, 8)}),
        ("trained for its precision", output, bits),
    ):
        result = evaluate_precision(
            path, layers, x_test.numpy(), y_test.numpy(), device="cinnamon", calibration=calibration, batch_size=120,
            placement="host",
        )  # fmt: skip
        log.info("cimxdsl on 'cinnamon', %s: held-out accuracy %.2f %%", label, 100 * result["accuracy"])


if __name__ == "__main__":
    main()
