"""Searches (grid, random, TPE, NSGA-II) over a sweep's axes: reproducible fronts, resuming from
the study file, sound pruning, hypervolumes against an independent computation, bad input."""

import itertools
import json
import os
import re
import signal
import sqlite3

import numpy as np
import optuna
import pytest

from cimxdsl.explore import SweepError, explore, load_sweep
from cimxdsl.explore import search as search_module
from cimxdsl.explore.context import prepare_context
from cimxdsl.explore.execution import evaluate_point
from cimxdsl.explore.pareto import REFERENCE, hypervolume, hypervolume_history, non_dominated, normalise
from cimxdsl.tools.cim_explore import main

SPACE = {
    "model": "digits",
    "data": "digits",
    "limit": 40,
    "device": {"preset": "cinnamon", "weight_bits": 8, "input_bits": 8},
    "axes": {"adc_bits": {"min": 3, "max": 6}, "adc_range": ["full", "calibrated"], "dac_bits": [1, 2, 4]},
    "cost": {"adc": "linear", "adc_reference_bits": 8},
    "objectives": ["accuracy", "energy"],
}


def spec(**changes) -> dict:
    return {**SPACE, **changes}


def front_of(results) -> list[tuple]:
    """The front's settings and objective values (independent of point numbering)."""
    return sorted(
        (tuple(sorted((f, s[f]) for f in results.sweep.swept_fields)), s["accuracy_mean"], s["energy_per_image_pj"])
        for s in results.pareto
    )


def brute_front(results) -> list[tuple]:
    """The front by the definition: feasible points no other feasible point dominates."""
    ok = [s for s in results.summary if s["status"] == "ok"]
    ok = [s for s in ok if all(c.violation(s["accuracy_mean"]) <= 0 for c in results.sweep.constraints)]
    kept = []
    for s in ok:
        beaten = any(
            o["accuracy_mean"] >= s["accuracy_mean"]
            and o["energy_per_image_pj"] <= s["energy_per_image_pj"]
            and (o["accuracy_mean"], o["energy_per_image_pj"]) != (s["accuracy_mean"], s["energy_per_image_pj"])
            for o in ok
        )
        if not beaten:
            kept.append(s)
    unique = {(s["accuracy_mean"], s["energy_per_image_pj"]): s for s in reversed(kept)}
    return sorted(
        (tuple(sorted((f, s[f]) for f in results.sweep.swept_fields)), s["accuracy_mean"], s["energy_per_image_pj"])
        for s in unique.values()
    )


def trials_of(results) -> list:
    return [(t["point"], t["status"], t["values"], t["front"]) for t in results.search["trials"]]


# ---- searches -------------------------------------------------------------------------------------
def test_grid_search_finds_the_sweeps_front_in_grid_order():
    plain = explore({k: v for k, v in SPACE.items()})
    grid = explore(spec(search="grid"))
    assert len(grid.search["trials"]) == len(plain.points) == 24
    assert [p.values for p in grid.points] == [p.values for p in plain.points]
    assert grid.csv() == plain.csv()  # the same rows: every trial is one of the sweep's points
    assert front_of(grid) == front_of(plain) == brute_front(plain)
    assert grid.search["trials"][-1]["hypervolume"] == max(t["hypervolume"] for t in grid.search["trials"])


@pytest.mark.parametrize("method", ["random", "tpe", "nsga2", "surrogate"])
def test_a_seeded_search_reproduces_its_trials_and_front(method):
    extra = {"population": 4} if method == "nsga2" else {}
    first = explore(spec(search=method, trials=10, seed=3, **extra))
    again = explore(spec(search=method, trials=10, seed=3, **extra))
    assert trials_of(first) == trials_of(again) and first.csv() == again.csv()
    assert front_of(first) == brute_front(first) and front_of(first)
    assert len(first.search["trials"]) == 10
    # repeated proposals are not simulated again
    assert (
        len(first.points)
        == len({t["point"] for t in first.search["trials"]})
        == first.search["trials"][-1]["simulated"]
    )
    other = explore(spec(search=method, trials=10, seed=4, **extra))
    assert trials_of(other) != trials_of(first)


def test_the_history_front_and_hypervolume_follow_the_trials():
    results = explore(spec(search="random", trials=12, seed=1))
    trials = results.search["trials"]
    volumes = [t["hypervolume"] for t in trials]
    assert volumes == sorted(volumes)  # a front never loses ground
    by_point = {s["point"]: s for s in results.summary}
    low, high = (np.array(results.search["normalisation"][k]) for k in ("low", "high"))
    for k, t in enumerate(trials):
        seen = {u["point"] for u in trials[: k + 1] if u["values"] is not None}
        values = np.array([[-by_point[p]["accuracy_mean"], by_point[p]["energy_per_image_pj"]] for p in sorted(seen)])
        keep = non_dominated(values)
        assert set(t["front"]) <= seen
        expected = {tuple(v) for v in values[keep]}
        assert {(-by_point[p]["accuracy_mean"], by_point[p]["energy_per_image_pj"]) for p in t["front"]} == expected
        assert t["hypervolume"] == pytest.approx(inclusion_exclusion(normalise(values[keep], low, high)))


def test_local_processes_give_the_serial_search():
    sweep = spec(search="tpe", trials=6, seed=7, trials_per_batch=2)
    assert trials_of(explore(sweep, jobs=2)) == trials_of(explore(sweep))


def test_a_constraint_keeps_infeasible_points_off_the_front():
    results = explore(spec(search="grid", constraints=["accuracy >= 0.99"]))
    assert results.pareto and all(s["accuracy_mean"] >= 0.99 for s in results.pareto)
    assert front_of(results) == brute_front(results)
    free = explore(spec(search="grid"))
    assert any(s["accuracy_mean"] < 0.99 for s in free.pareto)
    # a point beaten only by points below 0.99 is below 0.99 too: the front is the free one's feasible part
    assert front_of(results) == [f for f in front_of(free) if f[1] >= 0.99]


# ---- resuming ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["tpe", "nsga2", "surrogate"])
def test_an_interrupted_search_resumes_from_its_study_as_if_never_stopped(tmp_path, monkeypatch, method):
    extra = {"population": 4} if method == "nsga2" else {}
    sweep = spec(search=method, trials=12, seed=5, trials_per_batch=2, constraints=["accuracy >= 0.5"], **extra)
    whole = explore(sweep, study=tmp_path / "whole.db")
    real_tell, calls = optuna.Study.tell, []

    def crash_on_the_seventh(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 7:  # trial 6's result is stored, trials 6 and 7 are left running
            raise KeyboardInterrupt
        return real_tell(self, *args, **kwargs)

    monkeypatch.setattr(optuna.Study, "tell", crash_on_the_seventh)
    with pytest.raises(KeyboardInterrupt):
        explore(sweep, study=tmp_path / "cut.db")
    monkeypatch.setattr(optuna.Study, "tell", real_tell)
    states = [
        t.state for t in optuna.load_study(study_name="cim-explore", storage=f"sqlite:///{tmp_path / 'cut.db'}").trials
    ]
    assert states.count(optuna.trial.TrialState.RUNNING) == 2 and len(states) == 8
    resumed = explore(sweep, study=tmp_path / "cut.db")
    assert trials_of(resumed) == trials_of(whole)
    assert resumed.csv() == whole.csv()
    # and a longer budget continues the same study
    longer = explore({**sweep, "trials": 14}, study=tmp_path / "cut.db")
    assert trials_of(longer)[:12] == trials_of(whole) and len(longer.search["trials"]) == 14


@pytest.mark.parametrize("method", ["tpe", "grid", "nsga2"])
def test_a_search_stopped_while_proposing_resumes_as_if_never_stopped(tmp_path, monkeypatch, method):
    extra = {"population": 4} if method == "nsga2" else {}
    sweep = spec(search=method, trials=12, seed=5, trials_per_batch=2, **extra)
    whole = explore(sweep, study=tmp_path / "whole.db")
    if method == "nsga2":
        # generation 2's first trial (trial 8): its parents are selected and stored in the study,
        # then the process dies before the trial has any parameter
        target, name, broken = optuna.samplers.NSGAIISampler, "get_parent_population", 8
        last = lambda calls: calls[-1][-1] == 2  # noqa: E731  (self, study, generation)
    else:  # 3 parameters a trial: trial 5 has 2 of its 3 when the process dies
        sampler = optuna.samplers.TPESampler if method == "tpe" else search_module.GridOrderSampler
        target, name, broken = sampler, "sample_independent", 5
        last = lambda calls: len(calls) == 18  # noqa: E731
    real, calls = getattr(target, name), []

    def crash(*args, **kwargs):
        found = real(*args, **kwargs)
        calls.append(args)
        if last(calls):
            raise KeyboardInterrupt
        return found

    monkeypatch.setattr(target, name, crash)
    with pytest.raises(KeyboardInterrupt):
        explore(sweep, study=tmp_path / "cut.db")
    monkeypatch.setattr(target, name, real)
    resumed = explore(sweep, study=tmp_path / "cut.db")
    assert trials_of(resumed) == trials_of(whole) and resumed.csv() == whole.csv()
    study = optuna.load_study(study_name="cim-explore", storage=f"sqlite:///{tmp_path / 'cut.db'}")
    assert len(study.trials) == 13 and study.trials[broken].state == optuna.trial.TrialState.FAIL  # the broken proposal


def test_the_study_is_written_beside_the_results(tmp_path):
    results = explore(spec(search="random", trials=3), out_dir=tmp_path)
    assert (tmp_path / "study.db").is_file() and (tmp_path / "search_hypervolume.png").is_file()
    assert (tmp_path / "search_front.png").is_file()
    study = optuna.load_study(study_name="cim-explore", storage=f"sqlite:///{tmp_path / 'study.db'}")
    assert [t.values for t in study.trials] == [t["values"] for t in results.search["trials"]]
    again = explore(spec(search="random", trials=3), out_dir=tmp_path)  # nothing left to do
    assert trials_of(again) == trials_of(results)


SEARCH_FILE = """\
model = "digits"
data = "digits"
limit = 24
search = "random"
trials = 4
objectives = ["accuracy", "latency"]
[device]
preset = "cinnamon"
[axes]
adc_bits = { min = 3, max = 8 }
dac_bits = [1, 2]
"""


def test_the_command_line_runs_and_resumes_a_search(tmp_path, capsys):
    sweep = tmp_path / "s.toml"
    sweep.write_text(SEARCH_FILE)
    out = tmp_path / "out"
    main([str(sweep), "-o", str(out), "-q", "--no-plots"])
    first = capsys.readouterr().out
    assert re.search(r"search 'random': 4 trials, [1-4] points simulated \(0 pruned\), [1-4] on the front", first)
    assert f"study {out / 'study.db'}" in first
    sweep.write_text(SEARCH_FILE.replace("trials = 4", "trials = 6"))
    main([str(sweep), "-o", str(out), "-q", "--no-plots"])
    assert "search 'random': 6 trials" in capsys.readouterr().out
    data = json.loads((out / "results.json").read_text())
    assert [t["trial"] for t in data["search"]["trials"]] == list(range(6))
    sweep.write_text(SEARCH_FILE.replace('"random"', '"randm"'))
    with pytest.raises(SystemExit) as caught:
        main([str(sweep)])
    assert caught.value.code == 1
    assert capsys.readouterr().err == (
        f"cim-explore: error: {sweep}: 'search' must be one of grid, random, tpe, nsga2, surrogate, got 'randm' "
        "(did you mean 'random'?)\n"
    )


# ---- pruning ----------------------------------------------------------------------------------------
def test_pruning_stops_only_points_that_cannot_reach_the_front():
    sweep = spec(search="random", trials=16, seed=2, batch_size=10, constraints=["accuracy >= 0.6"])
    pruned = explore(sweep)
    full = explore({**sweep, "prune": False})
    assert front_of(pruned) == front_of(full)
    assert pruned.pruned, "this search prunes some points"
    # each pruned point, simulated in full, is infeasible or dominated by the front
    context = prepare_context(load_sweep(sweep))
    for entry in pruned.pruned:
        point = pruned.points[entry["point"]]
        row = evaluate_point(context, point)[0]
        assert row["accuracy"] < 0.6 or any(
            f["accuracy_mean"] >= row["accuracy"] and f["energy_per_image_pj"] < row["energy_per_image_pj"]
            for f in pruned.pareto
        )


# ---- hypervolume ------------------------------------------------------------------------------------
def inclusion_exclusion(points: np.ndarray, reference: float = REFERENCE) -> float:
    """The volume of the union of the boxes [p, reference] by inclusion–exclusion over subsets."""
    points = points[(points < reference).all(axis=1)]
    total = 0.0
    for size in range(1, len(points) + 1):
        for subset in itertools.combinations(range(len(points)), size):
            corner = points[list(subset)].max(axis=0)
            total += (-1) ** (size + 1) * np.prod(reference - corner)
    return total


@pytest.mark.parametrize("dims", [2, 3, 4])
def test_hypervolume_against_inclusion_exclusion(dims):
    rng = np.random.default_rng(dims)
    points = rng.random((9, dims))
    points[3] = points[2]  # a duplicate
    points[4] = points[1] + 0.05  # a dominated point
    assert hypervolume(points, np.full(dims, REFERENCE)) == pytest.approx(inclusion_exclusion(points), rel=1e-12)


def test_hypervolume_of_a_hand_made_front():
    front = np.array([[0.0, 1.0], [0.5, 0.5], [1.0, 0.0], [0.6, 0.6]])
    # staircase below (2, 2): 0.5 x 1 + 0.5 x 1.5 + 1 x 2
    assert hypervolume(front, np.array([2.0, 2.0])) == pytest.approx(3.25)
    assert hypervolume(np.array([[3.0, 0.0]]), np.array([2.0, 2.0])) == 0.0  # beyond the reference
    history = hypervolume_history(np.array([[1.0, 1.0], [np.nan, np.nan], [0.0, 1.0], [1.0, 0.0]]), 0.0, 1.0)
    expected = [0.1**2, 0.1**2, 1.1 * 0.1, 1.1 * 0.1 + 0.1 * 1.0]
    assert history == pytest.approx(expected)


def test_non_dominated_keeps_ties():
    values = np.array([[1, 2], [1, 2], [2, 1], [2, 2], [0, 3]])
    assert non_dominated(values).tolist() == [True, True, True, False, True]


# ---- bad input --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"search": "tpe", "objectives": None},
            "search = 'tpe' needs 'objectives' (some of accuracy, agreement, latency, energy, crossbars, writes)",
        ),
        ({"search": "tpe", "objectives": []}, "search = 'tpe' needs 'objectives'"),
        (
            {"search": "tpee"},
            "'search' must be one of grid, random, tpe, nsga2, surrogate, got 'tpee' (did you mean 'tpe'?)",
        ),
        ({"search": "tpe", "objectives": ["acuracy"]}, "unknown objective 'acuracy' (did you mean 'accuracy'?)"),
        ({"axes": {"adc_bits": {"min": 8, "max": 4}}}, "axis 'adc_bits': min 8 > max 4"),
        ({"axes": {"adc_bits": {"min": 4}}}, "axis 'adc_bits': a range needs 'max'"),
        ({"axes": {"adc_bits": {"min": 4, "max": 40}}}, "axis 'adc_bits.max' value 1: 'adc_bits' must be an integer"),
        ({"axes": {"adc_bits": {"min": 4, "max": 8, "step": 3}}}, "max - min (4) must be a multiple of step 3"),
        ({"axes": {"prog_noise": {"min": 0.0, "max": 0.1, "log": True}}}, "a log range needs min > 0"),
        ({"axes": {"encoding": {"min": 0, "max": 1}}}, "axis 'encoding': a range {min, max} needs a numeric field"),
        (
            {"axes": {"prog_noise": {"min": 0.01, "max": 0.1}}},
            "axis 'prog_noise': a range without 'step' has no grid; give 'step' or search it",
        ),
        (
            {"constraints": ["acuracy >= 0.9"]},
            "'constraints': unknown metric 'acuracy' in 'acuracy >= 0.9' (did you mean 'accuracy'?)",
        ),
        ({"constraints": ["accuracy => 0.9"]}, "'constraints': cannot read 'accuracy => 0.9'"),
        ({"constraints": "accuracy >= 0.9"}, "'constraints' must be a list of strings"),
        ({"trials": 5}, "'trials' needs a search"),
        ({"search": "tpe", "population": 8}, "'population' is NSGA-II's: it needs search = 'nsga2'"),
        ({"search": "tpe", "grid": "each"}, "grid = 'each' is for sweeps without 'search'"),
    ],
)
def test_bad_search_input_is_one_line_naming_the_key(changes, message):
    with pytest.raises(SweepError) as caught:
        load_sweep({k: v for k, v in spec(**changes).items() if v is not None})
    text = str(caught.value)
    assert "\n" not in text and message in text, text


def test_ranges_are_read_as_optuna_distributions():
    sweep = load_sweep(
        spec(
            search="tpe",
            axes={
                "adc_bits": {"min": 4, "max": 10, "step": 2},
                "prog_noise": {"min": 0.01, "max": 0.3, "log": True},
                "rows": {"min": 16, "max": 256, "log": True},
                "read_noise": {"min": 0, "max": 0.1, "step": 0.05},
                "stuck": {"stuck_on_rate": [0.0, 0.01], "stuck_off_rate": [0.0, 0.02]},
            },
        )
    )
    adc, noise, _, read, _ = sweep.axes
    assert adc.values == ((4,), (6,), (8,), (10,)) and noise.values == () and read.values == ((0.0,), (0.05,), (0.1,))
    space = search_module.Space(sweep)
    assert space.distributions["adc_bits"] == optuna.distributions.IntDistribution(4, 10, step=2)
    assert space.distributions["prog_noise"] == optuna.distributions.FloatDistribution(0.01, 0.3, log=True)
    assert space.distributions["rows"] == optuna.distributions.IntDistribution(16, 256, log=True)
    assert space.distributions["stuck"] == optuna.distributions.CategoricalDistribution([0, 1])
    settings = space.settings({"adc_bits": 6, "prog_noise": 0.1, "rows": 40, "read_noise": 0.05, "stuck": 1})
    assert settings == {
        "adc_bits": 6,
        "prog_noise": 0.1,
        "rows": 40,
        "read_noise": 0.05,
        "stuck_on_rate": 0.01,
        "stuck_off_rate": 0.02,
    }


def test_a_corrupt_or_foreign_study_file_is_reported_and_left_alone(tmp_path):
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"not a database at all" * 100)
    with pytest.raises(SweepError, match=r"study file '.*corrupt.db' is not an SQLite database .*left as it is$"):
        explore(spec(search="random", trials=2), study=corrupt)
    assert corrupt.read_bytes() == b"not a database at all" * 100
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (x)")
    before = other.read_bytes()
    with pytest.raises(SweepError, match=r"is not an Optuna study .*left as it is$"):
        explore(spec(search="random", trials=2), study=other)
    assert other.read_bytes() == before
    mine = tmp_path / "mine.db"
    explore(spec(search="random", trials=2), study=mine)
    with pytest.raises(SweepError, match=r"holds another search \(its search differ\)"):
        explore(spec(search="tpe", trials=2), study=mine)


def test_a_search_on_dask_survives_its_workers_dying(monkeypatch):
    distributed = pytest.importorskip("distributed")
    sweep = spec(search="tpe", trials=4, seed=7, trials_per_batch=2)
    scatters = []
    real_scatter = distributed.Client.scatter
    monkeypatch.setattr(distributed.Client, "scatter", lambda *a, **k: scatters.append(1) or real_scatter(*a, **k))
    serial = explore(sweep)
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        pids = client.run(os.getpid)

        def kill_every_worker(done, total):  # after the first batch: the context is lost with them
            if done == 2 and pids:
                for pid in pids.values():
                    os.kill(pid, signal.SIGKILL)
                pids.clear()

        on_dask = explore(sweep, scheduler=client, progress=kill_every_worker)
    assert not pids and trials_of(on_dask) == trials_of(serial) and on_dask.csv() == serial.csv()
    assert len(scatters) == 2  # the context was lost with the workers and sent again


def test_a_time_budget_stops_proposing_and_a_later_run_goes_on(tmp_path):
    stopped = explore(spec(search="random", trials=4, timeout_s=1e-9), out_dir=tmp_path)
    assert stopped.search["trials"] == [] and stopped.points == [] and stopped.pareto == []
    assert (tmp_path / "search_front.png").is_file()
    finished = explore(spec(search="random", trials=4), out_dir=tmp_path)
    assert trials_of(finished) == trials_of(explore(spec(search="random", trials=4)))


def test_the_shipped_search_is_valid():
    from pathlib import Path

    sweep = load_sweep(Path(__file__).resolve().parents[3] / "examples" / "search_digits.toml")
    assert sweep.search == "tpe" and len(search_module.Space(sweep).grid()) == 648
