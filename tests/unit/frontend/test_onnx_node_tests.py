"""ONNX's own node tests, for every op type the importer supports, through `cimxdsl.onnx_backend`
(import, exact mode, the whole memristor flow, the ideal device)."""

import re

import onnx.backend.test

from cimxdsl.onnx_backend import CimBackend

SUPPORTED = (
    "matmul|gemm|conv|relu|leakyrelu|clip|sigmoid|tanh|add|sub|mul|div|sum|maxpool|averagepool|"
    "globalaveragepool|batchnorm|concat|reshape|flatten|transpose|squeeze|unsqueeze|softmax|dropout|"
    "identity|lrn|pad|constant|shape|quantizelinear|dequantizelinear|qlinearconv|qlinearmatmul|matmulinteger|"
    "convinteger"
)

# Variants outside what the importer supports, each with the reason.
UNSUPPORTED = {
    r"_expanded": "function-expanded variants use other ops (Where, Cast, ReduceMax, ...)",
    r"(add|sub|mul|div|clip|maxpool.*)_u?int(8|16|32|64)": "integer arithmetic (models compute in float)",
    r"pool_(1d|3d)": "only 2-D pooling",
    r"pool_.*dilations": "pooling with dilations",
    r"maxpool_with_argmax": "the argmax output",
    r"training_mode": "batch normalization in training mode",
    r"^test_constant_pad": "pads given as a run-time input",
    r"dropout_default_mask": "the dropout mask output",
    r"identity_(opt|sequence)": "optional and sequence types",
    r"quantizelinear_(blocked|e4m3|e5m2|float4|u?int(2|4|16))": "blocked and non-8-bit quantization",
}

INCLUDED = re.compile(rf"^test_({SUPPORTED})(_.*)?_cpu$")

backend_test = onnx.backend.test.BackendTest(CimBackend, __name__)
backend_test.include(INCLUDED.pattern)
for pattern in UNSUPPORTED:
    backend_test.exclude(pattern)
test_cases = backend_test.test_cases  # a property that builds new classes on every access
for case in test_cases.values():
    # Keep the supported ops' tests (the excluded variants show as skipped, with the reason).
    for name in [n for n in vars(case) if n.startswith("test_") and not INCLUDED.match(n)]:
        delattr(case, name)
globals().update({name: case for name, case in test_cases.items() if any(n.startswith("test_") for n in vars(case))})
