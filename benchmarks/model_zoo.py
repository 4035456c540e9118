"""ResNet-18/50-, CIFAR ResNet-20-, VGG-19- and MobileNetV2-shaped ONNX graphs from random weights, built with
`onnx.helper` (conv + batch norm + ReLU, grouped and depthwise convolutions, max/global-average
pooling, residual adds, a classifier)."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class GraphBuilder:
    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, kind: str) -> str:
        self.count += 1
        return f"{kind}{self.count}"

    def weight(self, shape, scale: float) -> str:
        name = self.name("w")
        self.initializers.append(numpy_helper.from_array(self.rng.normal(0, scale, shape).astype(np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], **attrs) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv_bn(self, x: str, cin: int, cout: int, k: int, stride: int = 1, relu: bool = True, group: int = 1) -> str:
        w = self.weight((cout, cin // group, k, k), np.sqrt(2.0 * group / (cin * k * k)))
        y = self.node("Conv", [x, w], pads=[k // 2] * 4, strides=[stride, stride], group=group)
        gamma, variance = (self.initializer(np.abs(self.rng.normal(1, 0.1, cout))) for _ in range(2))
        beta, mean = self.weight((cout,), 0.1), self.weight((cout,), 0.1)
        y = self.node("BatchNormalization", [y, gamma, beta, mean, variance])
        return self.node("Relu", [y]) if relu else y

    def initializer(self, value: np.ndarray) -> str:
        name = self.name("c")
        self.initializers.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def classifier(self, x: str, features: int, classes: int) -> str:
        x = self.node("GlobalAveragePool", [x])
        x = self.node("Flatten", [x])
        w = self.weight((classes, features), np.sqrt(1.0 / features))
        return self.node("Gemm", [x, w, self.weight((classes,), 0.01)], transB=1)

    def model(self, output: str, size: int, classes: int) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes,
            "zoo",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, [1, classes])],
            self.initializers,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        return model


def resnet(depth: int = 18, size: int = 224, width: int = 64, classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    """ResNet-18 (basic blocks) or ResNet-50 (bottlenecks), channels scaled by `width / 64`."""
    g = GraphBuilder(seed)
    bottleneck = depth == 50
    blocks = {18: [2, 2, 2, 2], 50: [3, 4, 6, 3]}[depth]
    x = g.conv_bn("x", 3, width, 7, stride=2)
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    for stage, count in enumerate(blocks):
        planes = width * 2**stage
        cout = planes * 4 if bottleneck else planes
        for block in range(count):
            stride = 2 if stage > 0 and block == 0 else 1
            if bottleneck:
                y = g.conv_bn(x, cin, planes, 1)
                y = g.conv_bn(y, planes, planes, 3, stride)
                y = g.conv_bn(y, planes, cout, 1, relu=False)
            else:
                y = g.conv_bn(x, cin, planes, 3, stride)
                y = g.conv_bn(y, planes, cout, 3, relu=False)
            shortcut = x if stride == 1 and cin == cout else g.conv_bn(x, cin, cout, 1, stride, relu=False)
            x = g.node("Relu", [g.node("Add", [y, shortcut])])
            cin = cout
    return g.model(g.classifier(x, cin, classes), size, classes)


def resnet_cifar(depth: int = 20, size: int = 32, width: int = 16, classes: int = 10, seed: int = 0) -> onnx.ModelProto:
    """The CIFAR-10 ResNets (He et al., "Deep Residual Learning for Image Recognition", 2016, §4.2):
    a 3×3 stem, three stages of (depth - 2) / 6 basic blocks at `width`, 2× and 4× channels (stride
    2 into the last two; 1×1 projection shortcuts), global average pooling and a classifier."""
    g = GraphBuilder(seed)
    x, cin = g.conv_bn("x", 3, width, 3), width
    for stage in range(3):
        cout = width * 2**stage
        for block in range((depth - 2) // 6):
            stride = 2 if stage > 0 and block == 0 else 1
            y = g.conv_bn(g.conv_bn(x, cin, cout, 3, stride), cout, cout, 3, relu=False)
            shortcut = x if stride == 1 and cin == cout else g.conv_bn(x, cin, cout, 1, stride, relu=False)
            x, cin = g.node("Relu", [g.node("Add", [y, shortcut])]), cout
    return g.model(g.classifier(x, cin, classes), size, classes)


def vgg19(size: int = 224, width: int = 64, classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    """VGG-19: 16 convolutions in 5 stages with max pooling, then its three dense layers (flattened
    features → 4096 → 4096 → classes at full size: 25088 features at 224×224), channels and hidden
    units scaled by `width / 64`."""
    g = GraphBuilder(seed)
    x, cin = "x", 3
    for stage, count in enumerate([2, 2, 4, 4, 4]):
        cout = min(width * 2**stage, width * 8)
        for _ in range(count):
            x, cin = g.conv_bn(x, cin, cout, 3), cout
        x = g.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x, features = g.node("Flatten", [x]), cin * (size // 32) ** 2
    for fan_out in (64 * width, 64 * width):
        w = g.weight((fan_out, features), np.sqrt(2.0 / features))
        x = g.node("Relu", [g.node("Gemm", [x, w, g.weight((fan_out,), 0.01)], transB=1)])
        features = fan_out
    w = g.weight((classes, features), np.sqrt(1.0 / features))
    return g.model(g.node("Gemm", [x, w, g.weight((classes,), 0.01)], transB=1), size, classes)


MODELS = {"resnet18": lambda **kw: resnet(18, **kw), "resnet50": lambda **kw: resnet(50, **kw), "vgg19": vgg19}


def mobilenet_v2(size: int = 224, width: int = 32, classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    """MobileNetV2 (Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks", 2018,
    Table 2): a 3×3 stem, 17 inverted residual blocks (1×1 expansion by 6, depthwise 3×3, linear 1×1
    projection; a residual add where shapes allow) and a 1×1 convolution to 1280 channels before the
    classifier; ReLU stands for ReLU6. Channels scaled by `width / 32` (32 is the stem's width)."""
    g = GraphBuilder(seed)

    def channels(c: int) -> int:
        return max(1, c * width // 32)

    x, cin = g.conv_bn("x", 3, channels(32), 3, stride=2), channels(32)
    for expansion, c, repeats, first_stride in [
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ]:
        cout = channels(c)
        for block in range(repeats):
            stride = first_stride if block == 0 else 1
            hidden = cin * expansion
            y = g.conv_bn(x, cin, hidden, 1) if expansion != 1 else x
            y = g.conv_bn(y, hidden, hidden, 3, stride, group=hidden)  # depthwise
            y = g.conv_bn(y, hidden, cout, 1, relu=False)
            x = g.node("Add", [x, y]) if stride == 1 and cin == cout else y
            cin = cout
    last = max(channels(1280), 1280)
    x = g.conv_bn(x, cin, last, 1)
    return g.model(g.classifier(x, last, classes), size, classes)


MODELS["mobilenetv2"] = mobilenet_v2
