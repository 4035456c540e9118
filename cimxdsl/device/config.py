"""Device configuration: parameters, validation, TOML loading and presets.

A `DeviceConfig` describes one crossbar accelerator. A *logical crossbar* (the unit the compiler
schedules onto, `crossbars` of them) holds one weight tile; with the `differential` encoding it is a
pair of physical arrays (positive and negative part), with `offset` a single array.

Energy is counted per event (all in pJ):

- `crossbar_read_pj`  one physical array read with one input slice (an "array-cycle");
- `dac_pj`            one row driven for one input slice of one physical array;
- `adc_pj`            one ADC conversion (one column of one physical array, one input slice);
- `sample_hold_pj`    one sample-and-hold, also per conversion;
- `shift_add_pj`      the shift-and-add unit of one physical array for one array-cycle;
- `write_pj_per_cell` programming one cell;
- `digital_pj_per_mac` one int8 multiply-accumulate of the digital unit.

The digital unit computes, next to the crossbars, the products a compiler leaves on the host (the
run-time products of attention under `placement=host`): `digital_macs_per_ns` MACs per ns,
`digital_pj_per_mac` each.

ADC-energy convention (Shafiee et al., ISAAC, ISCA 2016, Table 6; Ankit et al., PUMA, ASPLOS 2019): energy per conversion = P / sample rate, as
ISAAC and PUMA count it (`adc_energy_pj`). MNSIM instead charges (bits + 2) / rate × P, 10× more for
the same ADC; to model that convention, set `adc_pj` accordingly.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from cimxdsl.device.parasitics import Wires
from cimxdsl.device.settings import Schema, did_you_mean, is_file_spec, setting

ENCODINGS = ("differential", "offset", "reference")
SUBTRACTIONS = ("digital", "analog")
ADC_RANGES = ("full", "full_pow2", "calibrated", "static_array", "static_slice", "static_column")
STATIC_RANGES = ("static_array", "static_slice", "static_column")
INPUT_ENCODINGS = ("offset", "twos_complement", "sign_magnitude", "bipolar")
PROG_NOISE_MODELS = ("proportional", "independent", "table")
PROG_NOISE_CLIPS = ("auto", "zero", "both")
IR_DROP_SOLVERS = ("auto", "exact", "fast")
ANALOG_DTYPES = ("float64", "float32")
DRIFT_COMPENSATIONS = ("none", "global", "column")
DRIFT_ADC_SPANS = ("rescaled", "fixed")
MAX_BITS = 32

# TOML files may group keys in these tables; they are flattened before validation.
GROUPS: dict[str, tuple[str, ...]] = {
    "geometry": ("rows", "cols", "crossbars", "cores", "crossbars_per_core"),
    "precision": (
        "weight_bits",
        "input_bits",
        "cell_bits",
        "dac_bits",
        "adc_bits",
        "adc_range",
        "encoding",
        "input_encoding",
        "subtraction",
        "on_off_ratio",
    ),
    "noise": (
        "prog_noise",
        "reference_noise",
        "prog_noise_model",
        "prog_noise_table",
        "prog_noise_clip",
        "read_noise",
        "read_noise_1f",
        "read_pulse_s",
        "input_noise",
        "output_noise",
        "stuck_on_rate",
        "stuck_off_rate",
        "drift_nu",
        "drift_nu_std",
        "drift_nu_table",
        "drift_nu_std_table",
        "drift_t0_s",
        "drift_time_s",
        "drift_compensation",
        "drift_adc_spans",
        "seed",
        "analog_dtype",
    ),
    "parasitics": (
        "wire_resistance",
        "row_wire_resistance",
        "col_wire_resistance",
        "source_resistance",
        "sink_resistance",
        "ir_drop_solver",
    ),
    "timing": ("cycle_ns", "pipeline_fill_cycles", "write_ns_per_row", "digital_macs_per_ns"),
    "energy": (
        "crossbar_read_pj",
        "dac_pj",
        "adc_pj",
        "sample_hold_pj",
        "shift_add_pj",
        "write_pj_per_cell",
        "digital_pj_per_mac",
    ),
}


_DIGITAL_MACS_PER_NS = 64.0
"""An 8×8 int8 MAC array (NVDLA's `nv_small` configuration, NVDLA hardware architecture
documentation, nvdla.org) at an assumed 1 GHz."""
_DIGITAL_PJ_PER_MAC = 0.2 + 0.03
"""An 8-bit integer multiply (0.2 pJ) and add (0.03 pJ) at 45 nm: M. Horowitz, "Computing's
energy problem (and what we can do about it)", ISSCC 2014."""


class DeviceConfigError(ValueError):
    """An invalid device configuration; the message is one line naming the offending key."""

    def __init__(self, message: str):
        super().__init__("device config: " + " ".join(str(message).split()))


def adc_energy_pj(power_mw: float, rate_gsps: float) -> float:
    """Energy of one ADC conversion in pJ by the ISAAC/PUMA convention: P / sample rate."""
    return power_mw / rate_gsps


@dataclass(frozen=True)
class DeviceConfig:
    """Parameters of a crossbar accelerator (see the module docstring for units and conventions).

    Noise model (docs/device-model.md): programming error is drawn when a cell is written and
    frozen, by `prog_noise_model`: `proportional` g·(1 + prog_noise·N), `independent`
    g + prog_noise·G_max·N on every cell, or `table` g + prog_noise_table[level]·G_max·N (one σ
    per conductance level), then clipped by `prog_noise_clip`; `read_noise` the relative std of
    every cell's current at every read; `stuck_on_rate` / `stuck_off_rate` the fractions of cells
    stuck at the highest / lowest level; conductances drift as (drift_time_s / drift_t0_s) ** -ν,
    ν per cell (`drift_nu` or `drift_nu_table` by level, spread `drift_nu_std` or
    `drift_nu_std_table` by level), optionally compensated (`drift_compensation`, a static ADC
    range's spans rescaled with it by `drift_adc_spans`); `read_noise_1f` a 1/f read noise frozen over the reads at
    `drift_time_s`, `input_noise` / `output_noise` the DAC- and ADC-referred noise of every
    conversion; the wire resistances (`wire_resistance` and friends, in units of 1 / G_max) cause
    IR drop (`cimxdsl.device.parasitics`).
    """

    name: str = "custom"
    # geometry
    rows: int = 128
    cols: int = 128
    crossbars: int = 16
    cores: int = 1
    crossbars_per_core: int = 16
    # precision
    weight_bits: int = setting(8, low=1, high=MAX_BITS)
    input_bits: int = setting(8, low=1, high=MAX_BITS)
    cell_bits: int = setting(2, low=1, high=MAX_BITS)
    dac_bits: int = setting(1, low=1, high=MAX_BITS)
    adc_bits: int = setting(0, low=0, high=MAX_BITS, expected=f"an integer from 0 (lossless) to {MAX_BITS}")
    adc_range: str = setting("full", choices=ADC_RANGES)
    """`full`: the true largest column sum; `full_pow2`: that rounded up to a power of two;
    `calibrated`: the largest sum of each read (idealised); `static_array` / `static_slice` /
    `static_column`: a span per array / per weight slice / per column fixed from a calibration set
    (see docs/device-model.md)."""
    encoding: str = setting("differential", choices=ENCODINGS)
    input_encoding: str = setting("offset", choices=INPUT_ENCODINGS)
    """How signed inputs reach the DACs: unsigned DACs with `offset` (x + 2**(input_bits-1)),
    `twos_complement` (the sign bit in its own pass, subtracted) or `sign_magnitude` (a pass for
    the positive and one for the negative entries); or `bipolar` DACs, which drive each row at
    ±(the digit of |x|) in one pass, read by signed ADCs."""
    """`differential`: a pair of arrays holds max(w, 0) and max(-w, 0) (on 1-bit cells the
    two-cell mapping of binary and ternary weights: +1 LRS/HRS, -1 HRS/LRS, 0 HRS/HRS); `offset`:
    one array holds w + c; `reference`: binary weights (-1, +1) in one 1-bit cell each (LRS for
    +1, HRS for -1), read against a reference column of cells at the mid conductance
    (G_LRS + G_HRS) / 2, subtracted before a signed ADC."""
    subtraction: str = setting("digital", choices=SUBTRACTIONS)
    """Where a differential pair is subtracted: `digital` after one ADC per array (Reißmann 2024, §6.2),
    or `analog` before one ADC per column pair (MNSIM's `Sub_Position`; one conversion instead of
    two, of a signed sum)."""
    on_off_ratio: float = setting(0.0, low=0, expected="0 (an ideal HRS of zero conductance) or a ratio above 1")
    """G_LRS / G_HRS of the cells (0: infinite, the lowest level conducts nothing): the lowest level
    then conducts G_max / (on_off_ratio - 1) in units of a level step, which every cell adds;
    a differential pair or a reference column cancels it."""
    # noise
    prog_noise: float = 0.0
    reference_noise: float = setting(0.0, low=0)
    """The programming σ of a reference column's cells (units of G_LRS - G_HRS), one draw per row."""
    prog_noise_model: str = setting("proportional", choices=PROG_NOISE_MODELS)
    prog_noise_table: tuple[float, ...] = setting(
        (), low=0, expected="a list of non-negative numbers (one σ per conductance level, in units of G_max)"
    )
    prog_noise_clip: str = setting("auto", choices=PROG_NOISE_CLIPS)
    """Where a programmed conductance is clipped: `zero` at 0 only, `both` to [0, G_max], `auto`
    by the model (`proportional` at 0, `independent` and `table` to [0, G_max])."""
    read_noise: float = 0.0
    read_noise_1f: float = 0.0
    """Q of the 1/f read noise: each cell's conductance g(t) gets g(t)·Q·sqrt(ln((t + t_r) /
    (2 t_r)))·N at t = `drift_time_s`, t_r = `read_pulse_s`, the same for every read of the run."""
    read_pulse_s: float = setting(250e-9, positive=True)
    input_noise: float = 0.0
    """σ of the Gaussian noise on every row's DAC output, per pass, in units of the DAC's top level."""
    output_noise: float = 0.0
    """σ of the Gaussian noise on every ADC's input, per conversion, in units of one top-level cell
    read at the DAC's top level."""
    stuck_on_rate: float = setting(0.0, low=0, high=1)
    stuck_off_rate: float = setting(0.0, low=0, high=1)
    drift_nu: float = 0.0
    """Mean drift exponent ν of every cell (`drift_nu_table`: per conductance level instead)."""
    drift_nu_std: float = 0.0
    """Spread σ_ν of ν from cell to cell (`drift_nu_std_table`: per conductance level instead)."""
    drift_nu_table: tuple[float, ...] = setting(
        (), low=0, expected="a list of non-negative numbers (one mean ν per conductance level)"
    )
    drift_nu_std_table: tuple[float, ...] = setting(
        (), low=0, expected="a list of non-negative numbers (one σ_ν per conductance level)"
    )
    drift_t0_s: float = setting(1.0, positive=True)
    drift_time_s: float = setting(1.0, positive=True)
    drift_compensation: str = setting("none", choices=DRIFT_COMPENSATIONS)
    """`global`: outputs scaled by one factor from a reference read (all rows on) at t₀ and at t;
    `column`: a factor per output column."""
    drift_adc_spans: str = setting("rescaled", choices=DRIFT_ADC_SPANS)
    """With compensation, a static ADC range's spans at read time: `rescaled` by the same reference
    read (span / factor: the ADC keeps its resolution as the sums shrink), or `fixed` as
    calibrated at t₀ (the factor then only scales the ADC's outputs)."""
    # parasitics (resistances in units of 1 / G_max, the top-level cell's resistance)
    wire_resistance: float = 0.0
    """One wire segment between neighbouring cells, of rows and of columns alike."""
    row_wire_resistance: float | None = None
    col_wire_resistance: float | None = None
    source_resistance: float = 0.0
    sink_resistance: float = 0.0
    ir_drop_solver: str = setting("auto", choices=IR_DROP_SOLVERS)
    seed: int = setting(0, low=0)
    analog_dtype: str = setting("float64", choices=ANALOG_DTYPES)
    """The float type of the conductances and analog sums of a device whose sums are no integers
    (noise, drift, an HRS current, IR drop): `float64`, or `float32` (a bit-sliced simulation
    1.25–1.5× faster; a sum is then rounded to 24 bits, which moves an ADC level only where the sum
    lies within ~1e-7 of its rounding boundary). Integer sums are exact in float32 either way."""
    # timing
    cycle_ns: float = setting(1.0, positive=True)
    pipeline_fill_cycles: int = 1
    write_ns_per_row: float = 0.0
    digital_macs_per_ns: float = setting(_DIGITAL_MACS_PER_NS, positive=True)
    # energy (pJ per event)
    crossbar_read_pj: float = 0.0
    dac_pj: float = 0.0
    adc_pj: float = 0.0
    sample_hold_pj: float = 0.0
    shift_add_pj: float = 0.0
    write_pj_per_cell: float = 0.0
    digital_pj_per_mac: float = 0.0

    def __post_init__(self) -> None:
        DEVICE.validate(self)
        if self.stuck_on_rate + self.stuck_off_rate > 1:
            raise DeviceConfigError(
                "'stuck_on_rate' + 'stuck_off_rate' must be at most 1, "
                f"got {self.stuck_on_rate} + {self.stuck_off_rate}"
            )
        table, levels = self.prog_noise_table, 2**self.cell_bits
        if (self.prog_noise_model == "table") != bool(table) or (table and len(table) != levels):
            raise DeviceConfigError(
                f"'prog_noise_table' must list one σ per conductance level ({levels} for 'cell_bits'="
                f"{self.cell_bits}) exactly when 'prog_noise_model' is 'table', got {list(table)} with "
                f"'prog_noise_model'={self.prog_noise_model!r}"
            )
        if self.drift_time_s < self.drift_t0_s:
            raise DeviceConfigError(
                f"'drift_time_s' must be at least 'drift_t0_s' (the first read after programming, "
                f"{self.drift_t0_s:g} s), got {self.drift_time_s:g}"
            )
        for key in ("drift_nu_table", "drift_nu_std_table"):
            if getattr(self, key) and len(getattr(self, key)) != levels:
                raise DeviceConfigError(
                    f"'{key}' must list one value per conductance level ({levels} for 'cell_bits'="
                    f"{self.cell_bits}), got {list(getattr(self, key))}"
                )
        if 0 < self.on_off_ratio <= 1:
            raise DeviceConfigError(f"'on_off_ratio' must be 0 (ideal) or above 1, got {self.on_off_ratio}")
        if self.on_off_ratio and self.encoding == "offset":
            raise DeviceConfigError(
                "'on_off_ratio' needs an encoding that cancels the HRS current ('differential' or "
                "'reference'), got 'encoding'='offset'"
            )
        if self.encoding == "reference" and not self.wires.ideal:
            raise DeviceConfigError(
                "'encoding'='reference' is not modelled with wire resistance: set 'wire_resistance', "
                "'source_resistance' and 'sink_resistance' to 0"
            )
        if self.encoding == "reference" and (self.cell_bits, self.weight_bits) != (1, 1):
            raise DeviceConfigError(
                "'encoding'='reference' holds binary weights in 1-bit cells: it needs 'cell_bits' = 1 and "
                f"'weight_bits' = 1, got {self.cell_bits} and {self.weight_bits}"
            )
        if self.cells_per_weight > self.cols:
            raise DeviceConfigError(
                f"'cols' must hold one weight ({self.cells_per_weight} cells of 'cell_bits'="
                f"{self.cell_bits} for 'weight_bits'={self.weight_bits}), got {self.cols}"
            )

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeviceConfig:
        """Build from a (possibly grouped) dict; `preset = "name"` starts from that preset, and a dict
        without one from the default device (`DEFAULT_DEVICE`)."""
        flat = flatten(data)
        return preset(flat.pop("preset", DEFAULT_DEVICE)).replace(**flat)

    @classmethod
    def from_toml(cls, path: str | Path) -> DeviceConfig:
        """Load a TOML (or, by its `.json` suffix, JSON) file: flat keys or
        [geometry]/[precision]/[noise]/[timing]/[energy] tables. Without a `name` key, the device
        is named after the file (so that reports do not name the preset it starts from)."""
        data = DEVICE.read(path)
        config = cls.from_dict(data)
        return config if "name" in flatten(data) else config.replace(name=Path(path).stem)

    def with_precision(self, precision: tuple[int, int] | None) -> DeviceConfig:
        """This device for a layer of `precision` (weight bits, input bits): its own bits replace the
        device's (None: the device as it is). A 1-bit weight is a ternary sign (-1, 0, +1): a pair or
        a reference column holds it in 1 bit, the offset encoding in 2 (w + 2)."""
        if precision is None or precision == (self.weight_bits, self.input_bits):
            return self
        weight_bits = 2 if precision[0] == 1 and self.encoding == "offset" else precision[0]
        return self.replace(weight_bits=weight_bits, input_bits=precision[1])

    def replace(self, **changes: Any) -> DeviceConfig:
        """A copy with `changes` applied, validated like a new config."""
        for key in changes:
            DEVICE.check_known(key)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """All fields as a flat plain dict (round-trips through `from_dict`)."""
        return dataclasses.asdict(self)

    def to_toml(self) -> str:
        """All fields as a flat TOML document (round-trips through `from_toml`)."""
        lines = []
        for key, value in self.to_dict().items():
            if value is None:  # an unset optional key (TOML has no null)
                continue
            text = json.dumps(list(value) if isinstance(value, tuple) else value)
            lines.append(f"{key} = {text}")
        return "\n".join(lines) + "\n"

    # ---- derived quantities -------------------------------------------------------------------
    @property
    def cells_per_weight(self) -> int:
        """Cells (neighbouring columns) per weight: ceil(weight_bits / cell_bits).

        Differential: the pair stores |w| (both arrays), so any w with |w| < 2**weight_bits fits —
        signed and unsigned weight_bits-bit values alike. Offset: one array stores w + c, with c = 0 for
        a non-negative tile and 2**(weight_bits-1) otherwise, so it needs weight_bits bits as well.
        """
        return -(-self.weight_bits // self.cell_bits)

    @property
    def input_slices(self) -> int:
        """Input digits (DAC passes) sent over time per input row, by `input_encoding`:
        offset ceil(input_bits / dac_bits); twos_complement ceil((input_bits - 1) / dac_bits) + 1
        (the sign bit alone); sign_magnitude the same as offset per pass, two passes for a row with
        a negative entry (`mvm_events` counts them); bipolar the same as offset (the digits of
        |x|, each driven with the row's sign)."""
        if self.input_encoding == "twos_complement":
            return -(-(self.input_bits - 1) // self.dac_bits) + 1
        return -(-self.input_bits // self.dac_bits)

    @property
    def arrays_per_crossbar(self) -> int:
        """Physical arrays per logical crossbar: 2 for the differential pair, 1 for offset and
        reference (whose reference column shares the array)."""
        return 2 if self.encoding == "differential" else 1

    @property
    def read_arrays(self) -> int:
        """Column sums read per weight slice: the pair's two, or the weight's and its reference
        column's (`reference`), or one (`offset`)."""
        return 1 if self.encoding == "offset" else 2

    @property
    def analog_subtraction(self) -> bool:
        """Whether the pair's (or the reference column's) sums are subtracted before the ADC."""
        return self.encoding == "reference" or (self.subtraction == "analog" and self.arrays_per_crossbar == 2)

    @property
    def integral(self) -> bool:
        """Noiseless with integer conductances (no HRS current), so every column sum is an integer."""
        return self.noiseless and not self.on_off_ratio

    @property
    def hrs_apart(self) -> bool:
        """Whether the HRS current enters a read as h·Σ_k d_k, added to the column sums of the cells'
        levels (noiseless with ideal wires: those sums stay exact integers, so a read's result does
        not depend on how rows are batched), rather than through every cell's conductance."""
        return bool(self.on_off_ratio) and self.noiseless

    @property
    def hrs_level(self) -> float:
        """The conductance of the lowest level in units of a level step: G_max / (on_off_ratio - 1)."""
        return (2**self.cell_bits - 1) / (self.on_off_ratio - 1) if self.on_off_ratio else 0.0

    @property
    def lossless_adc_bits(self) -> int:
        """The fewest ADC bits that convert every column sum of a full read exactly (noiseless
        integer sums): an unsigned ADC L = 2**n - 1 >= F, a signed one 2**(n-1) - 1 >= F, F the
        full-scale sum (`adc_full_scale`; a reference column's difference spans ±F)."""
        return self.adc_full_scale.bit_length() + self.signed_adc

    @property
    def signed_adc(self) -> bool:
        """Whether the ADCs convert signed sums: a pair's difference, or the sums of bipolar inputs."""
        return self.analog_subtraction or self.input_encoding == "bipolar"

    @property
    def tile_shape(self) -> tuple[int, int]:
        """(max K, max N) of a weight tile one logical crossbar holds."""
        return tile_shape(self.rows, self.weight_cols, self.cells_per_weight)

    @property
    def weight_cols(self) -> int:
        """The columns that hold weights: all but the reference column of `reference`."""
        return self.cols - (self.encoding == "reference")

    @property
    def adc_full_scale(self) -> int:
        """Largest possible column sum of one read: rows × max DAC level × max cell level, the
        levels those of the values' bits where these are fewer (1-bit weights on 2-bit cells use
        levels 0 and 1 only): an ADC's full-scale span follows the precision of the layer it reads."""
        dac, cell = min(self.dac_bits, self.input_bits), min(self.cell_bits, self.weight_bits)
        return self.rows * (2**dac - 1) * (2**cell - 1)

    @property
    def static_adc(self) -> bool:
        """Whether the ADC spans come from a calibration set (`static_array` / `static_slice` /
        `static_column`)."""
        return self.adc_range in STATIC_RANGES and not self.lossless_adc

    @property
    def nominal(self) -> DeviceConfig:
        """This device without programming or read noise, stuck cells or drift: what a compiler
        calibrates static ADC spans on (the wires, which do not change over time, stay)."""
        return self.replace(
            prog_noise=0.0,
            prog_noise_model="proportional",
            prog_noise_table=(),
            prog_noise_clip="auto",
            read_noise=0.0,
            read_noise_1f=0.0,
            input_noise=0.0,
            output_noise=0.0,
            stuck_on_rate=0.0,
            stuck_off_rate=0.0,
            drift_nu=0.0,
            drift_nu_std=0.0,
            drift_nu_table=(),
            drift_nu_std_table=(),
            reference_noise=0.0,
        )

    @property
    def without_wires(self) -> DeviceConfig:
        """This device with ideal wires (no IR drop)."""
        return self.replace(
            wire_resistance=0.0,
            row_wire_resistance=None,
            col_wire_resistance=None,
            source_resistance=0.0,
            sink_resistance=0.0,
        )

    @property
    def calibration_key(self) -> tuple:
        """The fields static ADC spans depend on: devices that agree on them share a calibration."""
        return tuple(getattr(self, f) for f in CALIBRATION_FIELDS)

    @property
    def lossless_adc(self) -> bool:
        return self.adc_bits == 0

    @cached_property  # (asked per product; the fields are frozen once validated)
    def noiseless(self) -> bool:
        """No programming or read noise, no stuck cells, no drift and no IR drop."""
        return (
            (self.prog_noise == 0 if self.prog_noise_model != "table" else not any(self.prog_noise_table))
            and not self.read_noisy
            and self.read_noise_1f == 0
            and self.stuck_on_rate == 0
            and self.stuck_off_rate == 0
            and not self.drifts
            and self.wires.ideal
            and self.reference_noise == 0
        )

    @property
    def read_noisy(self) -> bool:
        """Whether every read draws noise (`read_noise`, `input_noise`, `output_noise`)."""
        return bool(self.read_noise or self.input_noise or self.output_noise)

    @property
    def drifts(self) -> bool:
        """Whether the conductances have drifted at `drift_time_s`."""
        nu = self.drift_nu if not self.drift_nu_table else max(self.drift_nu_table)
        spread = self.drift_nu_std if not self.drift_nu_std_table else max(self.drift_nu_std_table)
        return self.drift_time_s != self.drift_t0_s and bool(nu or spread)

    @property
    def wires(self) -> Wires:
        """The wire, source and sink resistances in units of 1 / (one cell step)."""
        step = 2**self.cell_bits - 1
        row = self.wire_resistance if self.row_wire_resistance is None else self.row_wire_resistance
        col = self.wire_resistance if self.col_wire_resistance is None else self.col_wire_resistance
        return Wires(row / step, col / step, self.source_resistance / step, self.sink_resistance / step)

    @property
    def precision(self) -> dict[str, Any]:
        """What limits the device's results, as reports show it: the bits of weights, inputs,
        cells, DACs and ADC (0: lossless), the ADC range policy, the encodings and the noise
        parameters that are not zero."""
        noise = {f: getattr(self, f) for f in NOISE_FIELDS if getattr(self, f)}
        if self.prog_noise_model == "table" and any(self.prog_noise_table):
            noise["prog_noise_table"] = list(self.prog_noise_table)
        if self.prog_noise_clip != "auto" and ("prog_noise" in noise or "prog_noise_table" in noise):
            noise["prog_noise_clip"] = self.prog_noise_clip
        for key in ("drift_nu_table", "drift_nu_std_table"):
            if any(getattr(self, key)):
                noise[key] = list(getattr(self, key))
        if self.drifts:
            noise.update(drift_t0_s=self.drift_t0_s, drift_time_s=self.drift_time_s)
            if self.drift_compensation != "none":
                noise["drift_compensation"] = self.drift_compensation
                if self.static_adc and self.drift_adc_spans != "rescaled":
                    noise["drift_adc_spans"] = self.drift_adc_spans
        return {
            "device": self.name,
            **{f: getattr(self, f) for f in ("weight_bits", "input_bits", "cell_bits", "dac_bits", "adc_bits")},
            "adc_range": self.adc_range,
            "encoding": self.encoding,
            "input_encoding": self.input_encoding,
            **({"on_off_ratio": self.on_off_ratio} if self.on_off_ratio else {}),
            "lossless_adc_bits": self.lossless_adc_bits,
            "noise": noise,
        }

    @cached_property
    def exact(self) -> bool:
        """Lossless ADC and no noise: every MVM equals the exact product."""
        return self.lossless_adc and self.noiseless


def tile_shape(rows: int, cols: int, cells_per_weight: int) -> tuple[int, int]:
    """(max K, max N) of a weight tile on a `rows × cols` crossbar: a row per reduction index, and
    `cells_per_weight` neighbouring columns per output."""
    return rows, cols // cells_per_weight


# ---- validation -------------------------------------------------------------------------------
DEVICE = Schema(DeviceConfig, DeviceConfigError)
"""The keys of a device configuration and their checks (the presets are added below)."""
FIELD_NAMES = tuple(DEVICE.fields)
NOISE_FIELDS = tuple(
    f
    for f in (*GROUPS["noise"], *GROUPS["parasitics"])
    if DEVICE.fields[f][0] is float and f not in ("read_pulse_s", "drift_t0_s", "drift_time_s")
)
"""The non-ideality fields a report lists when they are not zero."""
CALIBRATION_FIELDS = (
    "rows",
    "cols",
    "weight_bits",
    "input_bits",
    "cell_bits",
    "dac_bits",
    "encoding",
    "input_encoding",
    "subtraction",
    "on_off_ratio",
    *GROUPS["parasitics"],
)


def flatten(data: Any) -> dict[str, Any]:
    """Merge the known group tables into one flat dict; reject unknown tables and duplicates."""
    DEVICE.table_of(data)
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            if key not in GROUPS:
                hint = did_you_mean(key, GROUPS)
                raise DeviceConfigError(f"unknown table '{key}'{hint}; tables: {', '.join(GROUPS)}")
            items = value.items()
            for sub_key in value:
                if sub_key in FIELD_NAMES and sub_key not in GROUPS[key]:
                    home = next((g for g, keys in GROUPS.items() if sub_key in keys), None)
                    where = f"[{home}]" if home else "the top level"
                    raise DeviceConfigError(f"key '{sub_key}' belongs in {where}, not [{key}]")
        else:
            items = [(key, value)]
        for sub_key, sub_value in items:
            if sub_key in flat:
                raise DeviceConfigError(f"key '{sub_key}' given twice")
            if sub_key != "preset":
                DEVICE.check_known(sub_key)
            flat[sub_key] = sub_value
    return flat


# ---- presets ----------------------------------------------------------------------------------
# Sources of the figures below:
#   [ISAAC]      A. Shafiee et al., "ISAAC: A Convolutional Neural Network Accelerator with In-Situ Analog
#                Arithmetic in Crossbars", ISCA 2016 (Table 6: component power and area).
#   [PUMA-paper] A. Ankit et al., "PUMA: A Programmable Ultra-efficient Memristor-based Accelerator for Machine
#                Learning Inference", ASPLOS 2019.
#   [PUMA-c]     PUMA's simulator, github.com/Aayush-Ankit/puma-simulator, include/constants.py and config.py;
#                [ISS #63] is its issue 63.
#   [MN-adc]     MNSIM 2.0, github.com/thu-nics/MNSIM-2.0, MNSIM/Hardware_Model/{ADC,DAC}.py (Zhu et al.,
#                "MNSIM 2.0: A Behavior-Level Modeling Tool for Processing-In-Memory Architectures", TCAD 2023).
#   [CS-cfg]     CrossSim, github.com/sandialabs/cross-sim, simulator/configs/{ISAAC,PRIME}.json.
#   [PCOMP]      X. Sun et al., "PIMCOMP: A Universal Compilation Framework for Crossbar-based PIM DNN
#                Accelerators", DAC 2023, and github.com/sunxt99/PIMCOMP-NN.
#   [PRIME]      P. Chi et al., "PRIME: A Novel Processing-in-Memory Architecture for Neural Network
#                Computation in ReRAM-based Main Memory", ISCA 2016.
# fmt: off
_ISAAC_CYCLE_NS = 100.0  # [PUMA-c] xbar_ip_lat 100 ns, ISAAC's 100 ns cycle [ISAAC]
_PUMA_WRITE_NS_PER_ROW = 351e3 / 32 / 128  # whole 128x128 crossbar in 351/32 us [PUMA-c]
_PUMA_WRITE_PJ_PER_CELL = 676e3 / 32 / (128 * 128)  # 676/32 nJ per crossbar [PUMA-c]
_ISAAC_ENERGY = dict(
    crossbar_read_pj=0.3 * _ISAAC_CYCLE_NS,  # 0.3 mW x 100 ns = 30 pJ [PUMA-c][ISAAC]
    dac_pj=3.9e-3 * _ISAAC_CYCLE_NS,  # 1-bit DAC 3.9 uW x 100 ns = 0.39 pJ per row [PUMA-c]
    adc_pj=adc_energy_pj(2.0, 1.28),  # 8-bit SAR 2.0 mW at 1.28 GS/s = 1.5625 pJ [PUMA-c]
    sample_hold_pj=9.7e-6 * _ISAAC_CYCLE_NS,  # 9.7e-6 mW x 100 ns [PUMA-c]
    shift_add_pj=0.05 * _ISAAC_CYCLE_NS,  # 0.05 mW x 100 ns = 5 pJ [PUMA-c]
    write_pj_per_cell=_PUMA_WRITE_PJ_PER_CELL,
    digital_pj_per_mac=_DIGITAL_PJ_PER_MAC,
)

PRESETS: dict[str, DeviceConfig] = {
    # A perfect crossbar: 32-bit weights in one cell, 32-bit inputs in one slice, lossless ADC, no
    # noise. No cost model (energies 0, 1 ns cycle): use a hardware preset for latency and energy.
    "ideal": DeviceConfig(
        name="ideal",
        weight_bits=32,
        input_bits=32,
        cell_bits=32,
        dac_bits=32,
        adc_bits=0,
    ),
    # The simulator of F. Reißmann, "An MLIR-based compiler flow for memristive-crossbar accelerators", Bachelor's thesis, TU Dresden, 2024, sec. 6.2-6.3.
    "cinnamon": DeviceConfig(
        name="cinnamon",
        rows=128,
        cols=128,  # sec. 6.2: "a crossbar with size 128x128"
        crossbars=16,
        crossbars_per_core=16,  # the Cinnamon runtime's fixed crossbars[16] (its runtime/Memristor library)
        weight_bits=4,
        input_bits=4,  # sec. 6.3 benchmark: 4-bit values, "fit in two bit slices" (Fig. 6.1)
        cell_bits=2,
        dac_bits=2,  # sec. 6.2: 2-bit DACs and 2-bit memristors
        adc_bits=0,  # the thesis' simulator returns exact results and gives no ADC resolution
        encoding="differential",  # sec. 6.2: two crossbars, differential encoding
        cycle_ns=1.0,
        pipeline_fill_cycles=6,  # sec. 6.3: 6 cycles of 1 ns fill, then one per slice
        write_ns_per_row=_PUMA_WRITE_NS_PER_ROW,  # sec. 6.3 gives no write latency; PUMA's [PUMA-c]
        # sec. 6.3: "about 1750 pJ" for the crossbars over 40 rows x 2 slices x 2 arrays (derived /160)
        crossbar_read_pj=1750 / 160,
        # The thesis gives no periphery energy: component powers of ISAAC/PUMA/MNSIM held for the 1 ns cycle.
        dac_pj=7.8e-3 * 1.0,  # MNSIM 2-bit DAC 7.8 uW x 1 ns [MN-adc]
        adc_pj=adc_energy_pj(2.0, 1.28),  # ISAAC's 8-bit SAR per conversion [PUMA-c]
        sample_hold_pj=9.7e-6 * 1.0,  # 9.7e-6 mW x 1 ns [PUMA-c]
        shift_add_pj=0.05 * 1.0,  # 0.05 mW x 1 ns [PUMA-c]
        write_pj_per_cell=_PUMA_WRITE_PJ_PER_CELL,  # PUMA's [PUMA-c]
        digital_pj_per_mac=_DIGITAL_PJ_PER_MAC,
    ),
    # ISAAC (ISCA'16): [ISAAC][PCOMP][CS-cfg], energies [PUMA-c].
    "isaac": DeviceConfig(
        name="isaac",
        rows=128,
        cols=128,
        cell_bits=2,
        weight_bits=16,
        input_bits=16,  # 16-bit weights in 8 slices
        dac_bits=1,
        adc_bits=9,  # CrossSim ISAAC.json: 9 b; ISAAC's 8 b relies on its weight-flip trick, not modelled
        adc_range="full",
        encoding="offset",  # CrossSim ISAAC.json: offset with a unit column [CS-cfg]
        cores=168,
        crossbars_per_core=96,
        crossbars=168 * 96,  # 168 cores x 12x8 crossbars
        cycle_ns=_ISAAC_CYCLE_NS,
        pipeline_fill_cycles=1,
        write_ns_per_row=_PUMA_WRITE_NS_PER_ROW,
        **_ISAAC_ENERGY,
    ),
    # PUMA (ASPLOS'19): [PUMA-c][PUMA-paper]. PUMA puts the 8 slices of a 16-bit weight on 8
    # crossbars; we put them on neighbouring columns, which counts the same cells and conversions.
    "puma": DeviceConfig(
        name="puma",
        rows=128,
        cols=128,
        cell_bits=2,
        weight_bits=16,
        input_bits=16,
        dac_bits=1,
        adc_bits=8,
        adc_range="full",
        encoding="offset",  # not stated in the notes; ISAAC's encoding assumed
        cores=138,
        crossbars_per_core=8 * 16,
        crossbars=138 * 8 * 16,  # 138 cores x 8x16 crossbars
        cycle_ns=_ISAAC_CYCLE_NS,
        pipeline_fill_cycles=1,
        write_ns_per_row=_PUMA_WRITE_NS_PER_ROW,
        **{
            **_ISAAC_ENERGY,
            # xbar_ip_energy 170 pJ: the MVMU inner product without the ADC [PUMA-c][ISS #63];
            # taken to include the DACs and sample-and-hold, which are therefore 0 here.
            "crossbar_read_pj": 170.0,
            "dac_pj": 0.0,
            "sample_hold_pj": 0.0,
            # ADC 0.25 mW per bit x 8 bits = 2.0 mW at 1.28 GS/s [PUMA-c]
            "adc_pj": adc_energy_pj(0.25 * 8, 1.28),
        },
    ),
    # PRIME (ISCA'16): CrossSim PRIME.json [CS-cfg], [PRIME].
    "prime": DeviceConfig(
        name="prime",
        rows=256,
        cols=256,
        cell_bits=4,
        weight_bits=8,  # 8-bit weights in 2 slices of 4-bit cells
        input_bits=6,
        dac_bits=3,  # 6-bit inputs through 3-bit DACs
        input_encoding="bipolar",  # SignMagnitudeDAC: ± the 3-bit digit per row, one pass
        adc_bits=6,
        adc_range="static_slice",  # 6-bit ramp ADC, CALIBRATED: a range per weight slice
        encoding="differential",  # "balanced"
        crossbars=64,
        crossbars_per_core=64,  # not in the notes: a placeholder
        cycle_ns=_ISAAC_CYCLE_NS,
        pipeline_fill_cycles=1,  # not in the notes: ISAAC's cycle assumed
        write_ns_per_row=_PUMA_WRITE_NS_PER_ROW,  # not in the notes: PUMA's assumed
        crossbar_read_pj=_ISAAC_ENERGY["crossbar_read_pj"] * 4,  # ISAAC's per-cell energy x 4x cells (derived)
        dac_pj=15.6e-3 * _ISAAC_CYCLE_NS,  # MNSIM 3-bit DAC 15.6 uW x 100 ns [MN-adc]
        adc_pj=adc_energy_pj(1.26, 1.0),  # MNSIM 6-bit ADC 1.26 mW at 1 GS/s [MN-adc]
        sample_hold_pj=_ISAAC_ENERGY["sample_hold_pj"],
        shift_add_pj=_ISAAC_ENERGY["shift_add_pj"],
        write_pj_per_cell=_PUMA_WRITE_PJ_PER_CELL,
        digital_pj_per_mac=_DIGITAL_PJ_PER_MAC,
    ),
}
# fmt: on
DEVICE.presets.update(PRESETS)


DEFAULT_DEVICE = "isaac"
"""The device of every face when none is given: `cim-compile`, `cim-run`, `cimxdsl.compile` and
the passes with a `device` option, and the base of a device file or sweep table that names no
`preset`. ISAAC (Shafiee et al., ISCA 2016), because a default should give
the right answer and real costs. Its 9-bit ADC over the full range resolves every column sum of a
read exactly (at most 128 rows x a 1-bit input digit x a 2-bit cell level = 384 < 2**9 - 1), and
its cells and DACs hold int8 values, so an int8 model computes on it the same numbers as on exact
crossbars; its latency and energy come from published figures. `ideal` also computes exactly, but
has no cost model (zero energy); `cinnamon`'s 4-bit weights and inputs cost accuracy. The
interpreters (`cimxdsl.interpreters.run`, `Program`) and `Device` given no device compute exact
products: the meaning of the IR itself."""


def preset(name: str) -> DeviceConfig:
    """The named preset: ideal, cinnamon, isaac, puma or prime."""
    return DEVICE.preset(name)


def load_device_config(spec: str | Path | DeviceConfig) -> DeviceConfig:
    """A config from a preset name or a .toml/.json path (which may say `preset = "isaac"` and override)."""
    if isinstance(spec, DeviceConfig):
        return spec
    return DeviceConfig.from_toml(spec) if is_file_spec(spec) else preset(str(spec))
