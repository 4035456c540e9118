"""The float reference every comparison and accuracy is measured against: onnxruntime running the
ONNX model as given (a dependency of cimxdsl)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from cimxdsl.frontend.loading import with_batch


class ReferenceUnavailable(ValueError):
    """onnxruntime cannot be imported; the message is one line saying how to install it."""


def onnxruntime_module():
    try:
        import onnxruntime
    except ImportError as e:
        raise ReferenceUnavailable(
            f"the float reference needs onnxruntime, which cannot be imported ({e}): pip install onnxruntime"
        ) from None
    return onnxruntime


def reference_name() -> str:
    """The reference that ran, as reports name it: `onnxruntime <version>`."""
    return f"onnxruntime {onnxruntime_module().__version__}"


def onnxruntime_session(model: str | bytes):
    """An onnxruntime CPU session of a model (a path or serialized bytes)."""
    return onnxruntime_module().InferenceSession(model, providers=["CPUExecutionProvider"])


def onnxruntime_outputs(model: str | bytes, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The outputs of onnxruntime for a model (a path or serialized bytes)."""
    session = onnxruntime_session(model)
    types = {i.name: i.type.removeprefix("tensor(").removesuffix(")") for i in session.get_inputs()}
    numpy_types = {"float": "float32", "double": "float64"}  # onnxruntime's names; the others are NumPy's
    return session.run(None, {n: np.asarray(x).astype(numpy_types.get(types[n], types[n])) for n, x in inputs.items()})


def float_predictions(model: onnx.ModelProto, inputs: np.ndarray, batch_size: int | None = None) -> np.ndarray:
    """Top-1 predictions of the float model on examples of its single input, in chunks of
    `batch_size` (one session per chunk size)."""
    runs: dict[int, Any] = {}

    def outputs(batch: np.ndarray) -> np.ndarray:
        if len(batch) not in runs:
            session = onnxruntime_session(with_batch(model, len(batch)).SerializeToString())
            name = session.get_inputs()[0].name
            runs[len(batch)] = lambda x: session.run(None, {name: x})[0]
        return np.argmax(runs[len(batch)](batch), axis=-1).reshape(len(batch))

    step = batch_size or max(len(inputs), 1)
    return np.concatenate([outputs(inputs[start : start + step]) for start in range(0, len(inputs), step)])
