"""Running sweeps: points and program reuse, identical results serially, in local processes and on
a Dask cluster, failing points recorded, results files and plots."""

import csv
import io
import json

import numpy as np
import pytest

import cimxdsl
import cimxdsl.explore
from cimxdsl.device import Device
from cimxdsl.explore import execution, explore, load_sweep
from cimxdsl.explore import points as point_module
from cimxdsl.explore.context import prepare_context
from cimxdsl.explore.points import compile_key, device_seed, expand_points
from cimxdsl.explore.results import pareto_front

IMAGES = 48
SMALL = {
    "name": "small",
    "model": "digits",
    "data": "digits",
    "limit": IMAGES,
    "seeds": 2,
    "device": {"preset": "cinnamon", "weight_bits": 8, "input_bits": 8},
    "axes": {
        "adc_bits": [0, 5],
        "prog_noise": [0.0, 0.2],
        "cols": [128, 2],  # 2 columns cannot hold a weight of 4 two-bit cells: those points fail
    },
    "cost": {"adc": "linear", "adc_reference_bits": 8},
}


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    point_module._programs.clear()
    out = tmp_path_factory.mktemp("serial")
    return explore(SMALL, out_dir=out), out


# ---- points and program reuse ------------------------------------------------------------------------
def test_product_grid_points_and_their_programs():
    points = expand_points(load_sweep(SMALL))
    assert len(points) == 8
    assert [p.index for p in points] == list(range(8))
    assert points[5].values == {"adc_bits": 5, "prog_noise": 0.0, "cols": 2}
    assert all(p.axes == ("adc_bits", "prog_noise", "cols") for p in points)
    # only the column count shapes the program: ADC bits and noise reuse it
    assert {p.program for p in points if p.values["cols"] == 128} == {0}
    assert {p.program for p in points if p.values["cols"] == 2} == {1}


def test_each_grid_varies_one_axis_from_the_base_and_merges_duplicates():
    sweep = load_sweep({**SMALL, "grid": "each", "axes": {"adc_bits": [0, 6], "dac_bits": [1, 2, 4]}})
    points = expand_points(sweep)
    settings = [(p.values["adc_bits"], p.values["dac_bits"]) for p in points]
    # the base is adc_bits 0, dac_bits 2: (0, 2) comes from both axes and appears once
    assert settings == [(0, 2), (6, 2), (0, 1), (0, 4)]
    assert points[0].axes == ("adc_bits", "dac_bits") and points[2].axes == ("dac_bits",)
    assert points[1].label == "adc_bits=6" and {p.program for p in points} == {0}


def test_device_seeds_depend_on_the_point_and_seed_index_only():
    a = (("adc_bits", 5), ("prog_noise", 0.2))
    assert device_seed(0, a, 1) == device_seed(0, a, 1)
    seeds = {device_seed(0, a, 0), device_seed(0, a, 1), device_seed(1, a, 0), device_seed(0, a[:1], 0)}
    assert len(seeds) == 4 and all(0 <= s < 2**32 for s in seeds)


def test_points_that_only_change_the_device_compile_once(monkeypatch):
    point_module._programs.clear()
    calls = []
    real = point_module.compile_program
    monkeypatch.setattr(
        point_module, "compile_program", lambda context, key, batch=None: calls.append(key) or real(context, key, batch)
    )
    results = explore({**SMALL, "axes": {"adc_bits": [0, 5, 7], "prog_noise": [0.0, 0.1], "rows": [64, 128]}})
    assert len(results.points) == 12 and all(s["status"] == "ok" for s in results.summary)
    assert sorted(k[2] for k in calls) == [64, 128]  # one compile per row count


def test_a_reused_program_gives_what_a_fresh_compile_for_that_device_gives():
    sweep = load_sweep({**SMALL, "axes": {"adc_bits": [5], "adc_range": ["calibrated"], "encoding": ["offset"]}})
    context = prepare_context(sweep)
    point = expand_points(sweep)[0]
    row = execution.evaluate_point(context, point)[0]
    config = execution.point_config(context, point)
    fresh = cimxdsl.compile(sweep.model, device=config, calibration=context.calibration, batch=IMAGES)
    outputs = fresh.run(context.inputs, device=Device(config)).outputs[0]
    assert row["status"] == "ok"
    assert row["accuracy"] == np.mean(outputs.argmax(-1) == context.labels)
    assert row["agreement"] == np.mean(outputs.argmax(-1) == context.reference)
    assert compile_key(sweep, point.values) == (8, 8, 128, 128, 2, 16, "offset", "host")


def test_bipolar_inputs_slice_spans_and_clip_conventions_are_axes():
    axes = {
        "adc_bits": [5],
        "input_encoding": ["bipolar"],
        "adc_range": ["static_slice"],
        "prog_noise_model": ["independent"],
        "prog_noise": [0.0, 0.1],
        "prog_noise_clip": ["zero", "both"],
    }
    sweep = load_sweep({**SMALL, "seeds": 1, "axes": axes})
    context = prepare_context(sweep)
    points = expand_points(sweep)
    rows = [execution.evaluate_point(context, point)[0] for point in points]
    assert [r["status"] for r in rows] == ["ok"] * 4
    configs = [execution.point_config(context, point) for point in points]
    assert {(c.input_encoding, c.adc_range) for c in configs} == {("bipolar", "static_slice")}
    assert [(c.prog_noise, c.prog_noise_clip) for c in configs] == [(0, "zero"), (0, "both"), (0.1, "zero"), (0.1, "both")]
    # the noiseless point gives what a fresh compile calibrated on the same images gives
    fresh = cimxdsl.compile(sweep.model, device=configs[0], calibration=context.calibration, batch=IMAGES)
    outputs = fresh.run(context.inputs, device=Device(configs[0])).outputs[0]
    assert rows[0]["accuracy"] == np.mean(outputs.argmax(-1) == context.labels)
    with pytest.raises(cimxdsl.explore.SweepError, match="axis 'prog_noise_clip' value 1: 'prog_noise_clip' must be one of"):
        load_sweep({**SMALL, "axes": {"prog_noise_clip": ["top"]}})


# ---- results ---------------------------------------------------------------------------------------
def test_rows_one_per_point_and_seed_with_failures_recorded(serial):
    results, _ = serial
    rows = results.rows
    ok = [r for r in rows if r["status"] == "ok"]
    failed = [r for r in rows if r["status"] == "error"]
    # noiseless points run once, noisy ones once per seed; failing points leave one error row each
    assert [(r["point"], r["seed_index"]) for r in ok] == [(0, 0), (2, 0), (2, 1), (4, 0), (6, 0), (6, 1)]
    assert [r["point"] for r in failed] == [1, 3, 5, 7]
    assert all("DeviceConfigError" in r["error"] and "'cols' must hold one weight" in r["error"] for r in failed)
    assert all(r["accuracy"] is None for r in failed)
    assert rows[2]["device_seed"] != rows[3]["device_seed"]
    assert len(results.failed) == 4


def test_accuracy_costs_and_counts_are_measured(serial):
    results, _ = serial
    by_point = {s["point"]: s for s in results.summary}
    lossless, noisy, adc5 = by_point[0], by_point[2], by_point[4]
    assert results.float_accuracy == pytest.approx(
        np.mean(np.load(load_sweep(SMALL).data)["labels"][:IMAGES] == prepare_context(load_sweep(SMALL)).reference)
    )
    assert lossless["agreement_mean"] == 1.0 and lossless["accuracy_std"] == 0.0
    assert lossless["accuracy_mean"] == pytest.approx(results.float_accuracy)
    assert adc5["accuracy_mean"] < 0.5  # a 5-bit full-range ADC on 11-bit column sums
    seeds = [r["accuracy"] for r in results.rows if r["point"] == 2]
    assert noisy["accuracy_mean"] == pytest.approx(np.mean(seeds))
    assert noisy["accuracy_std"] == pytest.approx(np.std(seeds))
    assert noisy["runs"] == 2
    # same program, same event counts; ADC energy scales linearly with the bits (11-bit lossless)
    assert lossless["adc_conversions"] == adc5["adc_conversions"] > 0
    assert lossless["writes"] == 3 and lossless["cells_written"] > 0
    assert adc5["energy_adc_pj"] == pytest.approx(lossless["energy_adc_pj"] * 5 / 11)
    components = ("crossbar", "dac", "adc", "sample_hold", "shift_add", "write")
    assert lossless["energy_pj"] == pytest.approx(sum(lossless[f"energy_{c}_pj"] for c in components))
    assert lossless["energy_per_image_pj"] == pytest.approx(lossless["energy_pj"] / IMAGES)
    assert lossless["latency_ns"] > 0


def test_csv_and_json_files(serial):
    results, out = serial
    table = list(csv.DictReader(io.StringIO((out / "results.csv").read_text())))
    assert len(table) == len(results.rows) == 10
    assert list(table[0])[:8] == [
        "point",
        "seed_index",
        "device_seed",
        "program",
        "adc_bits",
        "prog_noise",
        "cols",
        "status",
    ]
    assert table[0]["accuracy"] == repr(results.rows[0]["accuracy"]) and table[1]["accuracy"] == ""
    assert table[1]["error"].startswith("DeviceConfigError: ")
    data = json.loads((out / "results.json").read_text())
    assert data["format"] == "cimxdsl-explore-results" and data["rows"] == results.rows
    assert data["programs"] == 2 and data["sweep"]["images"] == IMAGES
    assert [p["point"] for p in data["points"]] == list(range(8))
    assert data["pareto"] == [s["point"] for s in results.pareto]
    assert data["run"]["execution"] == "serial" and data["run"]["seconds"] > 0
    assert {r["pareto"] for r in table} == {"True", "False"}


def test_pareto_front_keeps_the_points_nothing_beats():
    def entry(point, energy, accuracy, status="ok"):
        return {"point": point, "energy_per_image_pj": energy, "accuracy_mean": accuracy, "status": status}

    summary = [
        entry(0, 10, 0.5),
        entry(1, 20, 0.9),
        entry(2, 15, 0.4),  # dearer and worse than 0
        entry(3, 30, 0.9),  # as good as 1, dearer
        entry(4, 40, 0.95),
        entry(5, 5, 0.99, status="error"),
        entry(6, 10, 0.6),  # as cheap as 0, better
    ]
    assert pareto_front(summary) == [6, 1, 4]


def test_plots_are_written(serial):
    _, out = serial
    names = sorted(p.name for p in out.glob("*.png"))
    assert names == [
        "accuracy_vs_adc_bits.png",
        "accuracy_vs_cols.png",
        "accuracy_vs_prog_noise.png",
        "energy_vs_accuracy.png",
    ]
    for name in names:
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and 10_000 < len(data) < 300_000


def test_an_each_grid_runs_and_plots_one_line_per_axis(tmp_path):
    # the base (adc_bits 0, dac_bits 2) is on neither axis
    each = {**SMALL, "grid": "each", "seeds": 1, "axes": {"adc_bits": [5, 9], "dac_bits": [1, 4]}}
    results = explore(each, out_dir=tmp_path)
    assert [s["label"] for s in results.summary] == ["adc_bits=5", "adc_bits=9", "dac_bits=1", "dac_bits=4"]
    assert [s["axes"] for s in results.summary] == [["adc_bits"], ["adc_bits"], ["dac_bits"], ["dac_bits"]]
    assert results.summary[2]["adc_bits"] == 0 and results.summary[0]["dac_bits"] == 2
    assert results.summary[2]["input_slices"] == 4 * results.summary[3]["input_slices"]  # 8 vs 2 slices per input
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [
        "accuracy_vs_adc_bits.png",
        "accuracy_vs_dac_bits.png",
        "energy_vs_accuracy.png",
    ]


def test_the_package_is_callable_like_the_function():
    assert callable(cimxdsl.explore)
    with pytest.raises(ValueError, match="jobs must be a positive integer"):
        cimxdsl.explore(SMALL, jobs=0)


# ---- execution -------------------------------------------------------------------------------------
def test_local_processes_give_identical_results(serial):
    results, _ = serial
    point_module._programs.clear()  # the workers compile for themselves
    parallel = explore(SMALL, jobs=2)
    assert parallel.run["execution"] == "processes"
    assert parallel.csv() == results.csv()
    assert parallel.summary == results.summary


def test_dask_cluster_gives_identical_results(serial):
    distributed = pytest.importorskip("distributed")
    results, _ = serial
    progress = []
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_dask = explore(SMALL, scheduler=cluster.scheduler_address, progress=lambda d, t: progress.append((d, t)))
        cached = client.run(lambda: len(point_module._programs))
    assert on_dask.run["execution"] == "dask"
    assert sum(cached.values()) >= 1  # the points ran (and compiled) in the workers
    assert on_dask.csv() == results.csv()
    assert on_dask.summary == results.summary
    assert progress[-1] == (8, 8) and len(progress) == 8


def test_an_unreachable_scheduler_is_a_clear_error(monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(execution, "CONNECT_TIMEOUT", "1s")
    with pytest.raises(RuntimeError, match=r"cannot connect to the Dask scheduler at 'tcp://127\.0\.0\.1:9'"):
        explore({**SMALL, "axes": {"adc_bits": [0]}}, scheduler="tcp://127.0.0.1:9")
