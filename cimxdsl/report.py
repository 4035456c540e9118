"""The report of a compiled model's last call: a dict that prints as tables (`rich` tables rendered as
plain text, as the command-line tools print them) and converts to rows."""

from __future__ import annotations

import io
import json
from typing import Any

import rich.console
import rich.table

from cimxdsl.device import COMPONENTS

COLUMNS = ("writes", "cells_written", "mvms", "input_slices", "adc_conversions", "busy_ns")
LAYER_COLUMNS = ("writes", "cells_written", "mvms", "input_slices", "adc_conversions", "digital_macs", "latency_ns")


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


PRECISION_COLUMNS = ("weight_bits", "input_bits")
"""The layer's precision: its own bits, the device's, or `float` (exact mode)."""


def format_layers(layers: list[dict]) -> str:
    """The per-layer table; a product of two run-time tensors shows where it ran (`placement`)."""
    rows = [["layer", "placement", *PRECISION_COLUMNS, *LAYER_COLUMNS, "energy_pj"]]
    for layer in layers:
        rows.append(
            [
                layer["layer"],
                layer.get("placement", ""),
                *(format_value(layer.get(c, "")) for c in PRECISION_COLUMNS),
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


class Report(dict):
    """A report: a plain dict underneath (`report["total"]`, `json.dumps(report)`), printed as the
    tables `cim-compile` prints; `to_dict()` gives a plain copy, `to_records()` one row per layer and
    `to_pandas()` those rows as a `pandas.DataFrame`."""

    def __str__(self) -> str:
        if "total" in self and "latency_ns" in self:  # a crossbar model's report
            summary = {k: v for k, v in self.items() if k != "crossbars"}
            summary.setdefault("latency_cycles", self["latency_ns"])
            lines = [format_report(summary)]
            if self.get("layers"):
                lines.append(format_layers(self["layers"]))
        else:  # a PIM model's: its precision and figures, one a line
            lines = [f"precision: {self['precision']['summary']}"] if "precision" in self else []
            lines += [f"{k}: {format_value(v)}" for k, v in self.items() if not isinstance(v, dict | list)]
        lines += [f"note: {note}" for note in self.get("notes", [])]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer, cycle: bool) -> None:  # IPython and Jupyter
        printer.text(str(self))

    def to_dict(self) -> dict[str, Any]:
        """A plain, JSON-ready copy (tuples as lists, keys as strings)."""
        return json.loads(json.dumps(self, default=str))

    def to_records(self) -> list[dict[str, Any]]:
        """One flat row per layer: its name, placement (products of two run-time tensors), counts,
        latency and energy by component (`energy_<component>_pj`)."""
        rows = []
        for layer in self.get("layers", []):
            row = {k: v for k, v in layer.items() if k != "energy_pj"}
            row.update({f"energy_{k}_pj": v for k, v in layer.get("energy_pj", {}).items()})
            rows.append(row)
        return rows

    def to_pandas(self):
        """The per-layer rows (`to_records`) as a `pandas.DataFrame` indexed by layer."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Report.to_pandas needs pandas: pip install pandas") from None
        frame = pandas.DataFrame(self.to_records())
        return frame.set_index("layer") if "layer" in frame else frame

    to_dataframe = to_pandas
