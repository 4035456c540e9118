"""What a worker needs to evaluate points: the model, the data set, the float model's predictions
and the sweep's options, read and bundled once (`prepare_context`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np
import onnx

from cimxdsl.data_io import InputError, onnx_inputs, read_dataset
from cimxdsl.device import DeviceConfig
from cimxdsl.device.backend import ArrayBackend, ArrayBackendError, array_backend
from cimxdsl.explore.chunks import Chunk, chunk_bounds, shards
from cimxdsl.explore.sweep import CostModel, Sweep, SweepError
from cimxdsl.reference import float_predictions

CALIBRATION_EXAMPLES = 64


@dataclass(frozen=True)
class Context:
    """Everything a worker needs to evaluate points (picklable; shipped once per process or worker)."""

    token: str
    """A digest of the model, data and options: the key of the per-process program cache."""
    model: bytes
    inputs: np.ndarray
    labels: np.ndarray
    calibration: np.ndarray
    reference: np.ndarray
    """The float model's top-1 predictions on `inputs`."""
    mode: str
    strategy: str
    base: DeviceConfig
    cost: CostModel
    seeds: int
    seed: int
    placement: str = "host"
    batch_size: int | None = None
    """Inputs per chunk of the data set (None: all at once)."""
    backend: str = "numpy"
    array_device: tuple[str, ...] = ()
    """The array backend's devices: point i runs on device i modulo their count (`Sweep.array_device`)."""

    def array_backend(self, point: int) -> ArrayBackend:
        """The array backend point `point` runs on: the devices taken in turn by point index."""
        devices = self.array_device
        return array_backend(self.backend, devices[point % len(devices)] if devices else None)

    def shards(self, parts: int = 1) -> list[list[Chunk]]:
        """The chunks of the data set in at most `parts` shards."""
        return shards(chunk_bounds(len(self.inputs), self.batch_size), parts)


def prepare_context(sweep: Sweep, batch_size: int | None = None) -> Context:
    """Read the model and data, run the float model once, and bundle them for the workers;
    `batch_size` overrides the sweep's."""
    for device in sweep.array_device or (None,):  # (here, before any work: one line naming the device)
        try:
            array_backend(sweep.backend, device)
        except ArrayBackendError as e:
            raise SweepError(f"'array_device': {e}" if device else f"'backend': {e}") from None
    model = sweep.model.read_bytes()
    try:
        onnx_model = onnx.load_from_string(model)
    except Exception as e:  # onnx raises DecodeError and others for corrupt files
        raise SweepError(f"'model': '{sweep.model}' is not a valid ONNX model ({type(e).__name__})") from None
    specs = onnx_inputs(onnx_model)
    if len(specs) != 1:
        raise SweepError(f"'model': sweeps need a model with one input, this one has {len(specs)}")
    try:
        inputs, labels, stored_calibration = read_dataset(sweep.data, specs[0])
    except InputError as e:
        raise SweepError(f"'data': {e}") from None
    if sweep.limit is not None:
        inputs, labels = inputs[: sweep.limit], labels[: sweep.limit]
    if sweep.calibration is not None:
        try:
            calibration = read_dataset(sweep.calibration, specs[0], labels=False)[0]
        except InputError as e:
            raise SweepError(f"'calibration': {e}") from None
    else:
        calibration = stored_calibration if stored_calibration is not None else inputs[:CALIBRATION_EXAMPLES]
    batch_size = batch_size or sweep.batch_size
    reference = float_predictions(onnx_model, inputs, batch_size)
    digest = hashlib.sha256(model)
    for array in (inputs, labels, calibration):
        digest.update(np.ascontiguousarray(array).tobytes())
    digest.update(json.dumps([sweep.mode, sweep.strategy, sweep.placement, sweep.base.to_dict()]).encode())
    return Context(
        token=digest.hexdigest()[:16],
        model=model,
        inputs=inputs,
        labels=labels,
        calibration=calibration.astype(np.float32),
        reference=reference,
        mode=sweep.mode,
        strategy=sweep.strategy,
        base=sweep.base,
        cost=sweep.cost,
        seeds=sweep.seeds,
        seed=sweep.seed,
        placement=sweep.placement,
        batch_size=batch_size,
        backend=sweep.backend,
        array_device=sweep.array_device,
    )
