"""PNG figures of a compiled model's report, per layer (matplotlib, Agg; no pyplot state):

- `latency.png`: each layer's latency (ns);
- `energy.png`: each layer's energy, stacked by component (pJ);
- `writes.png`: each layer's crossbar writes and cells written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cimxdsl.device import COMPONENTS
from cimxdsl.tools.cli import UserError

DPI = 110


def figure_class() -> type:
    """matplotlib's `Figure`, or a one-line error saying how to install it."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise UserError("--plot needs matplotlib: pip install matplotlib") from None
    return Figure


def layer_figures(report: dict) -> dict[str, object]:
    """The figures by file stem, drawn from `report["layers"]` (matplotlib `Figure`s)."""
    Figure = figure_class()
    layers = report["layers"]
    names = [layer["layer"] for layer in layers]
    x = np.arange(len(layers))
    width = max(6.4, 0.5 * len(layers))

    def figure(title: str, ylabel: str):
        fig = Figure(figsize=(width, 4.2), dpi=DPI, layout="constrained")
        ax = fig.add_subplot()
        ax.set_title(f"{title} per layer ({report.get('device', '')})")
        ax.set_ylabel(ylabel)
        ax.set_xticks(x, names, rotation=45 if len(layers) > 8 else 0, ha="right" if len(layers) > 8 else "center")
        return fig, ax

    latency, ax = figure("latency", "ns")
    ax.bar(x, [layer["latency_ns"] for layer in layers], label="latency_ns")

    energy, ax = figure("energy by component", "pJ")
    bottom = np.zeros(len(layers))
    for component in COMPONENTS:
        values = np.array([layer["energy_pj"][component] for layer in layers], dtype=float)
        if values.any():
            ax.bar(x, values, bottom=bottom, label=component)
            bottom += values
    ax.legend()

    writes, ax = figure("crossbar writes", "count")
    half = 0.4
    ax.bar(x - half / 2, [layer["writes"] for layer in layers], half, label="writes")
    cells = ax.twinx()
    cells.bar(x + half / 2, [layer["cells_written"] for layer in layers], half, color="C1", label="cells_written")
    cells.set_ylabel("cells written")
    writes.legend(loc="upper right")
    return {"latency": latency, "energy": energy, "writes": writes}


def plot_layers(report: dict, directory: Path) -> list[Path]:
    """Write `layer_figures(report)` as PNG files in `directory`; returns their paths."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for stem, figure in layer_figures(report).items():
        FigureCanvasAgg(figure)
        paths.append(directory / f"{stem}.png")
        figure.savefig(paths[-1])
    return paths
