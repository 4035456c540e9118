"""Small ONNX models built with onnx.helper from random weights, for the frontend tests."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_model(nodes, inputs, outputs, initializers, opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def small_cnn(seed: int = 0, channels: int = 4, size: int = 8, classes: int = 5) -> onnx.ModelProto:
    """Conv-BN-ReLU, max pool, a residual block, global average pool, Gemm, Softmax."""
    rng = np.random.default_rng(seed)
    c = channels
    init = {
        "w1": rng.normal(0, 0.5, (c, 3, 3, 3)),
        "b1": rng.normal(0, 0.1, c),
        "gamma": rng.uniform(0.5, 1.5, c),
        "beta": rng.normal(0, 0.1, c),
        "mean": rng.normal(0, 0.1, c),
        "var": rng.uniform(0.5, 1.5, c),
        "w2": rng.normal(0, 0.3, (c, c, 3, 3)),
        "w3": rng.normal(0, 0.3, (c, 1, 3, 3)),
        "fc": rng.normal(0, 0.5, (classes, c)),
        "fcb": rng.normal(0, 0.1, classes),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("BatchNormalization", ["c1", "gamma", "beta", "mean", "var"], ["bn1"], name="bn1"),
        helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], pads=[1, 1, 1, 1], group=c, name="depthwise"),
        helper.make_node("Add", ["c3", "p1"], ["res"], name="residual"),
        helper.make_node("GlobalAveragePool", ["res"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc", "fcb"], ["logits"], transB=1, name="fc"),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1, name="softmax"),
    ]
    return make_model(nodes, [("x", [1, 3, size, size])], [("y", [1, classes])], init)
