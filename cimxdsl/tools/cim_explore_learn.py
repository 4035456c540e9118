"""`cim-explore learn` and `cim-explore predict`: a predictor of accuracy, latency and energy
trained on sweep results, and its prediction of the best configuration for a model."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from cimxdsl.tools.cli import Progress, UserError, add_version_option, check_positive, run_reporting_errors


def learn_main(args: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="cim-explore learn",
        description="Train a predictor of accuracy, latency and energy on sweep results and report its "
        "error on points it did not train on.",
    )
    parser.add_argument("results", nargs="+", help="results.json files or the directories holding them")
    parser.add_argument(
        "-o", "--output", default="predictor.json", help="the predictor file (JSON; default: %(default)s)"
    )
    parser.add_argument(
        "--method",
        default="auto",
        help="gbm (gradient boosting), forest (random forest), gp (Gaussian process) or auto "
        "(gp under 60 points, else gbm; default)",
    )
    parser.add_argument(
        "--split",
        default="points",
        help="held-out split: points (a fifth of the points, default) or models (each model left out in turn)",
    )
    add_version_option(parser)
    options = parser.parse_args(args)

    def body() -> None:
        from cimxdsl.explore.learn import learn

        predictor = learn(options.results, options.method, options.split)
        samples = predictor.samples
        print(
            f"trained {predictor.fitted} on {len(samples.groups)} points of {len(samples.workloads)} models "
            f"({', '.join(samples.workloads)}); inputs: {', '.join(predictor.inputs)}"
        )
        print(held_out_table(predictor.held_out))
        predictor.save(options.output)
        print(f"wrote {options.output}")

    run_reporting_errors("cim-explore learn", body)


def held_out_table(report: dict) -> str:
    """One line per held-out fold: the points it holds and the mean (largest) error per objective."""
    lines = [f"held-out error ({report['split']} split; accuracy: absolute, latency and energy: relative):"]
    for name, fold in report["folds"].items():
        if "error" in fold:
            lines.append(f"  {name}: not predicted: {fold['error']}")
            continue
        parts = [f"accuracy {fold['accuracy']['mean']:.4f} (max {fold['accuracy']['max']:.4f})"]
        parts += [
            f"{o} {100 * fold[o]['mean']:.2f} % (max {100 * fold[o]['max']:.2f} %)" for o in ("latency", "energy")
        ]
        lines.append(f"  {name}: {fold['points']} points held out, {fold['trained_on']} trained on: {', '.join(parts)}")
    return "\n".join(lines)


def predict_main(args: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="cim-explore predict",
        description="Predict accuracy, latency and energy of every configuration for a model without "
        "simulating it; print the best one under the constraints and the predicted front.",
    )
    parser.add_argument(
        "model",
        help="an ONNX model or 'digits' (the space: the values the predictor was trained on), or a sweep file "
        "(.toml: its model, data, device and axes)",
    )
    parser.add_argument("--predictor", required=True, help="a predictor file (cim-explore learn)")
    parser.add_argument("--data", help="a labelled .npz for the model's float accuracy and --verify")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N examples of the data")
    parser.add_argument(
        "--constraint",
        action="append",
        default=[],
        metavar="C",
        help="e.g. accuracy>=0.9, latency<2000 (ns per input), energy<=5e4 (pJ per input); repeatable",
    )
    parser.add_argument("--minimize", default="latency", help="the objective to rank by (default: latency)")
    parser.add_argument("--verify", type=int, metavar="K", help="simulate the K best configurations to check them")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="--verify in N local processes")
    parser.add_argument("--top", type=int, default=15, metavar="N", help="front lines to print (default: %(default)s)")
    parser.add_argument("-o", "--output", help="write the prediction (and verification) as JSON here")
    add_version_option(parser)
    options = parser.parse_args(args)

    def body() -> None:
        from cimxdsl.explore.learn import (
            load_predictor,
            model_space,
            objective_name,
            parse_constraint,
            predict,
            verify,
        )
        from cimxdsl.explore.sweep import SweepError, load_sweep

        check_positive(options, "jobs", "verify", "limit")
        constraints = [parse_constraint(c) for c in options.constraint]
        objective_name(options.minimize, "--minimize")
        predictor = load_predictor(options.predictor)
        try:
            if options.model.endswith(".toml"):
                if options.data or options.limit:
                    raise UserError("--data and --limit come from the sweep file when the model is a sweep")
                space = load_sweep(options.model)
            else:
                space = load_sweep(model_space(predictor, options.model, options.data, options.limit))
        except SweepError as e:
            raise UserError(str(e).replace("sweep file: ", "")) from None
        prediction = predict(predictor, space, constraints, options.minimize)
        print(prediction_text(prediction, options.top))
        if options.verify is not None:
            progress = Progress("points", lines=True)
            try:
                verify(prediction, options.verify, options.jobs, progress)
            finally:
                progress.finish()
            print(verified_text(prediction))
        if options.output:
            Path(options.output).write_text(json.dumps(prediction.to_dict(), indent=1) + "\n")
            print(f"wrote {options.output}")

    run_reporting_errors("cim-explore predict", body)


def settings_text(entry: dict, fields: Sequence[str]) -> str:
    return ", ".join(f"{f}={entry[f]}" for f in fields)


def values_text(values: dict) -> str:
    return f"accuracy {values['accuracy']:.4f}, latency {values['latency']:.5g} ns, energy {values['energy']:.5g} pJ"


def prediction_text(prediction, top: int) -> str:
    fields = prediction.sweep.swept_fields
    rules = ", ".join(str(c) for c in prediction.constraints) or "none"
    lines = [
        f"model {prediction.sweep.model.stem}: float accuracy {prediction.float_accuracy:.4f}; "
        f"{len(prediction.settings)} configurations predicted, none simulated; constraints: {rules}; "
        f"minimizing {prediction.objective} (per input)"
    ]
    if prediction.skipped:
        lines.append(f"{len(prediction.skipped)} configurations cannot be built, e.g. {prediction.skipped[0]}")
    best = prediction.best
    if best is None:
        lines.append("no configuration is predicted to meet the constraints")
    else:
        lines.append(
            f"predicted best: {settings_text(prediction.settings[best], fields)}: {values_text(prediction.entry(best))}"
        )
    front = [int(i) for i in prediction.order if prediction.front[i]]
    lines.append(
        f"predicted front ({len(front)} configurations, best {prediction.objective} first; * meets the constraints):"
    )
    for i in front[:top]:
        mark = "*" if prediction.feasible[i] else " "
        lines.append(f" {mark} {settings_text(prediction.settings[i], fields)}: {values_text(prediction.entry(i))}")
    if len(front) > top:
        lines.append(f"   ... {len(front) - top} more (--top N, or -o FILE for all)")
    return "\n".join(lines)


def verified_text(prediction) -> str:
    fields = prediction.sweep.swept_fields
    lines = ["verified (predicted -> simulated):"]
    for entry in prediction.verified:
        head = f"  {settings_text(entry, fields)}: "
        if entry["simulated"] is None:
            lines.append(head + f"failed: {entry['error']}")
            continue
        simulated = entry["simulated"]
        parts = [f"{o} {entry[o]:.5g} -> {simulated[o]:.5g}" for o in ("accuracy", "latency", "energy")]
        meets = "meets" if entry["simulated_feasible"] else "does not meet"
        lines.append(head + ", ".join(parts) + f" ({meets} the constraints)")
    return "\n".join(lines)
