"""`--pipeline row`: layers cut into bands of output rows that start as soon as the input rows their
windows need have arrived. The instructions compute exactly what the layer-by-layer program does,
and the estimate's latency drops on a deep CNN."""

import itertools
import re
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from xdsl.utils.exceptions import PassFailedException

import cimxdsl
from cimxdsl.api import CompileError, compile_pim
from cimxdsl.backend.performance import estimate
from cimxdsl.device.chip import chip_preset
from cimxdsl.device.latency import Latencies
from cimxdsl.dialects import pim
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.crossbar_ops import FilterGeometry
from cimxdsl.flow.pim import compile_to_pim
from cimxdsl.interpreters import spatial as spatial_interpreter
from cimxdsl.tools.cim_compile import main as cim_compile
from cimxdsl.transforms.pim.cinm_to_spatial import CinmToSpatialPass, compute_groups, last_run_relief
from cimxdsl.transforms.pim.mapping import bands as bands_module
from cimxdsl.transforms.pim.mapping.bands import BAND, wavefront_order
from cimxdsl.transforms.pim.pipeline import PimPipelinePass
from tests.unit.backend.test_pim_cnn_ops import shufflenet_mobilenet
from tests.unit.helpers import apply, parse
from tests.unit.spatial_programs import ProgramBuilder, resnet_program
from tests.unit.transforms.test_packing import lower_checked
from tests.unit.transforms.test_spatial_mapping import two_layers

EXAMPLES = Path(__file__).parents[3] / "examples"


def conv_chain(layers: int = 5, size: int = 12) -> str:
    """`layers` 3×3 convolutions (4 channels, padding 1) with a ReLU each: a deep, narrow CNN."""
    b = ProgramBuilder((1, 4, size, size), 5)
    x = "%x"
    for _ in range(layers):
        x = b.relu(b.requantize(b.conv(x, 4, 3, pad=1), 3))
    return b.text(x)


def stages(pipeline: str, mapping: str, cores: int, rows: int = 1, packing: str = "im2col") -> list[str]:
    mapped = (
        [
            f"spatial-mapping{{strategy={mapping} cores={cores} crossbars-per-core=24 pipeline={pipeline} rows-per-band={rows}}}"
        ]
        if mapping != "none"
        else []
    )
    return [
        f"cinm-to-spatial{{xbar-size=8 crossbars-per-compute=24 packing={packing}}}",
        *mapped,
        f"spatial-to-pim{{cores={cores} crossbars-per-core=24 pipeline={pipeline} rows-per-band={rows}}}",
        "pim-bufferize",
        "pim-codegen",
    ]


def cores_compute_in_bands(artifacts) -> bool:
    """Some core sends or receives between two crossbar reads: it works on bands, not whole images."""
    for core in artifacts.cores:
        names = [i.name for i in core.instructions]
        reads = [i for i, n in enumerate(names) if n == "pim.mvmul"]
        if reads and any(n in ("pim.send", "pim.recv") for n in names[reads[0] : reads[-1]]):
            return True
    return False


@pytest.mark.parametrize("mapping", ["none", "greedy"])
@pytest.mark.parametrize("program", [resnet_program, partial(conv_chain, 3)], ids=["residual", "conv-chain"])
def test_row_pipeline_is_exact_at_every_level_with_and_without_replicas(program, mapping, tmp_path):
    x = np.random.default_rng(7).integers(-128, 128, (1, *((3, 8, 8) if program is resnet_program else (4, 12, 12))))
    golden, _, layer, _ = lower_checked(program(), x, stages("layer", mapping, 12), tmp_path / "layer")
    row_golden, _, row, module = lower_checked(program(), x, stages("row", mapping, 12), tmp_path / "row")
    np.testing.assert_array_equal(row_golden, golden)  # the validator's run of each equals the golden
    assert cores_compute_in_bands(row)
    if mapping == "none":  # one layer per core: whole images between transfers
        assert not cores_compute_in_bands(layer)
    summary = next(op.attributes["spat.pipeline"].data for op in module.walk() if "spat.pipeline" in op.attributes)
    assert summary.startswith("row pipeline:")
    if program is resnet_program:  # global pooling and the classifier need the whole image
        whole = re.search(r"; (\d+) computes on whole images", summary)
        assert whole and int(whole.group(1)) >= 2


def test_row_pipeline_is_exact_with_windows_of_two_pixels_per_read(tmp_path):
    """sdk packing (4 filters on 8 columns: two pixels per read) under replicas and bands: every
    level and the validator equal the integer program, with half the reads of im2col's."""
    x = np.random.default_rng(9).integers(-128, 128, (1, 4, 12, 12))
    runs = {}
    for packing in ("im2col", "sdk"):
        run = lower_checked(conv_chain(3), x, stages("row", "greedy", 12, packing=packing), tmp_path / packing)
        runs[packing] = run
    (golden, im2col_shapes, im2col, _), (sdk_golden, sdk_shapes, sdk, _) = runs["im2col"], runs["sdk"]
    np.testing.assert_array_equal(sdk_golden, golden)
    assert cores_compute_in_bands(sdk)
    # 4 channels x 9 positions = 36 rows: 5 crossbars of 8 per pixel; sdk: 3 x 4 x 4 = 48 rows, 6 per
    # 2 pixels; padding skips the same share of reads in both
    assert set(im2col_shapes) == {(8, 4), (4, 4)} and set(sdk_shapes) == {(8, 8)}
    assert sdk.instruction_counts()["mvmul"] < 0.7 * im2col.instruction_counts()["mvmul"]


@pytest.mark.parametrize("mapping", ["none", "greedy"])
def test_concat_and_residual_sum_with_row_pipeline_equal_the_integer_program(mapping, tmp_path):
    model = onnx.ModelProto.FromString(shufflenet_mobilenet().SerializeToString())
    rng = np.random.default_rng(3)
    calibration = rng.standard_normal((4, 4, 8, 8)).astype(np.float32)
    x = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    outputs = {}
    for pipeline in ("layer", "row"):
        compiled = cimxdsl.compile(
            model,
            target="pim",
            calibration=calibration,
            out_dir=tmp_path / pipeline,
            pipeline=pipeline,
            mapping=mapping,
        )
        compiled(x)
        outputs[pipeline] = compiled.last_result.outputs[0]
        np.testing.assert_array_equal(outputs[pipeline], compiled.golden(x)[0])
    bands = re.match(r"row pipeline: (\d+) bands", compiled.report()["pipeline"])
    assert bands and int(bands.group(1)) > 1
    np.testing.assert_array_equal(outputs["row"], outputs["layer"])


def test_band_slack_auto_keeps_the_program_of_least_estimated_latency(tmp_path):
    model = onnx.ModelProto.FromString(shufflenet_mobilenet().SerializeToString())
    rng = np.random.default_rng(5)
    calibration = rng.standard_normal((4, 4, 8, 8)).astype(np.float32)
    x = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    options = dict(target="pim", calibration=calibration, pipeline="row", mapping="greedy")
    searched = cimxdsl.compile(model, out_dir=tmp_path / "auto", band_slack="auto", **options)
    found = re.search(r"band slack ([0-9.]+) of (.*) \(estimated latency\)", searched.report()["pipeline"])
    assert found
    tried = {float(s): float(ms) for s, ms in re.findall(r"([0-9.]+): ([0-9.]+) ms", found.group(2))}
    assert sorted(tried) == [0.5, 1.0, 1.5] and tried[float(found.group(1))] == min(tried.values())
    # the program kept is the chosen slack's: the same estimate compiled with it directly, and exact
    chosen = cimxdsl.compile(model, out_dir=tmp_path / "chosen", band_slack=float(found.group(1)), **options)
    latency = searched.report()["performance"]["latency_ns"]
    assert latency == chosen.report()["performance"]["latency_ns"]
    assert f"{latency / 1e6:.3g}" == f"{min(tried.values()):.3g}"
    searched(x)
    np.testing.assert_array_equal(searched.last_result.outputs[0], searched.golden(x)[0])


def test_band_slack_auto_lowers_the_module_in_place_and_needs_a_chip():
    module = parse(conv_chain(2, 4))
    with pytest.raises(PassFailedException, match="band slack 'auto' needs a chip"):
        compile_to_pim(module, xbar_size=8, pipeline="row", band_slack="auto")
    report = compile_to_pim(module, xbar_size=8, pipeline="row", band_slack="auto", chip=chip_preset("pimcomp"))
    assert "band slack" in report["pipeline"]
    assert sum(isinstance(op, pim.CoreOp) for op in module.walk()) == report["cores_used"]


def test_row_pipeline_lowers_the_latency_of_a_deep_cnn(tmp_path):
    model = str(EXAMPLES / "depthwise_cnn.onnx")
    layer = compile_pim(model, out_dir=tmp_path / "layer").report_data
    row = compile_pim(model, out_dir=tmp_path / "row", pipeline="row").report_data
    assert layer["pipeline"] == "layer" and row["pipeline"].startswith("row pipeline")
    # One core per layer: layer by layer, each layer waits for the whole image; in bands the
    # layers overlap (with replicas, the layer pipeline's replicas of a layer work side by side,
    # `test_replicas_of_a_layer_work_side_by_side`).
    assert row["performance"]["latency_ns"] < 0.75 * layer["performance"]["latency_ns"]
    # the bands' extra vector ops and halo rows cost the busiest core a little
    assert row["performance"]["throughput"] >= 0.9 * layer["performance"]["throughput"]


def test_bad_pipeline_options_are_one_line_errors():
    model = str(EXAMPLES / "depthwise_cnn.onnx")
    with pytest.raises(CompileError, match="pipeline must be 'layer' or 'row', got 'rows'"):
        compile_pim(model, pipeline="rows")
    with pytest.raises(CompileError, match="rows_per_band must be a positive integer, got 0"):
        compile_pim(model, pipeline="row", rows_per_band=0)
    with pytest.raises(CompileError, match="band_slack must be a number >= 0 or 'auto', got -1"):
        compile_pim(model, pipeline="row", band_slack=-1)
    with pytest.raises(Exception, match=r"spatial-to-pim: band-slack must be >= 0, got -0.5$"):
        apply(parse(conv_chain(2, 4)), "cinm-to-spatial{xbar-size=8},spatial-to-pim{pipeline=row band-slack=-0.5}")


def test_the_band_slack_orders_the_bands_and_every_order_is_exact(tmp_path):
    # Depth first (a large slack) or earliest first (none): other instruction streams, the same
    # results at every level and in the validator.
    x = np.random.default_rng(3).integers(-128, 128, (1, 4, 8, 8))
    streams = []
    for slack in (0.0, 4.0):
        passes = stages("row", "greedy", 12)
        passes[2] = passes[2].replace("}", f" band-slack={slack}}}")
        _, _, artifacts, _ = lower_checked(conv_chain(3, 8), x, passes, tmp_path / str(slack))
        streams.append([[i.name for i in core.instructions] for core in artifacts.cores])
    assert streams[0] != streams[1]


def test_cim_compile_pipeline_row_is_exact_and_names_the_whole_image_layers(tmp_path, capsys):
    model = str(EXAMPLES / "depthwise_cnn.onnx")
    args = [model, "--target", "pim", "--random-inputs", "--pipeline", "row", "--rows-per-band", "3"]
    cim_compile([*args, "--band-slack", "auto", "-o", str(tmp_path)])
    out = capsys.readouterr().out
    assert "instruction-level execution equals the interpreted integer program" in out
    assert "pipeline: row pipeline:" in out and "bands of at least 3 rows" in out and "on whole images" in out
    assert re.search(r"band slack [0-9.]+ of 0.5: .* ms, 1: .* ms, 1.5: .* ms", out)
    with pytest.raises(SystemExit):
        cim_compile([*args, "--band-slack", "wide", "-o", str(tmp_path)])
    assert "argument --band-slack: expected a number or 'auto', got 'wide'" in capsys.readouterr().err


@pytest.mark.parametrize("mapping", ["none", "greedy"])
def test_last_convolution_before_global_pooling_is_cut_into_bands(mapping, tmp_path):
    """The global average pooling fused after the last convolution needs the whole image; the
    convolution before it still runs in bands (the pooling alone waits for all of its rows)."""
    layers, size = 3, 8
    b = ProgramBuilder((1, 4, size, size), 5)
    x = "%x"
    for _ in range(layers):
        x = b.relu(b.requantize(b.conv(x, 4, 3, pad=1), 3))
    text = b.text(b.global_avg_pool(x))
    x = np.random.default_rng(11).integers(-128, 128, (1, 4, size, size))
    _, _, _, module = lower_checked(text, x, stages("row", mapping, 12), tmp_path)  # exact at every level
    summary = next(op.attributes["spat.pipeline"].data for op in module.walk() if "spat.pipeline" in op.attributes)
    assert summary.startswith(f"row pipeline: {layers * size} bands of at least 1 row; 1 compute on whole images")


@pytest.mark.parametrize("pipeline", ["layer", "row"])
def test_last_convolution_before_global_pooling_is_replicated(pipeline, tmp_path):
    """With the global pooling apart, the convolution before it is a compute like any other: the
    greedy mapping gives the costliest one replicas, and the pooling receives its bands from several
    cores; the program stays exact at every level. (The row pipeline sets every such pooling apart;
    the layer pipeline the one after a convolution that, kept whole, bounds the stream.)"""
    size = 8
    b = ProgramBuilder((1, 4, size, size), 5)
    x = b.relu(b.requantize(b.conv("%x", 4, 3, pad=1), 3))
    x = b.relu(b.requantize(b.conv(x, 16, 3, pad=1), 3))  # the costliest layer, right before the pooling
    text = b.text(b.global_avg_pool(x))
    x = np.random.default_rng(12).integers(-128, 128, (1, 4, size, size))
    lower_checked(text, x, stages(pipeline, "greedy", 12), tmp_path)  # exact at every level
    module = parse(text)
    for stage in stages(pipeline, "greedy", 12)[:2]:  # up to the mapping
        apply(module, stage)
    (pooling,) = [c for c in module.walk() if isinstance(c, spat.ComputeOp) and any(
        isinstance(op, spat.GlobalAvgPoolOp) for op in c.body.walk())]  # fmt: skip
    assert not pooling.weights  # the convolution is not in it
    senders = {operand.owner.attributes["core"].value.data for operand in pooling.inputs}
    assert len(senders) >= 2


def pooled_stem(size: int = 16) -> str:
    """A stem: a 3×3 convolution with a 3×3 max pooling at stride 2 fused after it, then a 3×3
    convolution."""
    b = ProgramBuilder((1, 4, size, size), 5)
    x = b.max_pool(b.relu(b.requantize(b.conv("%x", 8, 3, pad=1), 3)), 3, 2, 1)
    return b.text(b.relu(b.requantize(b.conv(x, 8, 3, pad=1), 3)))


@pytest.mark.parametrize("chip", ["pimcomp", "pimsim-nn"])
def test_a_pooling_that_thickens_the_bands_before_it_is_set_apart(chip, tmp_path, monkeypatch):
    """A band of pooled rows needs the convolution rows its neighbours' windows share (a 3×3 pooling
    at stride 2 reads 3 rows for every 2), so the convolution fused with its pooling runs whole or
    in thick bands. The mapping sets the pooling apart, a compute of its own with no weights, and
    the convolution runs in one-row bands: more bands, exact at every level and through the
    validator, and a lower estimated latency than with the pooling left in."""
    x = np.random.default_rng(13).integers(-128, 128, (1, 4, 16, 16))
    found = {}
    for peeled in (False, True):
        with monkeypatch.context() as patched:
            if not peeled:
                patched.setattr(bands_module, "peel_pooling", lambda compute, rows: [compute])
            mapped = [
                s.replace("{", f"{{chip={chip} ", 1) if "mapping" in s else s for s in stages("row", "greedy", 12)
            ]
            _, _, artifacts, module = lower_checked(pooled_stem(), x, mapped, tmp_path / str(peeled))
        summary = next(op.attributes["spat.pipeline"].data for op in module.walk() if "spat.pipeline" in op.attributes)
        bands = re.match(r"row pipeline: (\d+) bands", summary)
        assert bands
        found[peeled] = (int(bands.group(1)), estimate(artifacts, chip_preset(chip)).latency_ns)
    assert found[True][0] >= found[False][0] + 8  # (the convolution's 16 rows in bands)
    assert found[True][1] < found[False][1]
    module = parse(pooled_stem())
    for stage in stages("row", "greedy", 12)[:2]:
        apply(module, stage)
    pools = [c for c in module.walk() if isinstance(c, spat.ComputeOp) and any(
        isinstance(op, spat.MaxPoolOp) for op in c.body.walk())]  # fmt: skip
    assert pools and not any(c.weights for c in pools)


def test_replicas_take_a_layers_bands_in_turn():
    """The replicas of a layer work down the image side by side: its bands go to them in turn, so a
    consumer's first band needs the first bands of every replica rather than the last band of a
    replica's block of rows (its halo row), which would come only when that replica is done."""
    module = parse(two_layers())
    apply(module, "cinm-to-spatial{xbar-size=16 crossbars-per-compute=9}")
    apply(module, "spatial-mapping{strategy=greedy cores=3 crossbars-per-core=9 pipeline=row}")
    bands = [op for op in module.walk() if isinstance(op, spat.ComputeOp) and len(op.weights) == 9]
    rows = [op.attributes[BAND].data[0].value.data for op in bands]  # pyright: ignore[reportAttributeAccessIssue]
    cores = [op.attributes["core"].value.data for op in bands]  # pyright: ignore[reportAttributeAccessIssue]
    assert rows == list(range(1, 9))  # eight bands of one row
    assert cores == [cores[0], cores[1]] * 4 and cores[0] != cores[1]


@dataclass(eq=False)
class Band:
    """A stand-in for a band in `wavefront_order`: its inputs' producers and its time."""

    cost: float
    after: tuple["Band", ...] = ()

    @property
    def inputs(self):
        return [SimpleNamespace(owner=p) for p in self.after]


def test_wavefront_order_lets_a_consumer_go_before_its_producer_moves_on(monkeypatch):
    # Core 0 computes p0 then p1; core 1 is busy with x until 1.2, then c0 reads p0. Blocking
    # transfers sit at the consumer's place: if p1 went first (it can start at 1.0, c0 only at
    # 1.2), c0 would wait for p1 too and start at 2. Within the slack the consumer goes first.
    monkeypatch.setattr(bands_module, "compute_cost", lambda band, *_: band.cost * 1e6)
    p0, p1, x = Band(1.0), Band(1.0), Band(1.2)
    c0 = Band(1.0, (p0,))
    c1 = Band(1.0, (p1,))
    order = wavefront_order([p0, p1, x, c0, c1], [0, 0, 1, 1, 1])  # pyright: ignore[reportArgumentType]
    assert order.index(c0) < order.index(p1)
    # Without slack the earliest goes first: p1, ready 0.2 before c0.
    order = wavefront_order([p0, p1, x, c0, c1], [0, 0, 1, 1, 1], 0.0)  # pyright: ignore[reportArgumentType]
    assert order.index(p1) < order.index(c0)
    # Bands of one layer ready together run top rows first.
    a = [Band(1.0) for _ in range(3)]
    assert wavefront_order(a, [0, 0, 0]) == a  # pyright: ignore[reportArgumentType]


def test_wavefront_order_does_not_starve_a_consumer_whose_producers_keep_working(monkeypatch):
    # A source on core 0 (bands of 1) feeds a layer whose replicas on cores 1 and 2 take its bands
    # in turn (bands of 2); c0 on core 3 reads the layer's first two bands, ready at 4. Each
    # further band of the layer is placed before it and holds a replica's core later, so timed by
    # its producers' cores c0 would always start after the next one and wait for the last band;
    # timed by when its inputs exist, it goes once the others' inputs are as late.
    monkeypatch.setattr(bands_module, "compute_cost", lambda band, *_: band.cost * 1e6)
    source = [Band(1.0) for _ in range(8)]
    layer = [Band(2.0, (s,)) for s in source]
    c0 = Band(1.0, (layer[0], layer[1]))
    computes = [*source, *layer, c0]
    cores = [0] * 8 + [1, 2] * 4 + [3]
    order = wavefront_order(computes, cores)  # pyright: ignore[reportArgumentType]
    assert order.index(c0) < order.index(layer[4])


def test_a_wide_layers_computes_hold_whole_output_tiles_and_work_side_by_side(tmp_path):
    """Two layers over one compute's crossbars each (16 → 16 channels in tiles of 8: 18 crossbars
    per output tile, 24 per compute). Cut in runs of 24 crossbars, a layer's second compute adds the
    first one's partial sums, so a band goes through four computes one after another; in whole
    output tiles (`whole-tiles`, the `row` pipeline's cut) a layer's computes read its input alone
    and work side by side: two computes deep, and a lower latency."""
    b = ProgramBuilder((1, 16, 4, 4), 2)
    text = b.text(b.relu(b.requantize(b.conv(b.relu(b.requantize(b.conv("%x", 16, 3, pad=1), 4)), 16, 3, pad=1), 4)))
    x = np.random.default_rng(5).integers(-128, 128, (1, 16, 4, 4))
    latency = {}
    for whole in (False, True):
        first = (
            f"cinm-to-spatial{{xbar-size=8 crossbars-per-compute=24 packing=im2col whole-tiles={str(whole).lower()}}}"
        )
        module = parse(text)
        apply(module, first)
        computes = [op for op in module.walk() if isinstance(op, spat.ComputeOp)]
        assert sorted(len(c.weights) for c in computes) == ([18] * 4 if whole else [12, 12, 24, 24])
        depth: dict[spat.ComputeOp, int] = {}
        for c in computes:
            depth[c] = 1 + max((depth[v.owner] for v in c.inputs if v.owner in depth), default=0)
        assert max(depth.values()) == (2 if whole else 4)
        _, _, artifacts, _ = lower_checked(text, x, [first, *stages("row", "none", 8)[1:]], tmp_path / str(whole))
        latency[whole] = estimate(artifacts, chip_preset("pimcomp")).latency_ns
    assert latency[True] < 0.8 * latency[False]


def test_an_output_tile_wider_than_a_compute_is_cut_into_near_equal_runs(tmp_path):
    """18 crossbars per output tile, 8 per compute: three computes of 6 each (runs of 8, 8 and 2
    would make the tile's chain wait on two full computes), the program exact at every level."""
    b = ProgramBuilder((1, 16, 8, 8), 2)
    text = b.text(b.relu(b.requantize(b.conv("%x", 16, 3, pad=1), 4)))
    x = np.random.default_rng(6).integers(-128, 128, (1, 16, 8, 8))
    first = "cinm-to-spatial{xbar-size=8 crossbars-per-compute=8 packing=im2col whole-tiles=true}"
    _, shapes, _, _ = lower_checked(text, x, [first, *stages("row", "none", 8)[1:]], tmp_path)
    module = parse(text)
    apply(module, first)
    computes = [op for op in module.walk() if isinstance(op, spat.ComputeOp)]
    assert [len(c.weights) for c in computes] == [6] * 6 and len(shapes) == 36


def test_a_wide_tiles_last_compute_takes_fewer_reads_where_vector_ops_are_slow(tmp_path):
    """The last compute of an output tile wider than a compute also receives and adds the others'
    partial sums and runs the requantization after them: on `pimcomp`, where a 512-element vector
    op takes about a third of a read, it takes about six fewer of a 512-column tile's 36 row
    slices; on pimsim-nn's example chip (5 µs reads) none fewer. The runs stay within a compute's
    crossbars, and the program is exact at every level."""
    pimcomp, example = (Latencies(chip_preset(c)) for c in ("pimcomp", "pimsim-nn"))
    assert last_run_relief(example, (0, 512), 3) < 1 < 4 < last_run_relief(pimcomp, (0, 512), 3)
    assert last_run_relief(pimcomp, (0, 512), 3) > last_run_relief(pimcomp, (0, 512), 2)
    assert last_run_relief(pimcomp, (0, 512), 2) > last_run_relief(pimcomp, (0, 128), 2)
    blocks = [SimpleNamespace(output_tile=0) for _ in range(36)]

    def sizes(relief: float) -> list[int]:
        return [len(g) for g in compute_groups(blocks, 16, True, lambda tile, runs: relief)]  # pyright: ignore

    assert sizes(0) == [12, 12, 12] and sizes(1.4) == [12, 12, 12] and sizes(6) == [14, 14, 8]
    assert sizes(100) == [15, 16, 5]  # at most a compute's 16, the last never empty
    b = ProgramBuilder((1, 64, 6, 6), 2)
    text = b.text(b.relu(b.requantize(b.conv(b.relu(b.requantize(b.conv("%x", 128, 3, pad=1), 4)), 16, 1), 4)))
    x = np.random.default_rng(8).integers(-128, 128, (1, 64, 6, 6))
    first = "cinm-to-spatial{xbar-size=32 crossbars-per-compute=32 array-group=4 packing=im2col whole-tiles=true}"
    passes = [first, "spatial-to-pim{cores=8 crossbars-per-core=32 pipeline=row}", "pim-bufferize", "pim-codegen"]
    lower_checked(text, x, passes, tmp_path)
    module = apply(parse(text), f"linalg-to-cinm,{first}")
    computes = [op for op in module.walk() if isinstance(op, spat.ComputeOp)]
    assert [len(c.weights) for c in computes][:3] == [7, 7, 4]  # 18 row slices of the first layer's tile


def test_the_row_pipeline_cuts_layers_in_whole_output_tiles():
    for pipelining, whole in (("layer", False), ("row", True)):
        steps = PimPipelinePass(pipelining=pipelining, mapping="greedy", cores=4, crossbars_per_core=8).steps()
        (cut,) = [s for s in steps if isinstance(s, CinmToSpatialPass)]
        assert cut.whole_tiles is whole


def shared_rows(passes: list[str]) -> list[str]:
    """`passes` (of `stages`) with the replicas of each layer sharing its bands' columns."""
    return [
        p.replace("pipeline=row", "pipeline=row share-rows=true", 1) if "spatial-mapping" in p else p for p in passes
    ]


def column_bands(module) -> list[list[tuple[int, int]]]:
    """Per layer (its weights) and band of output rows of a mapped function's computes: the
    widths and cores of the computes on that band."""
    found: dict[tuple, list[tuple[int, int]]] = {}
    for compute in module.walk():
        if isinstance(compute, spat.ComputeOp) and BAND in compute.attributes:
            (result,) = compute.outputs
            end = compute.attributes[BAND].data[0].value.data
            width, core = result.type.get_shape()[1], compute.attributes["core"].value.data
            found.setdefault((tuple(compute.weights), end), []).append((width, core))
    return list(found.values())


@pytest.mark.parametrize("packing", ["im2col", "sdk"])
@pytest.mark.parametrize("program", [resnet_program, partial(conv_chain, 3)], ids=["residual", "conv-chain"])
def test_replicas_sharing_rows_compute_their_columns_exactly_at_every_level(program, packing, tmp_path):
    """Each replica computes its own columns of every band, its windows cropped from the whole
    input rows by negative pads: every level and the validator equal the integer program."""
    size = 8 if program is resnet_program else 12
    x = np.random.default_rng(11).integers(-128, 128, (1, 3 if program is resnet_program else 4, size, size))
    # with 16 cores the layers after the first get replicas (the first, loading the host's input,
    # never shares its rows)
    passes = shared_rows(stages("row", "greedy", 16, packing=packing))
    _, _, artifacts, _ = lower_checked(program(), x, passes, tmp_path)
    assert cores_compute_in_bands(artifacts)
    mapped = apply(parse(program()), ",".join(["linalg-to-cinm", *passes[:2]]))
    shared = [parts for parts in column_bands(mapped) if len(parts) > 1]
    assert shared, "no layer's replicas share a band"
    for parts in shared:
        assert len({core for _, core in parts}) == len(parts)  # each part of a band on its own replica
    cropped = [op for op in mapped.walk() if isinstance(op, spat.ApplyFiltersOp) and min(op.pads.get_values()) < 0]
    assert cropped


def test_window_columns_crop_the_whole_rows_to_the_columns_of_the_band():
    """`window_columns`' pads give exactly columns [c0, c1) of the whole op's output, for kernels,
    strides, dilations and pads of every kind, convolution and both poolings, at the edges."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        kernel, stride, dilation = (int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        left, right = int(rng.integers(0, 3)), int(rng.integers(0, 3))
        width = int(rng.integers((kernel - 1) * dilation + 1, 11))
        geometry = FilterGeometry((1, kernel), (1, stride), (0, left, 0, right), (1, dilation))
        image = rng.integers(-9, 10, (1, width, 2))
        out_w = geometry.output_size(1, width)[1]
        c0 = int(rng.integers(0, out_w))
        c1 = int(rng.integers(c0 + 1, out_w + 1))
        left_band, right_band = bands_module.window_columns(geometry, (c0, c1), width)
        band = FilterGeometry((1, kernel), (1, stride), (0, left_band, 0, right_band), (1, dilation))
        assert band.output_size(1, width)[1] == c1 - c0
        weights = [rng.integers(-3, 4, (2, 3)) for _ in range(kernel)]
        whole = spatial_interpreter.apply_filters(image, weights, geometry, np.dtype(np.int64))
        part = spatial_interpreter.apply_filters(image, weights, band, np.dtype(np.int64))
        np.testing.assert_array_equal(part, whole[:, c0:c1])
        np.testing.assert_array_equal(
            spatial_interpreter.max_pool(image, band), spatial_interpreter.max_pool(image, geometry)[:, c0:c1]
        )
        for include in (False, True):
            with np.errstate(divide="ignore"):  # a window of padding only: 0 in both
                whole, part = (spatial_interpreter.avg_pool(image, g, include) for g in (geometry, band))
            np.testing.assert_array_equal(part, whole[:, c0:c1])


@pytest.mark.parametrize("packing, pixels", [("im2col", 1), ("sdk", 2)])
def test_shared_rows_are_dealt_in_whole_windows_and_even_out_over_the_replicas(packing, pixels):
    module = apply(parse(conv_chain(3, 12)), f"linalg-to-cinm,cinm-to-spatial{{xbar-size=8 packing={packing}}}")
    compute = [op for op in module.walk() if isinstance(op, spat.ComputeOp)][1]  # a layer reading a layer
    for replicas in (2, 3, 5, 6):
        areas, cores = bands_module.dealt_bands(compute, list(range(replicas)), 1, share_rows=True)
        per_core = dict.fromkeys(range(replicas), 0)
        for rows, run in itertools.groupby(zip(areas, cores, strict=True), key=lambda a: a[0][0]):
            run = list(run)
            columns = [area[1] for area, _ in run]
            assert columns[0][0] == 0 and columns[-1][1] == 12 and len(run) == min(replicas, 12 // pixels)
            assert all(a[1] == b[0] for a, b in itertools.pairwise(columns))  # the row's columns, tiled
            assert all(c0 % pixels == 0 and c1 % pixels == 0 for c0, c1 in columns)  # whole windows
            assert len({core for _, core in run}) == len(run)
            for (_, (c0, c1)), core in run:
                per_core[core] += c1 - c0
        # every replica takes each part of a row in turn: over whole turns of the 12 rows, the same columns
        widths = [c1 - c0 for (_, (c0, c1)) in areas]
        spread = max(per_core.values()) - min(per_core.values())
        assert spread <= (12 % replicas) * (max(widths) - min(widths))


def test_shared_rows_lower_the_estimated_latency_where_the_crossbar_reads_dominate():
    """Three 3×3 layers of 16 channels on 32-row crossbars, replicated on 16 cores: a layer's
    consumers wait for a part of each band rather than the whole, and the estimated latency drops
    by over 5 % (10 % when written). On thinner layers the extra transfers of whole input rows to
    every replica can cost more than that (`docs/performance.md`), so sharing is an option."""
    b = ProgramBuilder((1, 16, 16, 16), 5)
    x = "%x"
    for _ in range(3):
        x = b.relu(b.requantize(b.conv(x, 16, 3, pad=1), 3))
    latency = {}
    for share in (False, True):
        report = compile_to_pim(
            parse(b.text(x)),
            xbar_size=32,
            cores=16,
            crossbars_per_core=32,
            mapping="greedy",
            pipeline="row",
            share_rows=share,
            chip=chip_preset("pimsim-nn"),
        )
        latency[share] = report["performance"]["latency_ns"]
    assert latency[True] < 0.95 * latency[False]


def test_cim_compile_share_rows_is_exact_and_bad_uses_are_one_line_errors(tmp_path, capsys):
    model = str(tmp_path / "model.onnx")
    onnx.save(shufflenet_mobilenet(), model)
    args = [model, "--target", "pim", "--random-inputs", "--pipeline", "row", "--mapping", "greedy", "--share-rows"]
    cim_compile([*args, "-o", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert "instruction-level execution equals the interpreted integer program" in out
    shared = re.search(r"the replicas of (\d+) computes? share each band, each its own columns", out)
    assert shared and int(shared.group(1)) >= 1
    with pytest.raises(
        CompileError, match=r"share_rows needs pipeline='row' and replicas \(mapping 'greedy' or 'ga'\)"
    ):
        compile_pim(model, mapping="greedy", share_rows=True)
    with pytest.raises(CompileError, match="share_rows needs pipeline='row' and replicas"):
        compile_pim(model, pipeline="row", share_rows=True)
    with pytest.raises(CompileError, match="share_rows must be True or False, got 'yes'"):
        compile_pim(model, pipeline="row", mapping="greedy", share_rows="yes")
    with pytest.raises(Exception, match=r"spatial-mapping: share-rows needs pipeline=row \(the layer pipeline's"):
        apply(parse(conv_chain(2, 4)), "cinm-to-spatial{xbar-size=8},spatial-mapping{cores=4 share-rows=true}")


COLUMNS = """
func.func @main(%x: tensor<3x6x2xi32>) -> tensor<1x2x2xi32> {
  %r = spat.compute [] (%x) : [] (tensor<3x6x2xi32>) -> tensor<3x3x2xi32> {
  ^bb0(%in: tensor<3x6x2xi32>):
    %s = spat.vrelu %in : tensor<3x6x2xi32>
    %c = spat.extract_columns %s offset 2 : tensor<3x6x2xi32> -> tensor<3x3x2xi32>
    spat.yield %c : tensor<3x3x2xi32>
  }
  %y = spat.compute [] (%r, %x) : [] (tensor<3x3x2xi32>, tensor<3x6x2xi32>) -> tensor<1x2x2xi32> {
  ^bb0(%a: tensor<3x3x2xi32>, %b: tensor<3x6x2xi32>):
    %row = spat.extract_rows %a offset 1 : tensor<3x3x2xi32> -> tensor<1x3x2xi32>
    %p = spat.extract_columns %row offset 1 : tensor<1x3x2xi32> -> tensor<1x2x2xi32>
    %brow = spat.extract_rows %b offset 2 : tensor<3x6x2xi32> -> tensor<1x6x2xi32>
    %q = spat.extract_columns %brow offset 4 : tensor<1x6x2xi32> -> tensor<1x2x2xi32>
    %sum = spat.vadd %p, %q : tensor<1x2x2xi32>, tensor<1x2x2xi32>
    spat.yield %sum : tensor<1x2x2xi32>
  }
  func.return %y : tensor<1x2x2xi32>
}
"""


def test_extract_columns_is_a_copy_per_row_or_a_view_of_one_row_at_every_level(tmp_path):
    """`spat.extract_columns` of three rows (one copy each) and of one row (a view), on two cores:
    the interpreted program, every level and the validator give the NumPy slices."""
    x = np.random.default_rng(2).integers(-50, 50, (3, 6, 2))
    want = np.maximum(x, 0)[1:2, 3:5] + x[2:3, 4:6]
    passes = ["spatial-to-pim{cores=2 crossbars-per-core=4}", "pim-bufferize", "pim-codegen"]
    golden, _, artifacts, _ = lower_checked(COLUMNS, x, passes, tmp_path)
    np.testing.assert_array_equal(golden, want)
    moves = sum(i.name == "pim.lmv" for core in artifacts.cores for i in core.instructions)
    assert moves >= 3  # the three rows' columns copied; the one-row extracts move nothing


def narrowing_chain() -> str:
    """Five 3×3 layers on 16, 8, 8, 4 and 4 rows (two at stride 2), of 4 to 16 channels."""
    b = ProgramBuilder((1, 4, 16, 16), 5)
    x = "%x"
    for stride, filters in ((1, 4), (2, 8), (1, 8), (2, 16), (1, 16)):
        x = b.relu(b.requantize(b.conv(x, filters, 3, stride=stride, pad=1), 3))
    return b.text(x)


def replicas_by_rows(module) -> dict[int, int]:
    """The replicas (cores) of a mapped function's layers, summed per output row count."""
    cores: dict[tuple, set[int]] = {}
    rows: dict[tuple, int] = {}
    for compute in module.walk():
        if isinstance(compute, spat.ComputeOp) and compute.weights:
            key = tuple(compute.weights)
            cores.setdefault(key, set()).add(compute.attributes["core"].value.data)
            total = compute.attributes[BAND].data[1].value.data if BAND in compute.attributes else None
            rows[key] = total if total is not None else compute.outputs[0].type.get_shape()[0]
    summed: dict[int, int] = {}
    for key, on in cores.items():
        summed[rows[key]] = summed.get(rows[key], 0) + len(on)
    return summed


def test_row_weight_gives_the_layers_of_few_rows_more_replicas_and_stays_exact(tmp_path):
    """Weighted by (most rows ÷ their rows) ** 1, the 4-row layers count four times their time
    and get more replicas, the 16-row layer no more than unweighted; every level stays exact."""
    x = np.random.default_rng(3).integers(-128, 128, (1, 4, 16, 16))
    counts = {}
    for weight in (0.0, 1.0):
        passes = stages("row", "greedy", 12)
        passes[1] = passes[1].replace("pipeline=row", f"pipeline=row row-weight={weight}")
        mapped = apply(parse(narrowing_chain()), ",".join(["linalg-to-cinm", *passes[:2]]))
        counts[weight] = replicas_by_rows(mapped)
        if weight:
            summary = next(
                op.attributes["spat.mapping"].data for op in mapped.walk() if "spat.mapping" in op.attributes
            )
            assert "layers weighted by (most rows / their rows) ** 1" in summary
            lower_checked(narrowing_chain(), x, passes, tmp_path)
    assert counts[1.0][4] > counts[0.0][4]
    assert counts[1.0][16] <= counts[0.0][16]


def test_bad_row_weights_are_one_line_errors(tmp_path):
    model = str(tmp_path / "model.onnx")
    onnx.save(shufflenet_mobilenet(), model)
    with pytest.raises(CompileError, match="row_weight must be a number >= 0, got -1"):
        compile_pim(model, pipeline="row", mapping="greedy", row_weight=-1)
    with pytest.raises(CompileError, match=r"row_weight needs pipeline='row' and replicas"):
        compile_pim(model, mapping="greedy", row_weight=0.5)
    with pytest.raises(Exception, match="spatial-mapping: row-weight must be >= 0 and needs pipeline=row, got 0.5"):
        apply(parse(conv_chain(2, 4)), "cinm-to-spatial{xbar-size=8},spatial-mapping{cores=4 row-weight=0.5}")
