"""Export real transformer definitions to ONNX with each of torch's exporters, for the tests.

HuggingFace `transformers` models in tiny configurations (2 layers, hidden 32, vocabulary 100, 12
tokens; random weights, nothing is downloaded), with their default (SDPA) attention:

- `bert`: `BertForSequenceClassification` (3 labels) on `input_ids`, `token_type_ids` and
  `attention_mask`, as the model takes them (the last 3 tokens padded);
- `bert_ids`: the same model on `input_ids` alone, so that it gathers its `token_type_ids` buffer
  (512 positions) with the position ids (`Expand` and `GatherElements` on constants);
- `gpt2`: `GPT2LMHeadModel` on `input_ids` and `attention_mask` (the causal mask and the padding
  mask combined, with `IsNaN` guarding the softmax of rows that mask every key);
- `llama`: `LlamaForCausalLM` (grouped-query attention with 2 key/value heads, rotary positions,
  RMS normalization, SiLU gates) on `input_ids` and `attention_mask`;

and torchvision's `VisionTransformer` (`vit`: image 32, patch 8, 2 layers, hidden 32). Each goes
through the TorchScript exporter (`dynamo=False`, opset 17) and the dynamo exporter (`dynamo=True`,
opset 18), except `bert_ids` (TorchScript only: it shows the buffer gather the other files do not).
Writes `tests/unit/frontend/transformer_exports/<model>_<exporter>.onnx` (node metadata and doc
strings dropped, to keep the files small) and `<model>_<exporter>.npz` (the inputs by name and
torch's `output`), and prints which exporter failed on which model and why (the first line of its
error).

With torch 2.14.1, torchvision 0.29.1, transformers 5.24.0, onnx 1.23.2 and onnxscript 0.7.2 (the
files here), and with torch 2.13.0 (CPU build, without torchvision), every export succeeds. Without
an attention mask the TorchScript exporter stops on GPT-2 at `aten::diff` (the model's check for
padding), which opset 17 does not have; with its mask, as here, it exports.

Dev-time dependencies: torch, torchvision (for `vit`), transformers, onnx, onnxscript.

    python examples/export_transformers.py [MODEL ...]   # default: all of them
"""

import io
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import torch

ROOT = Path(__file__).resolve().parents[1]
EXPORTS = ROOT / "tests" / "unit" / "frontend" / "transformer_exports"
VOCAB, SEQ, PADDED = 100, 12, 3
EXPORTERS = {"torchscript": dict(dynamo=False, opset_version=17), "dynamo": dict(dynamo=True, opset_version=18)}
WEIGHT_STD = 0.2
"""The weights are drawn again from N(0, 0.2²): the models' own initialization gives outputs near 0
(torchvision's ViT head is all zeros)."""


class Named(torch.nn.Module):
    """A HuggingFace model called with its inputs by name, returning one of its outputs."""

    def __init__(self, model: torch.nn.Module, output: str, names: list[str]):
        super().__init__()
        self.model, self.output, self.names = model, output, names

    def forward(self, *inputs):
        return getattr(self.model(**dict(zip(self.names, inputs, strict=True)), return_dict=True), self.output)


def token_ids() -> torch.Tensor:
    return torch.randint(0, VOCAB, (1, SEQ), generator=torch.Generator().manual_seed(1))


def attention_mask(padded: int = 0) -> torch.Tensor:
    mask = torch.ones(1, SEQ, dtype=torch.int64)
    mask[:, SEQ - padded :] = 0
    return mask


def bert_classifier() -> torch.nn.Module:
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, num_labels=3)
    return BertForSequenceClassification(config)


def bert() -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    token_types = torch.zeros(1, SEQ, dtype=torch.int64)
    token_types[:, SEQ // 2 :] = 1  # two segments
    inputs = {"input_ids": token_ids(), "token_type_ids": token_types, "attention_mask": attention_mask(PADDED)}
    return bert_classifier(), inputs


def bert_ids() -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    return bert_classifier(), {"input_ids": token_ids()}


def gpt2() -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64)
    return GPT2LMHeadModel(config), {"input_ids": token_ids(), "attention_mask": attention_mask()}


def llama() -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return LlamaForCausalLM(config), {"input_ids": token_ids(), "attention_mask": attention_mask()}


def vit() -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    from torchvision.models import VisionTransformer

    net = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=32, mlp_dim=64,
                            num_classes=10)
    return net, {"input": torch.randn(1, 3, 32, 32)}


MODELS = {"bert": bert, "bert_ids": bert_ids, "gpt2": gpt2, "llama": llama, "vit": vit}
OUTPUTS = {"bert": "logits", "bert_ids": "logits", "gpt2": "logits", "llama": "logits"}
"""The output of each HuggingFace model that is exported."""
ONLY = {"bert_ids": ["torchscript"]}


def build(name: str) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    torch.manual_seed(0)
    net, inputs = MODELS[name]()
    with torch.no_grad():
        for parameter in net.parameters():
            parameter.normal_(0.0, WEIGHT_STD)
    if name in OUTPUTS:
        net = Named(net, OUTPUTS[name], list(inputs))
    return net.eval(), inputs


def export(net: torch.nn.Module, inputs: dict[str, torch.Tensor], options: dict) -> onnx.ModelProto:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = torch.onnx.export(net, tuple(inputs.values()), buffer if not options["dynamo"] else None,
                                   input_names=list(inputs), output_names=["output"], **options)
    model = result.model_proto if options["dynamo"] else onnx.load_from_string(buffer.getvalue())
    for node in model.graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    return model


def main(names: list[str]) -> None:
    EXPORTS.mkdir(parents=True, exist_ok=True)
    for name in names:
        for exporter in ONLY.get(name, EXPORTERS):
            try:
                net, inputs = build(name)
                model = export(net, inputs, EXPORTERS[exporter])
            except Exception as error:  # noqa: BLE001 - recorded, the other exports go on
                print(f"{name} {exporter}: FAILED: {type(error).__name__}: {str(error).strip().splitlines()[0]}")
                continue
            onnx.checker.check_model(model)
            with torch.no_grad():
                output = net(*inputs.values()).numpy()
            stem = EXPORTS / f"{name}_{exporter}"
            data = model.SerializeToString()
            stem.with_suffix(".onnx").write_bytes(data)
            np.savez_compressed(stem.with_suffix(".npz"), output=output, **{k: v.numpy() for k, v in inputs.items()})
            print(f"{name} {exporter}: {len(data)} B")


if __name__ == "__main__":
    main(sys.argv[1:] or list(MODELS))
