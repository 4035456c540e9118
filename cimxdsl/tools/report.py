"""Text tables of the device metrics for the command-line tools."""

from cimxdsl.device import COMPONENTS

COLUMNS = ("writes", "cells_written", "mvms", "input_slices", "adc_conversions", "busy_ns")


def format_table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows)


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
