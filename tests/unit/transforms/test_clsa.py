"""Cross-layer scheduling (`schedule-clsa`) on row bands (`tile{band=N}`) and one device per model
(`cinm-to-cim{devices=model}`): every stage keeps the program's result (NumPy on random programs,
onnxruntime on small CNNs with residual adds and pooling), a band waits only for the bands making
the rows it reads, and no schedule ends before the lower bound."""

import logging
from functools import partial

import numpy as np
import onnx
import onnxruntime
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

import cimxdsl
from benchmarks.dse_predict import attention_block
from benchmarks.model_zoo import GraphBuilder, resnet_cifar
from cimxdsl.api import STAGES
from cimxdsl.device import Device, preset, tile_mvm
from cimxdsl.device import device as device_model
from cimxdsl.dialects import cim
from cimxdsl.frontend.onnx_importer import import_onnx
from cimxdsl.interpreters import Program, run
from cimxdsl.transforms.memristor.row_bands import band_inputs
from cimxdsl.transforms.memristor.schedule import ScheduleClsaPass, schedule_report
from cimxdsl.transforms.memristor.scheduling import CrossbarCostModel, DependencyGraph
from cimxdsl.transforms.memristor.scheduling.critical_path import critical_path_ns
from cimxdsl.transforms.memristor.scheduling.framework import _build_graph, prepare_for_scheduling
from tests.unit.helpers import apply, parse
from tests.unit.transforms.test_pipeline_equivalence import DEVICES, cases

CNN_DEVICE = preset("cinnamon").replace(weight_bits=8, input_bits=8, crossbars=64)


def the_device(module) -> cim.AcquireDeviceOp:
    (device,) = [op for op in module.walk() if isinstance(op, cim.AcquireDeviceOp)]
    return device


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    crossbars=st.sampled_from([1, 2, 3, 16]),
    band=st.sampled_from([1, 2]),
    duplicates=st.sampled_from([0, 1, 16]),
)
def test_each_pass_keeps_the_result_and_no_schedule_beats_the_bound(
    device: str, data: st.DataObject, crossbars: int, band: int, duplicates: int
):
    """Random programs of 1–3 layers (shared operands, weights reused across products and layers,
    sizes at and across tile edges, layers taking earlier results as inputs) on one device."""
    rows, cols, (text, inputs, expected) = data.draw(cases(chains=device == "ideal"))
    config = DEVICES[device]
    module = parse(text)
    passes = [
        "",
        f"tile{{rows={rows} cols={cols} band={band}}}",
        f"cinm-to-cim{{crossbars={crossbars} devices=model}}",
        ScheduleClsaPass.for_device(config, duplicates=duplicates),
        "cim-to-memristor",
        "memristor-to-func",
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(device_model, "tile_mvm", partial(tile_mvm, fast_path=device == "ideal"))
        for spec in passes:
            if isinstance(spec, ScheduleClsaPass):
                spec.apply(None, module)  # pyright: ignore[reportArgumentType]
                report = schedule_report(the_device(module))
            elif spec:
                apply(module, spec)
            result = run(module, inputs, config)
            for got, want in zip(result.outputs, expected, strict=True):
                np.testing.assert_array_equal(got, want, err_msg=f"after {spec or 'nothing'}")
            if isinstance(spec, ScheduleClsaPass):
                assert report["latency_ns"] >= report["lower_bound_ns"] - 1e-6
                # the run follows the plan; it can only be shorter where a crossbar finds equal
                # values already written (a write the plan counts, the device skips)
                assert result.device.latency_ns <= report["latency_ns"] + 1e-6
                assert 0.0 <= report["utilisation"] <= 1.0 + 1e-9


def two_convolutions(size: int = 8, width: int = 4) -> onnx.ModelProto:
    """conv 3×3 → ReLU → conv 3×3 → residual add → ReLU → global pooling → classifier."""
    g = GraphBuilder(0)
    x = g.conv_bn("x", 3, width, 3)
    y = g.conv_bn(x, width, width, 3, relu=False)
    return g.model(g.classifier(g.node("Relu", [g.node("Add", [y, x])]), width, 4), size, 4)


def vgg_like(size: int = 16, width: int = 4) -> onnx.ModelProto:
    """Two stages of two 3×3 convolutions, each stage ending in 2×2 max pooling, and a classifier."""
    g = GraphBuilder(1)
    x, cin = "x", 3
    for stage in range(2):
        for _ in range(2):
            x, cin = g.conv_bn(x, cin, width * 2**stage, 3), width * 2**stage
        x = g.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    return g.model(g.classifier(x, cin, 4), size, 4)


def onnxruntime_result(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


@pytest.mark.parametrize(
    "model",
    [resnet_cifar(depth=8, size=8, width=4, classes=4), vgg_like()],
    ids=["resnet-with-projections", "vgg-like"],
)
def test_small_cnns_match_onnxruntime_at_every_stage(model: onnx.ModelProto):
    size = model.graph.input[0].type.tensor_type.shape.dim[2].dim_value
    x = np.random.default_rng(3).normal(size=(1, 3, size, size)).astype(np.float32)
    expected = onnxruntime_result(model, x)
    compiled = cimxdsl.compile(model, device="ideal", mode="exact", strategy="clsa")
    scale = np.abs(expected).max()
    for stage in STAGES:
        if stage != "quantize":
            actual = compiled.run(x, stage=stage).outputs[0]
            # float32 sums in another order than onnxruntime's
            np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5 * scale, err_msg=stage)
    report = schedule_report(the_device(compiled.module("schedule")))
    assert report["latency_ns"] >= report["lower_bound_ns"]
    assert compiled.run(x).device.latency_ns == pytest.approx(report["latency_ns"])
    (line,) = [note for note in compiled.notes if note.startswith("schedule-clsa:")]
    assert f"latency {report['latency_ns']:.0f} ns" in line and "per layer: " in line


def test_attention_on_crossbars_matches_onnxruntime_at_every_stage():
    """Multi-head attention with its run-time products on crossbars: each head's rows are a
    rank-reducing slice of the batched operand, which the row tracer must not read as rows of it."""
    model = attention_block(tokens=4, width=8, heads=2, hidden=8)
    x = np.random.default_rng(5).normal(size=(1, 4, 8)).astype(np.float32)
    expected = onnxruntime_result(model, x)
    compiled = cimxdsl.compile(model, device="ideal", mode="exact", strategy="clsa", placement="crossbar")
    for stage in STAGES:
        if stage != "quantize":
            actual = compiled.run(x, stage=stage).outputs[0]
            # float32 sums in another order than onnxruntime's
            np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max(), err_msg=stage)


def banded_graph(model: onnx.ModelProto, band: int) -> tuple[DependencyGraph, list]:
    """The dependency graph of the model's products on one device, bands traced; and the products
    in program order."""
    module = import_onnx(model)
    apply(module, f"linalg-to-cinm,cinm-isolate-compute,tile{{rows=64 cols=64 band={band}}}")
    apply(module, "cinm-to-cim{crossbars=8 devices=model}")
    device = the_device(module)
    products = [op for op in device.parent_block().ops if isinstance(op, cim.GemmOp)]
    band_inputs(device.parent_block(), products)
    prepared = prepare_for_scheduling(device)
    graph, _ = _build_graph(prepared.roots, frozenset(prepared.cim_ops).__contains__, prepared.cim_ops[0])
    return graph, prepared.cim_ops


@pytest.mark.parametrize("band", [1, 2, 3])
def test_a_band_waits_for_the_bands_making_the_rows_it_reads(band: int):
    """8×8 images, 3×3 windows with padding 1: output rows [r0, r1) of the second convolution read
    rows [r0 − 1, r1 + 1) of the first's output (clipped to the image), which its bands of `band`
    rows make. Only the classifier, after global pooling, waits for everything before it."""
    graph, products = banded_graph(two_convolutions(), band)
    bands = -(-8 // band)
    first, second, classifier = products[:bands], products[bands : 2 * bands], products[2 * bands]
    assert len(products) == 2 * bands + 1
    for i, product in enumerate(second):
        r0, r1 = i * band, min((i + 1) * band, 8)
        needed = range(max(r0 - 1, 0) // band, (min(r1 + 1, 8) - 1) // band + 1)
        assert [products.index(d.operation) for d in graph.node(product).dependencies] == list(needed)
    assert {d.operation for d in graph.node(classifier).dependencies} == set(first + second)


def placed(model: onnx.ModelProto) -> ModuleOp:
    """The model's products in row bands of one, on one device of `CNN_DEVICE`, not yet scheduled."""
    rows, cols = CNN_DEVICE.tile_shape
    module = import_onnx(model)
    apply(module, f"linalg-to-cinm,cinm-isolate-compute,tile{{rows={rows} cols={cols} band=1}}")
    return apply(module, f"cinm-to-cim{{crossbars={CNN_DEVICE.crossbars} devices=model}}")


def cross_layer_run(placement: ModuleOp, x: np.ndarray, **options) -> tuple[float, dict, np.ndarray]:
    """A copy of `placement` (from `placed`) scheduled by `schedule-clsa` with `options`, run twice
    (the second run finds the weights written): its latency, the plan's report, its result."""
    module = placement.clone()
    ScheduleClsaPass.for_device(CNN_DEVICE, **options).apply(None, module)  # pyright: ignore[reportArgumentType]
    program = Program(module, Device(CNN_DEVICE))
    program([x])
    program.device.reset_metrics()
    result = program([x])
    return result.device.latency_ns, schedule_report(the_device(module)), result.outputs[0]


def test_resident_weights_run_as_planned_and_layers_overlap():
    """With the weights written by a first run, the second run takes exactly the planned time; the
    cross-layer schedule is shorter than the same placement layer by layer, copies shorten it more,
    and both stay above the lower bound."""
    model = resnet_cifar(depth=8, size=12, width=4, classes=4)
    x = np.random.default_rng(5).integers(-8, 8, (1, 3, 12, 12)).astype(np.float32)
    expected = onnxruntime_result(model, x)
    placement = placed(model)
    runs = {
        (cross, copies): cross_layer_run(placement, x, resident=True, cross_layer=cross, duplicates=copies)
        for cross in (True, False)
        for copies in (0, 16)
    }
    for (cross, copies), (latency, report, output) in runs.items():
        assert latency == pytest.approx(report["latency_ns"]), (cross, copies)
        assert latency >= report["lower_bound_ns"]
        np.testing.assert_allclose(output, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())
    assert runs[True, 0][0] < runs[False, 0][0]
    assert runs[True, 16][0] < runs[True, 0][0]
    assert runs[True, 16][1]["copies"] == 16
    assert runs[True, 0][1]["utilisation"] > runs[False, 0][1]["utilisation"]
    layers = runs[True, 0][1]["layers"]
    assert len(layers) == 10 and all(0.0 < value <= 1.0 for value in layers.values())


def test_the_critical_path_bounds_a_chain_of_layers():
    """Three layers in one band each, each waiting for the one before: the bound is the MVMs of a
    layer and those after it, after the write of its tile (no tile is resident at the start)."""
    graph, products = banded_graph(two_convolutions(), 8)
    cost = CrossbarCostModel(CNN_DEVICE)
    chains = [cost.write_ns(products[i]) + sum(cost.mvm_ns(op) for op in products[i:]) for i in range(3)]
    assert critical_path_ns(graph, cost) == pytest.approx(max(chains))


def test_a_duplication_budget_beyond_the_device_is_noted(capsys):
    model = two_convolutions()
    x = np.random.default_rng(6).normal(size=(1, 3, 8, 8)).astype(np.float32)
    _, report, _ = cross_layer_run(placed(model), x, duplicates=1000)
    # one weight tile per layer (27x4, 36x4 and 4x4 weights); 8 + 8 + 1 bands, a crossbar each at most
    tiles, usable = 3, 17
    assert report["copies"] == usable - tiles
    err = capsys.readouterr().err
    assert err.endswith(
        f"duplicates=1000 but {usable - tiles} copies fit: {usable} crossbars to use (at most one per op) for {tiles} weight tiles\n"
    )
    assert err.count("\n") == 1


def test_more_tiles_than_crossbars_is_noted_and_still_exact(capsys):
    model = two_convolutions()
    x = np.random.default_rng(7).normal(size=(1, 3, 8, 8)).astype(np.float32)
    module = import_onnx(model)
    apply(
        module, "linalg-to-cinm,cinm-isolate-compute,tile{rows=8 cols=4 band=2},cinm-to-cim{crossbars=2 devices=model}"
    )
    ScheduleClsaPass.for_device(CNN_DEVICE.replace(crossbars=2)).apply(None, module)  # pyright: ignore[reportArgumentType]
    assert "weight tiles on 2 crossbars: tiles are written where they are needed, no copies" in capsys.readouterr().err
    expected = onnxruntime_result(model, x)
    np.testing.assert_allclose(run(module, [x]).outputs[0], expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


def test_a_band_larger_than_a_layer_is_noted(capsys):
    module = import_onnx(two_convolutions())
    apply(module, "linalg-to-cinm,cinm-isolate-compute,tile{rows=64 cols=64 band=8}")
    err = capsys.readouterr().err
    assert err == "tile: note: band=8 does not split conv2, conv10 (a band of output rows or fewer): run whole\n"


def test_pass_notes_are_log_records_a_caller_can_silence(capsys):
    notes = logging.getLogger("cimxdsl.notes")
    notes.setLevel(logging.ERROR)
    try:
        apply(import_onnx(two_convolutions()), "linalg-to-cinm,cinm-isolate-compute,tile{rows=64 cols=64 band=8}")
    finally:
        notes.setLevel(logging.NOTSET)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tile{band=-1}", "tile: option 'band' must be at least 0, got -1"),
        ("tile{band=2 mode=loop}", "tile: option 'band' needs mode=unroll"),
        ("cinm-to-cim{devices=chip}", "cinm-to-cim: option 'devices' must be one of layer, model, got 'chip'"),
        ("cinm-to-cim,schedule-clsa{duplicates=-2}", "schedule-clsa: option 'duplicates' must be at least 0, got -2"),
        ("memristor{duplicates=2}", "memristor: option 'duplicates' needs strategy=clsa, got strategy=list"),
    ],
)
def test_bad_options_are_one_line_errors(spec: str, message: str):
    module = parse(
        "func.func @main(%a: tensor<4x8xi32>, %b: tensor<8x4xi32>) -> tensor<4x4xi32> {\n"
        "  %r = cinm.compute -> tensor<4x4xi32> {\n"
        "    %0 = cinm.op.gemm %a, %b : (tensor<4x8xi32>, tensor<8x4xi32>) -> tensor<4x4xi32>\n"
        "    cinm.yield %0 : tensor<4x4xi32>\n  }\n  func.return %r : tensor<4x4xi32>\n}\n"
    )
    with pytest.raises(PassFailedException) as error:
        apply(module, spec)
    assert str(error.value) == message
