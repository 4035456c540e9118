"""The learned predictor: workload features against the ONNX graph and the simulator's counts, error
measured on held-out points, a saved predictor refitting to the same predictions, predict and
--verify through the sweep runner, and one-line errors for bad input."""

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper, shape_inference

from cimxdsl.data import DIGITS_MODEL
from cimxdsl.device import DeviceConfig
from cimxdsl.explore import explore
from cimxdsl.explore.execution import configure
from cimxdsl.explore.learn import (
    FEATURES,
    LearnError,
    Predictor,
    Samples,
    Workload,
    held_out_error,
    learn,
    load_predictor,
    model_space,
    parse_constraint,
    predict,
    rank,
    read_results,
    verify,
)
from cimxdsl.explore.workload import Layer, device_counts, estimate, model_layers
from cimxdsl.tools.cim_explore import main

pytest.importorskip("sklearn")

EXAMPLES = Path(__file__).parents[3] / "examples"
IMAGES = 30
SWEEP = {
    "model": "digits",
    "data": "digits",
    "limit": IMAGES,
    "device": {"preset": "cinnamon", "weight_bits": 8, "input_bits": 8},
    "axes": {"adc_bits": [3, 4, 6, 0], "adc_range": ["full", "calibrated"], "rows": [32, 128], "dac_bits": [1, 4]},
    "cost": {"adc": "linear", "adc_reference_bits": 8},
}


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("cnn")
    return explore(SWEEP, out, plots=False), out


@pytest.fixture(scope="module")
def predictor(swept):
    return learn([swept[1]])


# ---- workload features ------------------------------------------------------------------------------
def test_layers_of_the_digits_cnn_match_its_onnx_graph():
    model = shape_inference.infer_shapes(onnx.load(str(DIGITS_MODEL)))
    weights = {i.name: numpy_helper.to_array(i).shape for i in model.graph.initializer}
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in model.graph.value_info}
    expected = []
    for node in model.graph.node:
        if node.op_type == "Conv":
            f, c, kh, kw = weights[node.input[1]]
            _, _, oh, ow = shapes[node.output[0]]
            expected.append((oh * ow, c * kh * kw, f, kh * kw))
        elif node.op_type == "Gemm":
            n, k = weights[node.input[1]]  # transB = 1: the weight is N x K
            expected.append((1, k, n, 1))
    got = [(la.m, la.k, la.n, la.kernel) for la in model_layers(DIGITS_MODEL)]
    assert got == expected
    assert not any(la.runtime for la in model_layers(DIGITS_MODEL))


def test_attention_products_of_the_vit_are_run_time_layers():
    path = EXAMPLES / "digits_vit.onnx"
    model = onnx.load(str(path))
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1  # one input, as the layers are
    model = shape_inference.infer_shapes(model, data_prop=True)  # through the reshapes
    stored = {i.name for i in model.graph.initializer} | {
        o for n in model.graph.node if n.op_type == "Constant" for o in n.output
    }
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in model.graph.value_info}
    # a MatMul of two computed tensors: one product per head, [.., heads, M, N]
    runtime = [n for n in model.graph.node if n.op_type == "MatMul" and not set(n.input) & stored]
    heads = sum(shapes[n.output[0]][1] for n in runtime)
    layers = model_layers(path)
    assert sum(la.runtime for la in layers) == heads > 0
    assert {(la.m, la.n) for la in layers if la.runtime} == {tuple(shapes[n.output[0]][2:]) for n in runtime}


def test_device_counts_equal_the_simulated_counts(swept):
    """Tiles, array reads and ADC conversions implied by the layers, against the simulator's."""
    results, _ = swept
    layers = model_layers(DIGITS_MODEL)
    base = results.sweep.base
    for entry in results.summary:
        config = base.replace(**{f: entry[f] for f in ("adc_bits", "adc_range", "rows", "dac_bits")})
        counts = device_counts(layers, config)
        assert counts["array_reads"] * IMAGES == entry["array_reads"]
        assert counts["adc_conversions"] * IMAGES == entry["adc_conversions"]
        assert counts["dac_activations"] * IMAGES == entry["dac_activations"]


def grouped_model(groups: int = 2) -> onnx.ModelProto:
    """A grouped convolution (one `cinm.compute`, a product per group) whose 40 outputs need two
    column tiles of a 64-column crossbar with 2-bit cells (16 weights a tile), then a gemm."""
    from onnx import helper

    rng = np.random.default_rng(0)
    w = rng.normal(0, 0.3, (40, 3, 3, 3)).astype(np.float32)
    fc = rng.normal(0, 0.3, (10, 40)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1] * 4, group=groups),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "grouped",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3 * groups, 5, 5])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(fc, "fc")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_the_cost_estimate_equals_the_simulated_latency_and_energy(swept, tmp_path):
    """The latency and energy the cost model implies without simulating, against the simulator's:
    on the digits CNN's points, and on a grouped convolution (its groups share the crossbars) that
    fills a column tile in part, on several device shapes and encodings. Where a layer has more
    tiles than crossbars, the compiler's order of them differs from the estimate's turns: there it
    is an estimate (within 10 %), which the predictor's regressors correct."""
    results, _ = swept
    layers = model_layers(DIGITS_MODEL)
    for entry in results.summary:
        config = configure(results.sweep.base, results.sweep.cost, {f: entry[f] for f in SWEEP["axes"]})
        cost = estimate(layers, config, "host", IMAGES)
        assert cost["latency_ns"] * IMAGES == pytest.approx(entry["latency_ns"], rel=1e-9)
        assert cost["energy_pj"] == pytest.approx(entry["energy_per_image_pj"], rel=1e-9)
    model = tmp_path / "grouped.onnx"
    onnx.save(grouped_model(), str(model))
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "data.npz", inputs=rng.random((6, 6, 5, 5)).astype(np.float32), labels=np.zeros(6, int))
    sweep = {
        "model": str(model),
        "data": str(tmp_path / "data.npz"),
        "device": {"preset": "cinnamon", "weight_bits": 8, "input_bits": 8, "cols": 64},
        "axes": {"rows": [16, 64], "encoding": ["differential", "offset"], "dac_bits": [1, 4], "crossbars": [3, 8]},
        "cost": {"adc": "linear", "adc_reference_bits": 8},
    }
    grouped = explore(sweep, plots=False)
    layers = model_layers(model)
    assert len(layers) == 3 and layers[0].name.split("#")[0] == layers[1].name.split("#")[0]
    exact = 0
    for entry in grouped.summary:
        config = configure(grouped.sweep.base, grouped.sweep.cost, {f: entry[f] for f in sweep["axes"]})
        cost = estimate(layers, config, "host", 6)
        assert cost["energy_pj"] == pytest.approx(entry["energy_per_image_pj"], rel=1e-9)
        tiles = device_counts(layers[:2], config)["tiles"]
        if tiles <= config.crossbars:
            assert cost["latency_ns"] * 6 == pytest.approx(entry["latency_ns"], rel=1e-9)
            exact += 1
        else:
            assert cost["latency_ns"] * 6 == pytest.approx(entry["latency_ns"], rel=0.1)
    assert exact == 8


# ---- learning and its held-out error ----------------------------------------------------------------
def test_held_out_error_is_measured_on_points_the_fit_did_not_see():
    """On targets that are pure noise a fit cannot predict points it has not seen: the held-out
    error is the noise's (~0.8 σ), while the same regressors reproduce their own training points
    far better. A held-out error computed on training points would be the small one."""
    rng = np.random.default_rng(1)
    n = 60
    features = np.zeros((n, len(FEATURES)))
    features[:, FEATURES.index("prog_noise")] = rng.uniform(0, 0.3, n)
    features[:, FEATURES.index("read_noise")] = rng.uniform(0, 0.1, n)
    samples = Samples(
        features=features,
        targets={
            "accuracy": rng.uniform(0.5, 1.0, n),
            "latency": rng.normal(10, 1, n),
            "energy": rng.normal(12, 1, n),
        },
        groups=["m"] * n,
        workloads={"m": Workload("m", [Layer("l", 1, 2, 3)], 1.0)},
        bases=[DeviceConfig().to_dict()],
    )
    report = held_out_error(samples, "gbm", "points")
    fold = report["folds"]["points"]
    assert fold["points"] == 12 and fold["trained_on"] == 48
    fitted = Predictor(samples, "gbm")
    own = fitted.predict(features, 1.0)
    own_error = np.mean(np.abs(own["accuracy"] - samples.targets["accuracy"]))
    assert fold["accuracy"]["mean"] > 2 * own_error
    # uniform(0.5, 1) noise: a held-out guess near the mean is off by ~0.125 on average
    assert 0.06 < fold["accuracy"]["mean"] < 0.25


def test_learn_reports_held_out_error_per_objective(predictor, swept):
    fold = predictor.held_out["folds"]["points"]
    total = len([s for s in swept[0].summary if s["status"] == "ok"])
    assert fold["points"] + fold["trained_on"] == total
    assert set(fold) >= {"accuracy", "latency", "energy"}
    # latency and energy: the cost model's estimate is exact here, the regressors learn a ratio of 1
    assert fold["latency"]["max"] < 1e-3 and fold["energy"]["max"] < 1e-3


def test_a_saved_predictor_refits_to_the_same_predictions(predictor, tmp_path):
    path = tmp_path / "p.json"
    predictor.save(path)
    text = path.read_text()
    assert "pickle" not in text and json.loads(text)["format"] == "cimxdsl-predictor"
    loaded = load_predictor(path)
    x = predictor.samples.features
    for objective, values in predictor.predict(x, 0.9).items():
        np.testing.assert_allclose(loaded.predict(x, 0.9)[objective], values, rtol=1e-12)


# ---- predict and verify -----------------------------------------------------------------------------
def test_verify_simulates_the_predicted_best_configurations(predictor, swept):
    """The verified configurations are simulated exactly as the sweep simulated them."""
    results, _ = swept
    space = model_space(predictor, "digits", "digits", IMAGES)
    prediction = predict(predictor, space, [parse_constraint("accuracy>=0.9")], "energy")
    assert len(prediction.settings) == len(results.points)
    assert prediction.best is not None and prediction.front[prediction.best]
    checked = verify(prediction, 3)
    assert len(checked) == 3
    by_settings = {tuple(s[f] for f in SWEEP["axes"]): s for s in results.summary}
    for entry in checked:
        simulated = by_settings[tuple(entry[f] for f in SWEEP["axes"])]
        assert entry["simulated"]["accuracy"] == simulated["accuracy_mean"]
        assert entry["simulated"]["energy"] == simulated["energy_per_image_pj"]
        assert entry["simulated"]["latency"] == simulated["latency_ns"] / IMAGES
        assert entry["simulated_feasible"] == (simulated["accuracy_mean"] >= 0.9)
    # the predicted best is what the predictions rank first: feasible and cheapest
    feasible = prediction.values["accuracy"] >= 0.9
    assert prediction.values["energy"][prediction.best] == prediction.values["energy"][feasible].min()


def test_cli_learn(swept, tmp_path, capsys):
    out = tmp_path / "p.json"
    main(["learn", str(swept[1]), "-o", str(out)])
    text = capsys.readouterr().out
    assert "trained gp on 32 points of 1 models (digits_cnn)" in text
    assert "held-out error (points split" in text and "latency" in text and out.is_file()


def test_cli_predict(predictor, tmp_path, capsys):
    out = tmp_path / "p.json"
    predictor.save(out)
    main(["predict", "--predictor", str(out), "digits", "--limit", str(IMAGES), "--constraint", "accuracy>=0.9"])
    text = capsys.readouterr().out
    assert "none simulated" in text and "predicted best: adc_bits=" in text and "predicted front" in text


# ---- bad input --------------------------------------------------------------------------------------
def error_of(args, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def test_unknown_objective(predictor, tmp_path, capsys):
    path = tmp_path / "p.json"
    predictor.save(path)
    err = error_of(["predict", "--predictor", str(path), "digits", "--constraint", "acuracy>=0.9"], capsys)
    assert "unknown metric 'acuracy' in 'acuracy>=0.9' (did you mean 'accuracy'?)" in err
    err = error_of(["predict", "--predictor", str(path), "digits", "--constraint", "writes<=9"], capsys)
    assert (
        "constraint 'writes<=9': unknown objective 'writes' (objectives of the predictor: accuracy, latency, energy)"
        in err
    )
    err = error_of(["predict", "--predictor", str(path), "digits", "--verify", "0"], capsys)
    assert "--verify must be a positive integer, got 0" in err
    err = error_of(["predict", "--predictor", str(path), "digits", "--minimize", "power"], capsys)
    assert "--minimize: unknown objective 'power'" in err
    with pytest.raises(LearnError, match=r"cannot read 'accuracy = = 0\.9'"):
        parse_constraint("accuracy = = 0.9")


def test_a_workload_feature_the_predictor_was_not_trained_on(predictor):
    space = model_space(predictor, str(EXAMPLES / "digits_vit.onnx"), str(EXAMPLES / "digits_test.npz"), IMAGES)
    with pytest.raises(
        LearnError,
        match=r"model 'digits_vit': workload feature 'layers' is 26, but the predictor was trained only on 3",
    ):
        predict(predictor, space)


def test_a_device_parameter_the_predictor_was_not_trained_on(predictor):
    space = {**model_space(predictor, "digits", "digits", IMAGES), "axes": {"cell_bits": [1, 4]}}
    with pytest.raises(LearnError, match=r"device parameter 'cell_bits' is 1, but the predictor was trained only on 2"):
        predict(predictor, space)


def test_results_without_the_needed_columns(swept, tmp_path, capsys):
    data = json.loads((swept[1] / "results.json").read_text())
    for point in data["points"]:
        point.pop("latency_ns", None)
    (tmp_path / "results.json").write_text(json.dumps(data))
    err = error_of(["learn", str(tmp_path / "results.json")], capsys)
    assert "the points have no column 'latency_ns' (needed: accuracy_mean, latency_ns, energy_per_image_pj)" in err
    shutil.copy(swept[1] / "results.csv", tmp_path / "alone.csv")
    err = error_of(["learn", str(tmp_path / "alone.csv")], capsys)
    assert "alone.csv: the predictor reads results.json" in err


def test_bad_predictor_file_method_and_split(swept, tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text("{}")
    err = error_of(["predict", "--predictor", str(path), "digits"], capsys)
    assert "not a predictor file" in err
    with pytest.raises(LearnError, match="unknown method 'svm'"):
        learn([swept[1]], method="svm")
    with pytest.raises(LearnError, match="needs the results of at least 2 models"):
        learn([swept[1]], split="models")
    with pytest.raises(LearnError, match="no such results file"):
        read_results([tmp_path / "none"])


# ---- the surrogate search's proposal ---------------------------------------------------------------
def surrogate(constraints=()):
    from optuna.distributions import CategoricalDistribution

    from cimxdsl.explore.surrogate import SurrogateSampler

    return SurrogateSampler(
        {"a": CategoricalDistribution([0, 1, 2])}, ("accuracy", "energy"), ("accuracy",), constraints, {}, 0
    )


def test_the_surrogate_proposes_the_largest_predicted_hypervolume_gain():
    simulated = {"accuracy": np.array([0.5, 0.9]), "energy": np.array([1.0, 10.0])}
    predicted = {
        "accuracy": np.array([0.4, 0.95, 0.6]),  # candidate 0 is beaten by the simulated (0.5, 1)
        "energy": np.array([5.0, 2.0, 8.0]),  # candidate 1 beats (0.9, 10) outright; 2 adds a sliver
    }
    assert surrogate().best(simulated, predicted) == 1
    dominated = {"accuracy": np.array([0.4, 0.3, 0.45]), "energy": np.array([5.0, 2.0, 8.0])}
    assert surrogate().best(simulated, dominated) is None  # nothing to gain: a random draw instead
    strict = surrogate([parse_constraint("accuracy>=0.99")])
    assert strict.best(simulated, predicted) is None  # no candidate predicted to meet it


def test_rank_breaks_ties_at_the_accuracy_cap_by_the_uncapped_prediction():
    """Three configurations of one latency all predicted at 100 %: the one the regressor puts
    furthest above it ranks first, not the cheapest (which the capped values alone would pick)."""
    values = {
        "accuracy": np.array([1.0, 1.0, 1.0, 0.8]),
        "latency": np.array([5.0, 5.0, 5.0, 1.0]),
        "energy": np.array([1.0, 3.0, 2.0, 1.0]),
    }
    required = [parse_constraint("accuracy>=0.9")]
    order, feasible = rank(values, required, "latency")
    assert list(order) == [0, 2, 1, 3] and list(feasible) == [True, True, True, False]
    order, _ = rank(values, required, "latency", uncapped=np.array([1.01, 1.07, 1.03, 0.8]))
    assert list(order) == [1, 2, 0, 3]


# ---- the surrogate search from a saved predictor ------------------------------------------------------
def test_a_surrogate_search_starts_from_a_saved_predictor(predictor, tmp_path):
    """With a predictor, the surrogate's first trial is already on the predicted front (without one,
    its first trials are random draws), and the search reproduces itself."""
    from cimxdsl.explore.pareto import non_dominated

    path = tmp_path / "p.json"
    predictor.save(path)
    search = {**SWEEP, "search": "surrogate", "trials": 3, "objectives": ["accuracy", "energy"], "predictor": str(path)}
    found = explore(search, plots=False)
    prediction = predict(predictor, SWEEP)
    front = non_dominated(np.stack([-prediction.values["accuracy"], prediction.values["energy"]], axis=1))
    on_front = [tuple(prediction.settings[i][f] for f in SWEEP["axes"]) for i in np.flatnonzero(front)]
    first = next(s for s in found.summary if s["point"] == found.search["trials"][0]["point"])
    assert tuple(first[f] for f in SWEEP["axes"]) in on_front
    again = explore(search, plots=False)
    assert [t["point"] for t in again.search["trials"]] == [t["point"] for t in found.search["trials"]]


def test_bad_surrogate_predictor_input(predictor, tmp_path):
    from cimxdsl.explore import SweepError, load_sweep

    path = tmp_path / "p.json"
    predictor.save(path)
    search = {**SWEEP, "search": "surrogate", "trials": 3, "objectives": ["accuracy", "energy"], "predictor": str(path)}
    with pytest.raises(SweepError, match=r"'predictor' is the surrogate's: it needs search = 'surrogate'"):
        load_sweep({**search, "search": "tpe"})
    with pytest.raises(SweepError, match=r"'predictor': a predictor predicts accuracy, latency, energy, not 'writes'"):
        load_sweep({**search, "objectives": ["accuracy", "writes"]})
    with pytest.raises(SweepError, match=r"'predictor': no such file 'nope.json'"):
        load_sweep({**search, "predictor": "nope.json"})


def test_auto_chooses_each_objectives_regressor_by_cross_validation(monkeypatch):
    """`auto` fits, per objective, the regressor with the smaller cross-validated error: made to
    predict badly, the other one is chosen; costs the estimate gives exactly keep `gbm`."""
    from cimxdsl.explore import learn as learn_module

    rng = np.random.default_rng(2)
    n = 90
    features = np.zeros((n, len(FEATURES)))
    features[:, FEATURES.index("adc_bits")] = rng.integers(3, 9, n)
    features[:, FEATURES.index("log_latency_estimate")] = rng.uniform(5, 9, n)
    features[:, FEATURES.index("log_energy_estimate")] = rng.uniform(10, 14, n)
    samples = Samples(
        features=features,
        targets={
            "accuracy": 1 - 2.0 ** -features[:, FEATURES.index("adc_bits")],
            "latency": features[:, FEATURES.index("log_latency_estimate")],
            "energy": features[:, FEATURES.index("log_energy_estimate")] + 0.1 * features[:, 0],
        },
        groups=[f"m{i % 3}" for i in range(n)],
        workloads={f"m{i}": Workload(f"m{i}", [Layer("l", 1, 2, 3)], 1.0) for i in range(3)},
        bases=[DeviceConfig().to_dict()],
    )
    real = learn_module.regressor

    class Off:
        def fit(self, x, y):
            return self

        def predict(self, x):
            return np.full(len(x), 100.0)

    for bad, good in (("forest", "gbm"), ("gbm", "forest")):
        monkeypatch.setattr(learn_module, "regressor", lambda m, o, bad=bad: Off() if m == bad else real(m, o))
        methods = Predictor(samples, "auto").methods
        assert methods["accuracy"] == good and methods["latency"] == "gbm"  # latency: the estimate is exact
    monkeypatch.setattr(learn_module, "regressor", real)
    assert Predictor(subset_of(samples, 40), "auto").methods == dict.fromkeys(("accuracy", "latency", "energy"), "gp")
    assert Predictor(samples, "forest").methods == dict.fromkeys(("accuracy", "latency", "energy"), "forest")


def subset_of(samples, count):
    from cimxdsl.explore.learn import subset

    keep = np.zeros(len(samples.groups), dtype=bool)
    keep[:count] = True
    return subset(samples, keep)
