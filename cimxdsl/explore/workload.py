"""Features of a workload for the learned predictor: the crossbar products of a model, per layer
and per model, and what they imply on a given device.

A model is imported for one input (batch 1) and lowered to `cinm` (`linalg-to-cinm`,
`cinm-isolate-compute`), where every layer the crossbars can run is a `cinm.compute` holding
gemm/gemv products (a convolution as im2col then gemm). Each product is a `Layer`: M (rows of the
input matrix: output pixels of a convolution, tokens of a transformer), K (the reduction), N (the
outputs), the kernel (KH·KW of the im2col, 1 otherwise) and whether both operands are computed at
run time (attention's Q·Kᵀ and P·V: no stored weights). Bits are the device's (`weight_bits`,
`input_bits`): every layer is quantized to them.

`model_features` sums and aggregates the layers into one fixed-length vector (totals, maxima,
MAC-weighted means, all independent of the device); `device_counts` adds the counts the layers
imply on a device (tiles, array reads, ADC conversions per input), from the device's own tile
shape, cells per weight and input slices.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnx

from cimxdsl.device import DeviceConfig
from cimxdsl.device.metrics import energy_pj


@dataclass(frozen=True)
class Layer:
    """One crossbar product of a model, for one input."""

    name: str
    m: int
    k: int
    n: int
    kernel: int = 1
    runtime: bool = False
    """Both operands computed at run time (nothing stored in crossbars ahead of the run)."""

    @property
    def macs(self) -> int:
        return self.m * self.k * self.n


def model_layers(model: onnx.ModelProto | str | Path) -> list[Layer]:
    """The crossbar products of `model` (a path or a `ModelProto`), for one input."""
    from cimxdsl.dialects import cinm
    from cimxdsl.flow.memristor import apply_passes
    from cimxdsl.frontend.loading import load_model
    from cimxdsl.frontend.onnx_importer import import_onnx

    module = apply_passes(import_onnx(load_model(model, batch=1)), "linalg-to-cinm,cinm-isolate-compute")
    layers = []
    for compute in module.walk():
        if not isinstance(compute, cinm.ComputeOp):
            continue
        kernel = max(
            (math.prod(op.kernel.get_values()) for op in compute.walk() if isinstance(op, cinm.Im2colOp)), default=1
        )
        products = [op for op in compute.walk() if isinstance(op, cinm.GemmOp | cinm.GemvOp)]
        for i, product in enumerate(products):
            left = product.left.type.get_shape()
            right = product.right.type.get_shape()
            if isinstance(product, cinm.GemmOp):
                m, k, n = left[0], left[1], right[1]
            else:  # matrix (M x K) times vector: the vector is the input, the matrix the stored operand
                m, k, n = 1, left[1], left[0]
            runtime = not all(is_constant(v) for v in stored_operand(product))
            name = cinm.layer_name(compute) + (f"#{i}" if len(products) > 1 else "")
            layers.append(Layer(name, m, k, n, kernel if isinstance(product, cinm.GemmOp) else 1, runtime))
    return layers


def stored_operand(product) -> list:
    """The operand a crossbar would hold: the right of a gemm, the matrix of a gemv."""
    from cimxdsl.dialects import cinm

    return [product.right if isinstance(product, cinm.GemmOp) else product.left]


def is_constant(value) -> bool:
    """Whether `value` is computed from constants only (weights, folded reshapes and transposes)."""
    from xdsl.ir import BlockArgument

    seen, stack = set(), [value]
    while stack:
        v = stack.pop()
        if isinstance(v, BlockArgument):
            # a compute's block argument stands for the operand passed to it
            owner = v.owner.parent_op()
            if owner is None or not hasattr(owner, "arguments"):
                return False
            stack.append(owner.arguments[v.index])
            continue
        op = v.owner
        if id(op) in seen:
            continue
        seen.add(id(op))
        if op.name == "arith.constant":
            continue
        if not op.operands:
            if op.name == "tensor.empty":
                continue
            return False
        stack.extend(op.operands)
    return True


WORKLOAD_FEATURES = (
    "layers",
    "runtime_layers",
    "log_macs",
    "log_weights",
    "runtime_mac_share",
    "conv_mac_share",
    "log_m_total",
    "log_k_max",
    "log_n_max",
    "log_k_mean",
    "log_n_mean",
    "kernel_max",
)
"""`model_features` keys, in order (device-independent)."""
DEVICE_WORKLOAD_FEATURES = (
    "log_tiles",
    "log_array_reads",
    "log_dac_activations",
    "log_adc_conversions",
    "log_k_per_tile_max",
    "log_cells_written",
    "log_write_ns",
    "log_read_ns",
    "log_digital_macs",
    "adc_shortfall_full",
    "adc_shortfall_used",
    "adc_error_bits",
    "log_latency_estimate",
    "log_energy_estimate",
)
"""`device_features` keys, in order (what the layers imply on a device)."""


def model_features(layers: list[Layer]) -> dict[str, float]:
    """Totals, maxima and MAC-weighted means of the layers (logs are log2(1 + x))."""
    if not layers:
        return dict.fromkeys(WORKLOAD_FEATURES, 0.0)
    m, k, n, kernel = (np.array([getattr(la, f) for la in layers], dtype=float) for f in ("m", "k", "n", "kernel"))
    runtime = np.array([la.runtime for la in layers])
    macs = m * k * n
    share = macs / macs.sum()
    return {
        "layers": float(len(layers)),
        "runtime_layers": float(runtime.sum()),
        "log_macs": log(macs.sum()),
        "log_weights": log((k * n)[~runtime].sum()),
        "runtime_mac_share": float(share[runtime].sum()),
        "conv_mac_share": float(share[kernel > 1].sum()),
        "log_m_total": log(m.sum()),
        "log_k_max": log(k.max()),
        "log_n_max": log(n.max()),
        "log_k_mean": log((share * k).sum()),
        "log_n_mean": log((share * n).sum()),
        "kernel_max": float(kernel.max()),
    }


def device_counts(layers: list[Layer], config: DeviceConfig, placement: str = "host") -> dict[str, float]:
    """Per input on `config`: the weight tiles of the layers, the array reads (a read per input
    slice, row tile and column tile, per array of a differential pair), the rows driven by the DACs
    and the ADC conversions (a column each), as `metrics.mvm_events` counts them; the largest number
    of rows a tile sums. Per run: the cells that hold the weights, and rough times: writing the
    tiles (rows one after another, `crossbars` tiles at a time) and reading them (a layer's tiles
    read at once, in waves of `crossbars`). Products of two run-time tensors count unless
    `placement` keeps them on the host; there they are digital multiply-accumulates."""
    crossbar = [la for la in layers if not (la.runtime and placement == "host")]
    digital = float(sum(la.macs for la in layers if la.runtime and placement == "host"))
    names = ("tiles", "array_reads", "dac_activations", "adc_conversions", "k_per_tile_max", "cells_written")
    if not crossbar:
        return {**dict.fromkeys(names, 0.0), "write_ns": 0.0, "read_ns": 0.0, "digital_macs": digital}
    tile_k, tile_n = config.tile_shape
    m, k, n = (np.array([getattr(la, f) for la in crossbar], dtype=float) for f in ("m", "k", "n"))
    row_tiles = np.ceil(k / tile_k)
    col_tiles = np.ceil(n / max(tile_n, 1))
    tiles = row_tiles * col_tiles
    slices = m * config.input_slices
    reads = slices * tiles * config.arrays_per_crossbar
    converted = slices if config.analog_subtraction else slices * config.arrays_per_crossbar
    waves = np.ceil(tiles / config.crossbars)
    return {
        "tiles": float(tiles.sum()),
        "array_reads": float(reads.sum()),
        "dac_activations": float((slices * config.arrays_per_crossbar * k * col_tiles).sum()),
        "adc_conversions": float((converted * row_tiles * n * config.cells_per_weight).sum()),
        "k_per_tile_max": float(np.minimum(k, tile_k).max()),
        "cells_written": float((k * n).sum() * config.cells_per_weight * config.arrays_per_crossbar),
        "write_ns": float((waves * np.minimum(k, tile_k) * config.write_ns_per_row).sum()),
        "read_ns": float((m * waves * config.input_slices * config.cycle_ns).sum()),
        "digital_macs": digital,
    }


def estimate(layers: list[Layer], config: DeviceConfig, placement: str = "host", inputs: int = 1) -> dict[str, float]:
    """The latency (ns) and energy (pJ) per input of a run of `inputs` inputs in one batch, as the
    device's cost model implies them without simulating: the events of `device_counts` times the
    per-event energies (`metrics.energy_pj`), the weights' programming shared by the run; and a
    schedule where each layer's tiles (row tile by row tile, a column tile after another) go to the
    crossbars in turn, each written (its rows one after another) then read by the whole batch
    (`pipeline_fill_cycles` + slices - 1 cycles), the layer done when its busiest crossbar is, the
    products of one layer (a grouped convolution's groups) sharing the crossbars, and the host's
    products on the digital unit after them. The energy is exact; so is the latency where each
    layer's tiles fit the crossbars (with more tiles, the compiler may order them otherwise). The
    learned predictor corrects what this leaves out (that order, other strategies,
    sign-magnitude's second pass)."""
    counts = device_counts(layers, config, placement)
    events = {**counts, "cells_written": counts["cells_written"] / inputs}
    energy = sum(energy_pj(config, events).values())
    tile_k, tile_n = config.tile_shape
    busy: dict[str, list[np.ndarray]] = {}
    for la in layers:
        if la.runtime and placement == "host":
            continue
        rows = np.minimum(tile_k, la.k - tile_k * np.arange(math.ceil(la.k / tile_k)))
        cycles = config.pipeline_fill_cycles + config.input_slices * la.m * inputs - 1
        per_tile = np.repeat(rows, math.ceil(la.n / max(tile_n, 1))) * config.write_ns_per_row
        busy.setdefault(la.name.split("#")[0], []).append(per_tile + cycles * config.cycle_ns)
    latency = sum(
        np.bincount(np.arange(len(t)) % config.crossbars, t).max() for t in map(np.concatenate, busy.values())
    )
    latency += counts["digital_macs"] * inputs / config.digital_macs_per_ns
    return {"latency_ns": float(latency) / inputs, "energy_pj": float(energy)}


def device_features(
    layers: list[Layer], config: DeviceConfig, placement: str = "host", inputs: int = 1
) -> dict[str, float]:
    """`device_counts` as log2(1 + count), the per-run counts per input of a run of `inputs`; and
    how many bits the ADC lacks for the largest column sum of the device (`full`) and of the
    largest tile the layers fill (`used`), 0 for a lossless ADC."""
    counts = device_counts(layers, config, placement)
    for per_run in ("cells_written", "write_ns"):
        counts[per_run] /= inputs
    analytic = estimate(layers, config, placement, inputs)
    levels = (2**config.dac_bits - 1) * (2**config.cell_bits - 1)
    short = 0.0 if config.lossless_adc else 1.0
    features = {f"log_{name}": log(value) for name, value in counts.items()}
    features["adc_shortfall_full"] = short * max(0.0, log(config.adc_full_scale) - config.adc_bits)
    features["adc_shortfall_used"] = short * max(0.0, log(counts["k_per_tile_max"] * levels) - config.adc_bits)
    features["adc_error_bits"] = adc_error_bits(layers, config, placement)
    # the estimates exactly (log2, not log2(1 + x)): the predictor learns the costs relative to them
    features["log_latency_estimate"] = float(np.log2(max(analytic["latency_ns"], 1e-12)))
    features["log_energy_estimate"] = float(np.log2(max(analytic["energy_pj"], 1e-12)))
    return features


NO_ADC_ERROR = -64.0
"""`adc_error_bits` of a lossless ADC."""


def adc_error_bits(layers: list[Layer], config: DeviceConfig, placement: str = "host") -> float:
    """log2 of the ADC's rounding error referred to a layer's output, relative to the output's
    full scale, for the layer where it is largest (`NO_ADC_ERROR` for a lossless ADC). A column sum
    is rounded to the step of its range over 2**adc_bits - 1 levels (`full`: the device's
    full-scale sum; any other range: the full scale of the rows the layer's tiles fill, as if the
    calibration found it), the step's rounding error has the deviation step/sqrt(12), the most
    significant input and weight slice multiply it by 2**(dac_bits (slices - 1) + cell_bits
    (cells - 1)), and the errors of the row tiles and of a pair's two arrays add in quadrature.
    The output spans K x (2**input_bits - 1) x (2**weight_bits - 1)."""
    crossbar = [la for la in layers if not (la.runtime and placement == "host")]
    if config.lossless_adc or not crossbar:
        return NO_ADC_ERROR
    tile_k, _ = config.tile_shape
    k = np.array([la.k for la in crossbar], dtype=float)
    dac, cell = min(config.dac_bits, config.input_bits), min(config.cell_bits, config.weight_bits)
    span = config.adc_full_scale if config.adc_range in ("full", "full_pow2") else None
    used = np.minimum(k, tile_k) * (2**dac - 1) * (2**cell - 1)
    if config.adc_range == "full_pow2":
        span = 2.0 ** np.ceil(np.log2(span + 1))
    step = (used if span is None else np.full_like(k, span)) / (2**config.adc_bits - 1)
    shift = dac * (config.input_slices - 1) + cell * (config.cells_per_weight - 1)
    error = step / math.sqrt(12) * 2.0**shift * np.sqrt(np.ceil(k / tile_k) * config.read_arrays)
    scale = k * (2**config.input_bits - 1) * (2**config.weight_bits - 1)
    return float(np.log2(error / scale).max())


def log(x: float) -> float:
    return float(np.log2(1.0 + x))


def layer_rows(layers: list[Layer]) -> list[dict]:
    """The layers as plain dicts (as stored in a predictor file)."""
    return [asdict(la) for la in layers]
