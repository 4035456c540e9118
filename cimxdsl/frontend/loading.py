"""Reading an ONNX model: upgraded to a recent opset, shape-inferred, with a static batch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference, version_converter

from cimxdsl.frontend.attributes import NodeAttributes, OnnxImportError

TARGET_OPSET = 17


def load_model(model: onnx.ModelProto | str | Path, batch: int | None = None) -> onnx.ModelProto:
    """Read, upgrade and shape-infer a model (a path or a `ModelProto`); `batch` sets the leading
    dimension of every graph input (the shapes inside are inferred again)."""
    if not isinstance(model, onnx.ModelProto):
        path = Path(model)
        try:
            model = onnx.load(str(path))
        except FileNotFoundError:
            raise OnnxImportError(f"cannot read '{path}': no such file") from None
        except Exception as e:  # onnx raises DecodeError and others for corrupt files
            raise OnnxImportError(f"cannot read '{path}': not a valid ONNX model ({type(e).__name__})") from None
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), TARGET_OPSET)
    if opset < TARGET_OPSET:
        try:
            model = version_converter.convert_version(model, TARGET_OPSET)
        except Exception as e:
            raise OnnxImportError(f"cannot convert the model from opset {opset} to {TARGET_OPSET}: {e}") from None
    if batch is not None:
        model = with_batch(model, batch)
    for node in model.graph.node:
        NodeAttributes(node)  # the attributes first: their errors say more than shape inference's
    try:
        return infer_shapes(model)
    except Exception as e:
        raise OnnxImportError(f"shape inference failed: {str(e).splitlines()[0]}") from None


def infer_shapes(model: onnx.ModelProto, large: int = 1024) -> onnx.ModelProto:
    """A copy of `model` with inferred shapes. Inference runs on a light model whose initializers of
    more than `large` elements are graph inputs of the same type instead (weights are not copied
    through the inference; small ones stay for data propagation, e.g. reshape targets)."""
    graph = model.graph
    inputs = {i.name for i in graph.input}
    weights = [i for i in graph.initializer if int(np.prod(i.dims)) > large and i.name not in inputs]
    typed = [helper.make_tensor_value_info(i.name, i.data_type, i.dims) for i in weights]
    names = {i.name for i in weights}
    light_graph = helper.make_graph(
        graph.node,
        graph.name,
        [*graph.input, *typed],
        graph.output,
        [i for i in graph.initializer if i.name not in names],
        value_info=graph.value_info,
    )
    light = helper.make_model(light_graph, opset_imports=model.opset_import, ir_version=model.ir_version)
    light.functions.extend(model.functions)
    inferred = shape_inference.infer_shapes(light, strict_mode=True, data_prop=True)
    result = onnx.ModelProto()
    result.CopyFrom(model)
    for field in ("value_info", "output"):
        del getattr(result.graph, field)[:]
        getattr(result.graph, field).extend(getattr(inferred.graph, field))
    return result


def input_shape(info: onnx.ValueInfoProto) -> tuple[int, ...]:
    """The shape of a graph input as given (a symbolic dimension counts as 1)."""
    return tuple(d.dim_value if d.HasField("dim_value") else 1 for d in info.type.tensor_type.shape.dim)


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The inputs a caller gives: the graph inputs that are not initializers."""
    initializers = {init.name for init in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def with_batch(model: onnx.ModelProto, batch: int) -> onnx.ModelProto:
    model = onnx.ModelProto.FromString(model.SerializeToString())
    initializers = {init.name for init in model.graph.initializer}
    for info in [*model.graph.input, *model.graph.output]:
        if info.name not in initializers and info.type.tensor_type.shape.dim:
            info.type.tensor_type.shape.dim[0].Clear()
            info.type.tensor_type.shape.dim[0].dim_value = batch
    del model.graph.value_info[:]
    return model


def initializer_array(init: onnx.TensorProto) -> np.ndarray:
    """An initializer's values; a payload that does not fit its type or dims is an import error."""
    try:
        return numpy_helper.to_array(init)
    except Exception as e:  # onnx raises ValueError, TypeError or its own errors for bad payloads
        dtype = onnx.TensorProto.DataType.Name(init.data_type)
        message = f"initializer '{init.name}' does not hold a {list(init.dims)} {dtype} tensor"
        raise OnnxImportError(f"{message}: {str(e).splitlines()[0]}") from None
