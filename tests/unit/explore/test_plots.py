"""What the sweep figures and the printed table show, checked on the data drawn (lines, labels,
values), not on pixels; and the quick example sweep, run end to end."""

import csv
import io
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

from cimxdsl.explore import explore, load_sweep
from cimxdsl.explore.plots import accuracy_vs_axis, energy_vs_accuracy
from cimxdsl.explore.points import expand_points
from cimxdsl.explore.results import ExploreResults
from cimxdsl.explore.rows import COUNTS, METRICS

EXAMPLES = Path(__file__).parents[3] / "examples"
THREE_AXES = {
    "name": "three",
    "model": "digits",
    "data": "digits",
    "seeds": 2,
    "device": {"preset": "cinnamon"},
    "axes": {"adc_bits": [4, 6, 8], "adc_range": ["full", "calibrated"], "rows": [32, 128]},
}


def accuracy_of(values: dict, seed_index: int) -> float:
    """A made-up accuracy that tells every setting and seed apart."""
    calibrated = values["adc_range"] == "calibrated"
    return (values["adc_bits"] * 10 + 5 * calibrated + values["rows"] / 32 + seed_index) / 100


def made_up_results(spec: dict, failing: tuple[int, ...] = ()) -> ExploreResults:
    sweep = load_sweep(spec)
    points = expand_points(sweep)
    rows = []
    for point in points:
        for seed_index in range(sweep.seeds):
            row = {"point": point.index, "seed_index": seed_index, "device_seed": seed_index, "program": 0}
            row.update(point.values)
            if point.index in failing:
                rows.append({**row, "status": "error", "error": "made up", **dict.fromkeys(METRICS)})
                continue
            metrics = dict.fromkeys(METRICS, 0.0) | dict.fromkeys(COUNTS, 1)
            metrics.update(
                accuracy=accuracy_of(point.values, seed_index),
                agreement=0.5,
                latency_ns=1000.0 * point.values["rows"] + 0.25,
                energy_per_image_pj=50_000.0 + point.values["adc_bits"],
            )
            rows.append({**row, "status": "ok", "error": "", **metrics})
    return ExploreResults(sweep=sweep, points=points, rows=rows, float_accuracy=0.9, images=10)


def draw(results: ExploreResults, axis_name: str):
    figure = Figure()
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    axis = next(a for a in results.sweep.axes if a.name == axis_name)
    accuracy_vs_axis(ax, results, axis)
    return ax


def drawn_lines(ax) -> dict[str, tuple[list, list, tuple]]:
    """label -> (xs, ys, (colour, dash)) of every error-bar line drawn."""
    lines = {}
    for container in ax.containers:
        assert isinstance(container, ErrorbarContainer)
        line = container.lines[0]
        key = (line.get_color(), line.get_linestyle())
        lines[container.get_label()] = (list(line.get_xdata()), list(line.get_ydata()), key)
    return lines


def test_one_line_per_combination_of_the_other_axes_nothing_averaged():
    ax = draw(made_up_results(THREE_AXES), "adc_bits")
    lines = drawn_lines(ax)
    expected = [f"adc_range={r}, rows={n}" for r in ("full", "calibrated") for n in (32, 128)]
    assert list(lines) == expected
    for label, (xs, ys, _) in lines.items():
        values = dict(part.split("=") for part in label.split(", "))
        assert xs == [4, 6, 8]
        mean_seed = 0.5  # seeds 0 and 1
        want = [
            100 * accuracy_of({"adc_bits": b, "adc_range": values["adc_range"], "rows": int(values["rows"])}, mean_seed)
            for b in xs
        ]
        assert ys == pytest.approx(want, abs=1e-9)
    # colour: the first other axis (adc_range); dash: the second (rows)
    styles = {label: style for label, (_, _, style) in lines.items()}
    assert styles[expected[0]][0] == styles[expected[1]][0] != styles[expected[2]][0] == styles[expected[3]][0]
    assert styles[expected[0]][1] == styles[expected[2]][1] != styles[expected[1]][1] == styles[expected[3]][1]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["float model", *expected]
    # every seed is a dot beside the mean
    dots = [line for line in ax.get_lines() if line.get_marker() == "." and line.get_linestyle() == "None"]
    assert len(dots) == 3 * 4 and all(len(d.get_ydata()) == 2 for d in dots)


def test_a_categorical_axis_gets_a_line_per_setting_of_the_numeric_ones():
    ax = draw(made_up_results(THREE_AXES), "adc_range")
    lines = drawn_lines(ax)
    assert list(lines) == [f"adc_bits={b}, rows={n}" for b in (4, 6, 8) for n in (32, 128)]
    assert all(xs == [0, 1] for xs, _, _ in lines.values())
    assert [t.get_text() for t in ax.get_xticklabels()] == ["full", "calibrated"]
    assert lines["adc_bits=6, rows=128"][1] == pytest.approx([60 + 4 + 0.5, 60 + 5 + 4 + 0.5])


def test_failed_points_are_left_out_and_counted():
    results = made_up_results(THREE_AXES, failing=(0,))  # adc_bits=4, adc_range=full, rows=32
    ax = draw(results, "adc_bits")
    assert drawn_lines(ax)["adc_range=full, rows=32"][0] == [6, 8]
    assert "1 point(s) failed" in [t.get_text() for t in ax.texts]


def test_an_each_grid_draws_one_line_through_the_base_of_the_other_axes():
    spec = {**THREE_AXES, "grid": "each", "device": {"preset": "cinnamon", "rows": 64}}
    lines = drawn_lines(draw(made_up_results(spec), "adc_bits"))
    assert list(lines) == ["adc_range=full, rows=64"]
    assert lines["adc_range=full, rows=64"][0] == [4, 6, 8]


def test_energy_axis_in_the_csv_unit():
    results = made_up_results(THREE_AXES)
    figure = Figure()
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, 2)
    energy_vs_accuracy(axes, results)
    assert axes[0].get_xlabel() == "energy per image (pJ)"
    drawn = sorted(x for c in axes[0].containers for x in c.lines[0].get_xdata())
    assert drawn == sorted(s["energy_per_image_pj"] for s in results.summary)


def test_the_table_uses_the_csv_columns_and_units():
    results = made_up_results(THREE_AXES, failing=(3,))
    head, *lines = results.table().splitlines()
    names = head.split()
    assert names == ["point", "settings", "accuracy", "agreement", "energy_per_image_pj", "latency_ns", "pareto"]
    assert all(name in results.columns for name in names if name != "settings")
    csv_rows = {int(r["point"]): r for r in csv.DictReader(io.StringIO(results.csv())) if r["seed_index"] == "0"}
    start = {name: head.index(name) for name in names}
    checked = 0
    for line in lines:
        point = int(line.split()[0])
        if "error: made up" in line:
            assert point == 3
            continue
        cells = {name: line[start[name] :].split()[0] for name in ("energy_per_image_pj", "latency_ns", "accuracy")}
        summary = results.summary[point]
        for unit in ("energy_per_image_pj", "latency_ns"):
            assert float(cells[unit]) == pytest.approx(float(csv_rows[point][unit]), rel=1e-4)
        assert float(cells["accuracy"]) == pytest.approx(summary["accuracy_mean"], abs=1e-4)
        assert f"± {summary['accuracy_std']:.4f}" in line
        checked += 1
    assert checked == len(results.summary) - 1


def test_the_quick_example_sweep(tmp_path):
    sweep = load_sweep(EXAMPLES / "sweep_quick.toml")
    assert [len(axis) for axis in sweep.axes] == [2, 2] and sweep.limit <= 100
    results = explore(sweep, out_dir=tmp_path)
    assert len(results.points) == 4 and not results.failed
    assert len({p.program for p in results.points}) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "accuracy_vs_adc_bits.png",
        "accuracy_vs_adc_range.png",
        "energy_vs_accuracy.png",
        "results.csv",
        "results.json",
    ]
    rows = {(r["adc_bits"], r["adc_range"]): r for r in csv.DictReader((tmp_path / "results.csv").open())}
    accuracy = {key: float(r["accuracy"]) for key, r in rows.items()}
    # a 4-bit ADC spanning the full 11-bit column sum loses the model; a calibrated one keeps it
    assert accuracy[("4", "full")] < 0.5 < accuracy[("4", "calibrated")]
    assert float(rows[("4", "full")]["energy_adc_pj"]) == pytest.approx(float(rows[("8", "full")]["energy_adc_pj"]) / 2)
    lines = drawn_lines(draw(results, "adc_bits"))
    assert list(lines) == ["adc_range=full", "adc_range=calibrated"]
    for label, (xs, ys, _) in lines.items():
        assert xs == [4, 8]
        assert ys == pytest.approx([100 * accuracy[(str(b), label.split("=")[1])] for b in (4, 8)])
