"""`cinm-to-spatial{array-group=N}`: an image's output-channel tiles over up to N crossbars side by
side, each row slice of a tile one array group that one `mvmul` reads. Every level and the
validator equal the integer program; the crossbars, their energy and the chip's capacity are
counted per crossbar, the reads per group."""

import json

import numpy as np
import onnx
import pytest
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import PassFailedException

from cimxdsl.api import CompileError, compile_pim
from cimxdsl.backend import ArtifactError, read_artifacts
from cimxdsl.backend.performance import estimate
from cimxdsl.device.chip import chip_preset
from cimxdsl.transforms.pim.spatial_mapping import fitting_cores
from cimxdsl.universe import get_all_passes
from tests.unit.backend.test_pim_cnn_ops import shufflenet_mobilenet
from tests.unit.helpers import parse
from tests.unit.spatial_programs import ProgramBuilder, resnet_program
from tests.unit.transforms.test_packing import lower_checked


def stages(group: int, packing: str = "im2col", mapping: str = "", cores: int = 12) -> list[str]:
    return [
        f"cinm-to-spatial{{xbar-size=8 crossbars-per-compute=24 packing={packing} array-group={group}}}",
        *([mapping] if mapping else []),
        f"spatial-to-pim{{cores={cores} crossbars-per-core=24{' pipeline=row' if 'row' in mapping else ''}}}",
        "pim-bufferize",
        "pim-codegen",
    ]


@pytest.mark.parametrize("packing", ["im2col", "sdk"])
def test_a_layers_output_tiles_over_several_crossbars_are_read_by_one_mvmul(packing, tmp_path):
    """A 6 -> 20 channel 3x3 convolution without padding on 7x7 (5x5 outputs): its 54 patch rows
    take 7 row slices of 8-row crossbars, its 20 outputs 3 crossbars of 8 columns (8, 8, 4), 21
    crossbars in all. One crossbar per group reads 21 per pixel; groups of 2 (tiles of 16 and 4)
    read 14; groups of 3 (one tile of 20) read 7. The crossbars, and the crossbar energy of a pixel,
    stay those of 21 crossbars."""
    b = ProgramBuilder((1, 6, 7, 7), 5)
    text = b.text(b.relu(b.conv("%x", 20, 3)))
    x = np.random.default_rng(3).integers(-128, 128, (1, 6, 7, 7))
    chip = chip_preset("pimcomp")
    runs = {}
    for group in (1, 2, 3):
        golden, _, artifacts, _ = lower_checked(text, x, stages(group, packing), tmp_path / str(group))
        assert np.any(golden != 0)
        widths = [g.crossbars for core in artifacts.cores for g in core.groups]
        config = json.loads((tmp_path / str(group) / "config.json").read_text())
        assert sorted(w for core in config["array_group_map"].values() for w in core) == sorted(widths)
        runs[group] = widths, artifacts.instruction_counts()["mvmul"], estimate(artifacts, chip)
    assert sorted(runs[1][0]) == [1] * 21
    assert sorted(runs[2][0]) == [1] * 7 + [2] * 7
    assert sorted(runs[3][0]) == [3] * 7
    assert [runs[g][1] for g in (1, 2, 3)] == [25 * 21, 25 * 14, 25 * 7]
    energies = [runs[g][2].energy_pj["crossbar"] for g in (1, 2, 3)]
    assert energies == pytest.approx([energies[0]] * 3, rel=1e-9)
    assert runs[3][2].latency_ns < runs[2][2].latency_ns < runs[1][2].latency_ns


def test_array_groups_under_the_row_pipeline_and_replicas_stay_exact_and_within_the_cores(tmp_path):
    x = np.random.default_rng(11).integers(-128, 128, (1, 3, 8, 8))
    mapping = "spatial-mapping{strategy=greedy cores=12 crossbars-per-core=24 pipeline=row}"
    golden, _, artifacts, _ = lower_checked(resnet_program(width=12), x, stages(2, mapping=mapping), tmp_path)
    assert golden.shape == (1, 5) and np.any(golden != 0)
    held = [sum(g.crossbars for g in core.groups) for core in artifacts.cores]
    assert max(held) <= 24 and any(g.crossbars == 2 for core in artifacts.cores for g in core.groups)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("packing=kernel array-group=2", "array-group > 1 needs packing im2col or sdk"),
        ("packing=im2col array-group=5", "array-group must be from 1 to crossbars-per-compute (4), got 5"),
        ("packing=im2col array-group=0", "array-group must be from 1 to crossbars-per-compute (4), got 0"),
    ],
)
def test_bad_array_groups_are_one_line_errors(options, message):
    b = ProgramBuilder((1, 3, 4, 4), 1)
    text = b.text(b.conv("%x", 4, 3))
    with pytest.raises(PassFailedException) as error:
        spec = f"cinm-to-spatial{{xbar-size=8 crossbars-per-compute=4 {options}}}"
        PassPipeline.parse_spec(get_all_passes(), spec).apply(None, parse(text))  # pyright: ignore
    assert message in str(error.value) and "\n" not in str(error.value)


def test_compile_pim_refuses_an_array_group_below_one():
    model = onnx.ModelProto.FromString(shufflenet_mobilenet().SerializeToString())
    with pytest.raises(CompileError, match="array_group must be a positive integer, got 0"):
        compile_pim(model, array_group=0)


def test_a_crossbar_file_that_disagrees_with_the_array_group_map_is_refused(tmp_path):
    b = ProgramBuilder((1, 6, 5, 5), 2)
    x = np.random.default_rng(1).integers(-128, 128, (1, 6, 5, 5))
    lower_checked(b.text(b.conv("%x", 12, 3)), x, stages(2), tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    core = next(c for c, widths in config["array_group_map"].items() if 2 in widths)
    config["array_group_map"][core] = [1] * len(config["array_group_map"][core])
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ArtifactError, match=r"array group \d+: 'crossbars' is 2, but array_group_map.core\d+ gives 1"):
        read_artifacts(tmp_path)


def test_the_chips_cores_are_taken_only_when_the_computes_pack_onto_them():
    """Three computes of 40 crossbars hold 120 of two 64-crossbar cores' 128, but no two share a
    core: the program takes the cores it needs (as wide array groups make likelier)."""
    assert fitting_cores((40, 40, 40), 2, 64) == 0
    assert fitting_cores((40, 24, 40, 24), 2, 64) == 2
    assert fitting_cores((40, 40, 40), 3, 64) == 3


def test_sdk_windows_span_an_array_groups_crossbars(tmp_path):
    """A 4 -> 4 channel 3x3 convolution (padding 1, 8x8) on crossbars of 8 rows and columns in
    groups of 4: a window of 8 pixels, a whole row, has 8 x 4 = 32 columns over four crossbars.
    Its 3 x 10 kernel positions less the two columns of padding either side are 96 patch rows, 12
    row slices of one group each: a row reads 12 groups, the top and bottom rows 8 (their padding
    row skipped): 88 `mvmul`s. Every level and the validator equal the integer program."""
    b = ProgramBuilder((1, 4, 8, 8), 6)
    text = b.text(b.relu(b.conv("%x", 4, 3, pad=1)))
    x = np.random.default_rng(8).integers(-128, 128, (1, 4, 8, 8))
    first = "cinm-to-spatial{xbar-size=8 crossbars-per-compute=24 packing=sdk array-group=4 chip=pimsim-nn}"
    golden, shapes, artifacts, _ = lower_checked(text, x, [first, *stages(4)[1:]], tmp_path)
    assert np.any(golden != 0)
    assert set(shapes) == {(8, 32)} and len(shapes) == 12
    assert {g.crossbars for core in artifacts.cores for g in core.groups} == {4}
    assert artifacts.instruction_counts()["mvmul"] == 6 * 12 + 2 * 8
