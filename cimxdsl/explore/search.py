"""Searching a sweep's axes: a sampler proposes points, the evaluator simulates them, a study records them.

A sweep with `search = "grid" | "random" | "tpe" | "nsga2" | "surrogate"` is explored trial by trial with Optuna
(Akiba et al., "Optuna: a next-generation hyperparameter optimization framework", KDD 2019):

- the sampler proposes `trials_per_batch` points at a time (`grid`: the product of the axes in
  order; `random`; `tpe`: multi-objective TPE, Ozaki et al. 2022; `nsga2`: Deb et al. 2002;
  `surrogate`: a regressor of the points so far proposes the next, `cimxdsl.explore.surrogate`). Each
  trial draws from a sampler seeded with the sweep's seed and the trial's number, so a search
  gives the same trials whether it ran in one go or was resumed;
- every trial is one of the sweep's points, simulated by `execution.evaluate_part` where a plain
  sweep's points run (compile cache, device seeds, chunks, local processes or Dask unchanged). The
  seeds of a point are averaged (`results.summarize`) before the sampler sees its objectives. A
  point proposed again is not simulated again: the trial repeats its values;
- pruning (`prune = true`, with at least two chunks): a point's first quarter of chunks runs
  first; from them, accuracy is at most (correct so far + inputs left) / inputs and latency,
  energy and writes are at least those of the chunks so far (they are sums over the chunks). When
  a point of the front so far dominates these optimistic values, or they already break a
  constraint, the point cannot be on the front: its trial is told PRUNED and its other chunks are
  not run. Pruning never changes the front; it saves simulation;
- the study is an Optuna `Study` in an SQLite file (`study.db` beside the results). Each trial's
  rows are stored in the study before its outcome is told, so a search interrupted at any moment
  resumes where it stopped: trials proposed but not told are simulated again.

`run_search` returns the simulated points, their rows and the search's history (per trial: its
values, status and the hypervolume of the front found so far).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from cimxdsl.explore.chunks import shards
from cimxdsl.explore.context import Context
from cimxdsl.explore.pareto import hypervolume_history, non_dominated
from cimxdsl.explore.points import Point, compile_key, format_value
from cimxdsl.explore.results import summarize
from cimxdsl.explore.rows import error_row, point_rows
from cimxdsl.explore.sweep import DEFAULT_TRIALS, MAXIMISED, OBJECTIVES, Axis, Sweep, SweepError, default_setting

STUDY_FILE = "study.db"
"""The study's file in a search's output folder."""
STUDY_NAME = "cim-explore"
RECORD = "trial {:06d}"
"""The study's user attribute holding a trial's outcome."""
PRUNE_FRACTION = 4
"""Pruning looks at the first 1/PRUNE_FRACTION of a point's chunks (at least one)."""


# ---- the space -----------------------------------------------------------------------------------
class Space:
    """The sweep's axes as Optuna distributions, one parameter per axis: a range's numbers, a
    list of plain values itself, else (linked axes, lists of lists) the step's index."""

    def __init__(self, sweep: Sweep):
        self.sweep = sweep
        self.distributions = {}
        for axis in sweep.axes:
            if axis.range is not None:
                r = axis.range
                kind = IntDistribution if r.integer else FloatDistribution
                step = (1 if r.log else r.step or 1) if r.integer else r.step
                self.distributions[axis.name] = kind(r.low, r.high, log=r.log, step=step)
            else:
                self.distributions[axis.name] = CategoricalDistribution(self.choices(axis))

    @staticmethod
    def by_value(axis: Axis) -> bool:
        return len(axis.fields) == 1 and all(isinstance(v[0], bool | int | float | str) for v in axis.values)

    def choices(self, axis: Axis) -> list:
        return [v[0] for v in axis.values] if self.by_value(axis) else list(range(len(axis)))

    def settings(self, params: dict[str, Any]) -> dict[str, Any]:
        """The swept fields of the point `params` stands for (the base device's where unset)."""
        settings = {f: default_setting(self.sweep, f) for f in self.sweep.swept_fields}
        for axis in self.sweep.axes:
            value = params[axis.name]
            if axis.range is not None or self.by_value(axis):
                settings[axis.fields[0]] = value
            else:
                settings.update(axis.settings(value))
        return settings

    def grid(self) -> list[dict[str, Any]]:
        """The parameters of every point of the product of the axes, in the order of a sweep."""
        import itertools

        choices = [self.choices(axis) for axis in self.sweep.axes]
        names = [axis.name for axis in self.sweep.axes]
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*choices)]


def make_sampler(
    sweep: Sweep,
    space: Space,
    seed: int,
    constraints: Callable | None,
    records: dict | None = None,
    position: int = 0,
    prior: dict | None = None,
):
    """The sweep's sampler, seeded with `seed`; `records`: the trials' outcomes so far (by number),
    which the surrogate is fitted on; `position`: how many trials were proposed before (the grid's
    next point); `prior`: the surrogate's predicted values of every point (`surrogate.prior_of`)."""
    if sweep.search == "surrogate":
        from cimxdsl.explore.surrogate import SurrogateSampler

        return SurrogateSampler(
            space.distributions, sweep.objectives, MAXIMISED, sweep.constraints, records or {}, seed, prior
        )
    if sweep.search == "grid":
        return GridOrderSampler(space.grid(), position)
    if sweep.search == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if sweep.search == "tpe":
        return optuna.samplers.TPESampler(seed=seed, constraints_func=constraints)
    population = {"population_size": sweep.population} if sweep.population else {}
    return OrderedNSGAIISampler(seed=seed, constraints_func=constraints, **population)


class OrderedNSGAIISampler(optuna.samplers.NSGAIISampler):
    """NSGA-II whose parents come in trial order for every trial of a generation.

    Optuna selects a generation's parents once, for its first trial, and stores their ids in the
    study: that first trial gets them in the order of the selection, every later trial (reading the
    stored ids) in the order of the study. A search stopped while it proposed a generation's first
    trial has stored the parents already, so on resume that trial would draw its parents from the
    other order and become another child. In trial order, every trial sees the same list whether
    the parents were selected just now or read back."""

    def get_parent_population(self, study, generation: int) -> list:
        return sorted(super().get_parent_population(study, generation), key=lambda t: t.number)


class GridOrderSampler(optuna.samplers.BaseSampler):
    """The trial gets the grid's point at `position` (a grid search that resumes where it stopped)."""

    def __init__(self, grid: list[dict[str, Any]], position: int):
        self.grid = grid
        self.position = position

    def infer_relative_search_space(self, study, trial):
        return {}

    def sample_relative(self, study, trial, search_space):
        return {}

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self.grid[self.position][param_name]


def trial_seed(seed: int, number: int) -> int:
    """The sampler seed of trial `number` (stable across processes: SHA-256, no Python hash)."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{number}".encode()).digest()[:4], "little")


# ---- the study -----------------------------------------------------------------------------------
def check_study_file(path: Path) -> None:
    """Fail, without touching it, when `path` exists and is not an Optuna SQLite study."""
    if not path.exists():
        return
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error as e:
        raise SweepError(f"study file '{path}' is not an SQLite database ({e}); it was left as it is") from None
    if not {"studies", "trials", "study_user_attributes"} <= tables:
        raise SweepError(f"study file '{path}' is not an Optuna study (no trials table); it was left as it is")


def connector(path: Path) -> Callable[[], sqlite3.Connection]:
    """Connections to the study file in write-ahead-log mode without a sync per commit: a crashed or
    killed search loses nothing it told (a power cut may lose the last trials, which a resumed
    search proposes again), and a trial costs a few file writes instead of a dozen syncs."""

    def connect() -> sqlite3.Connection:
        connection = sqlite3.connect(path, timeout=60)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    return connect


@contextlib.contextmanager
def quiet_optuna() -> Iterator[None]:
    """Optuna's info logs and experimental-feature warnings off (restored after)."""
    logger = logging.getLogger("optuna")
    level = logger.level
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            yield
    finally:
        logger.setLevel(level)


def fingerprint(sweep: Sweep, context: Context) -> dict:
    """What a study's trials depend on: a study holding another search is not resumed."""
    return {
        "search": sweep.search,
        "seed": sweep.seed,
        "seeds": sweep.seeds,
        "prune": sweep.prune,
        "population": sweep.population,
        "objectives": list(sweep.objectives),
        "constraints": [str(c) for c in sweep.constraints],
        "axes": [[a.name, list(a.fields), [list(v) for v in a.values], str(a.range)] for a in sweep.axes],
        "data": context.token,
        "cost": vars(sweep.cost),
        "predictor": None if sweep.predictor is None else hashlib.sha256(sweep.predictor.read_bytes()).hexdigest(),
    }


def open_study(sweep: Sweep, context: Context, path: str | Path | None):
    """The sweep's study: in `path` (an SQLite file, created or resumed), else in memory."""
    directions = ["maximize" if o in MAXIMISED else "minimize" for o in sweep.objectives]
    try:
        if path is None:
            storage = optuna.storages.InMemoryStorage()
        else:
            path = Path(path).resolve()
            check_study_file(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            storage = optuna.storages.RDBStorage(f"sqlite:///{path}", engine_kwargs={"creator": connector(path)})
        study = optuna.create_study(storage=storage, study_name=STUDY_NAME, directions=directions, load_if_exists=True)
    except Exception as e:  # SQLAlchemy and Optuna errors of an unreadable or foreign file
        raise SweepError(f"study file '{path}' cannot be read as an Optuna study: {e}") from None
    wanted = json.loads(json.dumps(fingerprint(sweep, context)))
    found = study.user_attrs.get("sweep")
    if found is None:
        if study.trials:
            raise SweepError(f"study file '{path}' holds trials of another program; it was left as it is")
        study.set_user_attr("sweep", wanted)
    elif found != wanted:
        differ = ", ".join(k for k in wanted if found.get(k) != wanted[k])
        raise SweepError(
            f"study file '{path}' holds another search (its {differ} differ); remove it or write the results elsewhere"
        )
    return study, storage


def live_trial(study, storage, number: int):
    """The `Trial` of trial `number` (one proposed by an earlier, interrupted run)."""
    study_id = storage.get_study_id_from_name(STUDY_NAME)
    return optuna.trial.Trial(study, storage.get_trial_id_from_study_id_trial_number(study_id, number))


SET_CONSTRAINT = hasattr(optuna.trial.Trial, "set_constraint")
"""Optuna 5 takes constraints on the trial (`Trial.set_constraint`); Optuna 4 from the sampler's
`constraints_func`."""


# ---- the search -----------------------------------------------------------------------------------
@dataclass
class Outcome:
    """What a search found: the simulated points (one per distinct configuration), their rows and
    the history (one entry per trial)."""

    points: list[Point]
    rows: list[dict]
    history: dict
    trials: int


@dataclass
class Search:
    """One search run over `study` (`run_search`)."""

    sweep: Sweep
    context: Context
    study: Any
    evaluator: Any
    space: Space = field(init=False)
    points: list[Point] = field(default_factory=list)
    rows: dict[int, list[dict]] = field(default_factory=dict)
    """The rows of each simulated point, by point index."""
    status: dict[int, str] = field(default_factory=dict)
    """Each simulated point's outcome: ok, error or pruned."""
    records: dict[int, dict] = field(default_factory=dict)
    """Each finished trial's record (by trial number): status, point, values."""
    known: dict[tuple, int] = field(default_factory=dict)
    programs: dict[tuple, int] = field(default_factory=dict)
    bounds: dict[int, list[float]] = field(default_factory=dict)
    """The optimistic objective values of pruned points (by point index)."""

    def __post_init__(self) -> None:
        self.space = Space(self.sweep)

    # ---- points --------------------------------------------------------------------------------
    def point_of(self, params: dict[str, Any]) -> tuple[Point, bool]:
        """The point `params` stand for, and whether it is new."""
        settings = self.space.settings(params)
        key = tuple(settings.items())
        if key in self.known:
            return self.points[self.known[key]], False
        program = self.programs.setdefault(compile_key(self.sweep, settings), len(self.programs))
        label = ", ".join(f"{f}={format_value(v)}" for f, v in settings.items())
        point = Point(len(self.points), key, tuple(a.name for a in self.sweep.axes), program, label)
        self.points.append(point)
        self.known[key] = point.index
        return point, True

    def metrics(self, point: int) -> dict[str, float] | None:
        """Every objective's value (summary means over seeds) of a simulated point, or the
        optimistic bound of a pruned one; None for a failed one."""
        if point in self.bounds:
            return self.bounds[point]
        if self.status.get(point) != "ok":
            return None
        entry = summarize([self.points[point]], self.rows[point])[0]
        return {name: float(entry[key]) for name, key in OBJECTIVES.items()}

    def violations(self, metrics: dict[str, float] | None) -> list[float]:
        """Each constraint's violation (<= 0: met); all violated without metrics."""
        if metrics is None:
            return [1.0] * len(self.sweep.constraints)
        return [c.violation(metrics[c.metric]) for c in self.sweep.constraints]

    def feasible(self, record: dict) -> bool:
        return record["values"] is not None and all(v <= 0 for v in self.violations(record["metrics"]))

    def feasible_front(self) -> np.ndarray:
        """The minimised objective values of the feasible points on the front so far."""
        found = [self.minimised(r["values"]) for r in self.records.values() if self.feasible(r)]
        if not found:
            return np.zeros((0, len(self.sweep.objectives)))
        found = np.array(found)
        return found[non_dominated(found)]

    def minimised(self, values: list[float]) -> np.ndarray:
        return np.array([-v if o in MAXIMISED else v for o, v in zip(self.sweep.objectives, values, strict=True)])

    # ---- evaluation ----------------------------------------------------------------------------
    def evaluate(self, new: list[Point]) -> None:
        """Simulate the new points of a batch (pruning those whose first chunks are dominated)."""
        if not new:
            return
        chunks = self.context.shards(1)[0]
        workers = self.evaluator.workers
        front = self.feasible_front()
        head = max(1, len(chunks) // PRUNE_FRACTION)
        if not (self.sweep.prune and len(chunks) > 1 and (len(front) or self.sweep.constraints)):
            parts = shards(chunks, max(1, workers // len(new)))
            done = self.evaluator.run([(p, i, part) for p in new for i, part in enumerate(parts)])
            for p in new:
                self.finish(p, [done[p.index, i] for i in range(len(parts))])
            return
        first = self.evaluator.run([(p, 0, chunks[:head]) for p in new])
        going = []
        for p in new:
            part = first[p.index, 0]
            bound = None if isinstance(part, str) else self.bound(part)
            if bound is not None and self.hopeless(bound, front):
                self.status[p.index] = "pruned"
                self.bounds[p.index] = bound
                reason = f"pruned: dominated or infeasible after {head} of {len(chunks)} chunks"
                self.rows[p.index] = [{**error_row(p, 0, None, reason), "status": "pruned"}]
            elif isinstance(part, str):
                self.finish(p, [part])
            else:
                going.append(p)
        if not going:
            return
        rest = shards(chunks[head:], max(1, workers // len(going)))
        done = self.evaluator.run([(p, 1 + i, part) for p in going for i, part in enumerate(rest)])
        for p in going:
            self.finish(p, [first[p.index, 0], *(done[p.index, 1 + i] for i in range(len(rest)))])

    def finish(self, point: Point, parts: list) -> None:
        rows = point_rows(self.context, point, parts)
        self.rows[point.index] = rows
        self.status[point.index] = "ok" if any(r["status"] == "ok" for r in rows) else "error"

    def bound(self, part: list) -> dict[str, float] | None:
        """Optimistic values of every objective of a point from its first chunks' runs (one per seed)."""
        if any(isinstance(run, str) for run in part):
            return None
        labels, reference = self.context.labels, self.context.reference
        n = len(labels)
        accuracy, agreement = [], []
        for run in part:
            predictions = np.argmax(run.outputs[0], axis=-1).reshape(-1)
            m = len(predictions)
            accuracy.append((np.sum(predictions == labels[:m]) + n - m) / n)
            agreement.append((np.sum(predictions == reference[:m]) + n - m) / n)
        report = part[0].report
        bound = {
            "accuracy": float(np.mean(accuracy)),
            "agreement": float(np.mean(agreement)),
            "latency": float(report["latency_ns"]),
            "energy": float(report["total"]["energy_pj"]["total"]) / n,
            "crossbars": float(report["crossbars_used"]),
            "writes": float(report["total"]["writes"]),
        }
        assert set(bound) == set(OBJECTIVES), "a bound for every objective"
        return bound

    def hopeless(self, bound: dict[str, float], front: np.ndarray) -> bool:
        """Whether a point with these optimistic values cannot reach the feasible front."""
        for c, v in zip(self.sweep.constraints, self.violations(bound), strict=True):
            optimistic = (c.metric in MAXIMISED) == (c.op in (">=", ">"))  # the bound errs on the kind side
            if optimistic and v > 0:
                return True
        row = self.minimised([bound[o] for o in self.sweep.objectives])
        return bool(len(front) and ((front <= row).all(axis=1) & (front < row).any(axis=1)).any())


def run_search(
    sweep: Sweep,
    context: Context,
    evaluator,
    study_path: str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Outcome:
    """Run (or resume) the sweep's search with `evaluator` (an open `execution.Evaluator`)."""
    start = time.perf_counter()
    say = progress or (lambda done, total: None)
    with quiet_optuna():
        study, storage = open_study(sweep, context, study_path)
        search = Search(sweep, context, study, evaluator)
        grid = search.space.grid() if sweep.search == "grid" else None
        budget = sweep.trials or (len(grid) if grid is not None else DEFAULT_TRIALS)
        if grid is not None:
            budget = min(budget, len(grid))
        constraints = None
        if sweep.constraints and not SET_CONSTRAINT:
            constraints = lambda trial: search.violations(search.records[trial.number]["metrics"])  # noqa: E731
        batch = sweep.trials_per_batch or evaluator.workers
        prior = None
        if sweep.predictor is not None:
            from cimxdsl.explore.surrogate import prior_of

            prior = prior_of(sweep, search.space)
        stored = study.user_attrs
        pending, skipped = [], 0
        study.sampler = optuna.samplers.RandomSampler()
        for trial in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number):
            record = stored.get(RECORD.format(trial.number))
            interrupted = trial.state == TrialState.RUNNING and set(trial.params) != set(search.space.distributions)
            if record is None and (interrupted or trial.state == TrialState.FAIL):
                # stopped while it was being proposed: not a trial of the search (its sampler's
                # seed and the grid's position go to the next trial, as if it had never been)
                if interrupted:
                    study.tell(trial.number, state=TrialState.FAIL)
                skipped += 1
                continue
            point, new = search.point_of(trial.params)
            if record is not None:
                restore(search, trial.number, point, new, record)
            if trial.state == TrialState.RUNNING:
                pending.append((trial.number, point, new, record is not None))
            elif record is None:
                raise SweepError(f"study file '{study_path}': trial {trial.number} has no stored result")
        # trials proposed but not told when the search stopped belong to its last batch: propose
        # the rest of that batch, then simulate (where needed) and tell them all in order
        carry = [(live_trial(study, storage, number), point, new, done) for number, point, new, done in pending]
        told = len(search.records)
        say(told, budget)
        while carry or len(study.trials) - skipped < budget:
            position = len(study.trials) - skipped
            late = sweep.timeout_s is not None and time.perf_counter() - start > sweep.timeout_s
            if late and not carry:
                break
            rest = (batch - position % batch) % batch if carry else batch - position % batch
            asked, carry = carry, []
            for _ in range(0 if late else min(rest, budget - position)):
                position = len(study.trials) - skipped
                seed = trial_seed(sweep.seed, position)
                study.sampler = make_sampler(sweep, search.space, seed, constraints, search.records, position, prior)
                trial = study.ask(search.space.distributions)
                point, new = search.point_of(trial.params)
                asked.append((trial, point, new, False))
            search.evaluate([p for _, p, new, done in asked if new and not done])
            for trial, point, _, done in asked:
                tell(search, study, trial, point, stored_already=done)
                told += 1
                say(told, budget)
        study.sampler = optuna.samplers.RandomSampler()
    return outcome(search, len(study.trials) - skipped)


def restore(search: Search, number: int, point: Point, new: bool, record: dict) -> None:
    """Take back a stored trial's outcome (rows with its first trial of a point)."""
    if new:
        search.rows[point.index] = record["rows"]
        search.status[point.index] = record["status"]
        if record["status"] == "pruned":
            search.bounds[point.index] = record["metrics"]
    search.records[number] = {key: record[key] for key in ("status", "point", "values", "metrics")}


def tell(search: Search, study, trial, point: Point, stored_already: bool = False) -> None:
    """Store `trial`'s outcome in the study, then tell the sampler."""
    number = trial.number
    status = search.status[point.index]
    metrics = search.metrics(point.index)
    values = [metrics[o] for o in search.sweep.objectives] if status == "ok" else None
    record = {"status": status, "point": point.index, "values": values, "metrics": metrics}
    search.records[number] = record
    if not stored_already:
        study.set_user_attr(
            RECORD.format(number),
            {**record, "rows": search.rows[point.index]},
        )
    if SET_CONSTRAINT and status != "error":
        with warnings.catch_warnings():  # a resumed trial may have them already: they are the same
            warnings.filterwarnings("ignore", message="The constraint value is ignored")
            for c, violation in zip(search.sweep.constraints, search.violations(metrics), strict=True):
                trial.set_constraint(str(c), violation)
    if values is not None and not any(math.isnan(v) for v in values):
        study.tell(trial, values, skip_if_finished=True)
    elif status == "pruned":
        study.tell(trial, state=TrialState.PRUNED, skip_if_finished=True)
    else:
        study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)


def outcome(search: Search, trials: int) -> Outcome:
    """The simulated points, their rows in point order, and the history of the front."""
    sweep = search.sweep
    numbers = sorted(search.records)
    values = []
    for n in numbers:
        record = search.records[n]
        ok = search.feasible(record)
        values.append(search.minimised(record["values"]) if ok else np.full(len(sweep.objectives), np.nan))
    values = np.array(values).reshape(len(numbers), len(sweep.objectives))
    finite = values[~np.isnan(values).any(axis=1)]
    low = finite.min(axis=0) if len(finite) else np.zeros(values.shape[1])
    high = finite.max(axis=0) if len(finite) else np.ones(values.shape[1])
    volumes = hypervolume_history(values, low, high) if len(values) else np.zeros(0)
    simulated, seen, fronts = [], set(), []
    front: list[int] = []
    for k, n in enumerate(numbers):
        seen.add(search.records[n]["point"])
        simulated.append(len(seen))
        if not np.isnan(values[k]).any():
            members = [*front, k]
            mask = non_dominated(values[members])
            kept = [m for m, keep in zip(members, mask, strict=True) if keep]
            front = sorted({search.records[numbers[m]]["point"]: m for m in kept}.values())
        fronts.append(sorted({search.records[numbers[m]]["point"] for m in front}))
    history = {
        "search": sweep.search,
        "objectives": list(sweep.objectives),
        "directions": ["maximize" if o in MAXIMISED else "minimize" for o in sweep.objectives],
        "constraints": [str(c) for c in sweep.constraints],
        "normalisation": {"low": low.tolist(), "high": high.tolist(), "reference": 1.1},
        "trials": [
            {
                "trial": n,
                "point": search.records[n]["point"],
                "status": search.records[n]["status"],
                "values": search.records[n]["values"],
                "simulated": simulated[k],
                "hypervolume": float(volumes[k]),
                "front": fronts[k],
            }
            for k, n in enumerate(numbers)
        ],
    }
    rows = [row for p in search.points for row in search.rows[p.index]]
    return Outcome(search.points, rows, history, trials)
