"""The precision search: the chosen bits keep the accuracy budget on the validation split
(recomputed by compiling with the written file and running it by hand), the file reads back to the
bits chosen, a seeded global search gives the same front twice, and bad options are one line."""

from pathlib import Path

import numpy as np
import pytest

import cimxdsl
from cimxdsl.explore.pareto import non_dominated
from cimxdsl.explore.precision import evaluate_precision
from cimxdsl.explore.precision_search import search_precision, write_precision
from cimxdsl.precision import PrecisionError, resolve_precision
from cimxdsl.tools import cim_compile

ROOT = Path(__file__).resolve().parents[3]
MODEL = ROOT / "examples" / "digits_cnn.onnx"
TEST, TRAIN = np.load(ROOT / "examples" / "digits_test.npz"), np.load(ROOT / "examples" / "digits_train.npz")
X, LABELS = TEST["inputs"][:16], TEST["labels"][:16]
OPTIONS = dict(device="cinnamon", calibration=TRAIN["calibration"], bits=(8, 2))


@pytest.fixture(scope="module")
def greedy():
    return search_precision(MODEL, X, LABELS, budget=0.5, method="greedy", **OPTIONS)


def accuracy_by_hand(precision) -> float:
    compiled = cimxdsl.compile(
        MODEL, device="cinnamon", calibration=TRAIN["calibration"], batch=len(X), precision=precision
    )
    return float(np.mean(np.argmax(compiled(X), axis=-1).reshape(-1) == LABELS))


def test_greedy_keeps_the_budget_and_the_written_file_reproduces_it(greedy, tmp_path):
    path = write_precision(greedy.precision, tmp_path / "chosen.toml")
    uniform = evaluate_precision(
        MODEL, {"*": (8, 8)}, X, LABELS, device="cinnamon", calibration=TRAIN["calibration"], batch_size=16
    )
    again = evaluate_precision(
        MODEL, path, X, LABELS, device="cinnamon", calibration=TRAIN["calibration"], batch_size=16
    )
    by_hand = accuracy_by_hand(path)
    assert by_hand == again["accuracy"] == greedy.chosen["accuracy"]
    assert by_hand >= uniform["accuracy"] - 0.005
    assert again["latency_ns"] == pytest.approx(greedy.chosen["latency_ns"])
    assert again["energy_pj"] == pytest.approx(greedy.chosen["energy_pj"])
    assert [(layer["layer"], layer["weight_bits"], layer["input_bits"]) for layer in again["layers"]] == [
        (name, *bits) for name, bits in greedy.precision.items()
    ]
    # it found something: narrower inputs (one pass of the 2-bit DACs) in some layer, faster than uniform 8 bits
    assert again["latency_ns"] < uniform["latency_ns"]
    assert greedy.baseline["latency_ns"] == pytest.approx(uniform["latency_ns"])


def test_the_front_is_the_non_dominated_evaluated_configurations(greedy):
    values = [(-p["accuracy"], p["latency_ns"], p["energy_pj"]) for p in greedy.evaluated]
    dominated = [
        any(all(o <= s for o, s in zip(other, mine)) and other != mine for other in values) for mine in values
    ]  # fmt: skip
    expected = sorted(v for v, d in zip(values, dominated) if not d)
    assert sorted((-p["accuracy"], p["latency_ns"], p["energy_pj"]) for p in greedy.front) == expected
    assert greedy.compiles == len(greedy.evaluated) and greedy.images == greedy.compiles * 2 * len(X)


def test_the_chosen_is_the_fastest_configuration_within_the_budget(greedy):
    within = [p for p in greedy.evaluated if p["accuracy"] >= greedy.baseline["accuracy"] - 0.005]
    assert greedy.chosen["latency_ns"] == min(p["latency_ns"] for p in within)
    assert len(greedy.evaluated) > len(within)  # some narrower bits broke the budget and were not taken


def test_the_written_file_reads_back_to_the_bits(tmp_path):
    precision = {"conv1": (3, 2), "odd*name[0]": (8, 1), "fc": (5, 7)}
    path = write_precision(precision, tmp_path / "p.toml")
    layers = ["conv1", "odd*name[0]", "odd_name0", "fc"]
    assert resolve_precision(path, layers, (8, 8)) == precision


@pytest.mark.parametrize("method", ["nsga2", "tpe"])
def test_a_seeded_global_search_repeats_its_front(method):
    runs = [
        search_precision(MODEL, X, LABELS, budget=1.0, method=method, trials=6, seed=3, **OPTIONS) for _ in range(2)
    ]
    fronts = [[(p["precision"], p["accuracy"], p["latency_ns"], p["energy_pj"]) for p in r.front] for r in runs]
    assert fronts[0] == fronts[1] and runs[0].chosen == runs[1].chosen
    first = runs[0]
    assert first.chosen["accuracy"] >= first.baseline["accuracy"] - 0.01
    values = np.array([(-p["accuracy"], p["latency_ns"], p["energy_pj"]) for p in first.front])
    assert non_dominated(values).all()
    for point in first.front:  # the sweep's figures per image are those of the configuration alone
        alone = evaluate_precision(
            MODEL, point["precision"], X, LABELS, device="cinnamon", calibration=TRAIN["calibration"], batch_size=16
        )
        assert (point["accuracy"], point["latency_ns"]) == (alone["accuracy"], pytest.approx(alone["latency_ns"]))
        assert point["energy_pj"] == pytest.approx(alone["energy_pj"])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"budget": -0.5}, "the budget must be at least 0 accuracy points, got -0.5"),
        ({"method": "annealing"}, "unknown method 'annealing' (methods: greedy, nsga2, tpe)"),
        ({"objective": "area"}, "unknown objective 'area'"),
        ({"bits": (8, 9)}, "bits must be integers from 1 to 8, got [8, 9]"),
    ],
)
def test_bad_options_are_one_line_errors(options, message):
    with pytest.raises(PrecisionError) as caught:
        search_precision(MODEL, X, LABELS, **{**dict(device="cinnamon"), **options})
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "-1"], "precision search: the budget must be at least 0 accuracy points, got -1.0"),
        (["--search-method", "rl"], "precision search: unknown method 'rl' (methods: greedy, nsga2, tpe)"),
        (
            ["--target", "pim"],
            "--search-precision searches the memristor target's bits from uniform 8 bits, not with --target pim",
        ),
        (
            ["--search-method", "nsga2", "--jobs", "2", "--scheduler", "tcp://x:8786"],
            "give --jobs or --scheduler, not both",
        ),
        (["--search-method", "tpe", "--jobs", "0"], "--jobs must be a positive integer, got 0"),
        (
            ["--jobs", "2"],
            "precision search: the greedy runs one configuration after another; jobs and a scheduler run the "
            "points of nsga2 or tpe",
        ),
    ],
)
def test_the_command_line_gives_one_line(args, message, capsys):
    with pytest.raises(SystemExit):
        cim_compile.main([str(MODEL), "--search-precision", *args])
    assert capsys.readouterr().err == f"cim-compile: error: {message}\n"


def test_the_command_line_writes_the_chosen_file(tmp_path, capsys):
    data = tmp_path / "validation.npz"
    np.savez(data, inputs=X, labels=LABELS, calibration=TRAIN["calibration"])
    out = tmp_path / "searched.toml"
    cim_compile.main(
        [str(MODEL), "--device", "cinnamon", "--search-precision", "--budget", "0.5", "--search-bits", "8,2",
         "--dataset", str(data), "--search-output", str(out)]
    )  # fmt: skip
    text = capsys.readouterr().out
    assert f"precision written to {out}" in text
    written = resolve_precision(out, ["conv1", "conv2", "fc"], (8, 8))
    uniform = accuracy_by_hand({"*": (8, 8)})
    assert accuracy_by_hand(out) >= uniform - 0.005
    assert set(written) == {"conv1", "conv2", "fc"} and any(a == 2 for _, a in written.values())


def test_the_command_line_hands_jobs_scheduler_and_placement_to_the_search(tmp_path, monkeypatch, capsys):
    from cimxdsl.explore import precision_search

    given = []

    def spy(*args, **options):
        given.append(options)
        raise precision_search.PrecisionError("stop here")

    monkeypatch.setattr(precision_search, "search_precision", spy)
    for parallel in (["--jobs", "3"], ["--scheduler", "tcp://127.0.0.1:8786"]):
        with pytest.raises(SystemExit):
            cim_compile.main(
                [str(MODEL), "--search-precision", "--search-method", "nsga2", "--placement", "crossbar", *parallel]
            )
    assert [(o["jobs"], o["scheduler"]) for o in given] == [(3, None), (1, "tcp://127.0.0.1:8786")]
    assert all(o["placement"] == "crossbar" for o in given)
    assert capsys.readouterr().err.count("cim-compile: error: stop here\n") == 2


def test_per_layer_bits_are_axes_of_a_sweep_search():
    from cimxdsl.explore import explore

    sweep = {
        "model": str(MODEL), "data": str(ROOT / "examples" / "digits_test.npz"), "limit": 16,
        "device": {"preset": "cinnamon"},
        "axes": {"precision.conv1.input_bits": [8, 2], "precision.fc.weight_bits": [8, 2]},
        "objectives": ["accuracy", "latency"], "search": "nsga2", "trials": 4, "seed": 1,
    }  # fmt: skip
    rows = explore(sweep, plots=False).rows
    assert rows and all(row["status"] == "ok" for row in rows)
    for row in rows:
        precision = {
            "conv1": {"input_bits": row["precision.conv1.input_bits"]},
            "fc": {"weight_bits": row["precision.fc.weight_bits"]},
        }
        alone = evaluate_precision(
            MODEL, precision, X, LABELS, device="cinnamon", calibration=TEST["calibration"], batch_size=16
        )
        assert row["accuracy"] == alone["accuracy"]
        assert row["latency_ns"] == pytest.approx(alone["total_latency_ns"])


def test_a_bits_axis_out_of_range_is_one_line():
    from cimxdsl.explore import SweepError, load_sweep

    sweep = {"model": "digits", "data": "digits", "axes": {"precision.fc.input_bits": [8, 9]}}
    with pytest.raises(
        SweepError, match=r"^sweep file: axis 'precision.fc.input_bits' value 2: must be an integer from 1 to 8, got 9$"
    ):
        load_sweep(sweep)


def test_the_greedy_refines_by_raising_a_layer_back(monkeypatch):
    """A landscape where narrowing layer b's inputs first is free but then blocks the narrowing of
    layer a's (the losses compound): the plain greedy stops at a 4/b 2 (cost 21) without ever
    trying a at 2 with b at 4; the refinement narrows a to 2 while raising b back to 4 (cost 12,
    0.4 points lost, within the budget)."""
    from cimxdsl.explore import precision_search

    def fake(model, precision, inputs, labels, **options):
        bits = {name: precision.get(name, precision.get("*")) for name in ("a", "b")}
        a, b = bits["a"][1], bits["b"][1]
        loss = 0.1 * (a <= 4) + 0.3 * (a <= 2) + 0.3 * (a <= 2 and b <= 2) + 5.0 * (a <= 1 or b <= 1)
        layers = [{"layer": name} for name in bits]
        return {
            "accuracy": 0.9 - loss / 100,
            "latency_ns": 10 * -(-a // 2) + -(-b // 2),
            "energy_pj": 1.0,
            "layers": layers,
        }

    monkeypatch.setattr(precision_search, "evaluate_precision", fake)
    result = search_precision(MODEL, X, LABELS, budget=0.5, bits=(8, 4, 2, 1))
    assert result.precision == {"a": (8, 2), "b": (8, 4)}
    assert result.chosen["latency_ns"] == 12


def test_the_greedy_compiles_a_barren_narrowing_again_only_before_it_stops(monkeypatch):
    """Narrowing a's weights saves latency only once b's inputs are at 4 bits or fewer, b's weights
    never: the greedy does not compile b's weight narrowings at every step (only at the start,
    at the re-check before stopping and after the move the re-check finds), and the re-check finds
    a's weight narrowing, which saved nothing when first tried."""
    from cimxdsl.explore import precision_search

    compiled = []

    def fake(model, precision, inputs, labels, **options):
        bits = {name: precision.get(name, precision.get("*")) for name in ("a", "b")}
        compiled.append(bits)
        (a_w, a_in), (_, b_in) = bits["a"], bits["b"]
        return {
            "accuracy": 0.9,
            "latency_ns": 10 * -(-a_in // 2) + -(-b_in // 2) + 0.5 * (a_w > 4 and b_in <= 4),
            "energy_pj": 1.0,
            "layers": [{"layer": name} for name in bits],
        }

    monkeypatch.setattr(precision_search, "evaluate_precision", fake)
    result = search_precision(MODEL, X, LABELS, budget=0.5, bits=(8, 4, 2))
    assert result.precision == {"a": (4, 2), "b": (8, 2)}
    assert result.chosen["latency_ns"] == 11
    assert sum(bits["b"][0] < 8 for bits in compiled) == 6  # 2 widths × 3 (6 states: 12 without the memo)


def test_a_global_search_compiles_at_the_placement_given(monkeypatch):
    """The placement of attention's products (a compile option) reaches the sweep a global search
    runs, as it reaches every compile of the greedy: the sweep file's key `placement`."""
    import cimxdsl.explore as explore_module
    from cimxdsl.explore import load_sweep, precision_search

    swept = []

    def spy(sweep, **options):
        swept.append(load_sweep(sweep))  # while its data file exists
        raise precision_search.PrecisionError("stop here")

    def fake(model, precision, inputs, labels, **options):
        return {"accuracy": 0.9, "latency_ns": 1.0, "energy_pj": 1.0, "layers": [{"layer": "fc"}]}

    monkeypatch.setattr(explore_module, "explore", spy)
    monkeypatch.setattr(precision_search, "evaluate_precision", fake)
    with pytest.raises(PrecisionError, match="stop here"):
        search_precision(MODEL, X, LABELS, method="nsga2", placement="crossbar", trials=2)
    assert swept[0].placement == "crossbar"
