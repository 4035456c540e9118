"""`cim-compile`: compile an ONNX model for a crossbar device, run it and report accuracy,
latency, energy and crossbar writes."""

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx

from cimxdsl.api import PIM_OPTIONS, STAGES, CompiledModel, CompileError, compile, compile_pim
from cimxdsl.data_io import InputSpec, gather_inputs, given_batch, onnx_inputs, read_dataset, read_input_files
from cimxdsl.device import DEFAULT_DEVICE, DeviceConfig, DeviceConfigError
from cimxdsl.device.placement import PLACEMENTS
from cimxdsl.explore.chunks import chunk_bounds, run_chunks
from cimxdsl.explore.sweep import COMPILE_FIELDS
from cimxdsl.frontend.onnx_importer import OnnxImportError, load_model
from cimxdsl.limits import dominant_limit
from cimxdsl.reference import ReferenceUnavailable, float_predictions, onnxruntime_outputs, reference_name
from cimxdsl.report import format_layers, format_precision, format_report
from cimxdsl.tools.cli import (
    Progress,
    UserError,
    add_backend_options,
    add_parallel_options,
    add_version_option,
    check_parallel_options,
    check_positive,
    run_reporting_errors,
)
from cimxdsl.tools.layer_plots import figure_class, plot_layers
from cimxdsl.transforms.memristor.pipeline import scheduling_strategies


def band_slack(text: str) -> float | str:
    """`--band-slack`: a number or `auto` (`compile_pim` checks the number)."""
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {text!r}") from None


def model_inputs(options) -> tuple[onnx.ModelProto, list[InputSpec], dict[str, np.ndarray], int | None]:
    """The model, its inputs, the arrays given for them (`--input`, else with `--dataset` its first
    images) and the batch to compile for: the batch of the arrays given, else `--batch`, where the
    model's batch is open (None: it is fixed)."""
    try:
        model = load_model(options.model)
    except OnnxImportError as e:
        raise UserError(str(e)) from None
    specs = onnx_inputs(model)
    open_batch = any(s.open_batch for s in specs)
    if options.batch is not None:
        check_positive(options, "batch")
        fixed = next((s.shape[0] for s in specs if s.shape and not s.open_batch), None)
        if not open_batch and fixed != options.batch:
            raise UserError(f"--batch {options.batch}: the model's batch is fixed at {fixed}")
    if options.dataset and not options.input:
        if len(specs) != 1:
            raise UserError(f"--dataset needs a model with one input, this one has {len(specs)}")
        count = options.batch or (1 if specs[0].open_batch else specs[0].shape[0])
        given = {specs[0].name: read_dataset(options.dataset, specs[0])[0][:count]}
        print(f"input: the first {'image' if count == 1 else f'{count} images'} of the data set")
    else:
        given = read_input_files(options.input, specs)
    batch = given_batch(specs, given)
    if batch is not None and options.batch is not None and batch != options.batch:
        raise UserError(f"--batch {options.batch}, but the inputs given hold a batch of {batch}")
    batch = batch or options.batch
    return model, specs, given, (batch or 1) if open_batch else None


def read_inputs(options, specs: list[InputSpec], given: dict[str, np.ndarray], batch: int | None) -> list[np.ndarray]:
    """The checked inputs: those given, the others standard-normal with `--random-inputs`."""
    rng = np.random.default_rng(options.seed)

    def random(spec: InputSpec) -> np.ndarray:
        if spec.dtype.kind in "biu":
            return rng.integers(0, 2, spec.shape).astype(spec.dtype)
        return rng.standard_normal(spec.shape).astype(spec.dtype)

    def missing(name: str) -> str:
        return f"no value for model input '{name}' (give --input {name}=file.npy or --random-inputs)"

    return gather_inputs(specs, given, random if options.random_inputs else None, batch, missing)[0]


def comparison(ours: list[np.ndarray], reference: list[np.ndarray]) -> dict:
    errors = [np.abs(a - b) for a, b in zip(ours, reference, strict=True)]
    scale = max(float(np.abs(r).max()) for r in reference) or 1.0
    agree = [np.argmax(a, -1) == np.argmax(b, -1) for a, b in zip(ours, reference, strict=True)]
    return {
        "max_abs_error": max(float(e.max()) for e in errors),
        "max_rel_error": max(float(e.max()) for e in errors) / scale,
        "top1_agreement": float(np.mean(np.concatenate([a.ravel() for a in agree]))),
    }


def evaluate_dataset(
    compile_options: dict,
    model_path: str,
    dataset: str,
    spec: InputSpec,
    progress: Progress,
    batch_size: int | None = None,
) -> dict:
    """Accuracy of the float model (onnxruntime) and of the crossbar program on a labelled set, in
    chunks of `batch_size` inputs (None: all at once; the model compiled for the chunk batch and
    once more for a smaller last chunk)."""
    inputs, labels, _ = read_dataset(dataset, spec)
    chunks = chunk_bounds(len(inputs), batch_size)
    programs: dict[int, CompiledModel] = {}

    def program(batch: int) -> CompiledModel:
        if batch not in programs:
            purpose = f"for the data set (batch {batch})"
            programs[batch] = compile(model_path, batch=batch, progress=stages(progress, purpose), **compile_options)
            progress.step(f"simulating the data set in {len(chunks)} chunks")
        return programs[batch]

    result = run_chunks(program, inputs, program(chunks[0].stop - chunks[0].start).device, chunks)
    predictions = np.argmax(result.outputs[0], axis=-1).reshape(len(labels))
    progress.finish()
    reference = float_predictions(onnx.load(model_path), inputs, batch_size)
    evaluation = {
        "images": len(labels),
        "batch_size": chunks[0].stop - chunks[0].start,
        "float_reference": reference_name(),
        "float_accuracy": float(np.mean(reference == labels)),
        "crossbar_accuracy": float(np.mean(predictions == labels)),
        "top1_agreement": float(np.mean(predictions == reference)),
    }
    if evaluation["float_accuracy"] - evaluation["crossbar_accuracy"] > ACCURACY_LOSS_LIMIT:
        sample = inputs[:LIMITS_SAMPLE]
        outputs = device_runs(model_path, compile_options, [sample], len(sample))

        def disagreement(config: DeviceConfig) -> float:
            predicted = np.argmax(outputs(config)[0], axis=-1).reshape(len(sample))
            return float(np.mean(predicted != reference[: len(sample)]))

        measure = f"top-1 disagreement with the float model on {len(sample)} images"
        device = next(iter(programs.values())).device
        evaluation["limits"] = dominant_limit(device, compile_options["mode"], disagreement, measure)
    return evaluation


COMPARE_LIMIT = 0.05
"""The largest relative error `--compare` takes without finding which device limit dominates it."""
ACCURACY_LOSS_LIMIT = 0.02
"""The largest accuracy loss on `--dataset` taken without finding which device limit dominates it."""
LIMITS_SAMPLE = 32
"""The images of the data set the device limits are measured on."""


def device_runs(
    model_path: str,
    compile_options: dict,
    inputs: list[np.ndarray],
    batch: int | None,
    compiled: CompiledModel | None = None,
) -> Callable[[DeviceConfig], list[np.ndarray]]:
    """The outputs for `inputs` on any device: the model compiled again only for a device that
    changes the program (`COMPILE_FIELDS`: bits, geometry), else `compiled` (or the first
    compile) run on that device."""
    programs: dict[tuple, CompiledModel] = {}

    def key(config: DeviceConfig) -> tuple:
        return tuple(getattr(config, f, None) for f in COMPILE_FIELDS)

    if compiled is not None:
        programs[key(compiled.device)] = compiled

    def outputs(config: DeviceConfig) -> list[np.ndarray]:
        if key(config) not in programs:
            programs[key(config)] = compile(model_path, batch=batch, **{**compile_options, "device": config})
        program = programs[key(config)]
        return program.run(*inputs, device=program.new_device(config)).outputs

    return outputs


def stages(progress: Progress, purpose: str = "") -> Callable[[str], None]:
    """`compile`'s progress callback: the stage about to run, as a step of `STAGES`."""
    label = f"compiling {purpose}".rstrip()
    return lambda stage: progress.step(f"{label}: {stage}", STAGES.index(stage), len(STAGES))


def format_runtime_products(summary: dict) -> str:
    """One line: where the products of two run-time tensors ran and the writes they caused."""
    return (
        f"run-time products (attention): {summary['host']} on the host, {summary['crossbar']} on crossbars; "
        f"crossbar writes they caused per inference: {summary['writes']} ({summary['cells_written']} cells)"
    )


def main(args: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="cim-compile", description=__doc__)
    parser.add_argument("model", help="an ONNX model")
    parser.add_argument("--target", default="memristor", choices=["memristor", "pim"])
    parser.add_argument(
        "--cores",
        type=int,
        help="PIM cores (--target pim; default: the chip's if the model fits them, else as many as it needs)",
    )
    parser.add_argument("--crossbars-per-core", type=int, help="crossbars per PIM core (default: the chip's)")
    parser.add_argument(
        "--chip",
        help="the PIM chip of the performance estimate and the default geometry: a preset (pimcomp: 64 cores x 64 "
        "crossbars, pimsim-nn) or a TOML/JSON file of pimsim-nn parameters (--target pim; default: pimcomp)",
    )
    parser.add_argument(
        "--packing",
        choices=["kernel", "im2col", "sdk"],
        help="--target pim: a crossbar matrix per kernel position (kernel, as RAPTOR), kernel positions x channels "
        "unrolled into crossbar rows (im2col, as ISAAC and PIMCOMP; the default), or im2col over windows of adjacent "
        "output pixels where that takes fewer crossbar reads (sdk: shifted and duplicated kernels)",
    )
    parser.add_argument(
        "--array-group",
        type=int,
        metavar="N",
        help="--target pim: the most crossbars side by side in one array group, read by one mvmul: a layer's output "
        "channels over N crossbars' columns (default 1; needs --packing im2col or sdk)",
    )
    parser.add_argument(
        "--mapping",
        choices=["none", "greedy", "ga"],
        help="--target pim: replicate the layers that bound the pipeline onto the chip's free crossbars and balance "
        "the cores (greedy, or a genetic search: ga); none (the default) keeps one copy of each",
    )
    parser.add_argument(
        "--mapping-budget",
        type=float,
        metavar="SECONDS",
        help="time budget of the ga mapping search (default 10); past it, the best mapping so far",
    )
    parser.add_argument(
        "--pipeline",
        choices=["layer", "row"],
        help="--target pim: a layer starts when its producers have finished the image (layer, the default) or on a "
        "band of output rows as soon as the input rows its windows need have arrived (row)",
    )
    parser.add_argument(
        "--rows-per-band",
        type=int,
        metavar="N",
        help="--pipeline row: the fewest output rows per band (default 1; wider where thin bands cost over 5%% more)",
    )
    parser.add_argument(
        "--band-slack",
        type=band_slack,
        metavar="S",
        help="--pipeline row: how much later (in median band times) a deeper band may be ready than the earliest "
        "and still be placed first (default 0.5; its best differs from program to program; auto: the one of "
        "0.5, 1 and 1.5 whose program has the least estimated latency)",
    )
    parser.add_argument(
        "--share-rows",
        action="store_const",
        const=True,
        help="--pipeline row: a replicated layer's replicas compute each band together, each its own columns "
        "(a consumer waits for a part of a band's time rather than the whole)",
    )
    parser.add_argument(
        "--row-weight",
        type=float,
        metavar="W",
        help="--pipeline row with a mapping: a layer's time counts (most rows / its rows) ** W times when the "
        "mapping balances the layers, giving the layers of few rows more replicas (default 0)",
    )
    parser.add_argument(
        "--pimsim-mode",
        choices=["latency", "throughput"],
        help="--target pim: the sim_mode of the pimsim-nn configuration written beside the artifacts "
        "(pimsim_config.json): one image (latency, the default) or --pimsim-time ms of streamed images",
    )
    parser.add_argument(
        "--pimsim-time", type=float, metavar="MS", help="simulated time of pimsim-nn's throughput mode (default 100)"
    )
    parser.add_argument(
        "--device", default=DEFAULT_DEVICE, help=f"a device preset or TOML file (default: {DEFAULT_DEVICE})"
    )
    parser.add_argument("--crossbars", type=int, help="crossbars per layer (default: min(device, 64))")
    parser.add_argument("--mode", default="int8", choices=["int8", "exact"])
    parser.add_argument("--strategy", default="list", choices=list(scheduling_strategies()))
    parser.add_argument(
        "--placement",
        default="host",
        choices=PLACEMENTS,
        help="where products of two run-time tensors (attention) run: the digital unit (host), crossbars "
        "written at run time, or the cheaper by the device's cost (auto); default: host",
    )
    parser.add_argument("--calibrate", metavar="INPUTS.npz", help="calibration inputs for quantization")
    parser.add_argument(
        "--precision",
        metavar="FILE.toml",
        help="weight_bits and input_bits (1-8) per layer name or glob (default: the device's bits, at most 8)",
    )
    parser.add_argument(
        "--search-precision",
        action="store_true",
        help="search the per-layer bits for the lowest latency (--search-objective) within --budget accuracy points "
        "of uniform 8 bits on a validation split (--dataset, else the bundled digits training images) and write "
        "them as a --precision file (--search-output)",
    )
    parser.add_argument(
        "--budget", type=float, default=0.5, metavar="POINTS", help="accuracy points the search may lose (default 0.5)"
    )
    parser.add_argument("--search-method", default="greedy", metavar="METHOD", help="greedy (default), nsga2 or tpe")
    parser.add_argument(
        "--search-objective", default="latency", metavar="OBJECTIVE", help="latency (default), energy or product"
    )
    parser.add_argument(
        "--search-bits", default="8,6,4,3,2,1", metavar="B,B,...", help="the widths to search (default 8,6,4,3,2,1)"
    )
    parser.add_argument(
        "--search-trials", type=int, default=60, metavar="N", help="trials of nsga2 or tpe (default 60)"
    )
    parser.add_argument("--search-time", type=float, metavar="SECONDS", help="time budget of nsga2 or tpe")
    parser.add_argument(
        "--search-images", type=int, default=120, metavar="N", help="validation images searched on (default 120)"
    )
    parser.add_argument(
        "--search-output", default="precision.toml", metavar="FILE.toml", help="where the chosen precision goes"
    )
    add_parallel_options(parser, "the points of an nsga2 or tpe precision search")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    parser.add_argument("--random-inputs", action="store_true", help="standard-normal values for inputs not given")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--batch",
        type=int,
        metavar="N",
        help="inputs per run of a model whose batch is open (default: the batch of --input, else 1); "
        "--target pim streams the images through the pipeline one after another",
    )
    parser.add_argument("--dataset", metavar="DATA.npz", help="labelled inputs ('inputs', 'labels') for accuracy")
    parser.add_argument(
        "--batch-size",
        type=int,
        metavar="N",
        help="evaluate --dataset in chunks of N inputs, with bounded memory (default: all at once)",
    )
    parser.add_argument("--compare", action="store_true", help="compare the outputs with onnxruntime")
    parser.add_argument("-o", "--output-dir", help="write every stage's IR, the report and the compiled model here")
    parser.add_argument(
        "--emit-mlir", choices=STAGES, metavar="STAGE", help=f"print the IR after STAGE ({', '.join(STAGES)})"
    )
    parser.add_argument("--threads", type=int, metavar="N", help="threads of the simulation (default: every core)")
    add_backend_options(parser)
    parser.add_argument("--report-json", metavar="FILE")
    parser.add_argument(
        "--plot",
        metavar="DIR",
        help="draw per-layer latency, energy by component and crossbar writes as PNG files in DIR (matplotlib)",
    )
    add_version_option(parser)
    options = parser.parse_args(args)

    progress = Progress("stages")

    def body() -> None:
        check_positive(options, "batch_size")
        onnx_model, specs, given, batch = model_inputs(options)
        if options.search_precision:
            search_precision_command(options, specs)
            return
        if options.target == "pim":
            if options.backend != "numpy" or options.array_device is not None:
                raise UserError("--backend and --array-device apply to --target memristor")
            compile_pim_target(options, specs, given)
            return
        if options.plot:
            figure_class()  # before the work, a missing matplotlib
        compile_options = dict(
            device=options.device,
            target=options.target,
            calibration=options.calibrate,
            mode=options.mode,
            crossbars=options.crossbars,
            strategy=options.strategy,
            placement=options.placement,
            threads=options.threads,
            precision=options.precision,
            backend=options.backend,
            array_device=options.array_device,
        )
        try:
            model = compile(onnx_model, batch=batch, progress=stages(progress), **compile_options)
        except (CompileError, OnnxImportError, DeviceConfigError) as e:
            raise UserError(str(e)) from None
        progress.finish()
        if options.emit_mlir:
            print(model.mlir(options.emit_mlir))
            return
        crossbars = model.options["crossbars"]
        print(f"model: {options.model}  device: {model.device.name}  mode: {options.mode}  crossbars: {crossbars}")
        print(format_precision(model.precision))
        if options.output_dir and not (options.input or options.random_inputs or options.dataset or options.compare):
            write_stages(Path(options.output_dir), model)
            print(
                f"no inputs given: compiled only, stages written to {options.output_dir} "
                "(run with --input or --random-inputs)"
            )
            return
        inputs = read_inputs(options, specs, given, batch)
        progress.step("simulating")
        outputs = model(*inputs)
        progress.finish()
        outputs = outputs if isinstance(outputs, list) else [outputs]
        report = model.report()
        reference = show_outputs(options, model.notes, specs, inputs, outputs, report, model.output_names)
        if reference is not None and report["compare"]["max_rel_error"] > COMPARE_LIMIT:
            runs = device_runs(options.model, compile_options, inputs, batch, model)

            def relative_error(config: DeviceConfig) -> float:
                return comparison(runs(config), reference)["max_rel_error"]

            report["limits"] = dominant_limit(model.device, options.mode, relative_error, "max rel error")
            print(report["limits"]["text"])
        if options.dataset:
            report["dataset"] = evaluate_dataset(
                compile_options, options.model, options.dataset, specs[0], progress, options.batch_size
            )
            d = report["dataset"]
            print(
                f"accuracy on {d['images']} images: float ({d['float_reference']}) {d['float_accuracy']:.2%}, "
                f"crossbars {d['crossbar_accuracy']:.2%}, top-1 agreement {d['top1_agreement']:.2%}"
            )
            if "limits" in d:
                print(d["limits"]["text"])
        print(format_report({k: v for k, v in report.items() if k not in ("crossbars", "precision")}))
        print(format_layers(report["layers"]))
        if report["runtime_products"]["products"]:
            print(format_runtime_products(report["runtime_products"]))
        if options.report_json:
            Path(options.report_json).write_text(json.dumps(report, indent=2, default=str))
        if options.output_dir:
            write_outputs(
                Path(options.output_dir),
                model,
                report,
                {s.name: x for s, x in zip(specs, inputs, strict=True)},
                outputs,
            )
        if options.plot:
            for path in plot_layers(report, Path(options.plot)):
                print(f"plot: {path}")

    try:
        run_reporting_errors("cim-compile", body)
    finally:
        progress.finish()  # also when an error ends the run: the terminal gets its cursor back


def search_precision_command(options, specs: list[InputSpec]) -> None:
    """`--search-precision`: search the per-layer bits on a validation split, print the chosen
    configuration against uniform 8 bits and the Pareto front, and write the precision file."""
    from cimxdsl.data import DIGITS_TRAIN
    from cimxdsl.explore.precision_search import search_precision, write_precision

    if options.target != "memristor" or options.precision:
        given = "--precision" if options.precision else f"--target {options.target}"
        raise UserError(
            f"--search-precision searches the memristor target's bits from uniform 8 bits, not with {given}"
        )
    if len(specs) != 1:
        raise UserError(f"--search-precision needs a model with one input, this one has {len(specs)}")
    try:
        bits = [int(b) for b in options.search_bits.split(",")]
    except ValueError:
        raise UserError(f"--search-bits: give integers separated by commas, got '{options.search_bits}'") from None
    check_positive(options, "search_images")
    check_parallel_options(options)
    inputs, labels, calibration = read_dataset(options.dataset or DIGITS_TRAIN, specs[0])
    inputs, labels = inputs[: options.search_images], labels[: options.search_images]
    try:
        result = search_precision(
            options.model, inputs, labels, budget=options.budget, method=options.search_method,
            objective=options.search_objective, bits=bits, device=options.device,
            calibration=options.calibrate or calibration, trials=options.search_trials,
            timeout_s=options.search_time, seed=options.seed, batch_size=options.batch_size,
            jobs=options.jobs, scheduler=options.scheduler, mode=options.mode, crossbars=options.crossbars,
            strategy=options.strategy, threads=options.threads, placement=options.placement,
        )  # fmt: skip
    except (CompileError, OnnxImportError, DeviceConfigError) as e:
        raise UserError(str(e)) from None
    path = write_precision(result.precision, options.search_output)
    base, chosen = result.baseline, result.chosen

    def line(label: str, p: dict) -> str:
        bits = ", ".join(f"{name} {w}/{a}" for name, (w, a) in p["precision"].items())
        return (
            f"{label}: {bits}; accuracy {p['accuracy']:.2%}, latency {p['latency_ns']:.4g} ns "
            f"({base['latency_ns'] / p['latency_ns']:.2f}x), energy {p['energy_pj']:.4g} pJ "
            f"({base['energy_pj'] / p['energy_pj']:.2f}x) per image"
        )

    print(
        f"precision search ({result.method}, {result.objective}, budget {result.budget} points) on {len(labels)} "
        f"validation images: {result.compiles} compiles, {result.images} images simulated, {result.seconds:.1f} s"
    )
    print(line("uniform", base))
    print(line("chosen", chosen))
    print(f"Pareto front (accuracy, latency, energy): {len(result.front)} configurations")
    for p in result.front:
        print("  " + line("front", p)[len("front: ") :])
    print(f"precision written to {path} (use it with --precision {path})")


def compile_pim_target(options, specs: list[InputSpec], given: dict[str, np.ndarray]) -> None:
    """`--target pim`: per-core instructions in `-o DIR`, executed by the instruction-level
    validator, one image after another for a batch."""
    try:
        chosen = {name: value for name in PIM_OPTIONS if (value := getattr(options, name, None)) is not None}
        # (the options left out take compile_pim's defaults; -o is `output_dir`)
        model = compile_pim(
            options.model,
            device=options.device,
            calibration=options.calibrate,
            out_dir=options.output_dir,
            precision=options.precision,
            **chosen,
        )
    except (CompileError, OnnxImportError, DeviceConfigError) as e:
        raise UserError(str(e)) from None
    inputs = read_inputs(options, specs, given, options.batch)
    outputs = model(*inputs)
    outputs = outputs if isinstance(outputs, list) else [outputs]
    report = model.report()
    golden = model.golden(*inputs)
    exact = all(np.array_equal(a.reshape(b.shape), b) for a, b in zip(model.last_result.outputs, golden, strict=True))
    for i, (x, y) in enumerate(zip(model.program.quantize(inputs), golden, strict=True)):
        np.save(model.directory / f"input_{i}.npy", x)
        np.save(model.directory / f"expected_{i}.npy", y)
    print(f"model: {options.model}  target: pim  artifacts: {model.directory}")
    print(f"precision: {report['precision']['summary']}")
    print(
        f"instruction-level execution {'equals' if exact else 'DIFFERS FROM'} the interpreted integer program "
        f"(check again: cim-validate {model.directory} --input {model.directory}/input_0.npy "
        f"--expect {model.directory}/expected_0.npy)"
    )
    show_outputs(options, report["notes"], specs, inputs, outputs, report, model.output_names)
    if report.get("images", 1) > 1:
        per_image = report["executed_instructions_per_image"]
        print(
            f"batch: {report['images']} images streamed one after another, {report['executed_instructions']} "
            f"instructions executed ({min(per_image)}..{max(per_image)} per image)"
        )
    print(
        f"cores: {report['cores_used']} of {report['cores']} ({report['core_utilization']:.0%}), crossbars: "
        f"{report['crossbars_used']} ({report['crossbar_utilization']:.0%} of the used cores' crossbars), "
        f"{report['packing']} packing: {report['cell_utilization']:.1%} of their cells used"
    )
    if report["mapping"] != "none":
        print(f"mapping: {report['mapping']}")
    if report.get("pipeline", "layer") != "layer":
        print(f"pipeline: {report['pipeline']}")
    counts = sorted(report["instruction_counts"].items(), key=lambda item: -item[1])
    print(f"instructions: {report['instructions']} (" + ", ".join(f"{op} {n}" for op, n in counts) + ")")
    times = ", ".join(f"{stage} {seconds:.2f}" for stage, seconds in report["compile_time_s"].items())
    print(f"compile time (s): {times}")
    print(format_performance(report["performance"]))
    text = json.dumps(report, indent=2, default=str)
    (model.directory / "report.json").write_text(text)  # beside the artifacts (pimsim-nn ignores it)
    if options.report_json:
        Path(options.report_json).write_text(text)


def format_performance(p: dict) -> str:
    """The performance estimate in three lines."""
    energy = p["energy_pj"]
    busiest = max(p["core_busy_ns"], default=0.0)
    parts = ", ".join(f"{k} {v / 1e6:.3g}" for k, v in energy.items() if k != "total")
    return "\n".join(
        [
            f"performance estimate on chip '{p['chip']}': latency {p['latency_ns'] / 1e6:.4g} ms per image; "
            f"throughput {p['throughput']:.4g} images/s streamed "
            f"(at most {p['throughput_bound']:.4g}: 1 / busiest core)",
            f"bottleneck: {p['bottleneck']} (busiest core {busiest / 1e6:.4g} ms per image, "
            f"global memory {p['global_memory_busy_ns'] / 1e6:.4g} ms)",
            f"energy per image: {energy['total'] / 1e6:.4g} uJ ({parts} uJ)",
        ]
    )


def show_outputs(
    options,
    notes: list[str],
    specs: list[InputSpec],
    inputs,
    outputs: list[np.ndarray],
    report: dict,
    output_names: list[str],
) -> list[np.ndarray] | None:
    """Print the notes and outputs (by name) and, with --compare, the comparison with onnxruntime
    (kept in `report["compare"]`); returns onnxruntime's outputs (None without --compare)."""
    for note in notes:
        print(f"note: {note}")
    with np.printoptions(threshold=20, edgeitems=3, linewidth=100, precision=4):
        for name, output in zip(output_names, outputs, strict=True):
            print(f"output {name}: {output!r}")
    if not options.compare:
        return None
    try:
        reference = onnxruntime_outputs(options.model, {s.name: x for s, x in zip(specs, inputs, strict=True)})
    except ReferenceUnavailable:
        raise
    except Exception as e:  # onnxruntime raises its own error types
        raise UserError(f"--compare: onnxruntime cannot run the model: {' '.join(str(e).split())}") from None
    report["compare"] = c = comparison(outputs, reference)
    report["compare"]["reference"] = reference_name()
    print(
        f"{reference_name()}: max abs error {c['max_abs_error']:.4g}, max rel error {c['max_rel_error']:.4g}, "
        f"top-1 agreement {c['top1_agreement']:.0%}"
    )
    return reference


def write_stages(directory: Path, model: CompiledModel) -> None:
    """Every stage's IR (`<stage>.mlir`) and the compiled model (`model.cimx`) in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    for stage in model.stages:
        (directory / f"{stage}.mlir").write_text(model.mlir(stage))
    model.save(directory / "model.cimx")


def write_outputs(
    directory: Path, model: CompiledModel, report: dict, inputs: dict[str, np.ndarray], outputs: list[np.ndarray]
) -> None:
    """The stages, the report (`report.json`), the outputs by the model's output names
    (`outputs.npz`) and the inputs they came from by input name (`inputs.npz`)."""
    write_stages(directory, model)
    (directory / "report.json").write_text(json.dumps(report, indent=2, default=str))
    np.savez(directory / "outputs.npz", **dict(zip(model.output_names, outputs, strict=True)))
    np.savez(directory / "inputs.npz", **inputs)


if __name__ == "__main__":
    main(sys.argv[1:])
