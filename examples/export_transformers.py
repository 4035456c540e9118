"""Export real transformer definitions to ONNX with each of torch's exporters, for the tests.

HuggingFace `transformers`' BERT and GPT-2 (tiny configurations, random weights: nothing is
downloaded) and torchvision's `VisionTransformer` (image 32, patch 8, 2 layers, hidden 32), each
with the TorchScript exporter (`dynamo=False`, opset 17) and the dynamo exporter (`dynamo=True`,
opset 18). Writes `tests/unit/frontend/transformer_exports/<model>_<exporter>.onnx` and
`<model>_<exporter>.npz` (`input`, torch's `output`), and prints which exporter failed on which
model and why (the first line of its error).

Dev-time dependencies: torch, torchvision, transformers, onnxscript.

    python examples/export_transformers.py
"""

import io
import warnings
from pathlib import Path

import numpy as np
import onnx
import torch

ROOT = Path(__file__).resolve().parents[1]
EXPORTS = ROOT / "tests" / "unit" / "frontend" / "transformer_exports"
VOCAB, SEQ = 64, 16
EXPORTERS = {"torchscript": dict(dynamo=False, opset_version=17), "dynamo": dict(dynamo=True, opset_version=18)}


class LastHidden(torch.nn.Module):
    """A HuggingFace model called on token ids alone, returning its last hidden state (or logits)."""

    def __init__(self, model: torch.nn.Module, output: str):
        super().__init__()
        self.model, self.output = model, output

    def forward(self, ids):
        return getattr(self.model(input_ids=ids, use_cache=False, return_dict=True), self.output)


def bert() -> tuple[torch.nn.Module, torch.Tensor]:
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=SEQ, attn_implementation="eager")
    return LastHidden(BertModel(config, add_pooling_layer=False), "last_hidden_state"), token_ids()


def gpt2() -> tuple[torch.nn.Module, torch.Tensor]:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=SEQ,
                        attn_implementation="eager")
    return LastHidden(GPT2LMHeadModel(config), "logits"), token_ids()


def vit() -> tuple[torch.nn.Module, torch.Tensor]:
    from torchvision.models import VisionTransformer

    net = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=32, mlp_dim=64,
                            num_classes=10)
    return net, torch.randn(1, 3, 32, 32)


def token_ids() -> torch.Tensor:
    return torch.randint(0, VOCAB, (1, SEQ), generator=torch.Generator().manual_seed(1))


def export(net: torch.nn.Module, x: torch.Tensor, options: dict) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = torch.onnx.export(net, (x,), buffer if not options["dynamo"] else None, input_names=["input"],
                                   output_names=["output"], **options)
    if options["dynamo"]:
        return result.model_proto.SerializeToString()
    return buffer.getvalue()


def main() -> None:
    EXPORTS.mkdir(parents=True, exist_ok=True)
    for name, build in {"bert": bert, "gpt2": gpt2, "vit": vit}.items():
        for exporter, options in EXPORTERS.items():
            torch.manual_seed(0)
            net, x = build()
            net.eval()
            try:
                data = export(net, x, options)
            except Exception as error:  # noqa: BLE001 - recorded, the other exports go on
                print(f"{name} {exporter}: FAILED: {type(error).__name__}: {str(error).strip().splitlines()[0]}")
                continue
            onnx.checker.check_model(onnx.load_from_string(data))
            with torch.no_grad():
                output = net(x).numpy()
            stem = EXPORTS / f"{name}_{exporter}"
            stem.with_suffix(".onnx").write_bytes(data)
            np.savez_compressed(stem.with_suffix(".npz"), input=x.numpy(), output=output)
            print(f"{name} {exporter}: {len(data)} B")


if __name__ == "__main__":
    main()
