"""An `onnx.backend.base.Backend` running models through cimxdsl in exact mode on the ideal
device, so ONNX's backend test suite can check the frontend and the whole memristor flow."""

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import helper
from onnx.backend.base import Backend, BackendRep

from cimxdsl.api import CompiledModel, compile


class CimBackendRep(BackendRep):
    def __init__(self, model: CompiledModel, output_types: list[np.dtype]):
        self.model = model
        self.output_types = output_types

    def run(self, inputs, **kwargs) -> tuple[np.ndarray, ...]:
        """The outputs, in the types the model declares (8-bit integers are computed as float codes)."""
        values = list(inputs.values()) if isinstance(inputs, dict) else list(inputs)
        outputs = self.model.run(*values).outputs
        return tuple(np.asarray(o).astype(t) for o, t in zip(outputs, self.output_types, strict=True))


class CimBackend(Backend):
    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs) -> CimBackendRep:
        super().prepare(model, device, **kwargs)
        types = [helper.tensor_dtype_to_np_dtype(o.type.tensor_type.elem_type) for o in model.graph.output]
        return CimBackendRep(compile(model, device="ideal", mode="exact"), types)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Sequence, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"


prepare = CimBackend.prepare
run_model = CimBackend.run_model
supports_device = CimBackend.supports_device
