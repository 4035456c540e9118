"""The report of a compiled model's last call: a dict that prints as tables and converts to rows."""

from __future__ import annotations

import json
from typing import Any


class Report(dict):
    """A report: a plain dict underneath (`report["total"]`, `json.dumps(report)`), printed as the
    tables `cim-compile` prints; `to_dict()` gives a plain copy, `to_records()` one row per layer and
    `to_pandas()` those rows as a `pandas.DataFrame`."""

    def __str__(self) -> str:
        from cimxdsl.tools.report import format_layers, format_report, format_value

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
