"""A surrogate-assisted search (`search = "surrogate"`): a regressor fitted on the points simulated
so far predicts every objective of the points not yet tried, and the point whose predicted values
would add the most hypervolume to the front found so far is simulated next.

The regressors are the learned predictor's (`learn.regressor`: Gaussian processes while the
trials are few, gradient boosting after), one per objective and constrained metric, on the axes'
values (a choice that is not a number as its index; a log range as its log). Costs (latency,
energy, crossbars, writes) are fitted as log2. A Gaussian process's prediction is taken one
standard deviation on the optimistic side (an upper confidence bound), so the search also tries
points it is unsure of. The first `initial_trials` trials (at least 5, one
per axis) are drawn at random; so is a trial whose every candidate is predicted to add nothing.
Candidates: every untried point of the product of the axes when it has at most `MAX_CANDIDATES`
points, else that many random draws. The sampler is seeded per trial like the others, so a
search gives the same trials whether it ran in one go or was resumed.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from sklearn.exceptions import ConvergenceWarning

from cimxdsl.explore.learn import method_of, regressor
from cimxdsl.explore.pareto import REFERENCE, hypervolume, non_dominated, normalise

MAX_CANDIDATES = 4096
EXPLORATION = 1.0
"""Standard deviations a Gaussian process's prediction is moved towards the better side."""
LOG_METRICS = ("latency", "energy", "crossbars", "writes")


def initial_trials(distributions: dict) -> int:
    """Random trials before the first fit: one per axis (at least 5). Two per axis take 2.6× the
    simulated points to reach 99 % of the grid's hypervolume in `benchmarks/dse_search.py` (median
    of six seeds)."""
    return max(5, len(distributions))


class SurrogateSampler(optuna.samplers.BaseSampler):
    """Proposes the untried point of largest predicted hypervolume improvement (see the module)."""

    def __init__(
        self,
        distributions: dict,
        objectives,
        maximised,
        constraints,
        records: dict[int, dict],
        seed: int,
        prior: dict[tuple, dict[str, float]] | None = None,
    ):
        self.distributions = distributions
        self.prior = prior
        self.objectives = tuple(objectives)
        self.maximised = tuple(maximised)
        self.constraints = tuple(constraints)
        self.records = records
        self.rng = np.random.default_rng(seed)
        self.fallback = optuna.samplers.RandomSampler(seed=seed)

    # ---- optuna's interface ------------------------------------------------------------------
    def infer_relative_search_space(self, study, trial):
        return self.distributions

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self.fallback.sample_independent(study, trial, param_name, param_distribution)

    def sample_relative(self, study, trial, search_space) -> dict[str, Any]:
        if not search_space:
            return {}
        trials = study.get_trials(deepcopy=False)
        tried = {self.key(t.params) for t in trials if t.params and t.number != trial.number}
        candidates = [c for c in self.candidates() if self.key(c) not in tried]
        if not candidates:
            return {}
        known = [
            (t.params, self.records[t.number]["metrics"])
            for t in trials
            if t.params and self.records.get(t.number, {}).get("status") == "ok"
        ]
        if self.prior is None and len(known) < initial_trials(self.distributions):
            return candidates[int(self.rng.integers(len(candidates)))]
        x = np.array([self.encode(p) for p, _ in known]).reshape(len(known), len(self.distributions))
        grid = np.array([self.encode(c) for c in candidates])
        metrics = sorted({*self.objectives, *(c.metric for c in self.constraints)})
        predicted = {
            m: self.fit_predict(
                x, [v[m] for _, v in known], grid, m, *self.prior_of(m, [p for p, _ in known], candidates)
            )
            for m in metrics
        }
        simulated = {m: np.array([v[m] for _, v in known], dtype=float) for m in metrics}
        choice = self.best(simulated, predicted)
        if choice is None:
            choice = int(self.rng.integers(len(candidates)))
        return candidates[choice]

    # ---- the space -----------------------------------------------------------------------------
    def key(self, params: dict) -> tuple:
        return tuple(params.get(n) for n in self.distributions)

    def candidates(self) -> list[dict[str, Any]]:
        """The untried points' parameters: the product of finite axes, else random draws."""
        values = [finite_values(d) for d in self.distributions.values()]
        names = list(self.distributions)
        if all(v is not None for v in values) and math.prod(len(v) for v in values) <= MAX_CANDIDATES:
            return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]
        drawn = {}
        for _ in range(MAX_CANDIDATES):
            params = {n: draw(d, self.rng) for n, d in self.distributions.items()}
            drawn.setdefault(self.key(params), params)
        return list(drawn.values())

    def encode(self, params: dict) -> list[float]:
        row = []
        for name, d in self.distributions.items():
            value = params[name]
            if isinstance(d, CategoricalDistribution):
                numeric = all(isinstance(c, int | float) and not isinstance(c, bool) for c in d.choices)
                row.append(float(value) if numeric else float(d.choices.index(value)))
            else:
                row.append(math.log2(value) if d.log else float(value))
        return row

    # ---- the model ---------------------------------------------------------------------------------
    def prior_of(self, metric: str, known: list[dict], candidates: list[dict]) -> tuple:
        """The predictor's values of `metric` at the known points and the candidates (None, None
        without a predictor)."""
        if self.prior is None:
            return None, None
        return tuple(np.array([self.prior[self.key(p)][metric] for p in ps], dtype=float) for ps in (known, candidates))

    def fit_predict(
        self,
        x: np.ndarray,
        y: list[float],
        grid: np.ndarray,
        metric: str,
        prior_known: np.ndarray | None = None,
        prior_grid: np.ndarray | None = None,
    ) -> np.ndarray:
        """The metric's optimistic prediction on `grid`: a Gaussian process's mean moved one
        standard deviation towards the better side (so uncertain points are tried), a boosted
        model's mean. With a predictor's values (`prior_known`, `prior_grid`), the regressor
        learns the simulated values' difference from them (costs: their ratio), and predicts
        the predictor's values where nothing is simulated yet."""
        y = np.array(y, dtype=float)
        logged = metric in LOG_METRICS and (y > 0).all() and (prior_grid is None or (prior_grid > 0).all())
        scale = np.log2 if logged else (lambda v: v)
        target = scale(y) - (0 if prior_known is None else scale(prior_known))
        offset = 0 if prior_grid is None else scale(prior_grid)
        back = (lambda v: np.exp2(v + offset)) if logged else (lambda v: v + offset)
        if len(y) < 2 or np.ptp(target) == 0:
            return back(np.full(len(grid), target.mean() if len(y) else 0.0))
        method = method_of("auto", len(y))
        model = regressor(method, "accuracy" if metric in self.maximised else metric)
        with warnings.catch_warnings():  # a kernel parameter at its bound is not an error of the fit
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(x, target)
            if method == "gp":
                mean, std = model.predict(grid, return_std=True)
                found = mean + EXPLORATION * std * (1 if metric in self.maximised else -1)
            else:
                found = model.predict(grid)
        return back(found)

    def minimised(self, values: dict[str, np.ndarray]) -> np.ndarray:
        return np.stack([-values[o] if o in self.maximised else values[o] for o in self.objectives], axis=1)

    def feasible(self, values: dict[str, np.ndarray]) -> np.ndarray:
        met = np.ones(len(next(iter(values.values()))), dtype=bool)
        for c in self.constraints:
            met &= np.array([c.violation(v) <= 0 for v in values[c.metric]])
        return met

    def best(self, simulated: dict[str, np.ndarray], predicted: dict[str, np.ndarray]) -> int | None:
        """The candidate whose predicted values add the most hypervolume to the feasible simulated
        front (None when none adds any)."""
        found, guess = self.minimised(simulated), self.minimised(predicted)
        ok, hopeful = self.feasible(simulated), self.feasible(predicted)
        front = found[ok][non_dominated(found[ok])] if ok.any() else np.zeros((0, found.shape[1]))
        both = np.vstack([front, guess[hopeful]]) if hopeful.any() else front
        if not len(both):
            return None
        low, high = both.min(axis=0), both.max(axis=0)
        reference = np.full(found.shape[1], REFERENCE)
        base = normalise(front, low, high)
        volume = hypervolume(base, reference) if len(base) else 0.0
        gains = np.zeros(len(guess))
        for i in np.flatnonzero(hopeful):
            row = normalise(guess[i : i + 1], low, high)
            if len(base) and ((base <= row).all(axis=1)).any():
                continue  # predicted to be dominated by a simulated point
            gains[i] = hypervolume(np.vstack([base, row]), reference) - volume
        return int(np.argmax(gains)) if gains.max() > 0 else None


def prior_of(sweep, space) -> dict[tuple, dict[str, float]]:
    """The values a saved predictor (`sweep.predictor`) predicts for every point of the sweep's
    axes, by the points' parameters (in the order of `space.distributions`)."""
    import json

    from cimxdsl.explore.learn import LearnError, load_predictor, predict
    from cimxdsl.explore.sweep import SweepError

    if any(axis.range is not None and not axis.values for axis in sweep.axes):
        raise SweepError("'predictor': the surrogate starts from a predictor on axes of finitely many values")
    try:
        prediction = predict(load_predictor(sweep.predictor), sweep)
    except LearnError as e:
        raise SweepError(f"'predictor': {e}") from None
    index = {json.dumps(s, sort_keys=True, default=str): i for i, s in enumerate(prediction.settings)}
    prior = {}
    for params in space.grid():
        i = index.get(json.dumps(space.settings(params), sort_keys=True, default=str))
        if i is not None:
            prior[tuple(params[n] for n in space.distributions)] = {
                o: float(v[i]) for o, v in prediction.values.items()
            }
    return prior


def finite_values(d) -> list | None:
    """The values of a distribution with finitely many (None for a continuous one)."""
    if isinstance(d, CategoricalDistribution):
        return list(d.choices)
    if isinstance(d, IntDistribution) and not d.log:
        return list(range(d.low, d.high + 1, d.step))
    if isinstance(d, FloatDistribution) and d.step is not None:
        count = math.floor((d.high - d.low) / d.step + 1e-9) + 1
        return [round(d.low + i * d.step, 12) for i in range(count)]
    return None


def draw(d, rng: np.random.Generator) -> Any:
    """One random value of a distribution."""
    values = finite_values(d)
    if values is not None:
        return values[int(rng.integers(len(values)))]
    if isinstance(d, IntDistribution):  # a log range of integers
        return min(d.high, max(d.low, round(math.exp(rng.uniform(math.log(d.low), math.log(d.high))))))
    if d.log:
        return float(math.exp(rng.uniform(math.log(d.low), math.log(d.high))))
    return float(rng.uniform(d.low, d.high))
