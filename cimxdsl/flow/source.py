"""What `cimxdsl.compile` takes as a model: an ONNX model or path, or a `torch.nn.Module` exported
to ONNX first (torch is imported only then)."""

from __future__ import annotations

import io
from pathlib import Path

import onnx

from cimxdsl.models import CompileError


def model_name(model) -> str:
    """A short name for a model given to `compile`: a file's stem, a graph's or a module's name."""
    if isinstance(model, str | Path):
        return Path(model).stem
    if isinstance(model, onnx.ModelProto):
        return model.graph.name or "model"
    return type(model).__name__


def to_onnx(model, example_input) -> onnx.ModelProto | str | Path:
    """`model` as something `load_model` takes; a `torch.nn.Module` is exported first."""
    if isinstance(model, onnx.ModelProto | str | Path):
        return model
    if hasattr(model, "forward") and hasattr(model, "parameters"):
        if example_input is None:
            raise CompileError("compiling a torch.nn.Module needs example_input")
        import torch

        buffer = io.BytesIO()
        model.eval()
        inputs = example_input if isinstance(example_input, tuple) else (example_input,)
        torch.onnx.export(model, inputs, buffer, opset_version=17, dynamo=False)
        return onnx.load_from_string(buffer.getvalue())
    raise CompileError(f"cannot compile a {type(model).__name__}: give an ONNX model, a path or a torch.nn.Module")
