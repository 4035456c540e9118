"""Points of a sweep and their evaluation.

A sweep expands into `Point`s (settings of the swept device fields). Points that agree on the fields
that shape the compiled program (`COMPILE_FIELDS`: quantization bits, tiling, placement) share one
program: it is compiled once per process for the chunk batch (`batch_size`, by default the whole
data set; `chunks`) and every point of the group runs it on its own `Device`. A point's data set
can be split into shards of consecutive chunks (`evaluate_part`), run anywhere and merged in order
(`point_rows`). Each (point, seed index) gets a device seed derived from the
base seed, the point's settings and the seed index alone, so results do not depend on the order or
the place (process, Dask worker) in which points run.

`evaluate_point` never raises for a bad point: the error is recorded in the point's rows.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from cimxdsl.data_io import InputError, onnx_inputs, read_dataset
from cimxdsl.device import COMPONENTS, DeviceConfig
from cimxdsl.explore.chunks import Chunk, ChunksResult, chunk_bounds, merge, run_chunks, shards
from cimxdsl.explore.sweep import (
    COMPILE_FIELDS,
    CostModel,
    Sweep,
    SweepError,
    default_setting,
    device_settings,
    is_precision_field,
    precision_settings,
)
from cimxdsl.reference import float_predictions

CALIBRATION_EXAMPLES = 64
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


@dataclass(frozen=True)
class Point:
    """One configuration of the swept fields."""

    index: int
    settings: tuple[tuple[str, Any], ...]
    """(field, value) for every swept field, in the sweep's axis order."""
    axes: tuple[str, ...]
    """The axes this point lies on: all of them in a product grid, its own axis in an `each` grid."""
    program: int
    """Which compiled program it runs (points with equal `COMPILE_FIELDS` share one)."""
    label: str

    @property
    def values(self) -> dict[str, Any]:
        return dict(self.settings)


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

    def shards(self, parts: int = 1) -> list[list[Chunk]]:
        """The chunks of the data set in at most `parts` shards."""
        return shards(chunk_bounds(len(self.inputs), self.batch_size), parts)


# ---- points -------------------------------------------------------------------------------------
def expand_points(sweep: Sweep) -> list[Point]:
    """The sweep's points: the product of the axes, or each axis alone from the base device
    (identical configurations merged)."""
    base = {f: default_setting(sweep, f) for f in sweep.swept_fields}
    found: dict[tuple, tuple[list[str], str]] = {}
    if sweep.grid == "product":
        for steps in itertools.product(*(range(len(axis)) for axis in sweep.axes)):
            settings = dict(base)
            for axis, step in zip(sweep.axes, steps, strict=True):
                settings.update(axis.settings(step))
            label = ", ".join(f"{f}={format_value(v)}" for f, v in settings.items())
            found[tuple(settings.items())] = ([axis.name for axis in sweep.axes], label)
    else:
        for axis in sweep.axes:
            for step in range(len(axis)):
                settings = {**base, **axis.settings(step)}
                key = tuple(settings.items())
                label = ", ".join(f"{f}={format_value(v)}" for f, v in axis.settings(step).items())
                if key in found:
                    found[key][0].append(axis.name)
                else:
                    found[key] = ([axis.name], label)
    programs: dict[tuple, int] = {}
    points = []
    for index, (settings, (axes, label)) in enumerate(found.items()):
        program = programs.setdefault(compile_key(sweep, dict(settings)), len(programs))
        points.append(Point(index, settings, tuple(axes), program, label))
    return points


def compile_key(owner: Sweep | Context, settings: dict[str, Any]) -> tuple:
    """The `COMPILE_FIELDS` of a point (`owner`'s defaults where no axis sets them); under
    `placement = "auto"` followed by its other swept fields as (field, value) pairs, since the
    per-product decision weighs the point's own latencies and energies."""
    key = tuple(settings.get(f, default_setting(owner, f)) for f in COMPILE_FIELDS)
    if settings.get("placement", default_setting(owner, "placement")) != "auto":
        return key + tuple(sorted((f, v) for f, v in settings.items() if is_precision_field(f)))
    return key + tuple(sorted((f, v) for f, v in settings.items() if f not in COMPILE_FIELDS))


def format_value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def device_seed(base_seed: int, settings: tuple[tuple[str, Any], ...], seed_index: int) -> int:
    """A 32-bit device seed from the base seed, the point's settings and the seed index (stable
    across processes and machines: no Python `hash`)."""
    text = json.dumps([base_seed, [[f, v] for f, v in settings], seed_index])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


def is_random(config: DeviceConfig) -> bool:
    """Whether runs with different seeds can differ (programming/read noise, stuck cells or a
    spread of drift)."""
    programming = config.prog_noise or any(config.prog_noise_table)
    spread = config.drifts and config.drift_nu_std
    stuck = config.stuck_on_rate or config.stuck_off_rate
    return bool(programming or config.read_noisy or config.read_noise_1f or stuck or spread)


# ---- context --------------------------------------------------------------------------------------
def prepare_context(sweep: Sweep, batch_size: int | None = None) -> Context:
    """Read the model and data, run the float model once, and bundle them for the workers;
    `batch_size` overrides the sweep's."""
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
    )


# ---- evaluation -----------------------------------------------------------------------------------
def point_config(context: Context, point: Point) -> DeviceConfig:
    """The base device with the point's settings (validated) and the sweep's cost model applied."""
    return configure(context.base, context.cost, point.values)


def configure(base: DeviceConfig, cost: CostModel, settings: dict[str, Any]) -> DeviceConfig:
    """`base` with the device fields of `settings` and `cost` applied."""
    return cost.apply(base.replace(**device_settings(settings)), base)


def evaluate_point(context: Context, point: Point) -> list[dict]:
    """One row per seed of the point: accuracy, agreement with the float model, latency, energy by
    component and event counts, or the error that stopped it."""
    return point_rows(context, point, [evaluate_part(context, point, chunks) for chunks in context.shards()])


def evaluate_part(context: Context, point: Point, chunks: list[Chunk]) -> str | list[ChunksResult | str]:
    """The point's runs on `chunks` of the data set, one per seed (or the error that stopped one),
    or the error of the point's settings."""
    try:
        config = point_config(context, point)
    except Exception as e:
        return describe_error(e)
    key = compile_key(context, point.values)

    def program(batch: int):
        return compiled_program(context, key, batch)

    results: list[ChunksResult | str] = []
    for seed_index in range(context.seeds if is_random(config) else 1):
        seed = device_seed(context.seed, point.settings, seed_index)
        try:
            results.append(run_chunks(program, context.inputs, config.replace(seed=seed), chunks))
        except Exception as e:
            results.append(describe_error(e))
    return results


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


def describe_error(error: Exception) -> str:
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


# ---- the per-process program cache -----------------------------------------------------------------
_CACHE_SIZE = 4
_programs: OrderedDict[tuple, Any] = OrderedDict()
_lock = threading.Lock()
_compiling: dict[tuple, threading.Lock] = {}


def compiled_program(context: Context, key: tuple, batch: int | None = None):
    """The program of compile group `key` for `batch` inputs, compiled at most once per process (a
    failed compile is remembered and raised again)."""
    cache_key = (context.token, key, batch)
    with _lock:
        gate = _compiling.setdefault(cache_key, threading.Lock())
    with gate:
        with _lock:
            if cache_key in _programs:
                _programs.move_to_end(cache_key)
                found = _programs[cache_key]
                if isinstance(found, Exception):
                    raise found
                return found
        try:
            found = compile_program(context, key, batch)
        except Exception as e:
            found = e
        with _lock:
            _programs[cache_key] = found
            while len(_programs) > _CACHE_SIZE:
                _programs.popitem(last=False)
            _compiling.pop(cache_key, None)
    if isinstance(found, Exception):
        raise found
    return found


def compile_program(context: Context, key: tuple, batch: int | None = None):
    """Compile the model for `batch` inputs (None: the data set) and the group's reference device:
    the base device with the group's compile fields (so the program does not depend on which point
    of the group came first), and under `auto` placement with the point's other swept fields."""
    from cimxdsl.api import compile as compile_model

    fields = {**dict(zip(COMPILE_FIELDS, key)), **dict(key[len(COMPILE_FIELDS) :])}
    reference = context.cost.apply(context.base.replace(**device_settings(fields)), context.base)
    # the list scheduler takes the reference device too: its crossbar count and latencies are the
    # ones the program runs on
    return compile_model(
        onnx.load_from_string(context.model),
        device=reference,
        calibration=context.calibration,
        mode=context.mode,
        strategy=context.strategy,
        batch=batch or len(context.inputs),
        placement=fields["placement"],
        precision=precision_settings(fields) or None,
    )
