"""A learned predictor of a sweep's objectives: trained on explored points, it predicts accuracy,
latency and energy for a new model and device without simulating it (after Samajdar et al.,
"AIrchitect: Learning Custom Architecture Design and Mapping Space", 2021).

Each training sample is one point of a sweep's results (its seeds averaged). Its inputs are the
point's device and mapping parameters (every `DeviceConfig` field and the placement, choices as
their index), the workload's features (`workload.model_features`: layer count, MACs, weights,
the largest and MAC-weighted K and N, kernels, run-time products) and what the workload implies on
that device (`workload.device_features`: tiles, array reads, ADC conversions, programming and read
time, the bits the ADC lacks). Its outputs:

- accuracy, learnt as the fraction of the float model's accuracy the point keeps (so models of
  different float accuracies share one scale); a prediction is that fraction times the new
  model's float accuracy on its data set (onnxruntime: no crossbar simulation);
- latency per input and energy per input, learnt as log2 (costs span orders of magnitude and
  scale multiplicatively with the counts).

Regressors (scikit-learn): `gbm` gradient boosting, `forest` a random forest, `gp` a Gaussian
process (for few samples); `auto` takes `gp` under `GP_SAMPLES` samples, else `gbm`. The cost
regressors fit a ridge regression on the features first and the trees on its residuals, so a
workload larger than any seen still scales with its counts instead of saturating at the largest.

A predictor file is JSON: the training samples (feature matrix, targets, groups), the
hyperparameters and the workloads' layers. Loading it refits the regressors (fixed seeds); no
pickled object is ever loaded, so a predictor file is as safe to open as a results file.
"""

from __future__ import annotations

import json
import math
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cimxdsl.device import DeviceConfig, DeviceConfigError
from cimxdsl.device.config import DEVICE
from cimxdsl.device.placement import PLACEMENTS
from cimxdsl.explore.pareto import non_dominated
from cimxdsl.explore.sweep import Constraint, CostModel, SweepError, parse_constraints
from cimxdsl.explore.workload import (
    DEVICE_WORKLOAD_FEATURES,
    WORKLOAD_FEATURES,
    Layer,
    device_features,
    layer_rows,
    model_features,
    model_layers,
)

FORMAT = "cimxdsl-predictor"
VERSION = 1
OBJECTIVES = {"accuracy": "max", "latency": "min", "energy": "min"}
"""The objectives and their direction."""
UNITS = {"accuracy": "fraction", "latency": "ns per input", "energy": "pJ per input"}
NEEDED = ("accuracy_mean", "latency_ns", "energy_per_image_pj")
"""The columns of a results file's points the targets come from."""
METHODS = ("auto", "gbm", "forest", "gp")
GP_SAMPLES = 60
"""Under this many samples `auto` fits Gaussian processes."""
SEED = 0
DEVICE_FIELDS = (
    *(f for f, (kind, _, _) in DEVICE.fields.items() if f not in ("name", "seed") and kind in (int, float, str, bool)),
    "placement",
)
"""The device and mapping parameters a sample is described by."""
FEATURES = (*DEVICE_FIELDS, *WORKLOAD_FEATURES, *DEVICE_WORKLOAD_FEATURES)


class LearnError(ValueError):
    """Bad input to `learn` or `predict`; the message is one line."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


# ---- features --------------------------------------------------------------------------------------
def choices(name: str) -> tuple:
    if name == "placement":
        return PLACEMENTS
    return DEVICE.fields[name][2].choices if name in DEVICE.fields else ()


def encode(name: str, value: Any) -> float:
    """A parameter as a number: a choice as its index among the field's choices."""
    options = choices(name)
    if options:
        return float(options.index(value))
    return float(value)


def parameter(config: DeviceConfig, name: str) -> Any:
    """`config`'s parameter `name`, an unset direction's wire resistance as the one it takes."""
    value = getattr(config, name)
    return config.wire_resistance if value is None and name.endswith("_wire_resistance") else value


def feature_row(config: DeviceConfig, placement: str, layers: list[Layer], inputs: int) -> dict[str, float]:
    """The inputs of one sample: `config`'s parameters, the placement and the workload's features
    for a run of `inputs` inputs."""
    row = {f: encode(f, parameter(config, f)) for f in DEVICE_FIELDS if f != "placement"}
    row["placement"] = encode("placement", placement)
    return {**row, **model_features(layers), **device_features(layers, config, placement, inputs)}


# ---- results ---------------------------------------------------------------------------------------
@dataclass
class Workload:
    """A model the predictor knows: its layers and its float accuracy on its data set."""

    name: str
    layers: list[Layer]
    float_accuracy: float


@dataclass
class Samples:
    """Training samples: one row of `FEATURES` per point, its targets and its workload."""

    features: np.ndarray
    targets: dict[str, np.ndarray]
    """Per objective, the learnt quantity (accuracy kept, log2 latency, log2 energy)."""
    groups: list[str]
    workloads: dict[str, Workload]
    bases: list[dict]
    """The base device of each results file (as `DeviceConfig.to_dict`)."""
    cost: dict = field(default_factory=dict)
    space: dict[str, list] = field(default_factory=dict)
    """The values each swept field took."""
    reference: np.ndarray | None = None
    """The float model's accuracy on the data set of each sample's results (None: its workload's)."""


def results_json(path: Path) -> Path:
    if path.is_dir():
        path = path / "results.json"
    elif path.suffix == ".csv":
        beside = path.with_suffix(".json")
        if not beside.is_file():
            raise LearnError(
                f"{path}: the predictor reads results.json (it names the model and base device); none beside it"
            )
        path = beside
    if not path.is_file():
        raise LearnError(f"{path}: no such results file")
    return path


def read_results(paths: list[str | Path]) -> Samples:
    """The training samples of results files (results.json, a results directory, or results.csv with
    its results.json beside it). Failed points are left out."""
    if not paths:
        raise LearnError("no results given")
    rows, targets, groups, bases, costs = [], {o: [] for o in OBJECTIVES}, [], [], []
    workloads: dict[str, Workload] = {}
    paths_of: dict[str, Path] = {}  # a model's name: its file's stem, or its path if another has that stem
    space: dict[str, set] = {}
    reference: list[float] = []
    for given in paths:
        path = results_json(Path(given))
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise LearnError(f"{path}: not a results file ({type(e).__name__})") from None
        if not isinstance(data, dict) or data.get("format") != "cimxdsl-explore-results":
            raise LearnError(f"{path}: not a cim-explore results file")
        sweep = data.get("sweep", {})
        for key in ("model", "base_device", "images", "axes"):
            if key not in sweep:
                raise LearnError(f"{path}: no 'sweep.{key}' (the predictor needs the model, base device and images)")
        if "float_accuracy" not in data or "points" not in data:
            raise LearnError(f"{path}: no '{'float_accuracy' if 'points' in data else 'points'}'")
        ok = [p for p in data["points"] if p.get("status") == "ok"]
        for column in NEEDED:
            if ok and column not in ok[0]:
                raise LearnError(f"{path}: the points have no column '{column}' (needed: {', '.join(NEEDED)})")
        try:
            base = DeviceConfig.from_dict(sweep["base_device"])
        except DeviceConfigError as e:
            raise LearnError(f"{path}: sweep.base_device: {e}") from None
        cost = CostModel(**sweep.get("cost", {}))
        model = Path(sweep["model"])
        name = model.stem if paths_of.setdefault(model.stem, model) == model else str(model)
        if name not in workloads:
            if not model.is_file():
                raise LearnError(f"{path}: its model '{model}' is not there (workload features are read from it)")
            workloads[name] = Workload(name, model_layers(model), float(data["float_accuracy"]))
        layers = workloads[name].layers
        float_accuracy = float(data["float_accuracy"])
        fields = [f for axis in sweep["axes"] for f in axis["fields"]]
        bases.append(base.to_dict())
        costs.append(json.dumps(vars(cost), sort_keys=True))
        for point in ok:
            settings = {f: point[f] for f in fields}
            for f, v in settings.items():
                space.setdefault(f, set()).add(json.dumps(v))
            config = configure(base, cost, settings)
            placement = settings.get("placement", sweep.get("placement", "host"))
            rows.append(feature_row(config, placement, layers, sweep["images"]))
            targets["accuracy"].append(point["accuracy_mean"] / float_accuracy if float_accuracy else 0.0)
            targets["latency"].append(math.log2(max(point["latency_ns"], 1e-9) / sweep["images"]))
            targets["energy"].append(math.log2(max(point["energy_per_image_pj"], 1e-12)))
            groups.append(name)
            reference.append(float_accuracy)
    if not rows:
        raise LearnError("the results hold no successful point to learn from")
    return Samples(
        features=np.array([[row[f] for f in FEATURES] for row in rows]),
        targets={o: np.array(v) for o, v in targets.items()},
        groups=groups,
        workloads=workloads,
        bases=bases,
        cost=json.loads(Counter(costs).most_common(1)[0][0]),
        space={f: sorted((json.loads(v) for v in values), key=str) for f, values in space.items()},
        reference=np.array(reference),
    )


def configure(base: DeviceConfig, cost: CostModel, settings: dict) -> DeviceConfig:
    from cimxdsl.explore.execution import configure as configure_point

    return configure_point(base, cost, settings)


# ---- regressors ------------------------------------------------------------------------------------
class LinearPlusTrees:
    """A ridge regression on standardised features, then `trees` fitted on its residuals."""

    def __init__(self, trees):
        from sklearn.linear_model import Ridge
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        self.linear = make_pipeline(StandardScaler(), Ridge(alpha=1.0))
        self.trees = trees

    def fit(self, x: np.ndarray, y: np.ndarray) -> LinearPlusTrees:
        self.linear.fit(x, y)
        self.trees.fit(x, y - self.linear.predict(x))
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.linear.predict(x) + self.trees.predict(x)


def regressor(method: str, objective: str):
    """An unfitted regressor for `objective` (`method` one of gbm, forest, gp)."""
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if method == "gp":
        kernel = ConstantKernel() * RBF(length_scale=1.0, length_scale_bounds=(1e-2, 1e3)) + WhiteKernel(1e-3)
        gp = GaussianProcessRegressor(kernel, normalize_y=True, random_state=SEED)
        return make_pipeline(StandardScaler(), gp)
    if method == "gbm":
        trees = GradientBoostingRegressor(
            n_estimators=300, max_depth=3, learning_rate=0.05, subsample=0.8, random_state=SEED
        )
    else:
        trees = RandomForestRegressor(n_estimators=200, min_samples_leaf=2, random_state=SEED)
    return trees if objective == "accuracy" else LinearPlusTrees(trees)


def require_sklearn() -> str:
    try:
        import sklearn
    except ImportError:
        raise LearnError("the predictor needs scikit-learn: pip install 'cimxdsl[explore]'") from None
    return sklearn.__version__


# ---- the predictor ---------------------------------------------------------------------------------
@dataclass
class Predictor:
    """Regressors of accuracy, latency and energy fitted on `samples`."""

    samples: Samples
    method: str = "auto"
    held_out: dict = field(default_factory=dict)
    """The error on points the evaluated fit did not train on (`held_out_error`)."""
    methods: dict[str, str] | None = None
    """The regressor of each objective (None: from `method`, `auto` cross-validating them)."""

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise LearnError(f"unknown method '{self.method}' (methods: {', '.join(METHODS)})")
        require_sklearn()
        x = self.samples.features
        varying = np.ptp(x, axis=0) > 0
        self.inputs = [f for f, v in zip(FEATURES, varying, strict=True) if v]
        self.constant = {f: float(x[0, i]) for i, f in enumerate(FEATURES) if not varying[i]}
        self.columns = np.flatnonzero(varying)
        from sklearn.exceptions import ConvergenceWarning

        with warnings.catch_warnings():  # a kernel parameter at its bound is not an error of the fit
            warnings.simplefilter("ignore", ConvergenceWarning)
            if self.methods is None:
                self.methods = choose_methods(self.samples, self.columns, self.method)
            self.models = {
                o: regressor(self.methods[o], o).fit(x[:, self.columns], y - baseline(x, o))
                for o, y in self.samples.targets.items()
            }
        common = Counter(self.methods.values()).most_common(1)[0][0]
        others = [f"{o}: {m}" for o, m in self.methods.items() if m != common]
        self.fitted = common + (f" ({', '.join(others)})" if others else "")

    @property
    def base(self) -> DeviceConfig:
        """The most common base device of the training results."""
        found = Counter(json.dumps(b, sort_keys=True) for b in self.samples.bases).most_common(1)[0][0]
        return DeviceConfig.from_dict(json.loads(found))

    def check(self, features: np.ndarray, workload: str) -> None:
        """Refuse inputs that were constant in training but differ here (the predictor has not seen
        them vary, so it cannot say what they do)."""
        for name, value in self.constant.items():
            given = features[:, FEATURES.index(name)]
            differs = ~np.isclose(given, value, rtol=1e-9, atol=1e-12)
            if differs.any():
                shown = given[differs][0]
                kind = "device parameter" if name in DEVICE_FIELDS else "workload feature"
                raise LearnError(
                    f"{workload}: {kind} '{name}' is {describe(name, shown)}, but the predictor was trained only on "
                    f"{describe(name, value)} (train it on results where it varies)"
                )

    def predict(
        self, features: np.ndarray, float_accuracy: float | np.ndarray, capped: bool = True
    ) -> dict[str, np.ndarray]:
        """Per objective, its prediction for each row of `features` (accuracy as a fraction, latency
        in ns per input, energy in pJ per input); `float_accuracy`: the float model's accuracy (one,
        or one per row). `capped=False` leaves the accuracy above 1 where the regressor predicts a
        margin there (`rank` breaks ties with it)."""
        x = features[:, self.columns]
        kept = np.clip(self.models["accuracy"].predict(x), 0.0, None)
        return {
            "accuracy": np.clip(kept * float_accuracy, 0.0, 1.0 if capped else None),
            **{o: np.exp2(baseline(features, o) + self.models[o].predict(x)) for o in ("latency", "energy")},
        }

    def to_dict(self) -> dict:
        s = self.samples
        return {
            "format": FORMAT,
            "version": VERSION,
            "sklearn": require_sklearn(),
            "method": self.method,
            "features": list(FEATURES),
            "samples": s.features.tolist(),
            "targets": {o: v.tolist() for o, v in s.targets.items()},
            "groups": s.groups,
            "reference": None if s.reference is None else s.reference.tolist(),
            "workloads": {
                n: {"layers": layer_rows(w.layers), "float_accuracy": w.float_accuracy} for n, w in s.workloads.items()
            },
            "bases": s.bases,
            "cost": s.cost,
            "space": s.space,
            "held_out": self.held_out,
            "methods": self.methods,
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict()) + "\n")


def baseline(features: np.ndarray, objective: str) -> np.ndarray | float:
    """What the regressors of `objective` correct: for latency and energy, the log2 of the cost
    model's estimate (`workload.estimate`), so they learn the ratio of the simulated cost to it;
    nothing for accuracy."""
    if objective == "accuracy":
        return 0.0
    return features[:, FEATURES.index(f"log_{objective}_estimate")]


CHOICES = ("gbm", "forest")
"""The regressors `auto` chooses between per objective, by cross-validation, from `GP_SAMPLES` samples."""
FOLDS = 3


def choose_methods(samples: Samples, columns: np.ndarray, method: str) -> dict[str, str]:
    """The regressor of each objective: `method`; for `auto`, `gp` under `GP_SAMPLES` samples, else
    whichever of `CHOICES` has the smaller mean absolute error in a `FOLDS`-fold cross-validation
    (folds of whole models where there are enough models, so the choice is for models not seen;
    else of points), `gbm` where the target is constant."""
    x, n = samples.features, len(samples.groups)
    if method != "auto" or n < GP_SAMPLES:
        return dict.fromkeys(samples.targets, method_of(method, n))
    from sklearn.model_selection import GroupKFold, KFold

    if len(set(samples.groups)) >= FOLDS:
        folds = list(GroupKFold(FOLDS).split(x, groups=samples.groups))
    else:
        folds = list(KFold(FOLDS, shuffle=True, random_state=SEED).split(x))
    chosen = {}
    for objective, y in samples.targets.items():
        target = y - baseline(x, objective)
        if np.ptp(target) < 1e-9:
            chosen[objective] = CHOICES[0]
            continue
        error = {
            m: np.mean(
                [
                    np.abs(
                        regressor(m, objective).fit(x[a][:, columns], target[a]).predict(x[b][:, columns]) - target[b]
                    ).mean()
                    for a, b in folds
                ]
            )
            for m in CHOICES
        }
        chosen[objective] = min(CHOICES, key=error.__getitem__)
    return chosen


def method_of(method: str, samples: int) -> str:
    return ("gp" if samples < GP_SAMPLES else "gbm") if method == "auto" else method


def describe(name: str, value: float) -> str:
    options = choices(name)
    return repr(options[int(value)]) if options and 0 <= value < len(options) else f"{value:g}"


def load_predictor(path: str | Path) -> Predictor:
    """A predictor saved by `Predictor.save` (its regressors refitted)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise LearnError(f"{path}: no such predictor file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise LearnError(f"{path}: not a predictor file ({type(e).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise LearnError(f"{path}: not a predictor file (made by cim-explore learn)")
    if data.get("version") != VERSION:
        raise LearnError(f"{path}: predictor format version {data.get('version')}, this cimxdsl reads {VERSION}")
    if data.get("features") != list(FEATURES):
        raise LearnError(f"{path}: its features are not this cimxdsl's (learn it again from the results)")
    samples = Samples(
        features=np.array(data["samples"], dtype=float),
        targets={o: np.array(v, dtype=float) for o, v in data["targets"].items()},
        groups=list(data["groups"]),
        workloads={
            n: Workload(n, [Layer(**la) for la in w["layers"]], w["float_accuracy"])
            for n, w in data["workloads"].items()
        },
        bases=data["bases"],
        cost=data["cost"],
        space=data["space"],
        reference=None if data.get("reference") is None else np.array(data["reference"], dtype=float),
    )
    return Predictor(samples, data["method"], data.get("held_out", {}), data.get("methods"))


# ---- held-out error --------------------------------------------------------------------------------
def subset(samples: Samples, keep: np.ndarray) -> Samples:
    groups = [g for g, k in zip(samples.groups, keep, strict=True) if k]
    return Samples(
        features=samples.features[keep],
        targets={o: v[keep] for o, v in samples.targets.items()},
        groups=groups,
        workloads={n: w for n, w in samples.workloads.items() if n in groups},
        bases=samples.bases,
        cost=samples.cost,
        space=samples.space,
        reference=None if samples.reference is None else samples.reference[keep],
    )


def errors(predicted: dict[str, np.ndarray], true: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Accuracy: mean and largest absolute error (a fraction); latency and energy: mean and
    largest error relative to the simulated value."""
    out = {}
    for objective in OBJECTIVES:
        p, t = predicted[objective], true[objective]
        e = np.abs(p - t) if objective == "accuracy" else np.abs(p - t) / t
        out[objective] = {"mean": float(e.mean()), "max": float(e.max())}
    return out


def simulated(samples: Samples, rows: np.ndarray) -> dict[str, np.ndarray]:
    """The objectives as simulated (undoing the learnt transforms) for `rows`."""
    return {
        "accuracy": samples.targets["accuracy"][rows] * simulated_float_accuracy(samples, rows),
        "latency": np.exp2(samples.targets["latency"][rows]),
        "energy": np.exp2(samples.targets["energy"][rows]),
    }


def simulated_float_accuracy(samples: Samples, rows: np.ndarray) -> np.ndarray:
    """The float model's accuracy of each sample in `rows`."""
    if samples.reference is not None:
        return samples.reference[rows]
    return np.array([samples.workloads[samples.groups[i]].float_accuracy for i in rows])


def held_out_error(samples: Samples, method: str = "auto", split: str = "points", fraction: float = 0.2) -> dict:
    """The error of a predictor on samples it did not train on. `points`: a random `fraction` of
    the points (seed fixed) held out; `models`: each model's points predicted by a predictor
    trained on the other models' (leave one model out)."""
    n = len(samples.groups)
    if split == "points":
        if n < 5:
            raise LearnError(f"a held-out split needs at least 5 points, the results have {n}")
        rng = np.random.default_rng(SEED)
        test = np.zeros(n, dtype=bool)
        test[rng.permutation(n)[: max(1, round(fraction * n))]] = True
        folds = [("points", test)]
    elif split == "models":
        names = sorted(set(samples.groups))
        if len(names) < 2:
            raise LearnError("a held-out split by model needs the results of at least 2 models")
        folds = [(name, np.array([g == name for g in samples.groups])) for name in names]
    else:
        raise LearnError(f"unknown split '{split}' (splits: points, models)")
    return {"split": split, "folds": {name: fold_error(samples, test, name, method)[1] for name, test in folds}}


def fold_error(samples: Samples, test: np.ndarray, name: str, method: str = "auto") -> tuple[Predictor, dict]:
    """A predictor trained on the samples outside `test`, and its error on those in it (or why it
    cannot predict them)."""
    predictor = Predictor(subset(samples, ~test), method)
    x = samples.features[test]
    try:
        predictor.check(x, name)
    except LearnError as e:
        return predictor, {"error": str(e), "points": int(test.sum())}
    rows = np.flatnonzero(test)
    predicted = predictor.predict(x, simulated_float_accuracy(samples, rows))
    return predictor, {
        "points": int(test.sum()),
        "trained_on": int((~test).sum()),
        "method": predictor.fitted,
        **errors(predicted, simulated(samples, rows)),
    }


def learn(paths: list[str | Path], method: str = "auto", split: str = "points") -> Predictor:
    """A predictor fitted on every point of the results, with its held-out error (`held_out_error`)."""
    samples = read_results(paths)
    return Predictor(samples, method, held_out_error(samples, method, split))


# ---- prediction ------------------------------------------------------------------------------------
def objective_name(name: str, where: str) -> str:
    if name not in OBJECTIVES:
        from cimxdsl.device.settings import did_you_mean

        raise LearnError(
            f"{where}: unknown objective '{name}'{did_you_mean(name, OBJECTIVES)} "
            f"(objectives of the predictor: {', '.join(OBJECTIVES)})"
        )
    return name


def parse_constraint(text: str) -> Constraint:
    """`accuracy>=0.9`, `latency<1e5` (ns per input), `energy<=2e4` (pJ per input): a sweep's
    constraint on one of the predicted objectives."""
    try:
        (constraint,) = parse_constraints([text])
    except SweepError as e:
        raise LearnError(str(e).removeprefix("sweep file: 'constraints': ")) from None
    objective_name(constraint.metric, f"constraint '{text}'")
    return constraint


def pareto_mask(values: dict[str, np.ndarray]) -> np.ndarray:
    """The rows no other row beats on every objective (accuracy up, latency and energy down)."""
    return non_dominated(np.stack([values[o] * (-1 if d == "max" else 1) for o, d in OBJECTIVES.items()], axis=1))


def meets(constraints: list[Constraint], values: dict[str, np.ndarray]) -> np.ndarray:
    """Which rows of `values` meet every constraint."""
    met = np.ones(len(values["accuracy"]), dtype=bool)
    for c in constraints:
        met &= np.vectorize(c.violation)(values[c.metric]) <= 0
    return met


def rank(
    values: dict[str, np.ndarray], constraints: list[Constraint], objective: str, uncapped: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Row indices, those meeting the constraints first, each part best first by `objective`
    (ties by the other objectives, accuracy by its `uncapped` prediction where given: rows all
    predicted at 100 % differ in how far above it the regressor puts them); and which rows meet
    every constraint."""
    feasible = meets(constraints, values)
    tied = dict(values) if uncapped is None else {**values, "accuracy": uncapped}
    keys = [tied[o] * (-1 if OBJECTIVES[o] == "max" else 1) for o in OBJECTIVES if o != objective]
    key = values[objective] * (-1 if OBJECTIVES[objective] == "max" else 1)
    return np.lexsort((*reversed(keys), key, ~feasible)), feasible


@dataclass
class Prediction:
    """The predicted objectives of every configuration of a space for one model."""

    sweep: Any
    """The space: a `Sweep` (its model, data, base device and axes)."""
    settings: list[dict]
    """Each candidate's swept settings."""
    values: dict[str, np.ndarray]
    uncapped: np.ndarray
    """The predicted accuracy not capped at 1 (`rank`)."""
    float_accuracy: float
    constraints: list[Constraint]
    objective: str
    order: np.ndarray
    """Candidates, those meeting the constraints first, each part best first by `objective`."""
    feasible: np.ndarray
    front: np.ndarray
    """Whether each candidate is on the predicted front (accuracy, latency, energy)."""
    skipped: list[str] = field(default_factory=list)
    """Configurations the device cannot be built with, with the reason."""
    verified: list[dict] = field(default_factory=list)

    @property
    def best(self) -> int | None:
        """The index of the predicted best configuration (None when none meets the constraints)."""
        first = int(self.order[0])
        return first if self.feasible[first] else None

    def entry(self, i: int) -> dict:
        return {
            **self.settings[i],
            **{o: float(v[i]) for o, v in self.values.items()},
            "feasible": bool(self.feasible[i]),
        }

    def to_dict(self) -> dict:
        return {
            "model": str(self.sweep.model),
            "float_accuracy": self.float_accuracy,
            "objective": self.objective,
            "constraints": [str(c) for c in self.constraints],
            "units": UNITS,
            "best": None if self.best is None else self.entry(self.best),
            "front": [self.entry(int(i)) for i in self.order if self.front[i]],
            "candidates": len(self.settings),
            "skipped": self.skipped,
            "verified": self.verified,
        }


def model_space(predictor: Predictor, model: str | Path, data: str | Path | None, limit: int | None = None) -> dict:
    """A sweep over the values the predictor was trained on, for `model` on `data`, from the
    training results' most common base device and cost model."""
    sweep: dict[str, Any] = {
        "model": str(model),
        "data": str(data if data is not None else ("digits" if str(model) == "digits" else "")),
        "device": predictor.base.to_dict(),
        "axes": predictor.samples.space,
        "cost": predictor.samples.cost,
    }
    if not sweep["data"]:
        raise LearnError(
            "predict needs --data (a labelled .npz): the float model's accuracy on it scales the predicted accuracy"
        )
    if limit is not None:
        sweep["limit"] = limit
    return sweep


def predict(
    predictor: Predictor,
    space,
    constraints: list[Constraint] = (),
    objective: str = "latency",
) -> Prediction:
    """Predict every configuration of `space` (a sweep: a TOML path, a dict or a `Sweep`; its axes
    are the candidates) for the sweep's model, without simulating any: the float model runs once on
    the data set for its accuracy."""
    from cimxdsl.explore.context import prepare_context
    from cimxdsl.explore.points import expand_points
    from cimxdsl.explore.sweep import load_sweep

    objective_name(objective, "--minimize")
    sweep = load_sweep(space)
    layers = model_layers(sweep.model)
    context = prepare_context(sweep)
    settings, rows, skipped = [], [], []
    for point in expand_points(sweep):
        values = point.values
        try:
            config = configure(sweep.base, sweep.cost, values)
        except (DeviceConfigError, ValueError) as e:
            skipped.append(f"{point.label}: {e}")
            continue
        settings.append(values)
        rows.append(feature_row(config, values.get("placement", sweep.placement), layers, len(context.inputs)))
    if not rows:
        raise LearnError("no configuration of the space can be built: " + "; ".join(skipped[:3]))
    features = np.array([[row[f] for f in FEATURES] for row in rows])
    predictor.check(features, f"model '{sweep.model.stem}'")
    float_accuracy = float((context.reference == context.labels).mean())
    values = predictor.predict(features, float_accuracy)
    uncapped = predictor.predict(features, float_accuracy, capped=False)["accuracy"]
    order, feasible = rank(values, list(constraints), objective, uncapped)
    return Prediction(
        sweep,
        settings,
        values,
        uncapped,
        float_accuracy,
        list(constraints),
        objective,
        order,
        feasible,
        pareto_mask(values),
        skipped,
    )


def verify(prediction: Prediction, k: int, jobs: int = 1, progress=None) -> list[dict]:
    """Simulate the `k` best predicted configurations (a sweep of them, run as `explore` runs
    any) and put each one's simulated objectives beside its predicted ones."""
    import dataclasses

    from cimxdsl.explore import explore
    from cimxdsl.explore.sweep import Axis

    if k < 1:
        raise LearnError(f"--verify must be a positive integer, got {k}")
    chosen = [int(i) for i in prediction.order[:k]]
    fields = tuple(prediction.sweep.swept_fields)
    axis = Axis("candidates", fields, tuple(tuple(prediction.settings[i][f] for f in fields) for i in chosen))
    sweep = dataclasses.replace(prediction.sweep, axes=(axis,), grid="product")
    results = explore(sweep, jobs=jobs, progress=progress)
    by_settings = {tuple(s[f] for f in fields): s for s in results.summary}
    verified = []
    for i in chosen:
        found = by_settings[tuple(prediction.settings[i][f] for f in fields)]
        entry = {**prediction.entry(i), "simulated": None, "error": found.get("error", "")}
        if found["status"] == "ok":
            entry["simulated"] = {
                "accuracy": found["accuracy_mean"],
                "latency": found["latency_ns"] / results.images,
                "energy": found["energy_per_image_pj"],
            }
            entry["simulated_feasible"] = all(
                c.violation(entry["simulated"][c.metric]) <= 0 for c in prediction.constraints
            )
        verified.append(entry)
    prediction.verified = verified
    return verified
