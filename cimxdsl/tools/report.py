"""Tables of the device metrics for the command-line tools (`rich` tables rendered as plain text)."""

import io

import rich.console
import rich.table

from cimxdsl.device import COMPONENTS

COLUMNS = ("writes", "cells_written", "mvms", "input_slices", "adc_conversions", "busy_ns")
LAYER_COLUMNS = ("writes", "cells_written", "mvms", "adc_conversions", "digital_macs", "latency_ns")


def format_table(rows: list[list[str]]) -> str:
    """`rows[0]` as the header over the other rows, numbers right-aligned, without colours, as wide
    as its cells (never wrapped to a terminal's width)."""
    table = rich.table.Table(box=None, pad_edge=False)
    for name in rows[0]:
        table.add_column(name, justify="right", no_wrap=True)
    for row in rows[1:]:
        table.add_row(*row)
    text = io.StringIO()
    rich.console.Console(file=text, width=100_000, color_system=None, highlight=False).print(table)
    return "\n".join(line.rstrip() for line in text.getvalue().splitlines())


def format_number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() or abs(value) >= 100 else f"{value:,.2f}"


def format_value(value) -> str:
    """A number as `format_number` writes it (booleans and text as they are)."""
    return format_number(value) if isinstance(value, int | float) and not isinstance(value, bool) else str(value)


def format_layers(layers: list[dict]) -> str:
    """The per-layer table; a product of two run-time tensors shows where it ran (`placement`)."""
    rows = [["layer", "placement", *LAYER_COLUMNS, "energy_pj"]]
    for layer in layers:
        rows.append(
            [
                layer["layer"],
                layer.get("placement", ""),
                *(format_number(layer[c]) for c in LAYER_COLUMNS),
                format_number(layer["energy_pj"]["total"]),
            ]
        )
    return format_table(rows)


def format_precision(precision: dict) -> str:
    """One line: the mode and quantization bits (when known) and what limits the device's results
    (`DeviceConfig.precision`)."""
    p = precision
    adc = "lossless ADC" if p["adc_bits"] == 0 else f"{p['adc_bits']}-bit ADC ({p['adc_range']} range)"
    noise = ", ".join(f"{k}={v}" for k, v in p["noise"].items()) or "none"
    device = (
        f"device {p['device']}: {p['weight_bits']}-bit weights in {p['cell_bits']}-bit cells, "
        f"{p['input_bits']}-bit inputs through {p['dac_bits']}-bit DACs, {adc}, noise {noise}"
    )
    if "mode" not in p:
        return f"precision: {device}"
    quantized = p.get("quantized_bits")
    mode = f"mode {p['mode']}" + (
        f" (weights quantized to {quantized['weights']} bits, inputs to {quantized['inputs']})" if quantized else ""
    )
    return f"precision: {mode}; {device}"


def format_report(report: dict) -> str:
    """The metrics of `Device.report()` as a readable table."""
    header = ["crossbar", *COLUMNS, "energy_pj"]
    rows = [header]
    for name, metrics in [*sorted(report.get("crossbars", {}).items()), ("total", report["total"])]:
        values = [format_number(metrics[c]) for c in COLUMNS]
        rows.append([str(name), *values, format_number(metrics["energy_pj"]["total"])])
    energy = report["total"]["energy_pj"]
    parts = ", ".join(f"{c} {format_number(energy[c])}" for c in COMPONENTS)
    return "\n".join(
        [
            f"device: {report['device']}",
            *([format_precision(report["precision"])] if "precision" in report else []),
            f"latency: {format_number(report['latency_ns'])} ns ({format_number(report['latency_cycles'])} cycles)",
            format_table(rows),
            f"energy by component (pJ): {parts}",
        ]
    )
