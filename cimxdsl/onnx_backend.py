"""An `onnx.backend.base.Backend` running models through cimxdsl in exact mode on the ideal
device, so ONNX's backend test suite can check the frontend and the whole memristor flow."""

from collections.abc import Sequence

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from cimxdsl.api import CompiledModel, compile


class CimBackendRep(BackendRep):
    def __init__(self, model: CompiledModel):
        self.model = model

    def run(self, inputs, **kwargs) -> tuple[np.ndarray, ...]:
        values = list(inputs.values()) if isinstance(inputs, dict) else list(inputs)
        return tuple(self.model.run(*values).outputs)


class CimBackend(Backend):
    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs) -> CimBackendRep:
        super().prepare(model, device, **kwargs)
        return CimBackendRep(compile(model, device="ideal", mode="exact"))

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Sequence, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"


prepare = CimBackend.prepare
run_model = CimBackend.run_model
supports_device = CimBackend.supports_device
