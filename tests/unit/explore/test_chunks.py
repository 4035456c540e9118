"""Data sets in chunks: the same accuracy, outputs and summed metrics as one batch, and the same
results whether a point's chunks run in one process, in local processes or on a Dask cluster."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import cimxdsl
from cimxdsl.device import Device
from cimxdsl.explore import SweepError, execution, explore, load_sweep
from cimxdsl.explore import points as point_module
from cimxdsl.explore.chunks import Chunk, chunk_bounds, run_chunks, shards
from cimxdsl.explore.context import prepare_context
from cimxdsl.explore.points import expand_points
from cimxdsl.tools.cim_compile import main as cim_compile

IMAGES = 48
BATCH = 20  # chunks of 20, 20 and 8 inputs
SWEEP = {
    "model": "digits",
    "data": "digits",
    "limit": IMAGES,
    "device": {"preset": "cinnamon", "weight_bits": 8, "input_bits": 8},
    "axes": {"adc_bits": [0, 5], "prog_noise": [0.0, 0.2]},
}
LINEAR = ("writes", "cells_written", "input_slices", "array_reads", "dac_activations", "adc_conversions")
"""Counts that grow with the inputs of a run, or are made once (writes of resident weights)."""
ENERGY = ("energy_pj", "energy_crossbar_pj", "energy_adc_pj", "energy_dac_pj", "energy_write_pj")


def test_chunk_bounds_and_shards():
    assert chunk_bounds(48, 20) == [Chunk(0, 0, 20), Chunk(1, 20, 40), Chunk(2, 40, 48)]
    assert chunk_bounds(48, None) == [Chunk(0, 0, 48)] == chunk_bounds(48, 100)
    assert [[c.index for c in s] for s in shards(chunk_bounds(100, 10), 3)] == [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9]]
    assert len(shards(chunk_bounds(48, 20), 8)) == 3  # never an empty shard
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        chunk_bounds(48, 0)


@pytest.fixture(scope="module")
def chunked():
    point_module._programs.clear()
    return explore({**SWEEP, "batch_size": BATCH})


def test_chunked_sweep_equals_one_batch(chunked):
    whole = explore(SWEEP)
    assert chunked.run["batch_size"] == BATCH and whole.run["batch_size"] is None
    assert len(chunked.rows) == len(whole.rows) == 4
    for a, b in zip(chunked.rows, whole.rows, strict=True):
        assert a["status"] == b["status"] == "ok"
        assert (a["accuracy"], a["agreement"]) == (b["accuracy"], b["agreement"])
        assert {c: a[c] for c in LINEAR} == {c: b[c] for c in LINEAR}
        assert a["writes"] > 0  # the weights are written by the first chunk only: as in one batch
        assert [a[e] for e in ENERGY] == pytest.approx([b[e] for e in ENERGY], rel=1e-12)
        assert a["mvms"] == 3 * b["mvms"]  # an MVM per layer product per run: three runs


@pytest.fixture(scope="module")
def chunk_programs():
    """The int8 digits model compiled for the chunks of 20, 20 and 8 inputs and for all 48, on a
    device with a 5-bit ADC, with the data set's inputs."""
    sweep = load_sweep({**SWEEP, "axes": {"adc_bits": [5]}, "batch_size": BATCH})
    context = prepare_context(sweep)
    config = execution.point_config(context, expand_points(sweep)[0])
    models = {
        b: cimxdsl.compile(sweep.model, device=config, calibration=context.calibration, batch=b) for b in (8, 20, 48)
    }
    return models, context.inputs, config


def test_chunk_outputs_equal_the_whole_batch(chunk_programs):
    """In int8 mode the products are of integers, exact whatever their order, and the quantization
    is calibrated on the model at its own batch, whatever batch it is compiled for: the chunks'
    outputs are bitwise those of one batch, on any BLAS kernel."""
    models, inputs, config = chunk_programs
    result = run_chunks(models.__getitem__, inputs, config, chunk_bounds(IMAGES, BATCH))
    whole = models[48].run(inputs, device=Device(config)).outputs[0]
    np.testing.assert_array_equal(result.outputs[0], whole)
    scaled = ("cinm.op.quantize", "cinm.op.dequantize")
    scales = [[str(op.scale) for op in m.module("quantize").walk() if op.name in scaled] for m in models.values()]
    assert scales[0] == scales[1] == scales[2] and len(scales[0]) == 6  # a quantize and a dequantize per layer


def test_summed_latency_and_mvms_are_those_of_the_chunks_run_in_turn(chunk_programs):
    """A data set's latency and MVM count are the sums over its chunks, run one after another on
    one device (the weights programmed by the first)."""
    models, inputs, config = chunk_programs
    result = run_chunks(models.__getitem__, inputs, config, chunk_bounds(IMAGES, BATCH))
    device, latencies, mvms = Device(config), [], 0
    for start, stop in ((0, 20), (20, 40), (40, 48)):
        device.reset_metrics()
        models[stop - start].run(inputs[start:stop], device=device)
        latencies.append(device.latency_ns)
        mvms += device.report()["total"]["mvms"]
    assert min(latencies) < max(latencies)  # the first chunk writes the weights, the last is smaller
    assert result.report["latency_ns"] == pytest.approx(sum(latencies), rel=1e-12)
    assert result.report["total"]["mvms"] == mvms


def test_chunks_run_elsewhere_give_what_they_give_in_one_process(chunk_programs):
    """On a noisy device, chunks run elsewhere (a shard from chunk 1 on) give what they give here,
    and no chunk repeats another's noise."""
    models, inputs, config = chunk_programs
    noisy = config.replace(prog_noise=0.1, read_noise=0.2, seed=7)
    chunks = chunk_bounds(IMAGES, BATCH)
    full = run_chunks(models.__getitem__, inputs, noisy, chunks)
    for first in (1, 2):
        tail = run_chunks(models.__getitem__, inputs, noisy, chunks[first:])
        np.testing.assert_array_equal(tail.outputs[0], full.outputs[0][chunks[first].start :])
        assert tail.reports == full.reports[first:]
    assert not np.array_equal(full.outputs[0][:8], full.outputs[0][BATCH : BATCH + 8])  # no noise repeated


def test_exact_mode_chunks_agree_with_one_batch_within_float_rounding():
    """In exact mode a chunk's float product is not bitwise the same rows of the whole batch's (the
    BLAS picks its kernel by the shape): each output of a K-term product is within 2·γ_K·(|x|·|w|)
    of the whole batch's, γ_K = K·u / (1 - K·u) (Higham 2002, §3.1)."""
    rng = np.random.default_rng(5)
    k, n = 300, 20
    weights = rng.normal(size=(k, n)).astype(np.float32)
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")
    graph = helper.make_graph(
        [node],
        "fc",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])],
        [numpy_helper.from_array(weights, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    models = {b: cimxdsl.compile(model, device="ideal", mode="exact", batch=b) for b in (8, 20, 48)}
    x = rng.normal(size=(IMAGES, k)).astype(np.float32)
    result = run_chunks(models.__getitem__, x, models[48].device, chunk_bounds(IMAGES, BATCH))
    whole = models[48].run(x).outputs[0]
    u = np.finfo(np.float32).eps / 2
    bound = 2 * k * u / (1 - k * u) * (np.abs(x).astype(np.float64) @ np.abs(weights))
    assert np.all(np.abs(result.outputs[0] - whole) <= bound)
    assert result.report["total"]["mvms"] == 3 * models[48].run(x).device.report()["total"]["mvms"]


NOISY = {
    **SWEEP,
    "seeds": 2,
    "batch_size": 16,
    "device": {**SWEEP["device"], "read_noise": 0.2},
    "axes": {"prog_noise": [0.1]},
}


@pytest.fixture(scope="module")
def noisy_serial():
    point_module._programs.clear()
    return explore(NOISY)


def test_a_point_is_sharded_when_there_are_more_workers_than_points():
    sweep = load_sweep(NOISY)
    context, points = prepare_context(sweep), expand_points(sweep)
    tasks = execution.shard_tasks(context, points, 2)
    assert [(p.index, i, [c.index for c in chunks]) for p, i, chunks in tasks] == [(0, 0, [0, 1]), (0, 1, [2])]
    assert len(execution.shard_tasks(context, points * 2, 2)) == 2  # one task per point


def test_local_processes_shard_a_point_with_identical_results(noisy_serial):
    point_module._programs.clear()
    parallel = explore(NOISY, jobs=2)
    assert parallel.csv() == noisy_serial.csv()
    assert noisy_serial.rows[0]["accuracy"] is not None
    assert noisy_serial.rows[0]["device_seed"] != noisy_serial.rows[1]["device_seed"]


def test_dask_shards_a_point_with_identical_results(noisy_serial):
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_dask = explore(NOISY, scheduler=cluster.scheduler_address)
        compiled = client.run(lambda: len(point_module._programs))
    assert sorted(compiled.values()) == [1, 1]  # a shard per worker: one compiles for 16 inputs, one for 8
    assert on_dask.csv() == noisy_serial.csv()


def test_batch_size_must_be_positive():
    with pytest.raises(SweepError, match="'batch_size' must be a positive integer, got 0"):
        load_sweep({**SWEEP, "batch_size": 0})
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        explore(SWEEP, batch_size=-1)


def test_cim_compile_dataset_in_chunks(tmp_path, capsys):
    data = np.load(cimxdsl.data.DIGITS_TEST)
    path = tmp_path / "small.npz"
    np.savez(path, inputs=data["inputs"][:IMAGES], labels=data["labels"][:IMAGES])
    lines = []
    for extra in ([], ["--batch-size", str(BATCH)]):
        cim_compile([str(cimxdsl.data.DIGITS_MODEL), "--device", "ideal", "--dataset", str(path), *extra])
        lines.append(next(line for line in capsys.readouterr().out.splitlines() if line.startswith("accuracy on")))
    assert lines[0] == lines[1] and lines[0].startswith(f"accuracy on {IMAGES} images")
    with pytest.raises(SystemExit) as exit_info:
        cim_compile([str(cimxdsl.data.DIGITS_MODEL), "--dataset", str(path), "--batch-size", "0"])
    assert exit_info.value.code != 0
    assert "--batch-size must be a positive integer, got 0" in capsys.readouterr().err
