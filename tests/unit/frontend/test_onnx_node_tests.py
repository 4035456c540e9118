"""ONNX's own node tests, for every op type the importer supports and for every other op whose
test graph (a function expansion) uses only supported ops, through `cimxdsl.onnx_backend` (import,
exact mode, the whole memristor flow, the ideal device)."""

import re

import numpy as np
import onnx.backend.test
import pytest
from onnx.backend.test.case.node import collect_testcases

from cimxdsl.api import CompileError
from cimxdsl.frontend.attributes import OnnxImportError
from cimxdsl.frontend.folding import SHAPE_ONLY
from cimxdsl.frontend.ops import importer
from cimxdsl.onnx_backend import CimBackend

SUPPORTED = (
    "matmul|gemm|conv|relu|leakyrelu|clip|sigmoid|tanh|add|sub|mul|div|sum|maxpool|averagepool|lppool|"
    "globalaveragepool|globalmaxpool|batchnorm|concat|reshape|flatten|transpose|squeeze|unsqueeze|softmax|dropout|"
    "identity|lrn|pad|constant|shape|quantizelinear|dequantizelinear|qlinearconv|qlinearmatmul|matmulinteger|"
    "convinteger|gather|layer_normalization|gelu|erf|exp|sqrt|pow|reciprocal|neg|reduce_mean|reduce_sum|"
    "reduce_max|where|equal|expand|cast|castlike|slice|split|trilu|tril|triu|range|constantofshape|less|greater|max|min|"
    "size|basic_conv|training_dropout|gather_elements|gathernd|isnan|isinf|and\\dd|and_bcast|or\\dd|or_bcast|"
    "xor\\dd|xor_bcast|not"
)
CASES = collect_testcases(None)
COMPOSED = [
    case.name for case in CASES if {n.op_type for n in case.model.graph.node} <= {*importer, *SHAPE_ONLY, "Constant"}
]
"""Tests whose graphs use only supported ops (the function expansions of Elu, RMSNormalization, …)."""

REJECTED = {
    r"identity_(opt|sequence)": "optional and sequence types",
    r"cast(like)?_.*(BFLOAT16|FLOAT8|FLOAT4|INT4|INT2|UINT4|UINT2|E8M0)": "8-, 4- and 2-bit numbers and bfloat16",
    r"(add|sub|mul|div|equal|less|greater)_(u?int16|uint32|uint64|string)": "16-bit and unsigned 32/64-bit integers, strings",
    r"range_.*expanded": "function-expanded variants that use other ops (Ceil, Loop)",
    r"training_mode": "batch normalization in training mode",
    r"quantizelinear_(blocked|e4m3|e5m2|float4|u?int(2|4|16))": "blocked and non-8-bit quantization",
    r"reduce_sum_square(?!.*_expanded)|split_to_sequence": "other ops (ReduceSumSquare, SplitToSequence)",
    r"(max|min)_u?int(16|32|64)": "integer arithmetic (models compute in float)",
    r"pow_types_(int|float32_uint)": "integer bases (models compute in float) and unsigned exponents",
    r"reduce_max_empty_set": "the maximum of an empty set",
    r"training_dropout(?!_zero_ratio)": "training mode with a ratio above 0 (random)",
    r"causal_conv_with_state": "1-D convolutions (in CausalConvWithState's expansion)",
    r"center_crop_pad": "integer Max of run-time shapes (in CenterCropPad's expansion)",
}
"""The variants left out, each with the reason: the importer rejects them with a one-line error
(checked below)."""

INCLUDED = re.compile(rf"^test_({SUPPORTED})(_.*)?_cpu$|^({'|'.join(map(re.escape, COMPOSED))})_cpu$")

backend_test = onnx.backend.test.BackendTest(CimBackend, __name__)
backend_test.include(INCLUDED.pattern)
for pattern in REJECTED:
    backend_test.exclude(pattern)
test_cases = backend_test.test_cases  # a property that builds new classes on every access
for case in test_cases.values():
    # Keep the supported ops' tests (the excluded variants show as skipped, with the reason).
    for name in [n for n in vars(case) if n.startswith("test_") and not INCLUDED.match(n)]:
        delattr(case, name)
globals().update({name: case for name, case in test_cases.items() if any(n.startswith("test_") for n in vars(case))})


REJECTED_CASES = [
    case
    for case in CASES
    if INCLUDED.match(f"{case.name}_cpu") and any(re.search(p, case.name) for p in REJECTED)
]


@pytest.mark.parametrize("case", REJECTED_CASES, ids=lambda case: case.name)
def test_rejected_variant_is_one_line_error(case):
    """Each rejected variant stops with a one-line import error, not a crash or a wrong result."""
    inputs = case.data_sets[0][0]
    with pytest.raises((OnnxImportError, CompileError)) as error:
        CimBackend.run_model(case.model, [np.asarray(x) for x in inputs])
    assert "\n" not in str(error.value) and str(error.value)


def test_every_rejected_pattern_has_cases():
    assert {p for p in REJECTED if any(re.search(p, c.name) for c in REJECTED_CASES)} == set(REJECTED)
