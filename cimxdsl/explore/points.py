"""Points of a sweep, their compile groups and device seeds, and the per-process program cache.

A sweep expands into `Point`s (settings of the swept device fields). Points that agree on the fields
that shape the compiled program (`COMPILE_FIELDS`: quantization bits, tiling, placement) share one
program: it is compiled once per process for the chunk batch (`batch_size`, by default the whole
data set; `chunks`) and every point of the group runs it on its own `Device`. Each (point, seed
index) gets a device seed derived from the base seed, the point's settings and the seed index alone,
so results do not depend on the order or the place (process, Dask worker) in which points run.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import onnx

from cimxdsl.device import DeviceConfig
from cimxdsl.explore.sweep import (
    COMPILE_FIELDS,
    Sweep,
    default_setting,
    device_settings,
    is_precision_field,
    precision_settings,
)

if TYPE_CHECKING:
    from cimxdsl.explore.context import Context


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
