"""The rows of a point: one per seed, with its metrics (`METRICS`) or the error that stopped it.

A point's data set can be split into shards of consecutive chunks, run anywhere and merged in order
(`point_rows`).
"""

from __future__ import annotations

import numpy as np

from cimxdsl.device import COMPONENTS
from cimxdsl.explore.chunks import ChunksResult, merge
from cimxdsl.explore.context import Context
from cimxdsl.explore.points import Point, device_seed

COUNTS = ("writes", "cells_written", "mvms", "input_slices", "array_reads", "dac_activations", "adc_conversions")
METRICS = (
    "accuracy",
    "agreement",
    "latency_ns",
    "energy_pj",
    "energy_per_image_pj",
    *(f"energy_{c}_pj" for c in COMPONENTS),
    *COUNTS,
    "crossbars_used",
)
"""Columns of a row besides the point's identity and settings (see `evaluate_point`)."""


def point_rows(context: Context, point: Point, parts: list[str | list[ChunksResult | str]]) -> list[dict]:
    """The point's rows from its parts (`evaluate_part` on consecutive shards, in order)."""
    failed = next((part for part in parts if isinstance(part, str)), None)
    if failed is not None:
        return [error_row(point, 0, None, failed)]
    rows = []
    for seed_index, runs in enumerate(zip(*parts, strict=True)):
        seed = device_seed(context.seed, point.settings, seed_index)
        error = next((run for run in runs if isinstance(run, str)), None)
        if error is None:
            rows.append(result_row(context, point, seed_index, seed, merge(runs)))
        else:
            rows.append(error_row(point, seed_index, seed, error))
    return rows


def identity(point: Point, seed_index: int, seed: int | None) -> dict:
    return {
        "point": point.index,
        "seed_index": seed_index,
        "device_seed": seed,
        "program": point.program,
        **point.values,
    }


def result_row(context: Context, point: Point, seed_index: int, seed: int, run: ChunksResult) -> dict:
    predictions = np.argmax(run.outputs[0], axis=-1).reshape(len(context.labels))
    report = run.report
    total = report["total"]
    energy = total["energy_pj"]
    row = identity(point, seed_index, seed)
    row.update(
        status="ok",
        error="",
        accuracy=float(np.mean(predictions == context.labels)),
        agreement=float(np.mean(predictions == context.reference)),
        latency_ns=float(report["latency_ns"]),
        energy_pj=float(energy["total"]),
        energy_per_image_pj=float(energy["total"]) / len(context.labels),
        **{f"energy_{c}_pj": float(energy[c]) for c in COMPONENTS},
        **{c: int(total[c]) for c in COUNTS},
        crossbars_used=int(report["crossbars_used"]),
    )
    return row


def error_row(point: Point, seed_index: int, seed: int | None, error: str) -> dict:
    row = identity(point, seed_index, seed)
    row.update(status="error", error=error, **dict.fromkeys(METRICS))
    return row
