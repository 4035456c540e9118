"""The learned predictor on models it has not seen (docs/dse.md, "Learning the space").

Workloads: the digits CNN and the digits ViT (360-image test split, first `--images`), single
convolution layers of the nine light architectures shipped with onnx (their kernel, stride, groups
and channels — capped at `--max-channels` — on a 6×6 input, then ReLU, global average pooling and
a flatten), and three transformer encoder blocks of random weights around the ViT's shape
(`ATTENTION_BLOCKS`: the products of two run-time tensors the ViT also has); `--layer-inputs`
random inputs each, 16 by default: one input is then 6.25 points, and 0.95 and 0.99 of the float
model's accuracy both ask for every input; `--quantized-only` prints each workload's accuracy with
a lossless ADC, the quantized model's, without the sweeps). The models
without a labelled data set run on random inputs labelled by the float model, so their accuracy is
the agreement with the float model.

Every workload is swept over the same device space (ADC bits × ADC range × rows × DAC bits ×
cell bits, the `cinnamon` crossbars with 8-bit weights and inputs, ADC energy linear in its
bits). Then, for each workload in turn, a predictor is trained on the other workloads' results
(leave one model out), predicts the held-out model's whole space without simulating it, and its
choice is checked against the held-out sweep: for each objective (latency, energy) and each
required accuracy (a fraction of the float model's, or of the quantized model's: the sweep's
accuracy with a lossless ADC), is the simulated objective of the predicted
best within 5 % of the simulated best among the configurations that meet the requirement, and does
the predicted best meet it when simulated?

    python -m benchmarks.dse_predict [--out build/dse_predict] [--images 60] [--layer-inputs 16]
        [--jobs 2] [--figure F] [--quantized-only]

Sweeps are cached in OUT (delete it to rerun them). Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from cimxdsl.explore import explore
from cimxdsl.explore.learn import (
    OBJECTIVES,
    Constraint,
    Predictor,
    fold_error,
    meets,
    model_space,
    predict,
    rank,
    read_results,
)
from cimxdsl.reference import float_predictions

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
AXES = {
    "adc_bits": [3, 4, 5, 6, 8, 0],
    "adc_range": ["full", "calibrated"],
    "rows": [32, 64, 128],
    "dac_bits": [1, 2, 4],
    "cell_bits": [1, 2, 4],
}
DEVICE = {"preset": "cinnamon", "weight_bits": 8, "input_bits": 8}
COST = {"adc": "linear", "adc_reference_bits": 8}
REQUIRED = (0.9, 0.95, 0.99)
"""Required accuracy, as a fraction of a reference accuracy (`REFERENCES`)."""
REFERENCES = ("float", "quantized")
"""The float model's accuracy, or the quantized model's (the sweep's accuracy with a lossless ADC)."""
TOLERANCE = 0.05
LIGHT_LAYERS = {
    # light model: which of its convolutions (in graph order), chosen for distinct shapes
    "squeezenet": 3,
    "resnet50": 0,
    "vgg19": 3,
    "bvlc_alexnet": 0,
    "zfnet512": 1,
    "inception_v1": 7,
    "inception_v2": 9,
    "densenet121": 2,
    "shufflenet": 3,
}
ATTENTION_BLOCKS = {
    # tokens, width, heads, MLP width: encoder blocks around the digits ViT's (4 tokens, width 32,
    # 4 heads, MLP 64), so that a predictor holding the ViT out has seen products of two run-time
    # tensors
    "attention_t8_d32_h2": (8, 32, 2, 64),
    "attention_t4_d64_h4": (4, 64, 4, 128),
    "attention_t16_d16_h2": (16, 16, 2, 32),
}


def light_layer(name: str, index: int, max_channels: int, size: int = 6) -> onnx.ModelProto:
    """Convolution `index` of light model `name` alone (channels capped), ReLU, global average pooling
    and flatten: one score per output channel."""
    from benchmarks.pim_light_models import light_model

    model = light_model(name)
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    conv = [n for n in model.graph.node if n.op_type == "Conv"][index]
    attrs = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    group = int(attrs.get("group", 1))
    w = weights[conv.input[1]]
    per_group = w.shape[0] // group
    group = min(group, max(1, max_channels // per_group))
    cout = min(group * per_group, max_channels)
    cin_per_group = min(w.shape[1], max_channels)
    k = w.shape[2]
    rng = np.random.default_rng(index)
    w = rng.normal(0, np.sqrt(2.0 / (cin_per_group * k * k)), (cout, cin_per_group, k, k)).astype(np.float32)
    cin = cin_per_group * group
    stride = int(attrs.get("strides", [1, 1])[0])
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[k // 2] * 4, strides=[stride, stride], group=group),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["p"]),
        helper.make_node("Flatten", ["p"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        f"{name}_conv{index}",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, cin, size, size])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, cout])],
        [numpy_helper.from_array(w, "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def attention_block(tokens: int, width: int, heads: int, hidden: int, classes: int = 10) -> onnx.ModelProto:
    """A pre-norm transformer encoder block of random weights (multi-head self-attention, a ReLU
    MLP, both residual), then the mean over tokens and a linear classifier."""
    rng = np.random.default_rng(tokens * width * heads)

    def weight(k: int, n: int) -> np.ndarray:
        return rng.normal(0, 1 / np.sqrt(k), (k, n)).astype(np.float32)

    split, merged = [0, tokens, heads, width // heads], [0, tokens, width]  # 0: the batch as given
    constants = {
        **{f"w{p}": weight(width, width) for p in "qkvo"},
        "w1": weight(width, hidden),
        "w2": weight(hidden, width),
        "wc": weight(width, classes),
        "gamma": np.ones(width, np.float32),
        "beta": np.zeros(width, np.float32),
        "split": np.array(split, np.int64),
        "merged": np.array(merged, np.int64),
        "scale": np.array(1 / np.sqrt(width // heads), np.float32),
    }
    node = helper.make_node
    nodes = [node("LayerNormalization", ["x", "gamma", "beta"], ["n1"])]
    for p, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        nodes += [
            node("MatMul", ["n1", f"w{p}"], [f"{p}_flat"]),
            node("Reshape", [f"{p}_flat", "split"], [f"{p}_split"]),
            node("Transpose", [f"{p}_split"], [p], perm=perm),
        ]
    nodes += [
        node("MatMul", ["q", "k"], ["scores"]),
        node("Mul", ["scores", "scale"], ["scaled"]),
        node("Softmax", ["scaled"], ["attention"], axis=-1),
        node("MatMul", ["attention", "v"], ["mixed"]),
        node("Transpose", ["mixed"], ["mixed_t"], perm=[0, 2, 1, 3]),
        node("Reshape", ["mixed_t", "merged"], ["joined"]),
        node("MatMul", ["joined", "wo"], ["projected"]),
        node("Add", ["x", "projected"], ["r1"]),
        node("LayerNormalization", ["r1", "gamma", "beta"], ["n2"]),
        node("MatMul", ["n2", "w1"], ["h1"]),
        node("Relu", ["h1"], ["h2"]),
        node("MatMul", ["h2", "w2"], ["h3"]),
        node("Add", ["r1", "h3"], ["r2"]),
        node("ReduceMean", ["r2"], ["pooled"], axes=[1], keepdims=0),
        node("MatMul", ["pooled", "wc"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        f"attention_t{tokens}_d{width}_h{heads}",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, tokens, width])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, classes])],
        [numpy_helper.from_array(v, k) for k, v in constants.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def random_data(model: onnx.ModelProto, count: int, seed: int = 0, relu: bool = True) -> dict[str, np.ndarray]:
    """Random inputs (standard normal, ReLU'd like activations unless `relu` is false) labelled by
    the float model."""
    dims = [d.dim_value or 1 for d in model.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    inputs = rng.standard_normal((count + 64, *dims[1:])).astype(np.float32)
    if relu:
        inputs = np.maximum(inputs, 0)
    labels = float_predictions(model, inputs[:count])
    return {"inputs": inputs[:count], "labels": labels, "calibration": inputs[count:]}


def workloads(out: Path, images: int, max_channels: int, layer_inputs: int) -> dict[str, dict]:
    """Sweep specs (model, data, calibration, limit) of every workload, writing the generated ones."""
    specs = {
        "digits_cnn": {"model": "digits", "data": "digits", "calibration": "digits-train", "limit": images},
        "digits_vit": {
            "model": str(EXAMPLES / "digits_vit.onnx"),
            "data": str(EXAMPLES / "digits_test.npz"),
            "calibration": str(EXAMPLES / "digits_train.npz"),
            "limit": images,
        },
    }
    generated = {}
    for name, index in LIGHT_LAYERS.items():
        generated[f"{name}_conv{index}"] = light_layer(name, index, max_channels)
    for name, shape in ATTENTION_BLOCKS.items():
        generated[name] = attention_block(*shape)
    models = out / "models"
    models.mkdir(parents=True, exist_ok=True)
    for name, model in generated.items():
        path, data = models / f"{name}.onnx", models / f"{name}.npz"
        if not path.is_file():
            onnx.save(model, str(path))
            np.savez(data, **random_data(model, layer_inputs, relu=name not in ATTENTION_BLOCKS))
        cached = len(np.load(data)["labels"])
        if cached != layer_inputs:
            raise SystemExit(f"{data}: {cached} inputs, but --layer-inputs is {layer_inputs}: use another --out")
        specs[name] = {"model": str(path), "data": str(data)}
    return specs


def sweep(name: str, spec: dict, out: Path, jobs: int) -> Path:
    results = out / "results" / name
    if not (results / "results.json").is_file():
        start = time.perf_counter()
        found = explore(
            {"name": name, **spec, "device": DEVICE, "axes": AXES, "cost": COST}, results, jobs, plots=False
        )
        print(
            f"swept {name}: {len(found.points)} points, {len(found.failed)} failed, {time.perf_counter() - start:.0f} s"
        )
    return results


def simulated_space(results: Path) -> tuple[list[dict], dict[str, np.ndarray], float]:
    data = json.loads((results / "results.json").read_text())
    fields = [f for axis in data["sweep"]["axes"] for f in axis["fields"]]
    ok = [p for p in data["points"] if p["status"] == "ok"]
    values = {
        "accuracy": np.array([p["accuracy_mean"] for p in ok]),
        "latency": np.array([p["latency_ns"] for p in ok]) / data["sweep"]["images"],
        "energy": np.array([p["energy_per_image_pj"] for p in ok]),
    }
    return [{f: p[f] for f in fields} for p in ok], values, data["float_accuracy"]


def evaluate(name: str, spec: dict, results: Path, predictor: Predictor) -> list[dict]:
    """The cases of workload `name` for a predictor that did not train on it: one per objective,
    required accuracy and reference (the float model's accuracy, or the quantized model's: the
    held-out sweep's accuracy with a lossless ADC)."""
    space = {**model_space(predictor, spec["model"], spec["data"], spec.get("limit")), "axes": AXES, "device": DEVICE}
    if "calibration" in spec:
        space["calibration"] = spec["calibration"]
    settings, simulated, float_accuracy = simulated_space(results)
    key = [json.dumps(s, sort_keys=True) for s in settings]
    lossless = float(np.mean([simulated["accuracy"][i] for i, s in enumerate(settings) if s["adc_bits"] == 0]))
    try:
        prediction = predict(predictor, space, [], "latency")  # the predicted values do not depend on the ranking
    except ValueError as e:
        return [
            {"model": name, "objective": o, "required": r, "reference": ref, "error": str(e)}
            for ref in REFERENCES
            for o in ("latency", "energy")
            for r in REQUIRED
        ]
    cases = []
    for reference, level in (("float", float_accuracy), ("quantized", lossless)):
        for objective in ("latency", "energy"):
            for required in REQUIRED:
                constraint = Constraint("accuracy", ">=", required * level)
                order, predicted_feasible = rank(prediction.values, [constraint], objective, prediction.uncapped)
                feasible = meets([constraint], simulated)
                case = {
                    "model": name,
                    "objective": objective,
                    "required": required,
                    "reference": reference,
                    "feasible": int(feasible.sum()),
                    "float_accuracy": float(float_accuracy),
                    "lossless_accuracy": lossless,
                    "lossless_meets": bool(lossless >= constraint.bound),
                }
                if not predicted_feasible[order[0]] or not feasible.any():
                    case.update(hit=False, reason="no predicted or simulated configuration meets the requirement")
                    cases.append(case)
                    continue
                chosen = int(order[0])
                at = key.index(json.dumps(prediction.settings[chosen], sort_keys=True))
                ratio = simulated[objective][at] / simulated[objective][feasible].min()
                met = bool(feasible[at])
                case.update(
                    chosen=prediction.settings[chosen],
                    ratio=float(ratio),
                    meets=met,
                    hit=bool(met and ratio <= 1 + TOLERANCE),
                    predicted=prediction.entry(chosen),
                    simulated={o: float(simulated[o][at]) for o in OBJECTIVES},
                )
                cases.append(case)
    return cases


def figure(errors: dict, cases: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in errors if "error" not in errors[n]]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    x = np.arange(len(names))
    for i, objective in enumerate(("latency", "energy")):
        axes[0].bar(x + (i - 0.5) * 0.4, [100 * errors[n][objective]["mean"] for n in names], 0.4, label=objective)
    axes[0].set_xticks(x, names, rotation=60, ha="right", fontsize=7)
    axes[0].set_ylabel("mean relative error (%)")
    axes[0].set_yscale("log")
    axes[0].set_title("cost prediction on the held-out model")
    axes[0].legend()
    ax = axes[1]
    ax.bar(x, [100 * errors[n]["accuracy"]["mean"] for n in names], 0.6, color="tab:green")
    ax.set_xticks(x, names, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("mean absolute accuracy error (points)")
    hits = [c for c in cases if "hit" in c and c["objective"] == "latency" and c["reference"] == "float"]
    rate = 100 * np.mean([c["hit"] for c in hits]) if hits else 0
    ax.set_title(f"accuracy prediction; fastest choice within 5 %: {rate:.0f} % of {len(hits)} cases")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def quantized_accuracy(specs: dict[str, dict]) -> list[str]:
    """A Markdown table of each workload's accuracy with a lossless ADC (one configuration: the
    quantized model, whose accuracy no crossbar parameter of the space changes) against its float
    model's."""
    lines = ["| workload | inputs | float model | quantized model (lossless ADC) |", "|---|---|---|---|"]
    one = {"adc_bits": [0], "rows": [128], "dac_bits": [4], "cell_bits": [4]}
    for name, spec in specs.items():
        found = explore({"name": name, **spec, "device": DEVICE, "axes": one, "cost": COST}, None, 1, plots=False)
        n, kept = found.images, found.summary[0]["accuracy_mean"]
        lines.append(f"| {name} | {n} | {found.float_accuracy:.4f} | {kept:.4f} ({round(kept * n)} of {n}) |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/dse_predict")
    parser.add_argument("--images", type=int, default=60)
    parser.add_argument("--max-channels", type=int, default=64)
    parser.add_argument("--layer-inputs", type=int, default=16, help="random inputs of each light-architecture layer")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--method", default="gbm")
    parser.add_argument("--figure", help="write the figure here (PNG)")
    parser.add_argument(
        "--quantized-only", action="store_true", help="only each workload's accuracy with a lossless ADC, then stop"
    )
    options = parser.parse_args(argv)
    out = Path(options.out)
    specs = workloads(out, options.images, options.max_channels, options.layer_inputs)
    if options.quantized_only:
        print("\n".join(quantized_accuracy(specs)))
        return
    results = {name: sweep(name, spec, out, options.jobs) for name, spec in specs.items()}
    samples = read_results(list(results.values()))
    start = time.perf_counter()
    errors, cases = {}, []
    for name, spec in specs.items():
        held_out = np.array([g == name for g in samples.groups])  # a model's samples are named by its file
        predictor, errors[name] = fold_error(samples, held_out, name, options.method)
        cases += evaluate(name, spec, results[name], predictor)
    print(f"leave-one-model-out: {time.perf_counter() - start:.0f} s")
    print(
        "\n| held-out model | points | accuracy error (mean / max) | latency error (mean / max) "
        "| energy error (mean / max) |"
    )
    print("|---|---|---|---|---|")
    for name, fold in errors.items():
        if "error" in fold:
            print(f"| {name} | {fold['points']} | not predicted: {fold['error']} | | |")
            continue
        a, lat, e = fold["accuracy"], fold["latency"], fold["energy"]
        print(
            f"| {name} | {fold['points']} | {100 * a['mean']:.2f} / {100 * a['max']:.1f} pts | "
            f"{100 * lat['mean']:.2f} / {100 * lat['max']:.1f} % | {100 * e['mean']:.2f} / {100 * e['max']:.1f} % |"
        )
    print(
        "\n| held-out model | reference | objective | required (×) | feasible points | lossless ADC meets it "
        "| simulated / best | meets | hit |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for c in cases:
        head = f"| {c['model']} | {c['reference']} | {c['objective']} | {c['required']} |"
        if "error" in c:
            print(f"{head} | | not predicted: {c['error']} | | |")
        elif "ratio" not in c:
            print(f"{head} {c['feasible']} | {'yes' if c['lossless_meets'] else 'no'} | {c['reason']} | | no |")
        else:
            print(
                f"{head} {c['feasible']} | {'yes' if c['lossless_meets'] else 'no'} | {c['ratio']:.3f} | "
                f"{'yes' if c['meets'] else 'no'} | {'yes' if c['hit'] else 'no'} |"
            )
    scored = [c for c in cases if "hit" in c]
    for reference in REFERENCES:
        for objective in ("latency", "energy"):
            part = [c for c in scored if c["objective"] == objective and c["reference"] == reference]
            posed = [c for c in part if c["lossless_meets"]]
            print(
                f"{objective}, required × {reference} accuracy: predicted best within {100 * TOLERANCE:.0f} % of the "
                f"simulated best at the required accuracy in {sum(c['hit'] for c in part)} of {len(part)} cases; "
                f"{sum(c['hit'] for c in posed)} of the {len(posed)} the quantized model meets with a lossless ADC"
            )
    (out / "cases.json").write_text(json.dumps({"errors": errors, "cases": cases}, indent=1) + "\n")
    if options.figure:
        figure(errors, cases, Path(options.figure))
        print(f"wrote {options.figure}")


if __name__ == "__main__":
    main()
