"""An `onnx.backend.base.Backend` running models through cimxdsl in exact mode on the ideal
device, so ONNX's backend test suite can check the frontend and the whole memristor flow.

Compiled programs have static shapes: a graph input that gives a shape parameter (Reshape's shape,
Slice's starts, a reduction's axes, … as ONNX's node tests pass them) is bound to its value when
the model first runs, and the model is compiled then."""

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.backend.base import Backend, BackendRep

from cimxdsl.api import CompiledModel, compile

SHAPE_PARAMETERS = {
    "Reshape": (1,),
    "Expand": (1,),
    "Slice": (1, 2, 3, 4),
    "Split": (1,),
    "Pad": (1, 2, 3),
    "ReduceMean": (1,),
    "ReduceSum": (1,),
    "ReduceMax": (1,),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "Trilu": (1,),
    "Range": (0, 1, 2),
    "ConstantOfShape": (0,),
    "Dropout": (1, 2),
}
"""The inputs of each op that must be known when compiling: those that fix the shape of its result,
and Dropout's ratio and training mode."""


def graph_inputs(model: onnx.ModelProto) -> list[str]:
    """The names of the inputs a caller gives (graph inputs that are not initializers)."""
    return [i.name for i in model.graph.input if i.name not in {init.name for init in model.graph.initializer}]


def shape_parameters(model: onnx.ModelProto) -> list[str]:
    """The graph inputs that some node takes as a shape parameter."""
    inputs = graph_inputs(model)
    used = {n.input[i] for n in model.graph.node for i in SHAPE_PARAMETERS.get(n.op_type, ()) if i < len(n.input)}
    return [name for name in inputs if name in used]


def bound(model: onnx.ModelProto, values: dict[str, np.ndarray]) -> onnx.ModelProto:
    """`model` with the graph inputs in `values` made initializers of those values."""
    result = onnx.ModelProto()
    result.CopyFrom(model)
    kept = [i for i in result.graph.input if i.name not in values]
    del result.graph.input[:]
    result.graph.input.extend(kept)
    result.graph.initializer.extend(numpy_helper.from_array(np.asarray(v), n) for n, v in values.items())
    return result


class CimBackendRep(BackendRep):
    def __init__(self, model: onnx.ModelProto):
        self.onnx_model = model
        self.parameters = shape_parameters(model)
        self.model: CompiledModel | None = None if self.parameters else compile(model, device="ideal", mode="exact")
        self.output_types = [helper.tensor_dtype_to_np_dtype(o.type.tensor_type.elem_type) for o in model.graph.output]

    def run(self, inputs, **kwargs) -> tuple[np.ndarray, ...]:
        """The outputs, in the types the model declares (8-bit integers are computed as float codes)."""
        names = graph_inputs(self.onnx_model)
        values = list(inputs.values()) if isinstance(inputs, dict) else list(inputs)
        given = dict(zip(names, values, strict=False))
        model = self.model
        if model is None:
            model = compile(
                bound(self.onnx_model, {n: given[n] for n in self.parameters}), device="ideal", mode="exact"
            )
            values = [given[n] for n in names if n not in self.parameters]
        outputs = model.run(*values).outputs
        return tuple(np.asarray(o).astype(t) for o, t in zip(outputs, self.output_types, strict=True))


class CimBackend(Backend):
    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs) -> CimBackendRep:
        super().prepare(model, device, **kwargs)
        return CimBackendRep(model)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Sequence, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"


prepare = CimBackend.prepare
run_model = CimBackend.run_model
supports_device = CimBackend.supports_device
