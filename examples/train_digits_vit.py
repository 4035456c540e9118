"""Train a small vision transformer on the bundled 8x8 digits and export it as ONNX.

Architecture (4 tokens, 2 encoder layers, 18k weights):

    x[N,1,8,8] -> 4x4 patches (4 tokens of 16 pixels) -> Linear 16->32 + position embedding
               -> 2 x [LayerNorm -> 4-head self-attention -> residual
                       -> LayerNorm -> Linear 32->64 -> GELU -> Linear 64->32 -> residual]
               -> LayerNorm -> mean over tokens -> Linear 32->10 -> logits[N,10]

Trained with torch on the 300 images of `examples/digits_train.npz` (random one-pixel shifts as
augmentation), never on the test split (2x2 patches, 16 tokens, reach 87 % here: too few images
for the weaker locality prior); exported with the TorchScript exporter at opset 17 (dynamic batch) to
`examples/digits_vit.onnx`. Prints the float accuracy on the 360 held-out images of
`examples/digits_test.npz` (torch and onnxruntime, which must agree).

Dev-time dependencies: torch, onnxruntime.

    python examples/train_digits_vit.py
"""

import io
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import torch
from torch import nn

EXAMPLES = Path(__file__).resolve().parent
SEED = 0
PATCH, DIM, HEADS, LAYERS, HIDDEN = 4, 32, 4, 2, 64
EPOCHS, BATCH, LR = 300, 50, 3e-3


class Attention(nn.Module):
    """Multi-head self-attention written out, so each head's Q·Kᵀ and P·V are one batched MatMul."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.out = nn.Linear(DIM, DIM)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).reshape(b, s, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) * (DIM // HEADS) ** -0.5
        heads = torch.softmax(scores, dim=-1) @ v
        return self.out(heads.transpose(1, 2).reshape(b, s, DIM))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.attention = Attention()
        self.mlp = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, DIM))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class DigitsViT(nn.Module):
    def __init__(self):
        super().__init__()
        tokens = (8 // PATCH) ** 2
        self.embed = nn.Linear(PATCH * PATCH, DIM)
        self.position = nn.Parameter(torch.randn(1, tokens, DIM) * 0.02)
        self.blocks = nn.Sequential(*(Block() for _ in range(LAYERS)))
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, 10)

    def forward(self, x):
        b, n = x.shape[0], 8 // PATCH
        patches = x.reshape(b, n, PATCH, n, PATCH).permute(0, 1, 3, 2, 4).reshape(b, n * n, PATCH * PATCH)
        x = self.blocks(self.embed(patches) + self.position)
        return self.head(self.norm(x).mean(dim=1))


def load(name: str) -> tuple[torch.Tensor, torch.Tensor]:
    with np.load(EXAMPLES / name) as data:
        return torch.from_numpy(data["inputs"]), torch.from_numpy(data["labels"])


def shifted(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Each image moved by -1, 0 or 1 pixel along each axis (zeros shifted in)."""
    padded = nn.functional.pad(x, (1, 1, 1, 1))
    dy, dx = torch.randint(0, 3, (2, len(x)), generator=generator)
    rows = (dy[:, None] + torch.arange(8))[:, None, :, None].expand(-1, 1, 8, 10)
    cols = (dx[:, None] + torch.arange(8))[:, None, None, :].expand(-1, 1, 8, 8)
    return padded.gather(2, rows).gather(3, cols)


def train(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
    generator = torch.Generator().manual_seed(SEED)
    optimiser = torch.optim.AdamW(net.parameters(), lr=LR, weight_decay=0.05)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, LR, total_steps=EPOCHS * (len(x) // BATCH))
    for epoch in range(EPOCHS):
        order = torch.randperm(len(x), generator=generator)
        for start in range(0, len(x) - BATCH + 1, BATCH):
            batch = order[start : start + BATCH]
            loss = nn.functional.cross_entropy(net(shifted(x[batch], generator)), y[batch], label_smoothing=0.1)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
        if epoch % 50 == 49:
            print(f"epoch {epoch + 1}: loss {loss.item():.3f}")


def export(net: nn.Module) -> onnx.ModelProto:
    buffer = io.BytesIO()
    torch.onnx.export(net, (torch.zeros(1, 1, 8, 8),), buffer, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, opset_version=17, dynamo=False)
    model = onnx.load_from_string(buffer.getvalue())
    onnx.checker.check_model(model)
    return model


def main() -> None:
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    net = DigitsViT()
    x_train, y_train = load("digits_train.npz")
    x_test, y_test = load("digits_test.npz")
    train(net, x_train, y_train)
    net.eval()
    with torch.no_grad():
        predicted = net(x_test).argmax(-1).numpy()
    model = export(net)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    onnx_predicted = np.array([session.run(None, {"x": image[None]})[0].argmax() for image in x_test.numpy()])
    assert np.array_equal(onnx_predicted, predicted), "onnxruntime predictions differ from torch's"
    print(f"held-out accuracy {np.mean(predicted == y_test.numpy()):.4f} on {len(y_test)} images")
    path = EXAMPLES / "digits_vit.onnx"
    onnx.save(model, path)
    print(f"wrote {path.name} ({path.stat().st_size} B)")


if __name__ == "__main__":
    main()
