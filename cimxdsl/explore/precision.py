"""What a per-layer precision costs and gives: one call that compiles a model at a given precision
(`cimxdsl.precision`) and runs a labelled validation split on the device, for a search over
precisions to call point after point."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from cimxdsl.api import compile
from cimxdsl.explore.chunks import chunk_bounds, run_chunks
from cimxdsl.models import CompileError


def evaluate_precision(
    model,
    precision: Mapping | str | Path | None,
    inputs: np.ndarray,
    labels: np.ndarray,
    device: Any = "cinnamon",
    calibration=None,
    batch_size: int = 1,
    **compile_options: Any,
) -> dict[str, Any]:
    """Compile `model` (an ONNX model or path) at `precision` (layer names or globs to weight and
    input bits; None: the device's bits) for `device` and run the validation split `inputs`
    (examples along axis 0 of a single-input model) with `labels` in chunks of `batch_size`, one
    after another on one device (weights stay resident between chunks). Returns the top-1
    `accuracy`, the `latency_ns` and `energy_pj` per image (the split's totals divided by its
    images: first writes included), the totals, and the per-layer bits and crossbar writes of the
    first chunk (`layers`)."""
    inputs, labels = np.asarray(inputs), np.asarray(labels)
    if len(inputs) != len(labels) or not len(inputs):
        raise CompileError(f"the validation split needs as many labels as inputs, got {len(inputs)} and {len(labels)}")
    chunks = chunk_bounds(len(inputs), batch_size)
    programs: dict[int, Any] = {}

    def program(batch: int):
        if batch not in programs:
            programs[batch] = compile(
                model, device=device, calibration=calibration, batch=batch, precision=precision, **compile_options
            )
        return programs[batch]

    first = program(chunks[0].stop - chunks[0].start)
    result = run_chunks(program, inputs, first.device, chunks)
    predictions = np.argmax(result.outputs[0].reshape(len(labels), -1), axis=-1)
    total = result.report
    first(inputs[chunks[0].start : chunks[0].stop])
    layers = [
        {key: layer[key] for key in ("layer", "weight_bits", "input_bits", "cells_written", "latency_ns")}
        for layer in first.report()["layers"]
    ]
    return {
        "accuracy": float(np.mean(predictions == labels)),
        "latency_ns": total["latency_ns"] / len(labels),
        "energy_pj": total["total"]["energy_pj"]["total"] / len(labels),
        "images": len(labels),
        "total_latency_ns": total["latency_ns"],
        "total_energy_pj": total["total"]["energy_pj"]["total"],
        "cells_written": total["total"]["cells_written"],
        "layers": layers,
    }
