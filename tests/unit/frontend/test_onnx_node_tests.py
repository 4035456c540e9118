"""ONNX's own node tests, for every op type the importer supports, through `cimxdsl.onnx_backend`
(import, exact mode, the whole memristor flow, the ideal device)."""

import onnx.backend.test

from cimxdsl.onnx_backend import CimBackend

SUPPORTED = (
    "matmul|gemm|conv|relu|leakyrelu|clip|sigmoid|tanh|add|sub|mul|div|sum|maxpool|averagepool|"
    "globalaveragepool|batchnorm|concat|reshape|flatten|transpose|squeeze|unsqueeze|softmax|dropout|"
    "identity|lrn|pad|constant|shape"
)

# Variants outside what the importer supports, each with the reason.
UNSUPPORTED = {
    r"_expanded": "function-expanded variants use other ops (Where, Cast, ReduceMax, ...)",
    r"_u?int(8|16|32|64)": "integer tensors: models compute in float (quantization makes the integers)",
    r"pool_(1d|3d)": "only 2-D pooling",
    r"pool_.*dilations": "pooling with dilations",
    r"maxpool_with_argmax": "the argmax output",
    r"training_mode": "batch normalization in training mode",
    r"^test_constant_pad": "pads given as a run-time input",
    r"dropout_default_mask": "the dropout mask output",
    r"identity_(opt|sequence)": "optional and sequence types",
}

backend_test = onnx.backend.test.BackendTest(CimBackend, __name__)
backend_test.include(rf"^test_({SUPPORTED})(_.*)?_cpu$")
for pattern in UNSUPPORTED:
    backend_test.exclude(pattern)
globals().update(backend_test.test_cases)
