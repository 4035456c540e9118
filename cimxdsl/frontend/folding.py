"""Folding at import: nodes on constants evaluated with ONNX's reference (or NumPy), BatchNormalization
after a convolution folded into its weights, and before a Sign (or a ternary Round of its Clip) into
per-channel thresholds."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import onnx.defs
import onnx.reference
from onnx import helper

from cimxdsl.frontend.attributes import NodeAttributes

CONSTANT_ONLY = ("Range", "ConstantOfShape")
"""Ops whose result shape depends on their input values: imported only when those fold to constants."""
SHAPE_ONLY = {"Shape", "Size"}
"""Ops whose result depends only on the (static) shape of their input: folded to constants."""


def np_to_onnx(dtype: np.dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(dtype)


def gather_elements(node: onnx.NodeProto, data: np.ndarray, indices: np.ndarray) -> list[np.ndarray]:
    """GatherElements on constants (ONNX's reference picks one element per row once the axis is longer
    than `np.choose` takes, as a `[1, 512]` position buffer is, and wraps indices out of range).
    Indices that do not fit raise, and the node's run-time import says why."""
    axis = NodeAttributes(node).axis("axis", data.ndim)
    size = data.shape[axis]
    region = data[tuple(slice(None) if a == axis else slice(0, n) for a, n in enumerate(indices.shape))]
    if region.shape[:axis] + region.shape[axis + 1 :] != indices.shape[:axis] + indices.shape[axis + 1 :]:
        raise ValueError("the indices do not fit the data")
    if indices.size and not -size <= indices.min() <= indices.max() < size:
        raise IndexError("an index is out of range")
    return [np.take_along_axis(region, np.where(indices < 0, indices + size, indices).astype(np.int64), axis)]


NUMPY_EVALUATIONS: dict[str, Callable[..., list[np.ndarray]]] = {"GatherElements": gather_elements}
"""Ops evaluated on constants with NumPy instead of ONNX's reference, where the reference is wrong."""


def evaluate_node(node: onnx.NodeProto, inputs: list[np.ndarray | None], opset: int) -> list[np.ndarray]:
    """Run one node on constant inputs with ONNX's reference implementation (or `NUMPY_EVALUATIONS`)."""
    if node.op_type in NUMPY_EVALUATIONS:
        return NUMPY_EVALUATIONS[node.op_type](node, *inputs)
    names = [n for n in node.input if n]
    feeds = {n: v for n, v in zip(node.input, inputs, strict=True) if n}
    graph = helper.make_graph(
        [node],
        "fold",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(feeds[n].dtype), feeds[n].shape)
            for n in names
        ],
        [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in node.output if o],
    )
    for version in (opset, onnx.defs.onnx_opset_version()):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)])
        try:
            return [np.asarray(v) for v in onnx.reference.ReferenceEvaluator(model).run(None, feeds)]
        except RuntimeError as e:
            # The reference has no implementation of this op at the model's opset: try the latest.
            if "No implementation" not in str(e) or version != opset:
                raise
    raise AssertionError("unreachable")


def fold_batch_norms(graph: onnx.GraphProto, constants: dict[str, np.ndarray]) -> None:
    """Fold `BatchNormalization(Conv(x, W, B))` into the conv when W is constant and the conv's
    output feeds only the BatchNormalization."""
    users: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            users[name] = users.get(name, 0) + 1
    producers = {o: node for node in graph.node for o in node.output}
    folded = []
    for node in graph.node:
        if node.op_type != "BatchNormalization" or len(node.output) != 1:
            continue
        conv = producers.get(node.input[0])
        if conv is None or conv.op_type != "Conv" or users.get(node.input[0]) != 1:
            continue
        operands = [conv.input[1], *node.input[1:5], *conv.input[2:3]]
        if not all(n in constants for n in operands if n) or len(node.input) < 5:
            continue
        channels = constants[conv.input[1]].shape[:1]
        if any(constants[n].shape != channels for n in operands[1:] if n):
            continue  # not per-channel vectors: left to the BatchNormalization import to report
        gamma, beta, mean, var = (constants[n].astype(np.float64) for n in node.input[1:5])
        scale = gamma / np.sqrt(var + NodeAttributes(node)["epsilon"])
        weights = constants[conv.input[1]]
        bias = constants[conv.input[2]].astype(np.float64) if len(conv.input) > 2 and conv.input[2] else 0.0
        weight_name, bias_name = f"{conv.name or conv.output[0]}_folded_w", f"{conv.name or conv.output[0]}_folded_b"
        product = np.empty(weights.shape, np.float32)  # (computed in float64, rounded once)
        constants[weight_name] = np.multiply(weights, scale[:, None, None, None], out=product, dtype=np.float64)
        constants[bias_name] = ((bias - mean) * scale + beta).astype(np.float32)
        del conv.input[1:]
        conv.input.extend([weight_name, bias_name])
        conv.output[0] = node.output[0]
        folded.append(node)
    for node in folded:
        graph.node.remove(node)


def fold_sign_thresholds(graph: onnx.GraphProto, constants: dict[str, np.ndarray], ternary: bool = True) -> None:
    """Fold `Sign(BatchNormalization(x))`, the activation of a binary network, into a per-channel
    threshold: sign(γ (x - μ) / √(σ² + ε) + β) = sign(s (x - τ)) with τ = μ - β √(σ² + ε) / γ and
    s = sign(γ). The BatchNormalization keeps its place with scale s, bias -s·τ, mean 0, variance 1
    and ε = 0, so it computes s·x - s·τ: one compare per channel (γ = 0 channels are left alone).
    The ternary activation `Round(Clip(BatchNormalization(x), -1, 1))` = [g (x - τ) > 1/2] -
    [g (x - τ) < -1/2] (g = γ / √(σ² + ε); Round halves to even, so ±1/2 give 0) folds into two
    thresholds τ ± h, h = 1 / (2|g|): Round((sign(s x - s τ - h) + sign(s x - s τ + h)) / 2), two
    such BatchNormalizations and compares per channel (a value on a threshold gives ±1/2, rounded
    to 0 as before); `ternary=False` leaves it (for the integer import, which thresholds its codes)."""
    users: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            users[name] = users.get(name, 0) + 1
    producers = {o: node for node in graph.node for o in node.output}
    for node in list(graph.node):
        chain = threshold_chain(node, producers, users, constants)
        if chain is None or (node.op_type == "Round" and not ternary):
            continue
        norm = chain[-1]
        gamma, beta, mean, var = (constants[n].astype(np.float64) for n in norm.input[1:5])
        gain = gamma / np.sqrt(var + NodeAttributes(norm)["epsilon"])
        threshold, sign = mean - beta / gain, np.sign(gamma)
        base = norm.name or norm.output[0]
        if node.op_type == "Sign":
            set_threshold(norm, f"{base}_threshold", sign, -sign * threshold, constants)
            continue
        half = 0.5 / np.abs(gain)
        x, clip = norm.input[0], chain[0]
        low = helper.make_node("BatchNormalization", [x], [f"{base}_below"], name=f"{base}_below")
        set_threshold(norm, f"{base}_threshold", sign, -sign * threshold - half, constants)
        set_threshold(low, f"{base}_threshold_low", sign, -sign * threshold + half, constants)
        constants[f"{base}_half"] = np.array(0.5, np.float32)
        added = [
            low,
            helper.make_node("Sign", [norm.output[0]], [f"{base}_above_sign"]),
            helper.make_node("Sign", [low.output[0]], [f"{base}_below_sign"]),
            helper.make_node("Add", [f"{base}_above_sign", f"{base}_below_sign"], [f"{base}_steps"]),
            helper.make_node("Mul", [f"{base}_steps", f"{base}_half"], [f"{base}_halved"]),
        ]
        at = list(graph.node).index(norm) + 1
        for offset, new in enumerate(added):
            graph.node.insert(at + offset, new)
        graph.node.remove(clip)
        node.input[0] = f"{base}_halved"


def threshold_chain(node, producers, users, constants) -> list | None:
    """The nodes a `Sign` or a ternary `Round` folds with (the Round's `Clip(…, -1, 1)`, then the
    BatchNormalization, each read by the next only), or None where they do not fold."""
    chain = []
    source = producers.get(node.input[0]) if node.op_type in ("Sign", "Round") else None
    if node.op_type == "Round" and source is not None and source.op_type == "Clip":
        bounds = [source.input[i] if i < len(source.input) else "" for i in (1, 2)]
        values = [float(constants[b]) if b in constants and constants[b].size == 1 else None for b in bounds]
        if values != [-1.0, 1.0] or users.get(source.output[0]) != 1:
            return None
        chain.append(source)
        source = producers.get(source.input[0])
    elif node.op_type == "Round":
        return None
    if source is None or source.op_type != "BatchNormalization" or users.get(source.output[0]) != 1:
        return None
    params = source.input[1:5]
    if len(params) < 4 or not all(n in constants for n in params):
        return None
    gamma, beta, mean, var = (constants[n] for n in params)
    if len({a.shape for a in (gamma, beta, mean, var)}) != 1 or gamma.ndim != 1 or not gamma.all():
        return None
    return [*chain, source]


def set_threshold(norm, name: str, scale: np.ndarray, bias: np.ndarray, constants) -> None:
    """Make `norm` compute scale·x + bias per channel (mean 0, variance 1, ε = 0)."""
    folded = {"scale": scale, "bias": bias, "mean": np.zeros_like(scale), "var": np.ones_like(scale)}
    for key, value in folded.items():
        constants[f"{name}_{key}"] = value.astype(np.float32)
    x = norm.input[0]
    del norm.input[:]
    norm.input.extend([x, *(f"{name}_{key}" for key in folded)])
    del norm.attribute[:]
    norm.attribute.append(helper.make_attribute("epsilon", 0.0))
