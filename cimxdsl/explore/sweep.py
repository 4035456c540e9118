"""Sweep files: what to explore, read from TOML (or a dict of the same shape) and validated.

A sweep names a model, a labelled data set, a base device and the device parameters to vary::

    name = "digits-adc"            # optional: a title for the plots and results
    model = "digits"               # an ONNX file (relative to the sweep file) or "digits" (the demo CNN)
    data = "digits"                # an .npz with `inputs` and `labels` (optionally `calibration`) or "digits"
    calibration = "digits-train"   # optional: an .npz (its `calibration` array, else its `inputs`) or "digits-train";
                                   # default: the data set's `calibration` array, else its first 64 inputs
    limit = 360                    # optional: only the first N examples of the data set
    batch_size = 500               # optional: evaluate the data set in chunks of N inputs (default: all at once)
    mode = "int8"                  # optional: "int8" (default) or "exact"
    strategy = "list"              # optional: the scheduling strategy (asap, alap, list, round-robin)
    placement = "host"             # optional: where products of two run-time tensors run (host, crossbar, auto)
    grid = "product"               # "product": every combination of the axes; "each": one axis at a time
    seeds = 5                      # runs (seeds) per point with random non-idealities; others run once
    seed = 0                       # base seed; each (point, seed index) derives its own device seed
    backend = "torch"              # optional: the array library of the products (numpy, torch, cupy)
    array_device = ["cuda:0", "cuda:1"]  # optional: its device, or several: point i on device i mod count

    [device]                       # the base device: a preset or a TOML file, then any overrides
    preset = "cinnamon"            # or: file = "my_device.toml"
    weight_bits = 8

    [axes]                         # any DeviceConfig field (except name and seed), `placement` or a layer's bits
                                   # ("precision.LAYER.weight_bits", "precision.LAYER.input_bits"): the values to try
    adc_bits = [4, 6, 8]
    adc_range = ["full", "calibrated"]

    [axes.stuck_rate]              # a linked axis: several fields stepped together (equal-length lists)
    stuck_on_rate = [0.0, 0.01]
    stuck_off_rate = [0.0, 0.01]

    [cost]                         # optional: per-event energies that follow the swept bit widths
    adc = "linear"                 # "fixed" (default), "linear" or "exponential" in the ADC bits
    adc_reference_bits = 8         # the base device's adc_pj is the energy of an ADC this wide
    dac = "exponential"
    dac_reference_bits = 2

A sweep may search its axes instead of evaluating all of them (`cimxdsl.explore.search`)::

    search = "tpe"                 # "grid", "random", "tpe", "nsga2" or "surrogate"
    trials = 60                    # points to propose (default: the grid's size for "grid", else 100)
    timeout_s = 600                # optional: propose no new point after this many seconds
    objectives = ["accuracy", "energy"]     # maximise accuracy; minimise latency, energy, crossbars, writes
    constraints = ["accuracy >= 0.9"]       # a point that breaks one is not on the front
    prune = true                   # stop a point whose first chunks already show it dominated
    population = 20                # NSGA-II's population (default 50)
    predictor = "predictor.json"   # the surrogate's: start from a predictor of `cim-explore learn`
    trials_per_batch = 2           # points proposed together (default: the local jobs or Dask workers)

    [axes]
    adc_bits = { min = 3, max = 10 }                     # an integer range (step 1)
    prog_noise = { min = 0.01, max = 0.3, log = true }   # a continuous range (searches only)
    rows = [32, 64, 128]                                 # choices

Every error is a `SweepError` whose message is one line naming the key.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cimxdsl.data import DIGITS_MODEL, DIGITS_TEST, DIGITS_TRAIN
from cimxdsl.device import DeviceConfig, DeviceConfigError, load_device_config
from cimxdsl.device.backend import BACKENDS
from cimxdsl.device.config import DEVICE, FIELD_NAMES, flatten
from cimxdsl.device.placement import PLACEMENTS
from cimxdsl.device.settings import Schema, did_you_mean, setting
from cimxdsl.dialects.utils import MAX_PRECISION
from cimxdsl.transforms.memristor.pipeline import scheduling_strategies

BUNDLED_MODELS = {"digits": DIGITS_MODEL}
BUNDLED_DATA = {"digits": DIGITS_TEST, "digits-train": DIGITS_TRAIN}
GRIDS = ("product", "each")
MODES = ("int8", "exact")
STRATEGIES = tuple(scheduling_strategies())
SCALINGS = ("fixed", "linear", "exponential")
SEARCHES = ("grid", "random", "tpe", "nsga2", "surrogate")
OBJECTIVES: dict[str, str] = {
    "accuracy": "accuracy_mean",
    "agreement": "agreement_mean",
    "latency": "latency_ns",
    "energy": "energy_per_image_pj",
    "crossbars": "crossbars_used",
    "writes": "writes",
}
"""Objective and constraint names and the summary value each stands for."""
MAXIMISED = ("accuracy", "agreement")
"""Objectives to maximise; every other one is minimised."""
RANGE_KEYS = ("min", "max", "log", "step")
DEFAULT_TRIALS = 100
COMPILE_OPTIONS: dict[str, tuple[str, ...]] = {"placement": PLACEMENTS}
"""Axes that are options of the compiler, not device fields (their default: the sweep's key)."""
SWEEPABLE = (*(f for f in FIELD_NAMES if f not in ("name", "seed")), *COMPILE_OPTIONS)
PRECISION_PREFIX = "precision."
"""Axes `precision.<layer>.weight_bits` and `precision.<layer>.input_bits` (quoted TOML keys): a
layer's bits (`cimxdsl.precision`), compile options; a layer no axis names runs at the device's bits."""


def is_precision_field(name: str) -> bool:
    """Whether `name` is a per-layer bits axis (`precision.<layer>.<setting>`)."""
    layer, _, setting = name.removeprefix(PRECISION_PREFIX).rpartition(".")
    return name.startswith(PRECISION_PREFIX) and bool(layer) and setting in ("weight_bits", "input_bits")


def precision_settings(settings: dict[str, Any]) -> dict[str, dict[str, int]]:
    """The per-layer bits of a point's settings, as a precision mapping (layer: {setting: bits})."""
    precision: dict[str, dict[str, int]] = {}
    for name, value in settings.items():
        if is_precision_field(name) and value is not None:
            layer, _, setting = name.removeprefix(PRECISION_PREFIX).rpartition(".")
            precision.setdefault(layer, {})[setting] = value
    return precision


COMPILE_FIELDS = ("weight_bits", "input_bits", "rows", "cols", "cell_bits", "crossbars", "encoding", *COMPILE_OPTIONS)
"""Fields that change the compiled program (quantization bits, tiling — a reference column takes a
column —, placement); the rest only
change how the device computes, so points that agree on these share one compiled program."""


class SweepError(ValueError):
    """A malformed sweep; the message is one line naming the key."""

    def __init__(self, message: str):
        super().__init__("sweep file: " + " ".join(str(message).split()))


@dataclass(frozen=True)
class Range:
    """A numeric axis from `low` to `high` (inclusive): integers (`integer`) or reals, on a log
    scale (`log`) or in steps of `step` (integers: 1 unless given)."""

    low: float
    high: float
    integer: bool
    log: bool = False
    step: float | None = None

    def grid(self) -> tuple | None:
        """Its values when it has finitely many (in steps), else None (a log or stepless real range)."""
        if self.log or (self.step is None and not self.integer):
            return None
        step = self.step or 1
        count = math.floor((self.high - self.low) / step + 1e-9) + 1
        values = [self.low + i * step for i in range(count)]
        return tuple(int(v) if self.integer else round(v, 12) for v in values)


@dataclass(frozen=True)
class Axis:
    """One swept dimension: `fields` stepped together through `values` (one tuple per step); a
    numeric `range` (one field) has its grid's values, or none where it has no grid."""

    name: str
    fields: tuple[str, ...]
    values: tuple[tuple[Any, ...], ...]
    range: Range | None = None

    def settings(self, step: int) -> dict[str, Any]:
        return dict(zip(self.fields, self.values[step], strict=True))

    def __len__(self) -> int:
        return len(self.values)


@dataclass(frozen=True)
class CostModel:
    """How per-event ADC/DAC energies scale with their bit width (`fixed`: the base device's value).

    `linear`: energy ∝ bits (PUMA's simulator scales ADC power linearly in bits); `exponential`:
    energy doubles per bit (a constant Walden figure of merit; MNSIM 2.0's DACs double per bit). The
    base device's `adc_pj`/`dac_pj` is the energy at the reference width. A lossless ADC
    (`adc_bits = 0`) is costed as the ADC that converts a full-scale column sum exactly (with a
    sign bit where the sums are signed: bipolar inputs or a pair subtracted before the ADC).
    """

    adc: str = setting("fixed", choices=SCALINGS)
    adc_reference_bits: int = setting(8, low=1, high=32)
    dac: str = setting("fixed", choices=SCALINGS)
    dac_reference_bits: int = setting(1, low=1, high=32)

    def apply(self, config: DeviceConfig, base: DeviceConfig) -> DeviceConfig:
        changes = {}
        if self.adc != "fixed":
            bits = config.adc_bits or config.adc_full_scale.bit_length() + config.signed_adc
            changes["adc_pj"] = base.adc_pj * scale(self.adc, bits, self.adc_reference_bits)
        if self.dac != "fixed":
            changes["dac_pj"] = base.dac_pj * scale(self.dac, config.dac_bits, self.dac_reference_bits)
        return config.replace(**changes) if changes else config

    def scaled_fields(self) -> tuple[str, ...]:
        return tuple(f for f, rule in (("adc_pj", self.adc), ("dac_pj", self.dac)) if rule != "fixed")


def scale(rule: str, bits: int, reference: int) -> float:
    return bits / reference if rule == "linear" else 2.0 ** (bits - reference)


@dataclass(frozen=True)
class Constraint:
    """`metric op bound`, e.g. accuracy >= 0.9 (`metric`: a key of `OBJECTIVES`)."""

    metric: str
    op: str
    bound: float

    def violation(self, value: float) -> float:
        """How far `value` is from meeting it (<= 0: met; strict bounds count equality as 0+)."""
        gap = self.bound - value if self.op in (">=", ">") else value - self.bound
        return math.nextafter(gap, math.inf) if self.op in (">", "<") and gap == 0 else gap

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.bound:g}"


@dataclass(frozen=True, kw_only=True)
class Sweep:
    """A validated sweep (see the module docstring); its fields are the keys of a sweep file, with
    `base` read from the `device` table."""

    name: str
    model: Path
    data: Path
    calibration: Path | None = None
    limit: int | None = setting(None, low=1)
    batch_size: int | None = setting(None, low=1)
    """Inputs per chunk of the data set (None: the whole data set as one batch)."""
    mode: str = setting("int8", choices=MODES)
    strategy: str = setting("list", choices=STRATEGIES)
    placement: str = setting("host", choices=PLACEMENTS)
    grid: str = setting("product", choices=GRIDS)
    seeds: int = setting(1, low=1)
    seed: int = setting(0, low=0)
    base: DeviceConfig = field(default_factory=DeviceConfig)
    axes: tuple[Axis, ...] = ()
    cost: CostModel = field(default_factory=CostModel)
    search: str | None = setting(None, choices=SEARCHES)
    """How points are chosen: None evaluates every point of `grid`; else a search of `trials` points."""
    trials: int | None = setting(None, low=1)
    timeout_s: float | None = setting(None, positive=True)
    objectives: tuple[str, ...] = ("accuracy", "energy")
    constraints: tuple[Constraint, ...] = ()
    prune: bool = True
    population: int | None = setting(None, low=2)
    trials_per_batch: int | None = setting(None, low=1)
    predictor: Path | None = None
    """A saved predictor (`cim-explore learn`) the surrogate search starts from."""
    backend: str = setting("numpy", choices=BACKENDS)
    """The array library the products run on (`cimxdsl.device.backend`)."""
    array_device: tuple[str, ...] = ()
    """Its devices ("cpu", "cuda:N"): point i runs on device i modulo their count (none: the default)."""

    @property
    def swept_fields(self) -> tuple[str, ...]:
        return tuple(f for axis in self.axes for f in axis.fields)


SWEEP = Schema(Sweep, SweepError, quote_choices=False, suggest=True)
"""The keys of a sweep file and their checks."""
COST = Schema(CostModel, SweepError, table="cost", quote_choices=False)
"""The keys of its `[cost]` table."""
TOP_KEYS = tuple("device" if name == "base" else name for name in SWEEP.fields)
SCALARS = (
    "limit",
    "batch_size",
    "mode",
    "strategy",
    "placement",
    "grid",
    "seeds",
    "seed",
    "search",
    "trials",
    "timeout_s",
    "prune",
    "population",
    "trials_per_batch",
    "backend",
)
"""The keys checked by their field alone (besides `name`, which defaults to the file's stem)."""


def default_setting(owner: Any, name: str) -> Any:
    """The value of a field no axis sets: the compile option of `owner` (a sweep or a run's
    context), else the field of its base device."""
    if is_precision_field(name):
        return None
    return getattr(owner, name) if name in COMPILE_OPTIONS else getattr(owner.base, name)


def device_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings that are device fields (not compile options)."""
    return {f: v for f, v in settings.items() if f not in COMPILE_OPTIONS and not is_precision_field(f)}


def load_sweep(spec: dict | str | Path | Sweep) -> Sweep:
    """A `Sweep` from a TOML file or a dict (paths in it relative to the file, or to the working
    directory for a dict)."""
    if isinstance(spec, Sweep):
        return spec
    if isinstance(spec, dict):
        return parse_sweep(spec, Path.cwd(), "sweep")
    path = Path(spec)
    return parse_sweep(SWEEP.read(path), path.resolve().parent, path.stem)


def parse_sweep(data: dict, root: Path, default_name: str) -> Sweep:
    SWEEP.table_of(data)
    for key in data:
        SWEEP.check_known(key, TOP_KEYS)
    for key in ("model", "data", "axes"):
        if key not in data:
            raise SweepError(f"missing key '{key}'")
    scalars = {key: SWEEP.check(key, data[key]) for key in SCALARS if key in data}
    base = parse_device(data.get("device", {}), root)
    axes = parse_axes(data["axes"])
    cost = parse_cost(data.get("cost", {}), axes)
    search = scalars.get("search")
    if search is None and "objectives" not in data:
        objectives = Sweep.objectives
    else:
        objectives = parse_objectives(data.get("objectives"), search)
    check_search(scalars, axes)
    return Sweep(
        **scalars,
        name=SWEEP.check("name", data.get("name", default_name)),
        model=resolve(data, "model", root, BUNDLED_MODELS),
        data=resolve(data, "data", root, BUNDLED_DATA),
        calibration=resolve(data, "calibration", root, BUNDLED_DATA) if "calibration" in data else None,
        base=base,
        axes=axes,
        cost=cost,
        objectives=objectives,
        constraints=parse_constraints(data.get("constraints", [])),
        predictor=parse_predictor(data, root, search, objectives),
        array_device=parse_array_devices(data.get("array_device", ())),
    )


PREDICTED = ("accuracy", "latency", "energy")
"""The metrics a saved predictor predicts."""


def parse_predictor(data: dict, root: Path, search: str | None, objectives: tuple[str, ...]) -> Path | None:
    """The `predictor` file of a surrogate search, checked to predict what the search needs."""
    if "predictor" not in data:
        return None
    if search != "surrogate":
        raise SweepError("'predictor' is the surrogate's: it needs search = 'surrogate'")
    path = resolve(data, "predictor", root, {})
    needed = [*objectives, *(c.metric for c in parse_constraints(data.get("constraints", [])))]
    for metric in needed:
        if metric not in PREDICTED:
            raise SweepError(
                f"'predictor': a predictor predicts {', '.join(PREDICTED)}, not '{metric}' "
                "(an objective or constraint of this search)"
            )
    return path


def parse_array_devices(value: Any) -> tuple[str, ...]:
    """The `array_device` key: a device string or a list of them."""
    devices = [value] if isinstance(value, str) else value
    if not isinstance(devices, list | tuple) or not all(isinstance(d, str) and d for d in devices):
        raise SweepError(f"'array_device' must be a device ('cpu', 'cuda:0') or a list of them, got {value!r}")
    return tuple(devices)


# ---- parts --------------------------------------------------------------------------------------
def parse_device(table: Any, root: Path) -> DeviceConfig:
    if not isinstance(table, dict):
        raise SweepError(f'\'device\' must be a table (preset = "name" or file = "path.toml"), got {table!r}')
    table = dict(table)
    if "preset" in table and "file" in table:
        raise SweepError("device: give 'preset' or 'file', not both")
    try:
        if "file" in table:
            file = table.pop("file")
            if not isinstance(file, str):
                raise SweepError(f"device.file must be a path, got {file!r}")
            path = (root / file).resolve()
            if not path.is_file():
                raise SweepError(f"device.file: no such file '{file}'")
            return load_device_config(path).replace(**flatten(table))
        return DeviceConfig.from_dict(table)  # `preset = "name"` or the default device, then overrides
    except DeviceConfigError as e:
        raise SweepError(f"device: {str(e).removeprefix('device config: ')}") from None


def parse_axes(table: Any) -> tuple[Axis, ...]:
    if not isinstance(table, dict) or not table:
        raise SweepError("'axes' must be a table with at least one axis, e.g. adc_bits = [4, 6, 8]")
    axes = []
    seen: dict[str, str] = {}
    for name, value in table.items():
        if isinstance(value, dict) and value and set(value) <= set(RANGE_KEYS):
            fields = (name,)
            numeric = parse_range(name, value)
            values = tuple((v,) for v in numeric.grid() or ())
        elif isinstance(value, dict):
            if not value:
                raise SweepError(f"axis '{name}' is an empty table: give its fields' value lists")
            fields = tuple(value)
            lists = [axis_values(f"{name}.{f}", f, value[f]) for f in fields]
            lengths = {len(values) for values in lists}
            if len(lengths) != 1:
                sizes = ", ".join(f"{f}: {len(v)}" for f, v in zip(fields, lists, strict=True))
                raise SweepError(f"axis '{name}': its fields need value lists of one length, got {sizes}")
            values = tuple(zip(*lists, strict=True))
        else:
            fields = (name,)
            values = tuple((v,) for v in axis_values(name, name, value))
        for f in fields:
            if f in seen:
                raise SweepError(f"axis '{name}': field '{f}' is already swept by axis '{seen[f]}'")
            seen[f] = name
        if len(set(values)) != len(values):
            raise SweepError(f"axis '{name}' repeats a value")
        axes.append(Axis(name, fields, values, numeric if fields == (name,) and isinstance(value, dict) else None))
    return tuple(axes)


def parse_range(name: str, table: dict) -> Range:
    """A `{min, max, log, step}` axis of a numeric device field, each end checked like the field."""
    if (name not in SWEEPABLE or name in COMPILE_OPTIONS) and not is_precision_field(name):
        raise SweepError(f"axis '{name}' is not a device parameter{did_you_mean(name, SWEEPABLE)}")
    kind = int if is_precision_field(name) else DEVICE.fields[name][0]
    if kind not in (int, float):
        raise SweepError(f"axis '{name}': a range {{min, max}} needs a numeric field; give a list of values")
    for key in ("min", "max"):
        if key not in table:
            raise SweepError(f"axis '{name}': a range needs '{key}' (keys: {', '.join(RANGE_KEYS)})")
    low, high = (axis_values(f"{name}.{key}", name, [table[key]])[0] for key in ("min", "max"))
    if low > high:
        raise SweepError(f"axis '{name}': min {low:g} > max {high:g}")
    log = table.get("log", False)
    if not isinstance(log, bool):
        raise SweepError(f"axis '{name}.log' must be true or false, got {log!r}")
    step = table.get("step")
    if step is not None:
        if kind is int and (not isinstance(step, int) or isinstance(step, bool) or step < 1):
            raise SweepError(f"axis '{name}.step' must be a positive integer, got {step!r}")
        if isinstance(step, bool) or not isinstance(step, int | float) or not step > 0:
            raise SweepError(f"axis '{name}.step' must be a positive number, got {step!r}")
        if log:
            raise SweepError(f"axis '{name}': give 'log' or 'step', not both")
        count = (high - low) / step
        if abs(count - round(count)) > 1e-9:
            raise SweepError(f"axis '{name}': max - min ({high - low:g}) must be a multiple of step {step:g}")
    if log and low <= 0:
        raise SweepError(f"axis '{name}': a log range needs min > 0, got {low:g}")
    return Range(low, high, kind is int, log, step)


def axis_values(where: str, field_name: str, values: Any) -> list:
    if is_precision_field(field_name):
        if not isinstance(values, list) or not values:
            raise SweepError(f"axis '{where}' must be a non-empty list of values, got {values!r}")
        for i, value in enumerate(values):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PRECISION:
                bits = f"an integer from 1 to {MAX_PRECISION}"
                raise SweepError(f"axis '{where}' value {i + 1}: must be {bits}, got {value!r}")
        return list(values)
    if field_name not in SWEEPABLE:
        if field_name == "seed":
            raise SweepError(f"axis '{where}': the seed is not an axis; set 'seeds' (runs per point) and 'seed'")
        raise SweepError(f"axis '{where}' is not a device parameter{did_you_mean(field_name, SWEEPABLE)}")
    if not isinstance(values, list) or not values:
        raise SweepError(f"axis '{where}' must be a non-empty list of values, got {values!r}")
    if field_name in COMPILE_OPTIONS:
        choices = COMPILE_OPTIONS[field_name]
        for i, value in enumerate(values):
            if value not in choices:
                raise SweepError(f"axis '{where}' value {i + 1}: must be one of {', '.join(choices)}, got {value!r}")
        return list(values)
    checked = []
    for i, value in enumerate(values):
        try:
            checked.append(DEVICE.check(field_name, value))
        except DeviceConfigError as e:
            message = str(e).removeprefix("device config: ")
            raise SweepError(f"axis '{where}' value {i + 1}: {message}") from None
    return checked


def parse_cost(table: Any, axes: tuple[Axis, ...]) -> CostModel:
    if not isinstance(table, dict):
        raise SweepError(f"'cost' must be a table, got {table!r}")
    for key in table:
        COST.check_known(key)
    kwargs = {key: COST.check(key, value) for key, value in table.items()}
    cost = CostModel(**kwargs)
    swept = {f for axis in axes for f in axis.fields}
    for scaled in cost.scaled_fields():
        if scaled in swept:
            raise SweepError(f"cost.{scaled[:3]} sets '{scaled}' from the bits, so it cannot be an axis too")
    return cost


def parse_objectives(value: Any, search: str | None) -> tuple[str, ...]:
    if (value is None or value == []) and search is None:
        raise SweepError(f"'objectives' must name at least one of {', '.join(OBJECTIVES)}")
    if value is None or value == []:
        raise SweepError(
            f"search = '{search}' needs 'objectives' (some of {', '.join(OBJECTIVES)}), "
            'e.g. objectives = ["accuracy", "energy"]'
        )
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SweepError(f"'objectives' must be a list of names (some of {', '.join(OBJECTIVES)}), got {value!r}")
    for name in value:
        if name not in OBJECTIVES:
            raise SweepError(
                f"'objectives': unknown objective '{name}'{did_you_mean(name, OBJECTIVES)}; "
                f"known: {', '.join(OBJECTIVES)}"
            )
    if len(set(value)) != len(value):
        raise SweepError("'objectives' repeats a name")
    return tuple(value)


CONSTRAINT = re.compile(r"^\s*([A-Za-z_]\w*)\s*(>=|<=|>|<|≥|≤)\s*([-+0-9.eE]+)\s*$")


def parse_constraints(value: Any) -> tuple[Constraint, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SweepError(f"'constraints' must be a list of strings such as \"accuracy >= 0.9\", got {value!r}")
    constraints = []
    for text in value:
        match = CONSTRAINT.match(text)
        if match is None:
            raise SweepError(f"'constraints': cannot read {text!r}: write \"metric >= number\" (or <=, >, <)")
        metric, op, number = match.groups()
        if metric not in OBJECTIVES:
            raise SweepError(
                f"'constraints': unknown metric '{metric}' in {text!r}{did_you_mean(metric, OBJECTIVES)}; "
                f"known: {', '.join(OBJECTIVES)}"
            )
        try:
            bound = float(number)
        except ValueError:
            raise SweepError(f"'constraints': {number!r} in {text!r} is not a number") from None
        constraints.append(Constraint(metric, {"≥": ">=", "≤": "<="}.get(op, op), bound))
    return tuple(constraints)


def check_search(scalars: dict, axes: tuple[Axis, ...]) -> None:
    """The search keys agree with each other and the axes."""
    search = scalars.get("search")
    if search is None:
        for key in ("trials", "timeout_s", "population", "trials_per_batch"):
            if key in scalars:
                raise SweepError(f"'{key}' needs a search (search = {' | '.join(SEARCHES)})")
    elif scalars.get("grid", "product") != "product":
        raise SweepError(f"grid = '{scalars['grid']}' is for sweeps without 'search'; a search explores the product")
    if "population" in scalars and search != "nsga2":
        raise SweepError("'population' is NSGA-II's: it needs search = 'nsga2'")
    if search in (None, "grid"):
        for axis in axes:
            if axis.range is not None and not axis.values:
                raise SweepError(
                    f"axis '{axis.name}': a {'log ' if axis.range.log else ''}range without 'step' has no grid; "
                    "give 'step' or search it (search = random, tpe, nsga2 or surrogate)"
                )


# ---- paths ------------------------------------------------------------------------------------------
def resolve(data: dict, key: str, root: Path, bundled: dict[str, Path]) -> Path:
    value = data[key]
    if not isinstance(value, str) or not value:
        raise SweepError(f"'{key}' must be a path or one of {', '.join(repr(b) for b in bundled)}, got {value!r}")
    path = bundled[value] if value in bundled else (root / value).resolve()
    if not path.is_file():
        raise SweepError(f"'{key}': no such file '{value}'")
    return path
