"""The nine "light" architectures shipped in the onnx wheel (SqueezeNet, ResNet-50, VGG-19, AlexNet,
ZFNet-512, Inception v1/v2, DenseNet-121, ShuffleNet) through the PIM flow: integer import,
`--target pim` compile, and the instruction-level validator against the interpreted integer program.

The light models hold every weight as `ConstantOfShape(shape)`; `light_model` replaces those by
random initializers (He-scaled, seeded) so the layers compute something non-trivial.

    python -m benchmarks.pim_light_models [names...] [--cores N] [--crossbars-per-core N] [--size S]
        [--no-validate] [--chip pimcomp] [--packing kernel|im2col|sdk] [--array-group N]

With no options a model compiles as `cim-compile --target pim` does with no flags (the chip's cores
and crossbars per core when the model fits them, else as many cores as it needs; the default
packing). Each row also has the performance estimate on the chip (pipelined throughput, latency,
bottleneck) and, validated, the instruction-level execution's time and whether it is exact.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from cimxdsl.flow.pim import DEFAULT_PACKING

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
NAMES = [
    "squeezenet",
    "resnet50",
    "vgg19",
    "bvlc_alexnet",
    "zfnet512",
    "inception_v1",
    "inception_v2",
    "densenet121",
    "shufflenet",
]


def light_model(name: str, seed: int = 0, size: int | None = None) -> onnx.ModelProto:
    """The light model `name` with its `ConstantOfShape` weights replaced by random initializers,
    for `size` × `size` images if given (for the models whose layers allow it)."""
    model = onnx.load(str(LIGHT / f"light_{name}.onnx"))
    graph = model.graph
    if size is not None:
        produced = {o for node in graph.node for o in node.output}
        for info in graph.input:
            dims = info.type.tensor_type.shape.dim
            if info.name not in produced and len(dims) == 4:
                dims[2].dim_value = dims[3].dim_value = size
        del graph.value_info[:]
    rng = np.random.default_rng(seed)
    shapes = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    weights = []
    for node in list(graph.node):
        if node.op_type != "ConstantOfShape" or node.input[0] not in shapes:
            continue
        shape = tuple(int(d) for d in shapes[node.input[0]])
        if len(shape) > 1:
            values = rng.normal(0.0, np.sqrt(2.0 / np.prod(shape[1:])), shape)
        else:
            values = rng.uniform(0.5, 1.5, shape)  # biases and batch-norm statistics (variances > 0)
        weights.append(numpy_helper.from_array(values.astype(np.float32), node.output[0]))
        graph.node.remove(node)
    graph.initializer.extend(weights)
    listed = {i.name for i in graph.input}
    graph.input.extend(  # IR version 3: every initializer is also a graph input
        helper.make_tensor_value_info(w.name, w.data_type, w.dims) for w in weights if w.name not in listed
    )
    return model


def run(
    name: str,
    crossbars_per_core: int | None = None,
    validate_artifacts: bool = True,
    size: int | None = None,
    packing: str = DEFAULT_PACKING,
    chip: str = "pimcomp",
    cores: int | None = None,
    array_group: int = 1,
) -> dict:
    from cimxdsl.backend import read_artifacts, validate
    from cimxdsl.device.chip import load_chip_config
    from cimxdsl.flow.pim import compile_to_pim
    from cimxdsl.frontend.integer import import_integer
    from cimxdsl.interpreters import run as interpret

    model = light_model(name, size=size)
    weights = {init.name for init in model.graph.initializer}
    image = next(i for i in model.graph.input if i.name not in weights)
    shape = [d.dim_value or 1 for d in image.type.tensor_type.shape.dim]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    row: dict = {"model": name}
    start = time.perf_counter()
    try:
        program = import_integer(model, [[x]])
        row["import_s"] = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as out:
            begin = time.perf_counter()
            chip_config = load_chip_config(chip)
            module = program.module.clone()
            report = compile_to_pim(
                module,
                cores,
                crossbars_per_core,
                out_dir=out,
                packing=packing,
                array_group=array_group,
                chip=chip_config,
            )
            row["compile_s"] = time.perf_counter() - begin
            row |= {k: report[k] for k in ("cores_used", "crossbars_used", "cell_utilization", "instructions")}
            p = report["performance"]
            row |= {"images_per_s": p["throughput"], "latency_ms": p["latency_ns"] / 1e6, "bottleneck": p["bottleneck"]}
            if validate_artifacts:
                (q,) = program.quantize([x])
                (golden,) = interpret(program.module, [q], "ideal").outputs
                begin = time.perf_counter()
                (got,) = validate(read_artifacts(out), [q]).outputs
                row["validate_s"] = time.perf_counter() - begin
                row["exact"] = bool(np.array_equal(np.asarray(got).reshape(golden.shape), golden))
    except Exception as e:  # a benchmark row, not a crash: the one-line error is the result
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    row["total_s"] = time.perf_counter() - start
    return row


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=NAMES)
    parser.add_argument("--cores", type=int, help="cores (default: the chip's if the model fits, else as needed)")
    parser.add_argument("--crossbars-per-core", type=int, help="crossbars per core (default: the chip's)")
    parser.add_argument("--no-validate", action="store_true")
    parser.add_argument("--size", type=int, help="image size (default: the model's 224)")
    parser.add_argument("--packing", default=DEFAULT_PACKING, choices=["kernel", "im2col", "sdk"])
    parser.add_argument("--array-group", type=int, default=1, help="crossbars side by side in one array group")
    parser.add_argument("--chip", default="pimcomp", help="the chip of the performance estimate (preset or file)")
    options = parser.parse_args(argv)
    for name in options.names:
        row = run(
            name,
            options.crossbars_per_core,
            not options.no_validate,
            options.size,
            options.packing,
            options.chip,
            options.cores,
            options.array_group,
        )
        print(row, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
