"""Train a binary neural network (BNN) on scikit-learn's 8x8 `digits` and export it as ONNX.

Architecture (binary weights and activations, batch normalisation before each sign):

    x[1,1,8,8] -> Flatten -> Sign(x - 0.4)                       binary input
               -> MatMul(Sign(W1), 64x128)  -> BatchNorm -> Sign
               -> MatMul(Sign(W2), 128x64)  -> BatchNorm -> Sign
               -> MatMul(Sign(W3), 64x10)   -> BatchNorm         logits[1,10]

Weights are trained in float and binarised in the forward pass with the straight-through
estimator (M. Courbariaux, I. Hubara et al., "Binarized Neural Networks", NeurIPS 2016): the
gradient of sign(w) is taken as that of clip(w, -1, 1). The exported graph keeps the float
weights and computes `Sign(W)` on them (a compiler folds it to constant -1/+1 weights), as
exporters of BNN libraries do. `train_digits_tnn.py` trains the ternary variant with the same code.

The data split is that of `train_digits_cnn.py` (stratified 80/20, seed 0). Dev-time
dependencies: torch (CPU), scikit-learn and onnx; checked against onnxruntime when present.

    python examples/train_digits_bnn.py
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_digits_cnn import load_data

OUT_DIR = Path(__file__).resolve().parent
SEED = 0
EPOCHS = 60
BATCH = 32
LR = 0.01
WIDTHS = (64, 128, 64, 10)
INPUT_THRESHOLD = 0.4
"""Pixels (k/16) above it are +1, others -1; no pixel equals it, so no input is 0."""
TERNARY_DELTA = 0.7
"""Ternary weights: 0 where |w| <= 0.7 · mean|w| of the layer (F. Li, B. Zhang, B. Liu, "Ternary
Weight Networks", 2016)."""


def quantize_weight(w: torch.Tensor, ternary: bool) -> torch.Tensor:
    """Binary sign(w), or ternary sign(w) where |w| > Δ, with a straight-through gradient."""
    if ternary:
        q = torch.where(w.abs() > TERNARY_DELTA * w.abs().mean(), torch.sign(w), torch.zeros_like(w))
    else:
        q = torch.sign(w)
    return w.clamp(-1, 1) + (q - w.clamp(-1, 1)).detach()


def activation(x: torch.Tensor, ternary: bool) -> torch.Tensor:
    """sign(x) (binary) or round(clip(x, -1, 1)) (ternary), with a straight-through gradient."""
    clipped = x.clamp(-1, 1)
    q = torch.round(clipped) if ternary else torch.sign(x)
    return clipped + (q - clipped).detach()


class Net(nn.Module):
    def __init__(self, ternary: bool):
        super().__init__()
        self.ternary = ternary
        self.weights = nn.ParameterList(
            [nn.Parameter(torch.empty(k, n).uniform_(-1, 1)) for k, n in itertools.pairwise(WIDTHS)]
        )
        self.norms = nn.ModuleList([nn.BatchNorm1d(n) for n in WIDTHS[1:]])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.sign(x.reshape(len(x), -1) - INPUT_THRESHOLD)
        for i, (w, norm) in enumerate(zip(self.weights, self.norms)):
            h = norm(h @ quantize_weight(w, self.ternary))
            if i < len(self.weights) - 1:
                h = activation(h, self.ternary)
        return h


def train(net: Net, x: np.ndarray, y: np.ndarray) -> None:
    """Adam over shuffled mini-batches, cross-entropy loss."""
    generator = torch.Generator().manual_seed(SEED)
    opt = torch.optim.Adam(net.parameters(), lr=LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, EPOCHS)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    for epoch in range(EPOCHS):
        net.train()
        order = torch.randperm(len(xt), generator=generator)
        total = 0.0
        for start in range(0, len(xt), BATCH):
            idx = order[start : start + BATCH]
            loss = nn.functional.cross_entropy(net(xt[idx]), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        sched.step()
        if epoch % 10 == 9:
            print(f"epoch {epoch + 1:2d}  loss {total / len(xt):.4f}")


def to_onnx(net: Net, name: str) -> onnx.ModelProto:
    """The trained network as an opset-17 graph: float weights quantized by Sign (binary) or
    Where(|W| > Δ, Sign(W), 0) (ternary), activations Sign (binary) or Round(Clip) (ternary)."""
    init = [numpy_helper.from_array(np.array([INPUT_THRESHOLD], np.float32), "threshold")]
    if net.ternary:
        init += [
            numpy_helper.from_array(np.array(value, np.float32), name)
            for name, value in (("zero", 0.0), ("minus_one", -1.0), ("one", 1.0))
        ]
    nodes = [
        helper.make_node("Flatten", ["x"], ["flat"], axis=1, name="flatten"),
        helper.make_node("Sub", ["flat", "threshold"], ["centred"], name="centre"),
        helper.make_node("Sign", ["centred"], ["h0"], name="binarize_input"),
    ]
    layers = len(net.weights)
    for i, (w, norm) in enumerate(zip(net.weights, net.norms), start=1):
        wf = w.detach().numpy().astype(np.float32)
        init.append(numpy_helper.from_array(wf, f"w{i}_float"))
        if net.ternary:
            delta = np.float32(TERNARY_DELTA * np.abs(wf).mean())
            init.append(numpy_helper.from_array(np.array(delta, np.float32), f"w{i}_delta"))
            nodes += [
                helper.make_node("Abs", [f"w{i}_float"], [f"w{i}_abs"], name=f"w{i}_abs"),
                helper.make_node("Greater", [f"w{i}_abs", f"w{i}_delta"], [f"w{i}_kept"], name=f"w{i}_kept"),
                helper.make_node("Sign", [f"w{i}_float"], [f"w{i}_sign"], name=f"w{i}_sign"),
                helper.make_node("Where", [f"w{i}_kept", f"w{i}_sign", "zero"], [f"w{i}"], name=f"w{i}_ternary"),
            ]
        else:
            nodes.append(helper.make_node("Sign", [f"w{i}_float"], [f"w{i}"], name=f"w{i}_sign"))
        for part, value in (
            ("gamma", norm.weight),
            ("beta", norm.bias),
            ("mean", norm.running_mean),
            ("var", norm.running_var),
        ):
            init.append(numpy_helper.from_array(value.detach().numpy().astype(np.float32), f"bn{i}_{part}"))
        out = "logits" if i == layers else f"bn{i}"
        nodes += [
            helper.make_node("MatMul", [f"h{i - 1}", f"w{i}"], [f"fc{i}"], name=f"fc{i}"),
            helper.make_node(
                "BatchNormalization",
                [f"fc{i}", f"bn{i}_gamma", f"bn{i}_beta", f"bn{i}_mean", f"bn{i}_var"],
                [out],
                epsilon=norm.eps,
                name=f"bn{i}",
            ),
        ]
        if i < layers:
            if net.ternary:
                nodes += [
                    helper.make_node("Clip", [out, "minus_one", "one"], [f"clip{i}"], name=f"clip{i}"),
                    helper.make_node("Round", [f"clip{i}"], [f"h{i}"], name=f"act{i}"),
                ]
            else:
                nodes.append(helper.make_node("Sign", [out], [f"h{i}"], name=f"act{i}"))
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        init,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="cimxdsl-examples")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main(ternary: bool = False) -> None:
    name = "digits_tnn" if ternary else "digits_bnn"
    torch.manual_seed(SEED)
    x_tr, x_te, y_tr, y_te = load_data()
    net = Net(ternary)
    train(net, x_tr, y_tr)
    net.eval()
    with torch.no_grad():
        pred_tr = net(torch.from_numpy(x_tr)).argmax(1).numpy()
        pred_te = net(torch.from_numpy(x_te)).argmax(1).numpy()
    print(f"train accuracy {(pred_tr == y_tr).mean():.4f} ({len(y_tr)} images)")
    print(f"test accuracy  {(pred_te == y_te).mean():.4f} ({len(y_te)} images)")
    model = to_onnx(net, name)
    path = OUT_DIR / f"{name}.onnx"
    onnx.save(model, path)
    print(f"wrote {path.name} ({path.stat().st_size} B)")
    try:
        import onnxruntime as ort
    except ImportError:
        return
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ort_pred = np.array([sess.run(None, {"x": img[None]})[0].argmax() for img in x_te])
    print(f"onnxruntime test accuracy {(ort_pred == y_te).mean():.4f}")


if __name__ == "__main__":
    main(ternary=False)
