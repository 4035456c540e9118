"""`spatial-mapping`: replicas of the layers that bound the pipeline, on their own cores and their
own bands of output rows, keep the result exact, split the work, and stay within the chip."""

import re
from pathlib import Path

import numpy as np
import onnx
import pytest

from cimxdsl.api import compile_pim
from cimxdsl.backend import read_artifacts, write_program
from cimxdsl.backend.performance import estimate
from cimxdsl.device.chip import chip_preset
from cimxdsl.device.latency import Latencies
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.crossbar_ops import FilterGeometry
from cimxdsl.dialects.pim import InstructionStream, MvmulOp
from cimxdsl.dialects.utils import shape_of
from cimxdsl.tools.cim_compile import main as cim_compile
from cimxdsl.transforms.pim.mapping import MappingProblem, compute_cost, genetic_mapping, greedy_mapping, place
from cimxdsl.transforms.pim.mapping.bands import band_bounds, window_input_rows
from cimxdsl.transforms.pim.mapping.problem import crossbar_reads
from cimxdsl.transforms.pim.value_bounds import compute_value_bounds
from tests.unit.backend.test_pim_cnn_ops import shufflenet_mobilenet
from tests.unit.helpers import apply, parse
from tests.unit.spatial_programs import ProgramBuilder, resnet_program
from tests.unit.transforms.test_packing import lower_checked


def two_layers() -> str:
    """A dominant 3×3 convolution (4 -> 8 channels, 8×8, 9 crossbars of 16) feeding a 1×1 one."""
    b = ProgramBuilder((1, 4, 8, 8), 3)
    return b.text(b.conv(b.relu(b.conv("%x", 8, 3, pad=1)), 4, 1))


def compile_mapped(text, x, strategy, cores, per_core, xbar, out_dir, packing="kernel", budget=5.0):
    """The module and validated artifacts of the flow with `strategy`, every level checked."""
    stages = [
        f"cinm-to-spatial{{xbar-size={xbar} crossbars-per-compute={per_core} packing={packing}}}",
        f"spatial-mapping{{strategy={strategy} cores={cores} crossbars-per-core={per_core} budget={budget}}}",
        f"spatial-to-pim{{cores={cores} crossbars-per-core={per_core}}}",
        "pim-bufferize",
        "pim-codegen",
    ]
    _, _, artifacts, module = lower_checked(text, x, stages, out_dir)
    return module, artifacts


def mvmuls(artifacts) -> list[int]:
    return sorted((sum(i.name == "pim.mvmul" for i in core.instructions) for core in artifacts.cores), reverse=True)


def test_doubling_the_dominant_layer_halves_its_cores_crossbar_reads(tmp_path):
    x = np.random.default_rng(1).integers(-128, 128, (1, 4, 8, 8))
    # 3 cores of 9 crossbars: room for a second copy of the 3×3 layer (9 + 9 + 1), not a third.
    _, alone = compile_mapped(two_layers(), x, "none", 3, 9, 16, tmp_path / "none")
    _, doubled = compile_mapped(two_layers(), x, "greedy", 3, 9, 16, tmp_path / "greedy")
    # Unreplicated: (8·3 - 2)² = 484 reads of the 3×3 layer (padding skipped) on one core, 64 of
    # the 1×1 one. Replicated, each copy does the 4 rows of its band: (4·3 - 1)·22 = 242.
    assert mvmuls(alone) == [484, 64]
    assert mvmuls(doubled) == [242, 242, 64]
    assert sum(len(core.groups) for core in doubled.cores) == 19


def test_replicas_stay_within_the_crossbar_budget_and_on_distinct_cores(tmp_path):
    x = np.random.default_rng(2).integers(-128, 128, (1, 3, 8, 8))
    module, artifacts = compile_mapped(resnet_program(), x, "greedy", 12, 24, 8, tmp_path)
    assert all(len(core.groups) <= 24 for core in artifacts.cores) and len(artifacts.cores) <= 12
    summary = next(op.attributes["spat.mapping"].data for op in module.walk() if "spat.mapping" in op.attributes)
    busiest, alone = (float(t) for t in re.findall(r"([0-9.]+) ms", summary))
    assert "computes replicated" in summary and "on chip 'pimcomp'" in summary and busiest < alone / 2


@pytest.mark.parametrize("packing", ["kernel", "im2col"])
def test_genetic_search_validates_exactly(packing, tmp_path):
    x = np.random.default_rng(3).integers(-128, 128, (1, 3, 8, 8))
    compile_mapped(resnet_program(), x, "ga", 8, 24, 8, tmp_path, packing=packing)


def test_genetic_search_past_its_budget_returns_the_best_so_far_and_says_so():
    problem = MappingProblem((900, 100, 50), (4, 2, 1), (8, 8, 8), cores=4, per_core=8)
    mapping = genetic_mapping(problem, budget_s=0.0)
    assert any("stopped at its time budget" in note for note in mapping.notes)
    assert mapping.bottleneck <= greedy_mapping(problem).bottleneck
    finished = genetic_mapping(problem, budget_s=60.0)
    assert not finished.notes and finished.bottleneck <= mapping.bottleneck


def test_greedy_balances_and_place_respects_cores_and_budget():
    # 32 crossbars: the 900-cost compute (4 crossbars) gets the room; its replicas on distinct cores.
    problem = MappingProblem((900, 100, 50), (4, 2, 1), (8, 8, 8), cores=4, per_core=8)
    mapping = greedy_mapping(problem)
    assert sum(w * r for w, r in zip(problem.crossbars, mapping.replicas)) <= 32
    assert mapping.replicas[0] > 1 and len(set(mapping.cores[0])) == mapping.replicas[0]
    assert mapping.bottleneck < 900
    assert place(problem, [5, 1, 1]) is None  # 5 copies of 4 crossbars need 5 distinct cores of 4
    assert place(problem, [9, 1, 1]) is None  # over the budget
    # The genetic search's NumPy genes come back as Python ints (they size IR types).
    assert all(type(r) is int for r in place(problem, np.array([2, 1, 1])).replicas)


def test_bands_and_their_window_rows():
    assert band_bounds(7, 3) == [(0, 2), (2, 4), (4, 7)]
    geometry = FilterGeometry((3, 3), (2, 2), (1, 1, 1, 1))
    # Output rows 0..1 of a stride-2 3×3 window with padding 1 read input rows -1..3: rows 0..3 and
    # one row of top padding; output rows 2..3 read rows 3..7 of an 8-row image, no padding.
    assert window_input_rows(geometry, (0, 2), 8) == ((0, 4), 1, 0)
    assert window_input_rows(geometry, (2, 4), 8) == ((3, 8), 0, 0)
    assert window_input_rows(geometry, (3, 4), 7) == ((5, 7), 0, 1)


def test_replicated_compute_reads_its_band_with_extract_rows():
    module = parse(two_layers())
    apply(module, "cinm-to-spatial{xbar-size=16 crossbars-per-compute=9}")
    apply(module, "spatial-mapping{strategy=greedy cores=3 crossbars-per-core=9}")
    computes = [op for op in module.walk() if isinstance(op, spat.ComputeOp)]
    assert len(computes) == 3 and sorted(c.attributes["core"].value.data for c in computes) == [0, 1, 2]
    rows = [op for op in module.walk() if isinstance(op, spat.ExtractRowsOp)]
    assert [(r.offset.value.data, r.result.type.get_shape()[0]) for r in rows] == [(0, 5), (3, 5)]
    concat = [op for op in module.walk() if isinstance(op, spat.ConcatOp) and op.axis.value.data == 0]
    assert len(concat) == 1  # the 1×1 layer joins the two bands


def test_cim_compile_rejects_a_negative_mapping_budget(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(shufflenet_mobilenet(), str(path))
    with pytest.raises(SystemExit) as exit_info:
        cim_compile([str(path), "--target", "pim", "--mapping", "ga", "--mapping-budget", "-1", "--random-inputs"])
    assert exit_info.value.code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "budget" in err[0]


def test_compile_pim_with_mapping_and_im2col_stays_exact(tmp_path):
    model = onnx.ModelProto.FromString(shufflenet_mobilenet().SerializeToString())
    calibration = np.random.default_rng(3).standard_normal((4, 4, 8, 8)).astype(np.float32)
    compiled = compile_pim(
        model, calibration=calibration, cores=6, out_dir=tmp_path, packing="im2col", mapping="greedy"
    )
    x = np.random.default_rng(9).standard_normal((1, 4, 8, 8)).astype(np.float32)
    compiled(x)
    np.testing.assert_array_equal(compiled.last_result.outputs[0], compiled.golden(x)[0])
    report = compiled.report()
    assert report["mapping"].startswith("greedy mapping on 6 cores") and report["cores_used"] <= 6


@pytest.mark.parametrize("packing", ["kernel", "im2col", "sdk"])
def test_the_mapping_cost_is_the_performance_models_time(packing, tmp_path):
    """The mapping's cost of the computes on each core and the performance model's busy time of the
    cores name the same busiest core (the layer the mapping replicates) and agree on its time (the
    cost counts every input as a transfer, so it errs high on small cores and images)."""
    chip = chip_preset("pimcomp")
    module = parse(resnet_program())
    apply(module, f"cinm-to-spatial{{xbar-size=8 crossbars-per-compute=24 packing={packing}}}")
    apply(module, "spatial-mapping{strategy=none cores=12 crossbars-per-core=24}")
    computes = [op for op in module.walk() if isinstance(op, spat.ComputeOp)]
    placed = [c.attributes["core"].value.data for c in computes]
    order = sorted(set(placed), key=placed.index)  # spatial-to-pim numbers the cores in this order
    cost = [0.0] * len(order)
    for compute, core in zip(computes, placed):
        cost[order.index(core)] += compute_cost(compute, latencies=Latencies(chip))
    for stage in ("spatial-to-pim{cores=12 crossbars-per-core=24}", "pim-bufferize", "pim-codegen"):
        apply(module, stage)
    write_program(module, tmp_path)
    busy = estimate(read_artifacts(tmp_path), chip).core_busy_ns
    slowest = int(np.argmax(busy))
    assert np.argmax(cost) == slowest and cost[slowest] == pytest.approx(busy[slowest], rel=0.25)


def test_greedy_replicates_the_slowest_compute_by_its_band_costs():
    # Compute 0 is the slowest, and its bands carry a halo: 3 replicas cost 400 each, more than the
    # 350 of compute 1, so it needs 4 (cost 900 ÷ 3 = 300 is what a halo-free rule would say of 3).
    band = {1: 900.0, 2: 600.0, 3: 400.0, 4: 320.0}
    problem = MappingProblem(
        (900, 350, 50),
        (1, 1, 1),
        (4, 1, 1),
        cores=6,
        per_core=1,
        replica_cost=lambda i, r: band[r] if i == 0 else (350.0, 50.0)[i - 1],
    )
    mapping = greedy_mapping(problem)
    assert mapping.replicas == [4, 1, 1] and mapping.bottleneck == 350.0


def test_replicas_are_placed_in_program_order():
    # A core holds consecutive computes only (a pipeline stage): an early and a late layer on one
    # core would keep it from starting the next image before this one's late layer is done. The
    # least stage time is 10: computes 0 and 1 (4 + 6) share core 0, compute 2's replicas (5 each)
    # take cores 1 and 2 and compute 3 (2) joins the fuller of those, never core 0.
    problem = MappingProblem((4, 6, 10, 2), (1, 1, 1, 1), (1, 1, 2, 1), cores=3, per_core=4)
    mapping = place(problem, [1, 1, 2, 1])
    assert mapping is not None
    assert mapping.cores == [[0], [0], [1, 2], [1]] and mapping.bottleneck == 10.0
    for core in range(3):  # each core a run of consecutive computes
        held = [i for i, placed in enumerate(mapping.cores) if core in placed]
        assert held == list(range(held[0], held[-1] + 1))
    one_each = MappingProblem((4, 6, 10, 2), (1, 1, 1, 1), (1, 1, 2, 1), cores=4, per_core=1)
    assert place(one_each, [1, 1, 2, 1]) is None  # 5 replicas of one crossbar on 4 cores of 1


def test_placement_spreads_consecutive_layers_over_the_idle_cores():
    # Packed up to the busiest replica's load (10), computes 1-4 would share one core, which runs
    # them one after another (a row pipeline could not overlap them, and a layer pipeline's stage
    # would hold four layers); spread, each takes a core of its own (the chip has five), in program
    # order, and the busiest core is still the largest replica's. On two cores they must share.
    costs, crossbars, splits = (10, 2, 2, 2, 2), (1,) * 5, (1,) * 5
    spread = place(MappingProblem(costs, crossbars, splits, cores=5, per_core=8), [1] * 5)
    assert spread is not None
    assert spread.cores == [[0], [1], [2], [3], [4]] and spread.bottleneck == 10.0
    tight = place(MappingProblem(costs, crossbars, splits, cores=2, per_core=8), [1] * 5)
    assert tight is not None and tight.cores == [[0], [1], [1], [1], [1]] and tight.bottleneck == 10.0


@pytest.mark.parametrize("passes", ["spatial-mapping{chip=pimcom}", "cinm-to-spatial{chip=pimcom}", "pim{chip=pimcom}"])
def test_an_unknown_chip_is_one_line_naming_the_pass(passes, tmp_path, capsys):
    from cimxdsl.tools.cim_opt import main as cim_opt

    path = tmp_path / "empty.mlir"
    path.write_text("builtin.module {}\n")
    with pytest.raises(SystemExit) as exit_info:
        cim_opt([str(path), "-p", passes])
    assert exit_info.value.code != 0
    err = capsys.readouterr().err.strip().splitlines()
    name = passes.split("{")[0]
    assert len(err) == 1 and err[0].startswith(f"{name}: chip: unknown preset 'pimcom' (did you mean 'pimcomp'?)")


@pytest.mark.parametrize("packing", ["kernel", "im2col"])
def test_the_mapping_counts_the_mvmuls_and_input_widths_of_the_code(packing, tmp_path):
    """The mapping's cost reads each crossbar as `pim-codegen` does: one `mvmul` per output pixel and
    crossbar whose inputs are not all padding (`crossbar_reads` counts exactly the core's `mvmul`s),
    and, given the bounds of the values, 8-bit crossbar inputs where they fit (the int8 codes of
    the integer program), so that on the `pimsim-nn` chip (a crossbar read of 32 input bits takes
    four times one of 8) each core's cost is its busy time."""
    chip = chip_preset("pimsim-nn")
    module = parse(resnet_program(size=16))
    apply(module, f"cinm-to-spatial{{xbar-size=8 crossbars-per-compute=24 packing={packing}}}")
    apply(module, "spatial-mapping{strategy=none cores=12 crossbars-per-core=24}")
    computes = [op for op in module.walk() if isinstance(op, spat.ComputeOp)]
    bounds = compute_value_bounds(computes)
    placed = [c.attributes["core"].value.data for c in computes]
    order = sorted(set(placed), key=placed.index)  # spatial-to-pim numbers the cores in this order
    reads, cost = [0] * len(order), [0.0] * len(order)
    for compute, core in zip(computes, placed):
        rows = [shape_of(w)[0] for w in compute.weights]
        filters = [op for op in compute.body.block.ops if isinstance(op, spat.ApplyFiltersOp)]
        reads[order.index(core)] += sum(crossbar_reads(op, (0, shape_of(op.result)[0]), None, rows) for op in filters)
        cost[order.index(core)] += compute_cost(compute, latencies=Latencies(chip), bounds=bounds)
    for stage in ("spatial-to-pim{cores=12 crossbars-per-core=24}", "pim-bufferize", "pim-codegen"):
        apply(module, stage)
    write_program(module, tmp_path)
    artifacts = read_artifacts(tmp_path)
    mvmuls = [
        int(np.sum(InstructionStream.from_ops(core.instructions).opcodes == MvmulOp.OPCODE)) for core in artifacts.cores
    ]
    assert reads == mvmuls and sum(mvmuls) > 0
    busy = estimate(artifacts, chip).core_busy_ns
    slowest = int(np.argmax(busy))
    assert np.argmax(cost) == slowest and cost[slowest] == pytest.approx(busy[slowest], rel=0.1)


def test_replicas_of_a_layer_work_side_by_side(tmp_path):
    """In the layer pipeline the inputs of a stage's computes come before their bodies on every
    core, so a replica sends the rows its neighbours' windows need before computing its own band,
    and the replicas of a layer (and a core holding the end of one layer and the start of the next)
    work side by side: images stream at the busiest core's pace (were the inputs of each compute
    just before its body, the replicas would wait for one another's bands: 40 % of that pace)."""
    model = str(Path(__file__).parents[3] / "examples" / "depthwise_cnn.onnx")
    report = compile_pim(model, out_dir=tmp_path, mapping="greedy").report_data
    performance = report["performance"]
    assert "replicated" in report["mapping"]
    assert performance["throughput"] == pytest.approx(performance["throughput_bound"], rel=1e-3)


def test_a_band_receives_only_the_rows_its_windows_read(tmp_path):
    """An unreplicated layer sends each replica of the next only the rows its band's windows read
    (cut on the sender), not the whole image, and the results stay exact."""
    b = ProgramBuilder((1, 4, 8, 8), 3)
    text = b.text(b.conv(b.relu(b.conv(b.relu(b.conv("%x", 4, 1)), 8, 3, pad=1)), 4, 1))
    x = np.random.default_rng(4).integers(-128, 128, (1, 4, 8, 8))
    # 4 cores of 9 crossbars: the 1×1 layers (1 crossbar) alone, the 3×3 one (9) twice.
    _, artifacts = compile_mapped(text, x, "greedy", 4, 9, 16, tmp_path)
    assert mvmuls(artifacts)[:2] == [242, 242]
    sent = [sum(i.size.value.data for i in core.instructions if i.name == "pim.send") for core in artifacts.cores]
    # The bands' rows 0-3 and 4-7 read input rows 0-4 and 3-7: 10 rows of 8 pixels of 4 int32
    # channels (the whole image to each: 16 rows).
    assert sent[0] == 10 * 8 * 4 * 4
