"""Tables of the device metrics for the command-line tools (`rich` tables rendered as plain text)."""

import io

import rich.console
import rich.table

from cimxdsl.device import COMPONENTS

COLUMNS = ("writes", "cells_written", "mvms", "input_slices", "adc_conversions", "busy_ns")


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
            f"latency: {format_number(report['latency_ns'])} ns ({format_number(report['latency_cycles'])} cycles)",
            format_table(rows),
            f"energy by component (pJ): {parts}",
        ]
    )
