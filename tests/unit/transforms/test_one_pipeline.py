"""Each flow's pass list is defined once: `cim-opt -p memristor`, `cimxdsl.compile` and `cim-compile`
run the same passes, in the order the `memristor` pipeline documents, each through the pipeline's
`PassPipeline` (whose callback sees every pass)."""

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from xdsl.passes import PassPipeline

import cimxdsl
from cimxdsl.tools.cim_compile import main as cim_compile
from cimxdsl.tools.cim_opt import main as cim_opt
from cimxdsl.transforms.memristor.pipeline import MemristorPipelinePass
from cimxdsl.transforms.pim.pipeline import PimPipelinePass

PRODUCT = Path(__file__).resolve().parents[2] / "filecheck" / "tools" / "inputs" / "product.mlir"
DOCUMENTED = [
    "linalg-to-cinm",
    "cinm-isolate-compute",
    "tile",
    "cinm-to-cim",
    "schedule-list",
    "cim-to-memristor",
    "memristor-to-func",
    "cinm-to-linalg",
]
"""The `memristor` pipeline's passes as its docstring lists them, with the default strategy `list`."""


@pytest.fixture
def ran(monkeypatch) -> list[str]:
    """The names of the passes every `MemristorPipelinePass` runs, recorded by its pipeline's callback."""
    names: list[str] = []
    built = MemristorPipelinePass.pipeline

    def recording(self, callback=None) -> PassPipeline:
        inner = built(self, callback)

        def record(previous, module, following) -> None:
            if previous is not None:
                names.append(previous.name)
            if inner.callback is not None:
                inner.callback(previous, module, following)

        return PassPipeline(inner.passes, record)

    monkeypatch.setattr(MemristorPipelinePass, "pipeline", recording)
    return names


def matmul_model(path: Path) -> Path:
    weights = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="product")],
        "product",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(weights, "w")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_cim_opt_the_api_and_cim_compile_run_the_same_passes(ran, tmp_path, capsys):
    model = matmul_model(tmp_path / "product.onnx")
    cim_opt([str(PRODUCT), "-p", "memristor{device=ideal}"])
    from_cim_opt, ran[:] = list(ran), []
    cimxdsl.compile(model, device="ideal", calibration=np.ones((4, 2, 8), np.float32))
    from_api, ran[:] = list(ran), []
    np.save(tmp_path / "x.npy", np.ones((2, 8), np.float32))
    cim_compile([str(model), "--device", "ideal", "--input", str(tmp_path / "x.npy")])
    from_cim_compile = list(ran)
    capsys.readouterr()
    assert from_cim_opt == from_api == from_cim_compile == DOCUMENTED


def test_the_stages_of_a_compiled_model_are_the_pipelines():
    """`compile` keeps the IR after each of the pipeline's stages, after the import and quantization."""
    stages = [name for name, _ in MemristorPipelinePass().stages()]
    assert cimxdsl.api.STAGES == ("import", "quantize", *stages)
    assert stages == ["cinm", "tile", "cim", "schedule", "memristor", "func"]


def test_the_pim_pipeline_lists_its_passes_once():
    steps = PimPipelinePass(mapping="greedy").steps()
    names = ["linalg-to-cinm", "cinm-to-spatial", "spatial-mapping", "spatial-to-pim", "pim-bufferize", "pim-codegen"]
    assert [p.name for p in steps] == names
    assert [p.name for p in PimPipelinePass().steps()] == [n for n in names if n != "spatial-mapping"]


def test_compile_to_pim_runs_the_pim_pipeline(monkeypatch):
    """`compile_to_pim` (hence `cimxdsl.compile(target="pim")` and `cim-compile --target pim`) runs the
    `pim` pipeline's steps, up to `pim-bufferize` as passes and `pim-codegen` packed, with the
    pipeline's defaults; with a chip and no core count, the chip's cores."""
    from cimxdsl.device.chip import load_chip_config
    from cimxdsl.flow.pim import compile_to_pim
    from tests.unit.backend.test_pim_pipeline import conv_program
    from tests.unit.helpers import parse

    seen: list[tuple[PimPipelinePass, list[str]]] = []
    built = PimPipelinePass.steps

    def recording(self):
        steps = built(self)
        seen.append((self, [p.name for p in steps]))
        return steps

    monkeypatch.setattr(PimPipelinePass, "steps", recording)
    report = compile_to_pim(parse(conv_program(size=4)), xbar_size=3, chip=load_chip_config("pimcomp"))
    ((pipeline, names),) = seen
    assert names == [p.name for p in built(PimPipelinePass())] and names[-2:] == ["pim-bufferize", "pim-codegen"]
    assert pipeline.packing == PimPipelinePass().packing == report["packing"] == "im2col"
    assert (report["cores"], report["crossbars_per_core"]) == (64, 64) and not report["cores_as_needed"]
    assert set(report["compile_time_s"]) >= {*names, "total"}
