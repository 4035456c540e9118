"""The PIM flow's LRN against onnxruntime on the light models that have one (AlexNet, ZFNet-512,
Inception v1; random weights, one random 224×224 image that is also the calibration input).

The integer import replaces `LRN(x)` by `x · r`, `r` the calibrated ratio of the output's to the
input's peak magnitude as a fixed-point multiplier (`IntegerImporter.import_lrn`). Per LRN node this
prints the relative error of that factor against onnxruntime's LRN on the same input (‖x·r − y‖ / ‖y‖
and max |x·r − y| / max |y|), and per model the error of the integer program's logits (dequantized,
the input of the final softmax) against onnxruntime's, and whether the top class agrees.

    python -m benchmarks.pim_lrn_error [names...]
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import onnxruntime

from benchmarks.pim_light_models import light_model

NAMES = ["bvlc_alexnet", "zfnet512", "inception_v1"]


def reference(model: onnx.ModelProto, x: np.ndarray, extra: list[str]) -> dict[str, np.ndarray]:
    """onnxruntime's values of the graph outputs and of the tensors `extra`."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    model.graph.output.extend(onnx.ValueInfoProto(name=name) for name in extra)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # the light models' unused shape initializers are only warnings
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    (name,) = [i.name for i in session.get_inputs()]
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, {name: x}), strict=True))


def measure(name: str) -> None:
    from cimxdsl.frontend.integer import import_integer
    from cimxdsl.interpreters import run as interpret

    model = light_model(name)
    weights = {init.name for init in model.graph.initializer}
    image = next(i for i in model.graph.input if i.name not in weights)
    shape = [d.dim_value or 1 for d in image.type.tensor_type.shape.dim]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    lrns = [node for node in model.graph.node if node.op_type == "LRN"]
    (softmax,) = [node for node in model.graph.node if node.op_type == "Softmax"]
    tensors = [t for node in lrns for t in (node.input[0], node.output[0])] + [softmax.input[0]]
    values = reference(model, x, tensors)
    for node in lrns:
        a, y = values[node.input[0]].astype(np.float64), values[node.output[0]].astype(np.float64)
        ratio = np.abs(y).max() / np.abs(a).max()
        approx = a * ratio
        print(
            f"{name} LRN '{node.name or node.output[0]}': factor {ratio:.3f}; relative error "
            f"{np.linalg.norm(approx - y) / np.linalg.norm(y):.3f} (L2), "
            f"{np.abs(approx - y).max() / np.abs(y).max():.3f} (max)"
        )
    program = import_integer(model, [[x]])
    (q,) = interpret(program.module, program.quantize([x]), "ideal").outputs
    got = q.astype(np.float64) * 2.0 ** program.output_exponents[0]  # before the host's softmax
    want = values[softmax.input[0]].reshape(got.shape).astype(np.float64)
    print(
        f"{name} logits: relative error {np.linalg.norm(got - want) / np.linalg.norm(want):.3f} (L2), "
        f"top class {'agrees' if got.argmax() == want.argmax() else 'differs'}",
        flush=True,
    )


if __name__ == "__main__":
    for model_name in sys.argv[1:] or NAMES:
        measure(model_name)
